"""``gitflow-agents spawn``: run one agent on a plan step, supervised, and record the run.

Exit 0 when the agent succeeded (renamed its report to ``report.complete.md``), 3 when it failed,
got stuck, timed out, crashed or was canceled, 130 on Ctrl-C / SIGTERM (the agent's whole
process tree is killed first). ``result.json`` is written in every case.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitflow_agents.errors import ExitCode, UsageError
from gitflow_agents.runs import FLOW_KINDS

if TYPE_CHECKING:
    from gitflow_agents.config import FlowConfig


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.assets import load_manifest
    from gitflow_agents.config import find_project_root, load_flow_config
    from gitflow_agents.launch import signal_files
    from gitflow_agents.plan import parse_plan
    from gitflow_agents.prompt import PromptRequest, agent_dir, assemble_prompt, default_agent_id

    if args.plan is not None and args.step is None:
        raise UsageError("spawn: --plan needs --step")
    if args.plan is None and args.task is None:
        raise UsageError("spawn: give --plan with --step, or --task")
    root = find_project_root(Path.cwd())
    config = load_flow_config(root, args.flow_type, args.variant)
    agent_cfg = config.agent(args.agent)
    plan = parse_plan(Path(args.plan).absolute(), config.spec_plan) if args.plan else None
    flow_name = args.flow or (plan.name if plan is not None else args.agent)
    agent_id = args.agent_name or default_agent_id(args.agent, args.step)
    request = PromptRequest(
        root=root,
        config=config,
        agent=args.agent,
        agent_id=agent_id,
        flow_name=flow_name,
        step=args.step,
        plan=plan,
        task=args.task,
        after=tuple(a.strip() for a in (args.after or "").split(",") if a.strip()),
        preamble=args.preamble,
        manifest=load_manifest(root),
    )
    prompt = assemble_prompt(request)
    kind = args.kind or _default_kind(agent_cfg.type, args.agent)
    a_dir = agent_dir(root, config.flow_dir, flow_name, agent_id)
    report, success, failure = signal_files(config, args.agent, a_dir)
    _clear_previous(report, success, failure, rerun=args.rerun)
    job = AgentJob(
        root=root,
        config=config,
        agent=args.agent,
        agent_id=agent_id,
        flow_name=flow_name,
        kind=kind,
        prompt_text=prompt.text,
        prompt_segments=len(prompt.segments),
        stuck_timeout=float(args.stuck_timeout or config.stuck_timeout_secs),
        timeout=float(args.timeout or config.max_wait_secs) or None,
        kill_grace=float(args.kill_grace),
        card=Path(args.card).absolute() if args.card else None,
        queued_line=lambda run_id: _queued_line(kind, run_id, plan, args, root),
        quiet=args.quiet,
        step=args.step,
    )
    result = execute(job)
    print_result(result, as_json=args.json, root=root)
    return int(ExitCode.OK if result["status"] == "succeeded" else ExitCode.AGENT_FAILED)


@dataclass(frozen=True)
class AgentJob:
    """One supervised agent run, as ``spawn`` and ``send`` hand it to :func:`execute`.

    ``prompt_text`` is written to the agent's ``system_prompt.md``; ``task`` is the user message
    (default: the standard "follow your system prompt" line). With ``resume_session_id`` the
    adapter continues that CLI session (``send``); ``session`` is recorded as ``run.session`` and
    ``message`` is emitted as ``message_event`` (``session:message`` / ``session:reply``).
    """

    root: Path
    config: FlowConfig
    agent: str  # the agent's key in the .flow config
    agent_id: str
    flow_name: str
    kind: str
    prompt_text: str
    stuck_timeout: float
    timeout: float | None
    kill_grace: float = 3.0
    prompt_segments: int | None = None
    task: str | None = None
    resume_session_id: str | None = None
    card: Path | None = None
    queued_line: Callable[[str], str] | None = None
    quiet: bool = False
    step: int | None = None
    session: Mapping[str, Any] | None = None
    message: str | None = None
    message_event: str = "session:message"
    run_id: str | None = None  # a fresh one when None
    exit_grace: float = 10.0


@contextlib.contextmanager
def _phase(hub: Any, name: str, data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``phase:start`` now, ``phase:complete`` at the end (status failed / interrupted when the
    block raises); the caller adds to ``data`` what the complete event should carry."""
    hub.emit("phase:start", {"phase": name})
    status = "ok"
    try:
        yield data
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except BaseException as exc:
        status, data["error"] = "failed", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        hub.emit("phase:complete", {"phase": name, "status": status, **data})


