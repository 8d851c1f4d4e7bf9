"""Sessions: continuing a finished agent's CLI session, one turn at a time.

The agent's CLI is started again, resuming the session its earlier run recorded (``claude --resume
<id>``, ``codex exec resume <id>``, ...), with a message as the new user turn. The continuation is
a NEW run (fresh runId, its own run folder and ``result.json``) linked to the previous one, run by
``agent_run.run.execute`` exactly like ``spawn``.

A session is the chain of runs that started with one ``spawn``; its state lives in
``<flow_dir>/<flow>/sessions/<first runID>.json`` (runs, turn count, max turns, closed). It ends by
a turn limit (``maxTurns``; the spawn is turn 1; it closes when its last allowed turn has run),
by :func:`close_session`, or never waits: every turn is a supervised run with the stuck and hard
timeouts, and between turns no process waits for a message (the CLI exits after each turn).
Refused (UsageError, exit 2): an adapter whose CLI cannot resume, a run that recorded no session
id, a run still running or lost (``runs/lost.py``: it never finishes), a run that is not the
session's latest turn, a closed session.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from gitflow_agents.agent_run.launch import refuse_planted, report_files
from gitflow_agents.agent_run.prior_run import agent_id_of, workdir_of
from gitflow_agents.agent_run.run import AgentJob, Resume, clear_previous, execute
from gitflow_agents.agents import get_adapter
from gitflow_agents.agents.base import AgentOutput, cannot_resume
from gitflow_agents.agents.installed import check_agents
from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.fsutil import ReadRefused, read_text_limited, write_json_atomic
from gitflow_agents.prompt import agent_dir
from gitflow_agents.prompt.paths import check_name
from gitflow_agents.runs import RunPaths, find_run, is_run_id, named_run, new_run_id, read_json
from gitflow_agents.runs.budget import Ledger
from gitflow_agents.runs.cards import CardLockedError, card_lock
from gitflow_agents.runs.fields import integer, mapping, number, text
from gitflow_agents.runs.lost import is_lost, lost_advice
from gitflow_agents.runs.status import is_live
from gitflow_agents.supervisor import Limits, ReportFiles

if TYPE_CHECKING:
    from gitflow_agents.config import FlowConfig

_N = TypeVar("_N", int, float)

SEND_TASK = (
    "{message}\n\n"
    "(This continues your earlier session. Follow your system prompt ({prompt}) as before: write "
    "your progress to {report}; when you are done rename it to {success}, or to {failed} if you "
    "could not complete the task.)"
)


class FinishedRun(NamedTuple):
    """A run that has ended, as its records tell it: the turn a session continues from."""

    paths: RunPaths
    status: dict[str, Any]  # status.json
    record: dict[str, Any]  # result.json's ``run``
    flow: str

    @property
    def run_id(self) -> str:
        return self.paths.run_dir.name

    @property
    def session_id(self) -> str | None:
        """The CLI's session id the run reported; None when it reported none."""

        return text(self.record, "sessionId") or text(self.status, "session_id") or None


class Turn(NamedTuple):
    """The agent a turn continues, checked: its config key and id, prompt, report files, task,
    and the directory it works in (the earlier run's: a chain step's work tree, or the root)."""

    agent: str
    agent_id: str
    prompt_text: str
    files: ReportFiles
    task: str
    workdir: Path


def sessions_dir(root: Path, flow_dir: str, flow: str) -> Path:
    return root / flow_dir / flow / "sessions"


def finished_run(root: Path, flow_dir: str, run_id: str) -> FinishedRun:
    """The run ``run_id`` names (or a unique prefix of 8+ characters); UsageError when there is
    none, or it has not finished (or never will: a lost run, ``runs/lost.py``)."""

    paths = named_run(root, flow_dir, run_id, "send")
    run_id = paths.run_dir.name
    status = read_json(paths.status) or {}
    result = read_json(paths.result)
    if is_lost(status):  # it never finishes (its supervisor died): waiting would not help
        raise UsageError(f"send: run {run_id} was lost: {lost_advice(run_id, status)}")
    if result is None or is_live(status.get("state")):
        raise UsageError(
            f"send: run {run_id} has not finished (state {status.get('state', 'unknown')}); "
            f"wait for it, or stop it with: gitflow-agents abort {run_id}"
        )
    record = mapping(result, "run")
    # the folder the run is in names its flow: a record's own "flow" could name any path
    return FinishedRun(paths, status, record, paths.run_dir.parent.parent.name)


def session_path(root: Path, flow_dir: str, prior: FinishedRun) -> Path:
    """The state file of the session ``prior`` belongs to (named by its first run)."""

    first = text(mapping(prior.record, "session"), "root") or prior.run_id
    if not is_run_id(first):  # a record is not trusted to name a path
        first = prior.run_id
    return sessions_dir(root, flow_dir, prior.flow) / f"{first}.json"


