"""Run records as Mermaid: a step run's chart (``history --format mermaid`` and the sticky
comment ``run --pr`` keeps on the step's pull request draw the same one) and a chart per run of
``history`` (the runs it shows: ``runs/history.py``; the drawing: ``render/mermaid.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitflow_agents.render.markdown import one_line
from gitflow_agents.render.mermaid import (
    MAX_AGENTS,
    fence_chart,
    single_run_flowchart,
    step_flowchart,
)
from gitflow_agents.runs import spend
from gitflow_agents.runs.fields import mapping
from gitflow_agents.runs.history import row


def agent_results(run_dir: Path, data: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The result.json of each agent run a step run lists that has one, by run id (read by
    ``runs.spend.agent_results``): where ``step_flowchart`` finds tokens and cost."""
    found = spend.agent_results(run_dir, data, most=MAX_AGENTS)
    return {run_id: result for run_id, result in found.items() if result is not None}


def step_chart(run_dir: Path, data: Mapping[str, Any]) -> str:
    """The one Mermaid chart of a step run (its result.json ``data``, in ``run_dir``): what
    ``history --format mermaid`` shows and what its pull request's sticky comment holds, the
    same end node (the outcome, and ``PR #n`` once ``run --pr`` recorded its pull request).
    Its total is the step run's spend as ``history`` counts it (``runs.spend.step_spend``: not
    an agent it reused from a step run that recorded it), the figure of the table's row."""
    return step_flowchart(
        data, agent_results=agent_results(run_dir, data), spend=spend.step_spend(run_dir, data)
    )


def mermaid(found: list[tuple[Path, dict[str, Any]]]) -> str:
    """Markdown: per run a heading line and its flowchart in a ```` ```mermaid ```` block."""
    out: list[str] = []
    for run_dir, data in found:
        shown = row(run_dir, data, mapping(data, "run"))
        chart = step_chart(run_dir, data) if shown.kind == "chain" else single_run_flowchart(data)
        title = f"{shown.what} · {shown.flow} · {shown.outcome} · run {shown.run_id}"
        # the title holds agent and flow names: inert on a markdown heading line
        out += [f"### {one_line(title)}", "", fence_chart(chart)]
    return "\n".join(out)