def execute(job: AgentJob) -> dict[str, Any]:
    """Run ``job`` supervised and record it; returns the ``result.json`` written (in every case).

    Events (events.jsonl, console): ``harness:start``, [``session:message``], phase ``prepare``
    (system prompt written, card queued -> running, launch built by the adapter), phase ``agent``
    (``task:start``, ``agent:*``, ``task:complete|failed``), phase ``record`` (result.json,
    ``agent:reply``, card), ``harness:complete``. Raises what the launch raises (after recording)
    and KeyboardInterrupt on Ctrl-C / SIGTERM (the agent's tree already killed).
    """
    from gitflow_agents.cards import append_history, set_card_status
    from gitflow_agents.launch import (
        event_hub,
        prepare,
        signal_files,
        sigterm_as_interrupt,
        supervise_agent,
    )
    from gitflow_agents.prompt import agent_dir, write_system_prompt
    from gitflow_agents.runs import RunStatus, create_run, write_status

    root, config = job.root, job.config
    adapter_name = config.agent(job.agent).adapter
    a_dir = agent_dir(root, config.flow_dir, job.flow_name, job.agent_id)
    report, success, failure = signal_files(config, job.agent, a_dir)
    paths = create_run(root, config.flow_dir, job.flow_name, job.run_id)
    run_id = paths.run_dir.name
    status = RunStatus(
        run_id=run_id,
        flow=job.flow_name,
        agent=job.agent_id,
        state="queued",
        started=time.time(),
        supervisor_pid=os.getpid(),
        agent_dir=str(a_dir),
        kind=job.kind,
        extra={
            "adapter": adapter_name,
            "agent_config": job.agent,
            "stuck_timeout": job.stuck_timeout,
            "timeout": job.timeout,
            **({"session": dict(job.session)} if job.session else {}),
        },
    )
    write_status(paths, status)
    base_sha = _head(root)
    before = _worktree_state(root, base_sha)
    card = job.card
    rel_log = os.path.relpath(paths.run_dir, root)

    hub = event_hub(paths.events, run_id, quiet=job.quiet)
    outcome = None
    failure_reason = "the supervisor did not finish"
    result: dict[str, Any] = {}
    task_started = False
    with _card_scope(card, run_id) as locked, sigterm_as_interrupt():
        try:
            hub.emit("harness:start", {"flow": job.flow_name, "kind": job.kind})
            if job.message is not None:
                hub.emit(
                    job.message_event,
                    {
                        "content": job.message,
                        "agent": job.agent_id,
                        "previousRunId": (job.session or {}).get("previousRunId"),
                    },
                )
            with _phase(hub, "prepare", {}) as prepared:
                prompt_path = write_system_prompt(
                    root, config, job.agent_id, job.flow_name, job.prompt_text
                )
                prepared["systemPrompt"] = str(prompt_path)
                if job.prompt_segments is not None:
                    prepared["segments"] = job.prompt_segments
                if locked is not None:
                    set_card_status(locked, job.kind, "queued")
                    if job.queued_line is not None:
                        append_history(locked, job.queued_line(run_id))
                    set_card_status(locked, job.kind, "running")
                agent_launch = prepare(
                    config,
                    job.agent,
                    agent_id=job.agent_id,
                    agent_dir=a_dir,
                    workdir=root,
                    prompt_path=prompt_path,
                    prompt_text=job.prompt_text,
                    task=job.task,
                    resume_session_id=job.resume_session_id,
                )
                argv = agent_launch.spec.argv
                prepared["command"] = argv[0] if argv else ""
            with _phase(hub, "agent", {}) as ran:
                hub.emit("task:start", {"node": job.agent_id, "step": job.step})
                task_started = True
                outcome = supervise_agent(
                    agent_launch,
                    run_dir=paths.run_dir,
                    hub=hub,
                    run_id=run_id,
                    stuck_timeout=job.stuck_timeout,
                    timeout=job.timeout,
                    kill_grace=job.kill_grace,
                    exit_grace=job.exit_grace,
                )
                ran["outcome"] = outcome.status
                _emit_task_end(hub, job.agent_id, outcome.status)
                task_started = False
        except KeyboardInterrupt as exc:
            outcome = getattr(exc, "outcome", None)
            failure_reason = "interrupted"
            raise
        except Exception as exc:
            failure_reason = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if task_started:  # the run phase raised: the task ends with it
                _emit_task_end(hub, job.agent_id, outcome.status if outcome else "failed")
            with _phase(hub, "record", {}) as recorded:
                result = _record(
                    paths=paths,
                    kind=job.kind,
                    outcome=outcome,
                    failure_reason=failure_reason,
                    root=root,
                    base_sha=base_sha,
                    changed=lambda: _changed_files(root, base_sha, before, _own_files(root, card)),
                    flow_name=job.flow_name,
                    agent_id=job.agent_id,
                    adapter=adapter_name,
                    success=success,
                    failure=failure,
                    report=report,
                    agent_config=job.agent,
                    session=job.session,
                )
                recorded["result"] = str(paths.result)
                reply = result["run"].get("reply")
                if reply is not None:
                    hub.emit("agent:reply", {"agent": job.agent_id, **reply})
                if locked is not None:
                    _finish_card(locked, job.kind, result, run_id, rel_log)
            hub.emit("harness:complete", {"status": result.get("status", "failed")})
            hub.close()
    return result