def load_session(path: Path, prior: FinishedRun) -> dict[str, Any]:
    """The session's state; for a spawned run never continued, a session of one turn."""

    found = read_json(path)
    if found is not None or path.exists():
        return checked_session(found, path)
    record, status = prior.record, prior.status
    return {
        "root": prior.run_id,
        "flow": record.get("flow") or status.get("flow"),
        "agent": record.get("agent") or status.get("agent"),
        "adapter": record.get("adapter"),
        "runs": [prior.run_id],
        "turns": 1,
        "maxTurns": None,
        "closed": False,
        "sessionId": prior.session_id,
    }


def checked_session(data: dict[str, Any] | None, path: Path) -> dict[str, Any]:
    """A session file's state, its fields checked (an agent could have written it); UsageError
    naming the file and the field otherwise."""

    def damaged(what: str) -> UsageError:
        return UsageError(f"send: {path}: damaged session record: {what}")

    if data is None:
        raise damaged("not a JSON object")
    root, runs, turns = data.get("root"), data.get("runs"), data.get("turns", 1)
    max_turns = data.get("maxTurns")
    if not isinstance(root, str) or not is_run_id(root):
        raise damaged("'root' must be a run id")
    if (
        not isinstance(runs, list)
        or not runs
        or not all(isinstance(r, str) and is_run_id(r) for r in runs)
    ):
        raise damaged("'runs' must be a list of run ids")
    for key, value in (("turns", turns), ("maxTurns", max_turns)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise damaged(f"'{key}' must be an integer")
    if not isinstance(data.get("closed", False), bool):
        raise damaged("'closed' must be true or false")
    return data


def write_session(path: Path, session: dict[str, Any], *, close: str | None = None) -> None:
    """Write the session's state (atomically); ``close``: close it, for that reason."""

    data = dict(session)
    if close is not None and not data.get("closed"):
        data.update(closed=True, closedReason=close, closedAt=time.time())
    write_json_atomic(path, data)


def check_open(session: dict[str, Any], run_id: str) -> None:
    """UsageError unless the session is open and ``run_id`` is its latest turn."""
    if session.get("closed"):
        raise UsageError(
            f"send: the session of run {run_id} is closed ({session.get('closedReason')})"
        )
    latest = (session.get("runs") or [run_id])[-1]
    if latest != run_id:
        raise UsageError(
            f"send: run {run_id} is not the latest turn of its session; send to run {latest}"
        )


def check_turns_left(path: Path, session: dict[str, Any], max_turns: int | None) -> None:
    """UsageError, closing the session, when it has had its ``max_turns``."""
    turns = int(session.get("turns") or 1)
    if max_turns is not None and turns >= max_turns:
        write_session(path, {**session, "maxTurns": max_turns}, close=f"max turns ({max_turns})")
        raise UsageError(
            f"send: session {session['root']} has had {turns} of its {max_turns} turns; "
            "it is closed"
        )


def prepare_turn(root: Path, config: FlowConfig, prior: FinishedRun, message: str) -> Turn:
    """Resolve the run's agent (its own folder and working directory, as its record has them:
    send_target.py) and refuse, before any run exists, when it cannot be continued: its adapter
    changed, its system prompt or work tree is gone, its CLI cannot resume (the adapter says so:
    ``Cli.resumes``; no launch is built here, ``execute`` builds the turn's), or a path the
    tool makes for it is a planted symlink."""

    record, status = prior.record, prior.status
    agent_id = check_name(agent_id_of(prior), "agent id in the run's record")
    agent = _agent_config_name(record, status, agent_id, config)
    agent_cfg = config.agent(agent)
    recorded_adapter = text(record, "adapter") or text(mapping(status, "extra"), "adapter")
    if recorded_adapter and recorded_adapter != agent_cfg.adapter:
        raise UsageError(
            f"send: agent {agent!r} now uses the {agent_cfg.adapter} adapter, but the session of "
            f"run {prior.run_id} is a {recorded_adapter} session"
        )
    a_dir = agent_dir(root, config.flow_dir, prior.flow, agent_id)
    prompt_path = a_dir / "system_prompt.md"

    try:  # in the agent's folder: it may have replaced it with anything (a FIFO would block)
        prompt_text = read_text_limited(prompt_path, 16 * 1024 * 1024)
    except ReadRefused as exc:
        raise UsageError(
            f"send: {prompt_path}: {exc.reason}; cannot continue run {prior.run_id}"
        ) from None
    except OSError:
        raise UsageError(
            f"send: {prompt_path} is missing; cannot continue run {prior.run_id}"
        ) from None
    workdir = workdir_of(root, prior)
    files = report_files(config, agent, a_dir)
    task = SEND_TASK.format(
        message=message,
        prompt=prompt_path,
        report=files.report,
        success=files.success.name,
        failed=files.failure.name,
    )
    if not get_adapter(agent_cfg.adapter).cli.resumes:
        raise UsageError(f"send: {cannot_resume(agent_cfg.adapter)}")
    refuse_planted(files)
    # A missing CLI is one line now, before the session records a turn that never ran (it
    # would then refuse every later send: "not the latest turn of its session").
    check_agents(config, [agent], cwd=workdir)
    return Turn(agent, agent_id, prompt_text, files, task, workdir)


def run_turn(
    root: Path,
    config: FlowConfig,
    turn: Turn,
    prior: FinishedRun,
    *,
    message: str,
    path: Path,
    session: dict[str, Any],
    max_turns: int | None,
    limits: Limits,
    quiet: bool,
    message_event: str = "session:message",
) -> dict[str, Any]:
    """Run the session's next turn (a new run resuming the CLI session ``prior`` reported) under
    the session's lock; returns its result.json. UsageError when another turn is running."""

    session_id = prior.session_id
    if session_id is None:
        raise UsageError(
            f"send: run {prior.run_id} recorded no session id (its CLI reported none), so it "
            "cannot be continued; spawn a new run instead"
        )
    adapter = config.agent(turn.agent).adapter
    budget = Ledger(config.budget, config.prices)  # `.flow/` budget:, a turn is an agent run
    budget.refuse(adapter)
    earlier = session.get("runs", [prior.run_id])
    cli = get_adapter(adapter).cli
    counts = cli.session_totals or cli.cost_totals  # its figures count the turns before it
    before = cli.counted_before(_used(root, config.flow_dir, earlier)) if counts else None
    new_id = new_run_id()
    number = int(session.get("turns") or 1) + 1
    link = {
        "root": session["root"],
        "turn": number,
        "previousRunId": prior.run_id,
        "resumedSessionId": session_id,
        "maxTurns": max_turns,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with card_lock(path, new_id):
            clear_previous(turn.files, rerun=True)
            session = {
                **session,
                "runs": [*session.get("runs", [prior.run_id]), new_id],
                "turns": number,
                "maxTurns": max_turns,
                "active": new_id,
            }
            write_session(path, session)
            job = AgentJob(
                root=root,
                config=config,
                agent=turn.agent,
                agent_id=turn.agent_id,
                flow_name=prior.flow,
                kind=str(prior.record.get("kind") or prior.status.get("kind") or "implement"),
                prompt_text=turn.prompt_text,
                task=turn.task,
                resume=Resume(session_id, link, message, message_event, before),
                limits=limits,
                quiet=quiet,
                run_id=new_id,
                workdir=turn.workdir,
                control=True,
                budget=budget,
            )
            try:
                return execute(job)
            finally:
                _after_turn(path, session, new_id, max_turns)
    except CardLockedError:
        raise UsageError(
            f"send: session {session['root']} is busy: another send is running in it"
        ) from None


def _used(root: Path, flow_dir: str, run_ids: list[str]) -> AgentOutput:
    """What the session's runs ``run_ids`` used, as their records say: each figure summed, or
    unknown when one run's is (or its record is gone)."""
    records = []
    for run_id in run_ids:
        paths = find_run(root, flow_dir, str(run_id))
        result = read_json(paths.result) if paths is not None else None
        records.append(mapping(result, "run") if result is not None else {})

    def summed(key: str, read: Callable[[Mapping[str, Any], str], _N | None]) -> _N | None:
        values = [read(record, key) for record in records]
        known = [value for value in values if value is not None]
        return sum(known) if known and len(known) == len(values) else None

    return AgentOutput(
        input_tokens=summed("inputTokens", integer),
        output_tokens=summed("outputTokens", integer),
        cached_tokens=summed("cachedTokens", integer),
        cost_usd=summed("costUsd", number),
    )


def read_session(path: Path) -> dict[str, Any]:

    return read_json(path) or {}


def close_session(path: Path, session: dict[str, Any], reason: str) -> bool:
    """Close the session; False when it already was."""
    if session.get("closed"):
        return False
    write_session(path, session, close=reason)
    return True


def _after_turn(path: Path, session: dict[str, Any], run_id: str, max_turns: int | None) -> None:
    """Record the session id the CLI reported for this turn; close the session on its last turn."""

    latest = {**read_session(path), **{k: session[k] for k in ("runs", "turns", "maxTurns")}}
    latest.pop("active", None)
    run_dir = path.parent.parent / "runs" / run_id
    session_id = text(mapping(read_json(RunPaths(run_dir).result) or {}, "run"), "sessionId")
    if session_id:
        latest["sessionId"] = session_id
    close = None
    if max_turns is not None and int(latest["turns"]) >= max_turns:
        close = f"max turns ({max_turns}) reached"
    write_session(path, latest, close=close)


def _agent_config_name(
    record: dict[str, Any], status: dict[str, Any], agent_id: str, config: FlowConfig
) -> str:
    """The run's agent key in the config: recorded since session mode; else derived from the id
    (``step-NN-<agent>`` or ``<agent>``)."""

    name = record.get("agentConfig") or mapping(status, "extra").get("agent_config")
    if isinstance(name, str) and name:
        return name
    derived = re.sub(r"^step-\d+-", "", agent_id)
    if derived in config.agents:
        return derived
    raise UsageError(f"send: cannot tell which configured agent ran {agent_id!r}")
