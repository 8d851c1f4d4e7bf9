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
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from gitflow_agents.errors import ExitCode, UsageError
from gitflow_agents.runs import FLOW_KINDS

TASK = (
    "Follow the instructions in your system prompt ({prompt}). Write your progress to {report}; "
    "when you are done rename it to {success}, or to {failed} if you could not complete the task."
)


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.agents import get_adapter
    from gitflow_agents.agents.base import Invocation
    from gitflow_agents.assets import load_manifest
    from gitflow_agents.cards import append_history, set_card_status
    from gitflow_agents.config import find_project_root, load_flow_config
    from gitflow_agents.events import ConsoleChannel, EventHub, JsonlChannel
    from gitflow_agents.plan import parse_plan
    from gitflow_agents.prompt import (
        PromptRequest,
        agent_dir,
        assemble_prompt,
        default_agent_id,
        write_system_prompt,
    )
    from gitflow_agents.runs import RunStatus, create_run, write_status
    from gitflow_agents.supervisor import signal_paths, supervise

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
    adapter = get_adapter(agent_cfg.adapter)
    kind = args.kind or _default_kind(agent_cfg.type, args.agent)
    workflow = config.completion_workflow_for(args.agent)
    a_dir = agent_dir(root, config.flow_dir, flow_name, agent_id)
    report, success, failure = signal_paths(
        a_dir, workflow.report_filename, workflow.success_suffix, workflow.failure_suffix
    )
    _clear_previous(report, success, failure, rerun=args.rerun)
    prompt_path = write_system_prompt(root, config, agent_id, flow_name, prompt.text)
    paths = create_run(root, config.flow_dir, flow_name)
    run_id = paths.run_dir.name
    stuck = float(args.stuck_timeout or config.stuck_timeout_secs)
    timeout = float(args.timeout or config.max_wait_secs) or None
    status = RunStatus(
        run_id=run_id,
        flow=flow_name,
        agent=agent_id,
        state="queued",
        started=time.time(),
        supervisor_pid=os.getpid(),
        agent_dir=str(a_dir),
        kind=kind,
        extra={"adapter": adapter.name, "stuck_timeout": stuck, "timeout": timeout},
    )
    write_status(paths, status)
    base_sha = _head(root)
    before = _worktree_state(root, base_sha)
    card = Path(args.card).absolute() if args.card else None
    rel_log = os.path.relpath(paths.run_dir, root)

    channels: list[Any] = [JsonlChannel(paths.events)]
    if not args.quiet:
        tty = sys.stderr.isatty() and not os.environ.get("CI")
        channels.append(ConsoleChannel(sys.stderr, is_tty=tty))
    hub = EventHub(channels, run_id=run_id)
    outcome = None
    failure_reason = "the supervisor did not finish"
    result: dict[str, Any] = {}
    with _card_scope(card, run_id) as locked, _sigterm_as_interrupt():
        try:
            if locked is not None:
                set_card_status(locked, kind, "queued")
                append_history(locked, _queued_line(kind, run_id, plan, args))
                set_card_status(locked, kind, "running")
            hub.emit("harness:start", {"flow": flow_name, "kind": kind})
            hub.emit("task:start", {"node": agent_id, "step": args.step})
            invocation = Invocation(
                agent_id=agent_id,
                agent_dir=a_dir,
                workdir=root,
                system_prompt_path=prompt_path,
                system_prompt=prompt.text,
                task=TASK.format(
                    prompt=prompt_path, report=report, success=success.name, failed=failure.name
                ),
                model=agent_cfg.model,
                options=agent_cfg.options,
                config_dir=a_dir / "config",
                env=dict(os.environ),
                command=agent_cfg.command,
            )
            spec = adapter.launch(invocation)
            outcome = supervise(
                spec,
                agent_dir=a_dir,
                run_dir=paths.run_dir,
                report_name=workflow.report_filename,
                success_suffix=workflow.success_suffix,
                failure_suffix=workflow.failure_suffix,
                stuck_timeout=stuck,
                timeout=timeout,
                watch_paths=[root],
                ignore_paths=[root / config.flow_dir],
                hub=hub,
                run_id=run_id,
                parse_output=adapter.parse_output,
                kill_grace=float(args.kill_grace),
            )
        except KeyboardInterrupt as exc:
            outcome = getattr(exc, "outcome", None)
            failure_reason = "interrupted"
            raise
        except Exception as exc:
            failure_reason = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            result = _record(
                paths=paths,
                kind=kind,
                outcome=outcome,
                failure_reason=failure_reason,
                root=root,
                base_sha=base_sha,
                changed=lambda: _changed_files(root, base_sha, before, _own_files(root, card)),
                flow_name=flow_name,
                agent_id=agent_id,
                adapter=adapter.name,
                success=success,
                failure=failure,
                report=report,
            )
            ok = result["status"] == "succeeded"
            hub.emit(
                "task:complete" if ok else "task:failed",
                {"node": agent_id, "status": result["run"]["outcome"]},
            )
            hub.emit("harness:complete", {"status": result["status"]})
            hub.close()
            if locked is not None:
                _finish_card(locked, kind, result, run_id, rel_log)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        run_info = result["run"]
        print(f"{agent_id}: {run_info['outcome']} - {run_info['reason']} (run {run_id})")
        print(f"  logs: {rel_log}/")
    return int(ExitCode.OK if result["status"] == "succeeded" else ExitCode.AGENT_FAILED)


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
    from gitflow_agents import git

    return git.head_sha(root) if (root / ".git").exists() and git.has_head(root) else None


def _worktree_state(root: Path, base_sha: str | None) -> dict[str, tuple[int, int]]:
    """Changed (vs ``base_sha``) and untracked files with their (mtime_ns, size)."""
    from gitflow_agents import git

    if base_sha is None:
        return {}
    changed = git.run_git(root, "diff", "--name-only", "-z", base_sha, check=False).stdout
    untracked = git.run_git(
        root, "ls-files", "--others", "--exclude-standard", "-z", check=False
    ).stdout
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
) -> dict[str, Any]:
    """Write result.json (and the final status.json) from whatever is known; never raises."""
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
    replies = [reply_text] if reply_text.strip() else []
    structured = sum(1 for text in replies if parse_reply(text).structured)
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
            from gitflow_agents.runs import write_json_atomic

            write_json_atomic(paths.status, data)
    return result


def _queued_line(kind: str, run_id: str, plan: Any, args: argparse.Namespace) -> str:
    from gitflow_agents.cards import history_line

    if kind == "review":
        return history_line("review", "queued", run_id=run_id, target=args.branch or "HEAD")
    if kind == "research":
        return history_line("research", "queued", run_id=run_id, topic=args.task or "")
    return history_line("implement", "queued", run_id=run_id, branch=args.branch or "HEAD")


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


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (CI cancelling the job) takes the Ctrl-C path: the agent's tree dies first."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