def _emit_task_end(hub: Any, node: str, outcome_status: str) -> None:
    from gitflow_agents.runs import result_status

    ok = result_status(outcome_status) == "succeeded"
    hub.emit("task:complete" if ok else "task:failed", {"node": node, "status": outcome_status})


def print_result(result: dict[str, Any], *, as_json: bool, root: Path | None = None) -> None:
    """``--json``: the result; else the outcome line, the log folder, the formatted reply (seed
    004) and, when the agent needs input, its questions and how to answer them."""
    from gitflow_agents.protocol import AgentReply, ReplyStatus, format_reply

    if as_json:
        print(json.dumps(result, indent=2))
        return
    run_info = result["run"]
    run_id = run_info["runID"]
    print(f"{run_info['agent']}: {run_info['outcome']} - {run_info['reason']} (run {run_id})")
    logs = str(run_info.get("logDirectory") or "")
    print(f"  logs: {os.path.relpath(logs, root) if root and logs else logs}/")
    reply = run_info.get("reply")
    if not reply:
        return
    parsed = AgentReply(
        summary=reply.get("summary", ""),
        actions=tuple(reply.get("actions", ())),
        files_created=tuple(reply.get("filesCreated", ())),
        files_modified=tuple(reply.get("filesModified", ())),
        questions=tuple(reply.get("questions", ())),
        status=ReplyStatus(reply["status"]) if reply.get("status") else None,
        structured=bool(reply.get("structured")),
    )
    print()
    print(format_reply(parsed, icons=sys.stdout.isatty()), end="")
    if parsed.status is ReplyStatus.NEEDS_INPUT:
        print()
        print(f"The agent needs input. Answer with: gitflow-agents send {run_id} 'your answer'")


def _default_kind(agent_type: str, agent: str) -> str:
    """review for reviewer agents, research for researchers, else implement."""
    text = f"{agent_type} {agent}".lower()
    if "review" in text:
        return "review"
    if "research" in text:
        return "research"
    return "implement"


def _clear_previous(report: Path, success: Path, failure: Path, *, rerun: bool) -> None:
    stale = [p for p in (success, failure) if p.exists()]
    if not stale:
        return
    if not rerun:
        raise UsageError(
            f"{stale[0]} is left from an earlier run of this agent; give a new --agent-name, "
            "or --rerun to move the old report to previous/"
        )
    previous = report.parent / "previous"
    previous.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for path in stale:
        path.rename(previous / f"{stamp}-{path.name}")


