"""Where an agent's files live: its id, its flow, its run folder, and its ``system_prompt.md``.

The layout (``<flow_dir>/<flow>/agents/<agent-id>/``) is described in docs/protocol.md,
"System prompt" and "Run records".
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.fsutil import (
    SAFE_NAME_RULE,
    make_dirs,
    real_path,
    safe_name,
    write_json_atomic,
)

if TYPE_CHECKING:
    from gitflow_agents.config import FlowConfig
    from gitflow_agents.prompt.request import PromptRequest, Segment


def default_agent_id(agent: str, step: int | None) -> str:
    """``step-NN-<agent>`` (NN zero-padded to two digits) with a step, else the agent name."""
    return agent if step is None else f"step-{step:02d}-{agent}"


def default_flow_name(request: PromptRequest) -> str:
    """The given flow name, else the plan's name, else the agent's."""
    if request.flow_name is not None:
        return request.flow_name
    return request.plan.name if request.plan is not None else request.agent


def check_name(value: str, what: str) -> str:
    """``value`` if it is safe as a directory name; else UsageError naming ``what`` it is."""
    if not safe_name(value):
        raise UsageError(
            f"invalid {what} {value!r}: {SAFE_NAME_RULE} (it becomes a directory name)"
        )
    return value


def display_path(root: Path, path: Path) -> str:
    """``path`` relative to the project root (posix) when inside it, else as given."""
    if not path.is_absolute():
        return path.as_posix()
    for candidate in (path, real_path(path)):
        for base in (root, real_path(root)):
            if candidate.is_relative_to(base):
                return candidate.relative_to(base).as_posix()
    return path.as_posix()


def agent_dir(root: Path, flow_dir: str, flow_name: str, agent_id: str) -> Path:
    """``<root>/<flow_dir>/<flow>/agents/<agent-id>``: the agent's run folder."""
    return root / flow_dir / flow_name / "agents" / agent_id


def agent_rel_dir(flow_dir: str, flow_name: str, agent_id: str) -> str:
    """The agent's run folder relative to the project root, as the prompt shows it."""
    return (Path(flow_dir) / flow_name / "agents" / agent_id).as_posix()


def previous_report_rel(flow_dir: str, flow_name: str, agent_id: str, success_filename: str) -> str:
    """The completed report of the earlier agent ``agent_id`` (``--after``), relative to the
    project root, as the prompt points the agent to it; UsageError for a bad agent id."""
    return (
        f"{agent_rel_dir(flow_dir, flow_name, check_name(agent_id, 'agent id'))}/{success_filename}"
    )


def check_after(
    root: Path,
    flow_dir: str,
    flow_name: str,
    after: Sequence[str],
    success_filename: str,
    what: str,
) -> None:
    """UsageError (exit 2) before anything runs for an agent named by ``--after`` that left no
    completed report: the agent would be told to read a file that does not exist (a mistyped
    id, an agent that never ran or did not finish). ``what`` starts the message (``spawn``);
    it lists the agents of the flow that have one."""
    for name in after:
        shown = previous_report_rel(flow_dir, flow_name, name, success_filename)
        if (root / shown).is_file():
            continue
        agents = agent_dir(root, flow_dir, flow_name, name).parent  # the flow's agent folders
        done = sorted(
            p.name
            for p in (agents.iterdir() if agents.is_dir() else ())
            if (p / success_filename).is_file()
        )
        known = (
            f"agents with one: {', '.join(done)}"
            if done
            else f"no agent of flow {flow_name} has one yet"
        )
        raise UsageError(
            f"{what} --after {name}: no completed report at {shown} ({known}; "
            "`gitflow-agents status` lists the agents and how they ended)"
        )


def write_system_prompt(
    root: Path, config: FlowConfig, agent_id: str, flow_name: str, text: str
) -> Path:
    """Write ``<flow_dir>/<flow>/agents/<id>/system_prompt.md`` atomically; return its path."""
    folder = agent_dir(
        root,
        config.flow_dir,
        check_name(flow_name, "flow name"),
        check_name(agent_id, "agent id"),
    )

    folder = make_dirs(folder)  # refused when a symlink leads it out of the repository
    target = folder / "system_prompt.md"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".system_prompt.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


PROMPT_SEGMENTS_FILE = "prompt_segments.json"
"""In a run folder: the system prompt of the run by segment (``serve``'s inspector shows it)."""


def write_prompt_segments(run_dir: Path, segments: Sequence[Segment]) -> Path:
    """Write ``<run dir>/prompt_segments.json`` atomically: the segments as ``prompt --segments
    --json`` prints them (scope, label, source, lines, content); return its path."""
    path = run_dir / PROMPT_SEGMENTS_FILE
    items = [
        {
            "scope": seg.scope,
            "label": seg.label,
            "source": seg.source,
            "lines": seg.line_count,
            "content": seg.content,
        }
        for seg in segments
    ]
    write_json_atomic(path, {"segments": items}, durable=False)
    return path
