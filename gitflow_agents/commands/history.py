"""``gitflow-agents history [--json | --format table|json|mermaid]``: past runs with outcome,
iterations, git stats, duration.

Read from every ``<flow_dir>/<flow>/runs/<runID>/result.json``, oldest first. Step runs of
``run`` show one row each; the agent runs inside them only with ``--agents``. Single flows
(``flow ...``, ``spawn``) show one row per agent run. ``--format mermaid`` draws every row shown
as a Mermaid flowchart in markdown (docs/chains.md, "History"): a step run's chain, a single
run's one node. The reading is ``runs/history.py``; this module prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from gitflow_agents.base.errors import ExitCode
from gitflow_agents.render.history import mermaid
from gitflow_agents.runs import short_ids
from gitflow_agents.runs.history import plan_totals, records, rows
from gitflow_agents.runs.spend import cost_text, tokens_text


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.config import load_flow_config, project_root
    from gitflow_agents.git import queries as git

    fmt = _format(args)
    root = project_root(Path.cwd())  # the project's flows/, which status reads too
    git.repo_root(root)  # in a repository's work tree, or git's reason why not (exit 2)
    config = load_flow_config(root)
    skipped: list[str] = []
    try:
        return _show(fmt, root, config.flow_dir, args, skipped)
    finally:  # after the output, so a table or JSON on stdout stays whole
        for line in skipped:
            print(f"gitflow-agents history: {line}", file=sys.stderr)


def _show(fmt: str, root: Path, flow_dir: str, args: argparse.Namespace, skipped: list[str]) -> int:
    """Print the runs in ``fmt``; unreadable records go to ``skipped``."""
    shown = records(root, flow_dir, args.flow_name, agents=args.agents, skipped=skipped)
    if fmt == "mermaid":
        sys.stdout.write(mermaid(shown) if shown else f"no runs under {flow_dir}/\n")
        return int(ExitCode.OK)
    found = rows(shown)
    if fmt == "json":
        json.dump([r.to_json() for r in found], sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return int(ExitCode.OK)
    if not found:
        print(f"no runs under {flow_dir}/")
        return int(ExitCode.OK)
    header = (
        "RUN", "FLOW", "WHAT", "OUTCOME", "ITER", "GIT", "DURATION", "TOKENS IN/OUT", "COST",
        "FINISHED",
    )  # fmt: skip
    table = [header] + [
        (
            short,
            r.flow,
            r.what,
            r.outcome,
            "" if r.iterations is None else str(r.iterations),
            r.git,
            "" if r.duration_s is None else f"{r.duration_s:.1f}s",
            tokens_text(r.spend),
            cost_text(r.spend),
            r.finished,
        )
        for r, short in zip(found, short_ids([r.run_id for r in found]), strict=True)
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    for plan, (count, spend) in sorted(plan_totals(found).items()):
        runs = f"{count} step run{'' if count == 1 else 's'}"
        where = _near(plan)
        print(f"plan {where}: {runs}, tokens {tokens_text(spend)}, cost {cost_text(spend)}")
    return int(ExitCode.OK)


def _format(args: argparse.Namespace) -> str:
    """table, json or mermaid: ``--json`` is ``--format json``."""
    from gitflow_agents.base.errors import UsageError

    fmt: str | None = getattr(args, "format", None)
    if args.json and fmt not in (None, "json"):
        raise UsageError(f"history: --json and --format {fmt} ask for two formats; give one")
    return "json" if args.json else fmt or "table"


def _near(plan: str) -> str:
    """A plan's path as the user would type it here: relative to the current folder when it
    lies under it (``specs/auth.md``), else as recorded."""
    path = Path(plan)
    if not path.is_absolute():
        return plan
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return plan