def _head(root: Path) -> str | None:
    """HEAD's commit, None outside a repository or before its first commit (one git call)."""
    from gitflow_agents import git

    if not (root / ".git").exists():
        return None
    head = git.run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    if head.returncode != 0:
        return None
    return head.stdout.strip() or None


def _worktree_state(root: Path, base_sha: str | None) -> dict[str, tuple[int, int]]:
    """Changed (vs ``base_sha``) and untracked files with their (mtime_ns, size)."""
    from gitflow_agents import git

    if base_sha is None:
        return {}
    # The two read-only queries run side by side (one fewer process start-up to wait for).
    untracked_out: list[str] = []
    lister = threading.Thread(
        target=lambda: untracked_out.append(
            git.run_git(
                root, "ls-files", "--others", "--exclude-standard", "-z", check=False
            ).stdout
        ),
        daemon=True,
    )
    lister.start()
    try:
        changed = git.run_git(root, "diff", "--name-only", "-z", base_sha, check=False).stdout
    finally:
        lister.join()
    untracked = untracked_out[0] if untracked_out else ""
    state = {}
    for name in (changed + untracked).split("\0"):
        if name:
            try:
                info = (root / name).stat()
                state[name] = (info.st_mtime_ns, info.st_size)
            except OSError:
                state[name] = (0, -1)  # deleted
    return state


def _changed_files(
    root: Path, base_sha: str | None, before: dict[str, tuple[int, int]], skip: set[str]
) -> list[str]:
    """Files the run changed: differing from the start commit or untracked, and not in the
    same state as when the run started (a dirty file the agent never touched is not its change)."""
    after = _worktree_state(root, base_sha)
    names = {n for n, state in after.items() if before.get(n) != state}
    names |= {n for n in before if n not in after}  # changed before, restored by the agent
    return sorted(names - skip)


def _own_files(root: Path, card: Path | None) -> set[str]:
    """The card and its lock: written by this command, not by the agent."""
    from gitflow_agents.cards import lock_path

    if card is None:
        return set()
    own = set()
    for path in (card, lock_path(card)):
        with contextlib.suppress(ValueError):
            own.add(path.resolve().relative_to(root.resolve()).as_posix())
    return own


