"""What a ``send`` continues, as the run's own record has it (``sessions.py`` runs the turn;
the agent id and the directory of a finished run: ``prior_run.py``).

An agent run is continued as itself: the agent id it ran as (its folder, ``step-01-builder``
for a chain's builder, whose ``run.agent`` is the config key ``builder``), and the directory it
worked in (a chain step's work tree, or the checkout). A record is not trusted to name any
path: the agent id must be a safe name (checked by the caller) and the directory this checkout
or one of its git work trees. A chain's step run is not an agent's run: ``send`` to it names the
agent runs of that step that can be continued.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gitflow_agents.agent_run import sessions
from gitflow_agents.agent_run.prior_run import agent_id_of, workdir_of
from gitflow_agents.base.atomic import real_path
from gitflow_agents.base.errors import UsageError
from gitflow_agents.runs import read_json
from gitflow_agents.runs.fields import mapping, text

if TYPE_CHECKING:
    from gitflow_agents.agent_run.sessions import FinishedRun


def refuse_step_run(root: Path, flow_dir: str, prior: FinishedRun) -> None:
    """UsageError when ``prior`` is a chain's step run (``run.kind`` chain), naming the agent
    runs of the step that can be continued (the latest turn of each session), by id."""
    if text(prior.record, "kind") != "chain":
        return
    chain = mapping(read_json(prior.paths.result) or {}, "chain")
    step, plan = chain.get("step"), text(chain, "plan")
    what = f"the run of step {step}" if isinstance(step, int) else "a chain's step run"
    if plan:
        what += f" of {_shown(root, plan)}"
    agents = chain.get("agents")
    ids = (
        [text(a, "runID") for a in agents if isinstance(a, dict)]
        if isinstance(agents, list)
        else []
    )
    open_runs = dict.fromkeys(t for t in (_latest_turn(root, flow_dir, i) for i in ids if i) if t)
    if not open_runs:
        raise UsageError(
            f"send: run {prior.run_id} is {what}, not one agent's run, and none of its agent "
            "runs can be continued"
        )
    listed = ", ".join(f"{run_id} ({agent})" for run_id, agent in open_runs)
    raise UsageError(
        f"send: run {prior.run_id} is {what}, not one agent's run; continue one of its agent "
        f"runs: {listed}"
    )


def _latest_turn(root: Path, flow_dir: str, run_id: str) -> tuple[str, str] | None:
    """(run id, agent id) of the turn ``send`` would continue for the agent run ``run_id``:
    the latest turn of its session; None when it cannot be continued (no session id, closed,
    its work tree gone, its record unreadable or still running)."""
    try:
        prior = sessions.finished_run(root, flow_dir, run_id)
        session = sessions.load_session(sessions.session_path(root, flow_dir, prior), prior)
        latest = str((session.get("runs") or [prior.run_id])[-1])
        if latest != prior.run_id:
            prior = sessions.finished_run(root, flow_dir, latest)
        if session.get("closed") or prior.session_id is None:
            return None
        workdir_of(root, prior)
    except UsageError:
        return None
    return prior.run_id, agent_id_of(prior)


def _shown(root: Path, path: str) -> str:
    """``path`` relative to ``root`` when it is inside it (as the user named the plan)."""
    try:
        return real_path(Path(path)).relative_to(real_path(root)).as_posix()
    except (OSError, ValueError):
        return path
