"""Who a finished agent run ran as and where, as its own record has it: what ``send`` continues
(``send_target.py``) and the turn it starts (``sessions.py``) both read. A record is not
trusted to name any path: the agent id must be a safe name (checked by the caller) and the
directory this checkout or one of its git work trees.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gitflow_agents.base.atomic import real_path
from gitflow_agents.base.errors import UsageError
from gitflow_agents.git import queries as git
from gitflow_agents.runs.fields import mapping, text

if TYPE_CHECKING:
    from gitflow_agents.agent_run.sessions import FinishedRun


def agent_id_of(prior: FinishedRun) -> str:
    """The agent id the run ran as: ``run.agentId``, else ``status.json``'s ``agent`` (both the
    id), else ``run.agent`` (the id in records of ``spawn`` older than ``agentId``)."""
    record, status = prior.record, prior.status
    return text(record, "agentId") or text(status, "agent") or text(record, "agent") or ""


def workdir_of(root: Path, prior: FinishedRun) -> Path:
    """Where the run's agent worked (``run.workdir``, else ``status.json``'s ``extra.workdir``;
    ``root`` when neither is recorded). UsageError when that work tree is gone, or is neither
    ``root`` nor a work tree of its repository."""
    recorded = text(prior.record, "workdir") or text(mapping(prior.status, "extra"), "workdir")
    if not recorded or real_path(Path(recorded)) == real_path(root):
        return root
    path = Path(recorded)
    known = {real_path(tree) for tree in git.worktrees(root)} if (root / ".git").exists() else set()
    if real_path(path) in known and path.is_dir():
        return path
    if not path.exists():
        raise UsageError(
            f"send: run {prior.run_id} worked in {path}, which is gone (its step was landed, or "
            "the work tree removed); run the step again instead"
        )
    raise UsageError(
        f"send: run {prior.run_id} records the working directory {path}, which is neither this "
        "checkout nor one of its work trees; not continued"
    )
