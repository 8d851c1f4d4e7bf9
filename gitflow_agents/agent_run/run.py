"""One agent run from start to end: prepare → supervise → record.

``spawn``, a session's next turn (``send``) and the agent reviewer of ``git agent-review --agent X``
all run their agent here, so every run leaves the same records (docs/protocol.md, Run records):
``status.json`` from the start, ``events.jsonl`` and ``worker.log`` while it runs, and
``result.json`` at the end, in every case.

:func:`execute` is the whole run of one agent, with its own event hub. :class:`AgentRunner` is the
same run in its steps, for a caller that starts several agents at once on one shared hub:
``prepare()`` each, ``supervise()`` each (in its own thread), ``record()`` each.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitflow_agents.base.errors import UsageError

if TYPE_CHECKING:
    from gitflow_agents.agent_run.launch import Prepared
    from gitflow_agents.agent_run.record import RunFacts
    from gitflow_agents.config import FlowConfig
    from gitflow_agents.runs import RunPaths
    from gitflow_agents.runs.events import EventHub
    from gitflow_agents.supervisor import Outcome, Status


@dataclass(frozen=True)
class AgentJob:
    """One supervised agent run, as a caller hands it to :func:`execute` / :class:`AgentRunner`.

    ``prompt_text`` is written to the agent's ``system_prompt.md``; ``task`` is the user message
    (default: the standard "follow your system prompt" line). With ``resume_session_id`` the
    adapter continues that CLI session (``send``); ``session`` is recorded as ``run.session`` and
    ``message`` is emitted as ``message_event`` (``session:message`` / ``session:reply``).
    ``workdir`` is where the agent works (default ``root``, where its records go); ``env`` the
    environment its adapter draws the allow-list from (default ``os.environ``).
    """

    root: Path
    config: FlowConfig
    agent: str  # the agent's key in the .flow config
    agent_id: str
    flow_name: str
    kind: str  # implement | review | research: the result.json shape
    prompt_text: str
    stuck_timeout: float
    timeout: float | None
    kill_grace: float = 3.0
    prompt_segments: int | None = None
    task: str | None = None
    resume_session_id: str | None = None
    card: Path | None = None
    queued_line: Callable[[str], str] | None = None  # run id -> the card's "queued" history line
    quiet: bool = False  # no console lines on stderr
    tty: bool | None = None  # console redrawn in place (None: on a terminal outside CI)
    step: int | None = None
    session: Mapping[str, Any] | None = None
    message: str | None = None
    message_event: str = "session:message"
    run_id: str | None = None  # a fresh one when None
    exit_grace: float = 10.0
    workdir: Path | None = None
    env: Mapping[str, str] | None = None
    stuck_grace: float | None = None  # None: the config's defaults.stuck_retry_grace_secs
    secrets: frozenset[str] = frozenset()  # exact values masked in its records, log and events


def execute(job: AgentJob) -> dict[str, Any]:
    """Run ``job`` supervised and record it; returns the ``result.json`` written (in every case).

    Events (events.jsonl, console): ``harness:start``, [``session:message``], phase ``prepare``
    (system prompt written, card queued -> running, launch built by the adapter), phase ``agent``
    (``task:start``, ``agent:*``, ``task:complete|failed``), phase ``record`` (result.json,
    ``agent:reply``, card), ``harness:complete``. Raises what the launch raises (after recording)
    and KeyboardInterrupt on Ctrl-C / SIGTERM (the agent's tree already killed).
    """
    from gitflow_agents.agent_run.launch import sigterm_as_interrupt
    from gitflow_agents.agents.installed import check_agents

    check_agents(job.config, [job.agent], cwd=job.workdir or job.root, env=job.env)
    run = AgentRunner(job)
    result: dict[str, Any] = {}
    with _card_scope(job.card, run.run_id) as card, sigterm_as_interrupt():
        try:
            run.emit("harness:start", {"flow": job.flow_name, "kind": job.kind})
            if job.message is not None:
                run.emit(
                    job.message_event,
                    {
                        "content": job.message,
                        "agent": job.agent_id,
                        "previousRunId": (job.session or {}).get("previousRunId"),
                    },
                )
            with _phase(run, "prepare") as prepared:
                prepared.update(run.prepare(card))
            with _phase(run, "agent") as ran:
                ran["outcome"] = run.supervise().status
        except BaseException as exc:
            run.fail(exc)
            raise
        finally:
            with _phase(run, "record") as recorded:
                result = run.record(card)
                recorded["result"] = str(run.paths.result)
            run.emit("harness:complete", {"status": result.get("status", "failed")})
            run.close()
    return result


class AgentRunner:
    """One agent run in steps: created (run folder, ``status.json`` queued, the start commit),
    :meth:`prepare`, :meth:`supervise` (or :meth:`run_in_process`), then :meth:`record` in every
    case (:meth:`fail` first when a step raised), and :meth:`close`. A caller starting several
    agents together may announce each (:meth:`start_task`) before any of them starts.

    ``hub``: a hub shared with other runs (their events are told apart by run id); this run's
    events are copied into its ``events.jsonl``. None: a hub of its own, writing events.jsonl
    and the console. ``paths``: a run folder the caller made (default: a fresh one).
    """

    def __init__(
        self, job: AgentJob, *, hub: EventHub | None = None, paths: RunPaths | None = None
    ) -> None:
        from gitflow_agents.agent_run.launch import signal_files
        from gitflow_agents.agent_run.record import RunFacts, worktree_state
        from gitflow_agents.prompt import agent_dir
        from gitflow_agents.runs import create_run

        root, config = job.root, job.config
        self.job = job
        self.agent_dir = agent_dir(root, config.flow_dir, job.flow_name, job.agent_id)
        self.workdir = job.workdir or root
        self.paths = paths or create_run(root, config.flow_dir, job.flow_name, job.run_id)
        self.run_id = self.paths.run_dir.name
        self.facts = RunFacts(
            paths=self.paths,
            kind=job.kind,
            flow_name=job.flow_name,
            agent_id=job.agent_id,
            adapter=config.agent(job.agent).adapter,
            files=signal_files(config, job.agent, self.agent_dir),
            base_sha=_head(self.workdir),
            agent_config=job.agent,
            workdir=self.workdir,
            session=job.session,
            secrets=job.secrets,
        )
        _write_queued(job, self.facts, self.agent_dir)
        self._before = worktree_state(self.workdir, self.facts.base_sha)
        self.hub, self._close_events = _run_events(job, self.paths, hub)
        self.launch: Prepared | None = None
        self.outcome: Outcome | None = None
        self.failure_reason = "the supervisor did not finish"
        self._task_open = False
        self._result: dict[str, Any] | None = None

    def emit(self, event_type: str, data: Mapping[str, Any]) -> None:
        self.hub.emit(event_type, data, run_id=self.run_id)

    def prepare(self, card: Path | None = None, *, launch: bool = True) -> dict[str, Any]:
        """Write the system prompt, move ``card`` (locked by the caller) queued → running, and
        build the adapter's launch (not with ``launch`` False: an agent that is a function of
        this process, see :meth:`run_in_process`). Returns what the ``prepare`` phase reports."""
        from gitflow_agents.agent_run.launch import prepare
        from gitflow_agents.agent_run.record import start_card
        from gitflow_agents.agents.installed import require_program
        from gitflow_agents.prompt import write_system_prompt

        job = self.job
        prompt_path = write_system_prompt(
            job.root, job.config, job.agent_id, job.flow_name, job.prompt_text
        )
        prepared: dict[str, Any] = {"systemPrompt": str(prompt_path)}
        if job.prompt_segments is not None:
            prepared["segments"] = job.prompt_segments
        if card is not None:
            queued = job.queued_line(self.run_id) if job.queued_line is not None else None
            start_card(card, job.kind, queued)
        if not launch:
            return prepared
        self.launch = prepare(
            job.config,
            job.agent,
            agent_id=job.agent_id,
            agent_dir=self.agent_dir,
            workdir=self.workdir,
            prompt_path=prompt_path,
            prompt_text=job.prompt_text,
            task=job.task,
            env=job.env,
            resume_session_id=job.resume_session_id,
        )
        # The exact program the adapter will start, in its environment and work tree: a missing
        # one is one clear line (AgentNotInstalled), not a crashed run with [Errno 2].
        require_program(self.launch.spec, agent=job.agent, adapter=self.launch.adapter)
        argv = self.launch.spec.argv
        prepared["command"] = argv[0] if argv else ""
        return prepared

    def supervise(self, cancel: threading.Event | None = None) -> Outcome:
        """Run the prepared agent to its Outcome between ``task:start`` and its end event;
        ``cancel`` set: its tree is killed, the run ends canceled."""
        from gitflow_agents.agent_run.launch import supervise_agent

        job = self.job
        if self.launch is None:
            raise RuntimeError("AgentRunner.prepare() first")
        self.start_task()
        self.outcome = supervise_agent(
            self.launch,
            run_dir=self.paths.run_dir,
            hub=self.hub,
            run_id=self.run_id,
            stuck_timeout=job.stuck_timeout,
            timeout=job.timeout,
            cancel=cancel,
            kill_grace=job.kill_grace,
            exit_grace=job.exit_grace,
            stuck_grace=float(
                job.config.stuck_retry_grace_secs if job.stuck_grace is None else job.stuck_grace
            ),
            secrets=job.secrets,
        )
        self._end_task(self.outcome.status, self.outcome.reason)
        return self.outcome

    def run_in_process(self, work: Callable[[], tuple[Status, str]]) -> Outcome:
        """Like :meth:`supervise`, for an agent that is a function of this process (the chain's
        offline reviewer): ``work`` leaves its report in the agent's report files and returns
        (status, reason)."""
        from gitflow_agents.supervisor import Outcome

        self.start_task()
        started = time.time()
        status, reason = work()
        ended = time.time()
        files = self.facts.files
        self.outcome = Outcome(
            status=status,
            reason=reason,
            report_path=next((p for p in (files.success, files.failure) if p.exists()), None),
            exit_code=None,
            started=started,
            ended=ended,
            duration=ended - started,
            last_activity=ended,
            pid=None,
            watcher="in-process",
        )
        self._end_task(status, reason)
        return self.outcome

    def start_task(self) -> None:
        """Emit ``task:start`` (once; :meth:`supervise` does it unless the caller did)."""
        if self._task_open or self.outcome is not None:
            return
        job = self.job
        self.emit("task:start", {"node": job.agent_id, "kind": job.kind, "step": job.step})
        self._task_open = True

    def fail(self, exc: BaseException) -> None:
        """A step raised ``exc``: note why for the record, and end the task it interrupted.
        On Ctrl-C the supervisor's Outcome (tree already killed) rides on the exception."""
        if isinstance(exc, KeyboardInterrupt):
            self.outcome = getattr(exc, "outcome", None)
            self.failure_reason = "interrupted"
        elif isinstance(exc, Exception):
            self.failure_reason = f"{type(exc).__name__}: {exc}"
        if self._task_open:
            outcome = self.outcome
            self._end_task(
                outcome.status if outcome else "failed",
                outcome.reason if outcome else self.failure_reason,
            )

    def record(
        self,
        card: Path | None = None,
        *,
        run_extra: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write result.json and the final status.json (never raises), emit ``agent:reply``,
        bring ``card`` to the run's end state. ``run_extra`` is added to result.json's ``run``,
        ``extra`` to its top level (a caller's own facts: its chain run, git statistics). The
        first call records; later ones return that result."""
        from gitflow_agents.agent_run.record import (
            changed_files,
            finish_card,
            own_files,
            record_result,
        )

        if self._result is not None:
            return self._result
        job = self.job
        skip = own_files(job.root, job.card)
        result = record_result(
            self.facts,
            self.outcome,
            self.failure_reason,
            lambda: changed_files(self.workdir, self.facts.base_sha, self._before, skip),
            run_extra=run_extra,
            extra=extra,
        )
        self._result = result
        reply = result["run"].get("reply")
        if reply is not None:
            self.emit("agent:reply", {"agent": job.agent_id, **reply})
        if card is not None:
            log = os.path.relpath(self.paths.run_dir, job.root)
            finish_card(card, job.kind, result, self.run_id, log)
        return result

    def close(self) -> None:
        """Stop writing this run's events (a hub of its own is closed)."""
        self._close_events()

    def _end_task(self, outcome_status: str, reason: str) -> None:
        from gitflow_agents.runs import result_status

        self._task_open = False
        ok = result_status(outcome_status) == "succeeded"
        self.emit(
            "task:complete" if ok else "task:failed",
            {"node": self.job.agent_id, "status": outcome_status, "reason": reason},
        )


def clear_previous(report: Path, success: Path, failure: Path, *, rerun: bool) -> None:
    """Make room for a new run of an agent whose earlier run left a renamed report: UsageError
    unless ``rerun``, which moves the old report(s) to ``previous/``."""
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


@contextlib.contextmanager
def _phase(run: AgentRunner, name: str) -> Iterator[dict[str, Any]]:
    """``phase:start`` now, ``phase:complete`` at the end (status failed / interrupted when the
    block raises); the caller adds to the yielded dict what the complete event should carry."""
    run.emit("phase:start", {"phase": name})
    data: dict[str, Any] = {}
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
        run.emit("phase:complete", {"phase": name, "status": status, **data})


def _head(root: Path) -> str | None:
    """The commit the run starts from; None outside a repository of its own (``root`` has no
    ``.git``: a project folder inside someone else's repository) or before its first commit."""
    from gitflow_agents.git import queries as git

    return git.head_commit(root) if (root / ".git").exists() else None


def _write_queued(job: AgentJob, facts: RunFacts, agent_dir: Path) -> None:
    """The run's first ``status.json``: queued, who runs, with which limits."""
    from gitflow_agents.runs import RunStatus, write_status

    status = RunStatus(
        run_id=facts.paths.run_dir.name,
        flow=job.flow_name,
        agent=job.agent_id,
        state="queued",
        started=time.time(),
        supervisor_pid=os.getpid(),
        agent_dir=str(agent_dir),
        kind=job.kind,
        extra={
            "adapter": facts.adapter,
            "agent_config": job.agent,
            "stuck_timeout": job.stuck_timeout,
            "timeout": job.timeout,
            "workdir": str(job.workdir or job.root),  # whose work tree (lost_runs.lost_in)
            **({"session": dict(job.session)} if job.session else {}),
        },
    )
    write_status(facts.paths, status)


def _run_events(
    job: AgentJob, paths: RunPaths, shared: EventHub | None
) -> tuple[EventHub, Callable[[], None]]:
    """The hub the run emits to and how to stop: a hub of its own (events.jsonl and console),
    or ``shared`` with this run's events copied into its events.jsonl."""
    from gitflow_agents.agent_run.launch import event_hub
    from gitflow_agents.runs.events import JsonlChannel

    run_id = paths.run_dir.name
    if shared is None:
        hub = event_hub(paths.events, run_id, quiet=job.quiet, tty=job.tty)
        return hub, hub.close
    channel = JsonlChannel(paths.events)
    unsubscribe = shared.subscribe("*", channel.handle, run_id=run_id)

    def close() -> None:
        unsubscribe()
        channel.close()

    return shared, close


@contextlib.contextmanager
def _card_scope(card: Path | None, run_id: str) -> Iterator[Path | None]:
    """The card, locked for the run (None without one)."""
    from gitflow_agents.runs.cards import card_lock

    if card is None:
        yield None
        return
    with card_lock(card, run_id):
        yield card
