"""``gitflow-agents send RUN_ID MESSAGE`` (alias ``reply``): continue a finished agent's session.

Session mode of seed 002 for CLI agents: the agent's CLI is started again, resuming the session
its earlier run recorded (``claude --resume <id>``, ``codex exec resume <id>``, ...), with the
message as the new user turn. The continuation is a NEW run (fresh runId, its own run folder and
``result.json``) linked to the previous one, supervised exactly like ``spawn``.

A session is the chain of runs that started with one ``spawn``; its state lives in
``<flow_dir>/<flow>/sessions/<first runID>.json`` (runs, turn count, max turns, closed). It ends by:

- ``--max-turns N``: at most N turns in the session (the spawn is turn 1); recorded, so later
  sends keep the limit; the session closes when its last allowed turn has run;
- ``send --close RUN_ID``: marks the session closed; later sends are refused;
- timeouts: every turn is a supervised run with the stuck and hard timeouts, and between turns no
  process waits for a message (the CLI exits after each turn), so nothing waits forever.

Refused (exit 2, one line): an adapter whose CLI cannot resume, a run that recorded no session id,
a run still running, a run that is not the session's latest turn, a closed session.
``abort RUN_ID`` is ``cancel``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, NamedTuple

from gitflow_agents.errors import ExitCode, UsageError

SEND_TASK = (
    "{message}\n\n"
    "(This continues your earlier session. Follow your system prompt ({prompt}) as before: write "
    "your progress to {report}; when you are done rename it to {success}, or to {failed} if you "
    "could not complete the task.)"
)
LIVE_STATES = ("queued", "running", "killing")


def sessions_dir(root: Path, flow_dir: str, flow: str) -> Path:
    return root / flow_dir / flow / "sessions"


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.config import find_project_root, load_flow_config
    from gitflow_agents.runs import find_run, read_json

    root = find_project_root(Path.cwd())
    config = load_flow_config(root, args.flow_type, args.variant)
    paths = find_run(root, config.flow_dir, args.run_id)
    if paths is None:
        raise UsageError(f"send: no run {args.run_id!r} under {config.flow_dir}/*/runs/")
    run_id = paths.run_dir.name
    status = read_json(paths.status) or {}
    result = read_json(paths.result)
    if result is None or status.get("state") in LIVE_STATES:
        raise UsageError(
            f"send: run {run_id} has not finished (state {status.get('state', 'unknown')}); "
            f"wait for it, or stop it with: gitflow-agents abort {run_id}"
        )
    record: dict[str, Any] = result.get("run") or {}
    flow = str(record.get("flow") or status.get("flow") or paths.run_dir.parent.parent.name)
    session_path = _session_path(root, config.flow_dir, flow, record, run_id)
    session = read_json(session_path) or _new_session(run_id, record, status)
    if args.close:
        return _close(session_path, session, "closed by gitflow-agents send --close")
    if args.message is None:
        raise UsageError("send: give a MESSAGE (or --close to end the session)")
    _check_open(session, run_id)
    max_turns = args.max_turns if args.max_turns is not None else session.get("maxTurns")
    turns = int(session.get("turns") or 1)
    if max_turns is not None and turns >= max_turns:
        _write_session(
            session_path, {**session, "maxTurns": max_turns}, close=f"max turns ({max_turns})"
        )
        raise UsageError(
            f"send: session {session['root']} has had {turns} of its {max_turns} turns; "
            "it is closed"
        )
    session_id = record.get("session_id") or status.get("session_id")
    # The adapter first: a CLI that cannot resume is the real reason, with or without an id.
    turn = _prepare_turn(
        args,
        root=root,
        config=config,
        record=record,
        status=status,
        run_id=run_id,
        flow=flow,
        session_id=str(session_id) if session_id else None,
    )
    if not session_id:
        raise UsageError(
            f"send: run {run_id} recorded no session id (its CLI reported none), so it cannot be "
            "continued; spawn a new run instead"
        )
    return _continue(
        args,
        turn,
        root=root,
        config=config,
        record=record,
        status=status,
        session_path=session_path,
        session=session,
        session_id=str(session_id),
        run_id=run_id,
        flow=flow,
        max_turns=max_turns,
    )


class _Turn(NamedTuple):
    """The agent a `send` continues, checked: its config, prompt, report files and message."""

    agent: str
    agent_id: str
    prompt_text: str
    report: Path
    success: Path
    failure: Path
    task: str


def _prepare_turn(
    args: argparse.Namespace,
    *,
    root: Path,
    config: Any,
    record: dict[str, Any],
    status: dict[str, Any],
    run_id: str,
    flow: str,
    session_id: str | None,
) -> _Turn:
    """Resolve the run's agent and refuse, before any run exists, when it cannot be continued:
    its adapter changed, its system prompt is gone, or its CLI cannot resume (the adapter's own
    refusal, asked with the recorded session id or a stand-in when none was recorded)."""
    from gitflow_agents.agents import get_adapter
    from gitflow_agents.agents.base import Invocation
    from gitflow_agents.prompt import agent_dir
    from gitflow_agents.supervisor import signal_paths

    agent_id = str(record.get("agent") or status.get("agent"))
    agent = _agent_config_name(record, status, agent_id, config)
    agent_cfg = config.agent(agent)
    recorded_adapter = record.get("adapter") or (status.get("extra") or {}).get("adapter")
    if recorded_adapter and recorded_adapter != agent_cfg.adapter:
        raise UsageError(
            f"send: agent {agent!r} now uses the {agent_cfg.adapter} adapter, but the session of "
            f"run {run_id} is a {recorded_adapter} session"
        )
    adapter = get_adapter(agent_cfg.adapter)
    workflow = config.completion_workflow_for(agent)
    a_dir = agent_dir(root, config.flow_dir, flow, agent_id)
    prompt_path = a_dir / "system_prompt.md"
    try:
        prompt_text = prompt_path.read_text(encoding="utf-8")
    except OSError:
        raise UsageError(f"send: {prompt_path} is missing; cannot continue run {run_id}") from None
    report, success, failure = signal_paths(
        a_dir, workflow.report_filename, workflow.success_suffix, workflow.failure_suffix
    )
    task = SEND_TASK.format(
        message=args.message,
        prompt=prompt_path,
        report=report,
        success=success.name,
        failed=failure.name,
    )
    # Refuse before any run exists when this CLI cannot resume (the adapter says so).
    try:
        adapter.launch(
            Invocation(
                agent_id=agent_id,
                agent_dir=a_dir,
                workdir=root,
                system_prompt_path=prompt_path,
                system_prompt=prompt_text,
                task=task,
                model=agent_cfg.model,
                options=agent_cfg.options,
                config_dir=a_dir / "config",
                env={},
                command=agent_cfg.command,
                resume_session_id=session_id or "(no session id recorded)",
            )
        )
    except UsageError as exc:
        raise UsageError(f"send: {exc}") from None
    return _Turn(agent, agent_id, prompt_text, report, success, failure, task)


def _continue(
    args: argparse.Namespace,
    turn_info: _Turn,
    *,
    root: Path,
    config: Any,
    record: dict[str, Any],
    status: dict[str, Any],
    session_path: Path,
    session: dict[str, Any],
    session_id: str,
    run_id: str,
    flow: str,
    max_turns: int | None,
) -> int:
    from gitflow_agents.cards import CardLockedError, card_lock
    from gitflow_agents.commands.spawn import AgentJob, _clear_previous, execute, print_result
    from gitflow_agents.runs import new_run_id

    agent, agent_id, prompt_text, report, success, failure, task = turn_info
    new_id = new_run_id()
    turn = int(session.get("turns") or 1) + 1
    link = {
        "root": session["root"],
        "turn": turn,
        "previousRunId": run_id,
        "resumedSessionId": session_id,
        "maxTurns": max_turns,
    }
    session_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with card_lock(session_path, new_id):
            _clear_previous(report, success, failure, rerun=True)
            session = {
                **session,
                "runs": [*session.get("runs", [run_id]), new_id],
                "turns": turn,
                "maxTurns": max_turns,
                "active": new_id,
            }
            _write_session(session_path, session)
            job = AgentJob(
                root=root,
                config=config,
                agent=agent,
                agent_id=agent_id,
                flow_name=flow,
                kind=str(record.get("kind") or status.get("kind") or "implement"),
                prompt_text=prompt_text,
                task=task,
                resume_session_id=session_id,
                stuck_timeout=float(args.stuck_timeout or config.stuck_timeout_secs),
                timeout=float(args.timeout or config.max_wait_secs) or None,
                kill_grace=float(args.kill_grace),
                quiet=args.quiet,
                session=link,
                message=args.message,
                message_event=args.session_event,
                run_id=new_id,
            )
            try:
                result = execute(job)
            finally:
                _after_turn(session_path, session, new_id, max_turns)
    except CardLockedError:
        raise UsageError(
            f"send: session {session['root']} is busy: another send is running in it"
        ) from None
    print_result(result, as_json=args.json, root=root)
    final = _read_session(session_path)
    if final.get("closed") and not args.json:
        print(f"session {final['root']} is now closed: {final.get('closedReason')}")
    return int(ExitCode.OK if result.get("status") == "succeeded" else ExitCode.AGENT_FAILED)


def _session_path(
    root: Path, flow_dir: str, flow: str, record: dict[str, Any], run_id: str
) -> Path:
    link = record.get("session")
    first = str(link.get("root") or run_id) if isinstance(link, dict) else run_id
    return sessions_dir(root, flow_dir, flow) / f"{first}.json"


def _new_session(run_id: str, record: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """The session of a spawned run that was never continued: it has had one turn."""
    return {
        "root": run_id,
        "flow": record.get("flow") or status.get("flow"),
        "agent": record.get("agent") or status.get("agent"),
        "adapter": record.get("adapter"),
        "runs": [run_id],
        "turns": 1,
        "maxTurns": None,
        "closed": False,
        "sessionId": record.get("session_id") or status.get("session_id"),
    }


def _read_session(path: Path) -> dict[str, Any]:
    from gitflow_agents.runs import read_json

    return read_json(path) or {}


def _write_session(path: Path, session: dict[str, Any], *, close: str | None = None) -> None:
    from gitflow_agents.runs import write_json_atomic

    data = dict(session)
    if close is not None and not data.get("closed"):
        data.update(closed=True, closedReason=close, closedAt=time.time())
    write_json_atomic(path, data)


def _check_open(session: dict[str, Any], run_id: str) -> None:
    if session.get("closed"):
        raise UsageError(
            f"send: the session of run {run_id} is closed ({session.get('closedReason')})"
        )
    latest = (session.get("runs") or [run_id])[-1]
    if latest != run_id:
        raise UsageError(
            f"send: run {run_id} is not the latest turn of its session; send to run {latest}"
        )


def _close(path: Path, session: dict[str, Any], reason: str) -> int:
    if session.get("closed"):
        print(f"session {session['root']} was already closed ({session.get('closedReason')})")
        return 0
    _write_session(path, session, close=reason)
    print(f"closed session {session['root']} after {session.get('turns', 1)} turn(s)")
    return 0


def _after_turn(path: Path, session: dict[str, Any], run_id: str, max_turns: int | None) -> None:
    """Record the session id the CLI reported for this turn; close the session on its last turn."""
    from gitflow_agents.runs import RunPaths, read_json

    latest = {**_read_session(path), **{k: session[k] for k in ("runs", "turns", "maxTurns")}}
    latest.pop("active", None)
    run_dir = path.parent.parent / "runs" / run_id
    record = (read_json(RunPaths(run_dir).result) or {}).get("run") or {}
    if record.get("session_id"):
        latest["sessionId"] = record["session_id"]
    close = None
    if max_turns is not None and int(latest["turns"]) >= max_turns:
        close = f"max turns ({max_turns}) reached"
    _write_session(path, latest, close=close)


def _agent_config_name(
    record: dict[str, Any], status: dict[str, Any], agent_id: str, config: Any
) -> str:
    """The run's agent key in the config: recorded since session mode; else derived from the id
    (``step-NN-<agent>`` or ``<agent>``)."""
    import re

    name = record.get("agentConfig") or (status.get("extra") or {}).get("agent_config")
    if isinstance(name, str) and name:
        return name
    derived = re.sub(r"^step-\d+-", "", agent_id)
    if derived in config.agents:
        return derived
    raise UsageError(f"send: cannot tell which configured agent ran {agent_id!r}")