def _record(
    *,
    paths: Any,
    kind: str,
    outcome: Any,
    failure_reason: str,
    root: Path,
    base_sha: str | None,
    changed: Callable[[], list[str]],
    flow_name: str,
    agent_id: str,
    adapter: str,
    success: Path,
    failure: Path,
    report: Path,
    agent_config: str | None = None,
    session: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write result.json (and the final status.json) from whatever is known; never raises.

    ``run.reply`` is the agent's reply parsed with seed 004's protocol (``structured`` False
    when it fell back to heuristics); ``run.replies`` counts structured vs unstructured replies
    (one reply per run: ``status`` adds them up over runs)."""
    from gitflow_agents.protocol import parse_reply
    from gitflow_agents.runs import flow_result, read_json, result_status, write_result

    status = result_status(outcome.status) if outcome is not None else "failed"
    if failure_reason == "interrupted" and outcome is None:
        status = "canceled"
    report_path = next((p for p in (success, failure, report) if p.exists()), None)
    report_text = ""
    if report_path is not None:
        with contextlib.suppress(OSError):
            report_text = report_path.read_text(encoding="utf-8", errors="replace")
    reply_text = ""
    parsed = getattr(outcome, "output", None)
    if parsed is not None and getattr(parsed, "reply", None):
        reply_text = str(parsed.reply)
    elif outcome is not None:
        reply_text = outcome.stdout
    try:
        changed_files = changed()
    except Exception:
        changed_files = []
    try:
        result = flow_result(
            kind,
            status,
            report_text=report_text,
            reply_text=reply_text,
            changed_files=changed_files,
        )
    except Exception as exc:
        result = flow_result(kind, status)
        failure_reason += f"; report not read: {exc}"
    parsed_reply = parse_reply(reply_text) if reply_text.strip() else None
    structured = int(parsed_reply is not None and parsed_reply.structured)
    replies = [parsed_reply] if parsed_reply is not None else []
    run: dict[str, Any] = {
        "runID": paths.run_dir.name,
        "flow": flow_name,
        "kind": kind,
        "agent": agent_id,
        "adapter": adapter,
        "outcome": outcome.status if outcome is not None else status,
        "reason": outcome.reason if outcome is not None else failure_reason,
        "logDirectory": str(paths.run_dir),
        "report": str(report_path) if report_path else None,
        "baseSha": base_sha,
        "replies": {"structured": structured, "unstructured": len(replies) - structured},
    }
    if agent_config is not None:
        run["agentConfig"] = agent_config
    if session:
        run["session"] = dict(session)
    if parsed_reply is not None:
        run["reply"] = _reply_json(parsed_reply)
    if outcome is not None:
        run.update(outcome.to_json())
        run["outcome"] = outcome.status
        for key in ("session_id", "input_tokens", "output_tokens", "cost_usd"):
            value = getattr(parsed, key, None)
            if value is not None:
                run[key] = value
    result["run"] = run
    with contextlib.suppress(OSError):
        write_result(paths, result)
        data = read_json(paths.status) or {}
        if data.get("state") in (None, "queued", "running", "killing"):
            data.update(state=run["outcome"], reason=run["reason"], ended=time.time())
        if run.get("session_id"):
            data["session_id"] = run["session_id"]  # what `send` continues
        if "reply" in run:
            data["reply_status"] = run["reply"]["status"]
        from gitflow_agents.runs import write_json_atomic

        write_json_atomic(paths.status, data, durable=False)  # live state; result.json is durable
    return result


def _reply_json(reply: Any) -> dict[str, Any]:
    """A parsed seed-004 reply as recorded in ``run.reply`` (and the ``agent:reply`` event)."""
    return {
        "status": reply.status.value if reply.status is not None else None,
        "structured": reply.structured,
        "summary": reply.summary,
        "actions": list(reply.actions),
        "filesCreated": list(reply.files_created),
        "filesModified": list(reply.files_modified),
        "questions": list(reply.questions),
        "warnings": list(reply.warnings),
    }


def _queued_line(kind: str, run_id: str, plan: Any, args: argparse.Namespace, root: Path) -> str:
    from gitflow_agents import git
    from gitflow_agents.cards import history_line

    # --branch, else the checked-out branch; "HEAD" only on a detached HEAD or outside git
    branch = args.branch or git.current_branch(root) or "HEAD"
    if kind == "review":
        return history_line("review", "queued", run_id=run_id, target=branch)
    if kind == "research":
        return history_line("research", "queued", run_id=run_id, topic=args.task or "")
    return history_line("implement", "queued", run_id=run_id, branch=branch)


def _finish_card(card: Path, kind: str, result: dict[str, Any], run_id: str, log: str) -> None:
    from gitflow_agents.cards import (
        append_history,
        apply_checked_criteria,
        history_line,
        set_card_status,
    )

    status = result["status"]
    flow = kind if kind in FLOW_KINDS else "implement"
    set_card_status(card, flow, status)
    if status == "failed":
        append_history(card, history_line(flow, "failed", run_id=run_id, log_path=log))
        return
    if status == "canceled":
        append_history(card, history_line(flow, "canceled", run_id=run_id))
        return
    if flow == "implement":
        ticked = apply_checked_criteria(card, result["checkedCriteria"])
        tests = result["tests"]
        verdict = ("pass" if tests["passed"] else "fail") if tests["ran"] else "none"
        line = history_line(
            "implement", "succeeded", run_id=run_id, checked=len(ticked), tests=verdict
        )
    elif flow == "review":
        counts = [
            sum(1 for f in result["findings"] if f["severity"] == s)
            for s in ("error", "warn", "info")
        ]
        line = history_line(
            "review",
            "succeeded",
            run_id=run_id,
            findings=(counts[0], counts[1], counts[2]),
            overall=result["overall"],
        )
    else:
        line = history_line("research", "succeeded", run_id=run_id, sources=len(result["sources"]))
    append_history(card, line)


@contextlib.contextmanager
def _card_scope(card: Path | None, run_id: str) -> Iterator[Path | None]:
    from gitflow_agents.cards import card_lock

    if card is None:
        yield None
        return
    with card_lock(card, run_id):
        yield card
