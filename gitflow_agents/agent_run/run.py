"""One agent run from start to end: prepare → run → record.

The chain (and the Action's fixer, through it), ``spawn``, a session's next turn (``send``) and
the agent reviewer of ``git agent-review --agent X`` all run their agent through
:class:`AgentRunner`, so every run leaves the same records (docs/protocol.md, Run records):
``status.json`` from the start, ``events.jsonl`` and ``worker.log`` while it runs, and
``result.json`` at the end, in every case.

:meth:`AgentRunner.run` is the one way to run the agent (supervised, or as a function of this
process); its report files and limits are decided once, when the runner is made, and handed to
the supervisor as they are. :func:`execute` is the whole run of one agent on its own (its own
event hub, its card, phases and SIGTERM), as ``spawn``, ``send`` and the agent reviewer use it;
the chain drives the same steps itself on one shared hub: ``prepare()`` each agent, ``run()``
each (in its own thread when several start together), ``record()`` each.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitflow_agents.agent_run.attempts import Attempts
from gitflow_agents.agent_run.launch import (
    Prepared,
    event_hub,
    prepare,
    report_files,
    sigterm_as_interrupt,
)
from gitflow_agents.agent_run.record import (
    RunFacts,
    changed_files,
    fill_git_stats,
    finish_card,
    own_files,
    record_result,
    start_card,
    start_state,
)
from gitflow_agents.agents.base import AgentOutput
from gitflow_agents.agents.installed import check_agents, require_program
from gitflow_agents.agents.meter import FREE
from gitflow_agents.base.errors import UsageError
from gitflow_agents.prompt import Segment, agent_dir, write_system_prompt
from gitflow_agents.prompt.paths import write_prompt_segments
from gitflow_agents.runs import RunPaths, RunStatus, create_run, result_status, write_status
from gitflow_agents.runs.budget import Ledger, Watch, warn_uncounted, warn_unpriced
from gitflow_agents.runs.cards import card_lock
from gitflow_agents.runs.control import listening
from gitflow_agents.runs.events import EventHub, JsonlChannel
from gitflow_agents.runs.spend import run_spend
from gitflow_agents.runs.tree import KILL_GRACE
from gitflow_agents.supervisor import Limits, Outcome, ReportFiles, Status, supervise
from gitflow_agents.supervisor.outcome import update_status

if TYPE_CHECKING:
    from gitflow_agents.config import FlowConfig
    from gitflow_agents.findings import Review

#: An agent that is a function of this process (the chain's offline reviewer): it leaves its
#: report in the agent's report files and returns (status, reason).
InProcess = Callable[[], tuple[Status, str]]


class Resume(NamedTuple):
    """A session's next turn (``send``): the CLI session it continues, the session link recorded
    as ``run.session``, and the message, emitted as ``event``; ``before``: what the session's
    earlier runs used, for a CLI whose figures are its session's so far (``Cli.session_totals``:
    this run's are its own once that is taken off; None: not such a CLI)."""

    session_id: str
    link: Mapping[str, Any]
    message: str
    event: str = "session:message"  # or session:reply
    before: AgentOutput | None = None


@dataclass(frozen=True)
class AgentJob:
    """One agent run, as a caller hands it to :class:`AgentRunner` / :func:`execute`.

    ``prompt_text`` is written to the agent's ``system_prompt.md``; ``task`` is the user message
    (default: the standard "follow your system prompt" line). ``limits`` (:func:`limits`) are
    how long it may take. ``workdir`` is where the agent works (default ``root``, where its
    records go); ``env`` the environment its adapter draws the allow-list from (default
    ``os.environ``). ``in_process``: the agent is that function, not a process.
    """

    root: Path
    config: FlowConfig
    agent: str  # the agent's key in the .flow config
    agent_id: str
    flow_name: str
    kind: str  # implement | review | research: the result.json shape
    prompt_text: str
    limits: Limits
    prompt_segments: tuple[Segment, ...] | None = None  # recorded for `serve`'s inspector
    task: str | None = None
    resume: Resume | None = None
    card: Path | None = None
    queued_line: Callable[[str], str] | None = None  # run id -> the card's "queued" history line
    quiet: bool = False  # no console lines on stderr
    tty: bool | None = None  # console redrawn in place (None: on a terminal outside CI)
    step: int | None = None
    run_id: str | None = None  # a fresh one when None
    workdir: Path | None = None
    env: Mapping[str, str] | None = None
    secrets: frozenset[str] = frozenset()  # exact values masked in its records, log and events
    in_process: InProcess | None = None
    budget: Ledger | None = None  # the limits it is held to (runs/budget.py); None: none
    role: str = ""  # the agent a budget message names (a chain's `implementer`), if any
    control: bool = False  # listen for send/cancel while it runs (runs/control.py); own hub only
    chain_run: str | None = None  # the step run it is an agent of (in status.json: runs/lost.py)
    # the branch its completed report's git statistics count against (the merge-base with it);
    # None: its report is left as it is (the chain fills its agents' own: chain/agents.py)
    stats_against: str | None = None

    @property
    def session_before(self) -> AgentOutput | None:
        """What its session used before it, which its CLI's figures include (``Resume.before``)."""
        return self.resume.before if self.resume is not None else None


def limits(
    config: FlowConfig,
    *,
    stuck_timeout: float | None = None,
    timeout: float | None = None,
    kill_grace: float | None = None,
) -> Limits:
    """The supervision limits of a run: the given timeouts (a command's options), else the
    config's ``defaults`` (``stuck_timeout_secs``, ``max_wait_secs``), and its
    ``stuck_retry_grace_secs``; ``kill_grace`` unset: ``KILL_GRACE``."""
    return Limits(
        stuck_timeout=float(stuck_timeout or config.stuck_timeout_secs),
        timeout=float(timeout or config.max_wait_secs) or None,
        kill_grace=KILL_GRACE if kill_grace is None else float(kill_grace),
        stuck_grace=float(config.stuck_retry_grace_secs),
    )


def execute(job: AgentJob) -> dict[str, Any]:
    """Run ``job`` on its own and record it; returns the ``result.json`` written (in every case).

    Events (events.jsonl, console): ``harness:start``, [``session:message``], phase ``prepare``
    (system prompt written, card queued -> running, launch built by the adapter), phase ``agent``
    (``task:start``, ``agent:*``, ``task:complete|failed``), phase ``record`` (result.json,
    ``agent:reply``, card), ``harness:complete``. Raises what the launch raises (after recording)
    and KeyboardInterrupt on Ctrl-C / SIGTERM (the agent's tree already killed).
    """
    check_agents(job.config, [job.agent], cwd=job.workdir or job.root, env=job.env)
    run = AgentRunner(job)
    result: dict[str, Any] = {}
    with _card_scope(job.card, run.run_id) as card, sigterm_as_interrupt():
        try:
            run.emit("harness:start", {"flow": job.flow_name, "kind": job.kind})
            if job.resume is not None:
                run.emit(
                    job.resume.event,
                    {
                        "content": job.resume.message,
                        "agent": job.agent_id,
                        "previousRunId": job.resume.link.get("previousRunId"),
                    },
                )
            with _phase(run, "prepare") as prepared:
                prepared.update(run.prepare(card))
            with _phase(run, "agent") as ran:
                ran["outcome"] = run.run().status
            run.fill_stats()
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
    """One agent run in steps: created (run folder, ``status.json`` queued, the start commit,
    the report files), :meth:`prepare`, :meth:`run`, then :meth:`record` in every case
    (:meth:`fail` first when a step raised outside :meth:`run`), and :meth:`close`. A caller
    starting several agents together may announce each (:meth:`start_task`) before any starts.

    ``hub``: a hub shared with other runs (their events are told apart by run id); this run's
    events are copied into its ``events.jsonl``. None: a hub of its own, writing events.jsonl
    and the console. ``paths``: a run folder the caller made (default: a fresh one);
    ``files``: the agent's report files as the caller named them (default: named here).
    ``clean_at``: the commit the caller has just made the work tree clean at (a chain step's
    implementer or fixer): the run starts from it with nothing changed, without asking git
    again (``record.start_state``).
    """

    def __init__(
        self,
        job: AgentJob,
        *,
        hub: EventHub | None = None,
        paths: RunPaths | None = None,
        files: ReportFiles | None = None,
        clean_at: str | None = None,
    ) -> None:
        root, config = job.root, job.config
        self.job = job
        self.agent_dir = agent_dir(root, config.flow_dir, job.flow_name, job.agent_id)
        self.files = files or report_files(config, job.agent, self.agent_dir)
        self.workdir = job.workdir or root
        self.paths = paths or create_run(root, config.flow_dir, job.flow_name, job.run_id)
        self.run_id = self.paths.run_dir.name
        # (run records are excluded from git: what this run writes never shows here)
        base_sha, self._before = (clean_at, {}) if clean_at else start_state(self.workdir)
        self.facts = RunFacts(
            paths=self.paths,
            kind=job.kind,
            flow_name=job.flow_name,
            agent_id=job.agent_id,
            adapter=config.agent(job.agent).adapter,
            files=self.files,
            base_sha=base_sha,
            agent_config=job.agent,
            workdir=self.workdir,
            session=job.resume.link if job.resume is not None else None,
            secrets=job.secrets,
            model=config.agent(job.agent).model,
            prices=config.prices,
        )
        _write_queued(job, self.facts, self.agent_dir)
        self.hub, self._close_events = _run_events(job, self.paths, hub)
        self.launch: Prepared | None = None
        self.prompt_path: Path | None = None  # the system prompt written by prepare()
        self.outcome: Outcome | None = None
        # whether its agent ran (a process of it started, or it ran in process): False when
        # every attempt was refused by a spent budget or canceled before its process started
        self.started = False
        self.error: BaseException | None = None  # what a step raised (see fail)
        self.failure_reason = "the supervisor did not finish"
        self._task_open = False
        self._result: dict[str, Any] | None = None

    def emit(self, event_type: str, data: Mapping[str, Any]) -> None:
        self.hub.emit(event_type, data, run_id=self.run_id)

    def prepare(self, card: Path | None = None) -> dict[str, Any]:
        """Write the system prompt, move ``card`` (locked by the caller) queued → running, and
        build the adapter's launch (not for an agent run in process). Returns what the
        ``prepare`` phase reports."""
        job = self.job
        prompt_path = write_system_prompt(
            job.root, job.config, job.agent_id, job.flow_name, job.prompt_text
        )
        self.prompt_path = prompt_path
        prepared: dict[str, Any] = {"systemPrompt": str(prompt_path)}
        if job.prompt_segments is not None:
            prepared["segments"] = len(job.prompt_segments)
            write_prompt_segments(self.paths.run_dir, job.prompt_segments)
        if card is not None:
            queued = job.queued_line(self.run_id) if job.queued_line is not None else None
            start_card(card, job.kind, queued)
        if job.in_process is not None:
            return prepared
        self.launch = prepare(
            job.config,
            job.agent,
            self.files,
            agent_id=job.agent_id,
            workdir=self.workdir,
            prompt_path=prompt_path,
            prompt_text=job.prompt_text,
            task=job.task,
            env=job.env,
            resume_session_id=job.resume.session_id if job.resume is not None else None,
            budget=job.budget,
            live_input=self.hub.endpoint is not None,
        )
        if isinstance(self.launch.launch.budget, Watch):  # its CLI may count earlier turns too
            self.launch.launch.budget.before = job.session_before
        if job.session_before is not None:  # and the event that ends it takes them off too
            launch = self.launch.launch._replace(counted_before=job.session_before)
            self.launch = self.launch._replace(launch=launch)
        # The exact program the adapter will start, in its environment and work tree: a missing
        # one is one clear line (AgentNotInstalled), not a crashed run with [Errno 2].
        spec = self.launch.launch.spec
        require_program(spec, agent=job.agent, adapter=self.launch.adapter)
        prepared["command"] = spec.argv[0] if spec.argv else ""
        return prepared

    def run(self, cancel: threading.Event | None = None) -> Outcome:
        """Run the prepared agent to its Outcome between ``task:start`` and its end event:
        supervised (``cancel`` set: its tree is killed, the run ends canceled; rate limits
        waited out: agent_run/attempts.py), or in process.
        What it raises is noted first (:meth:`fail`)."""
        try:
            self.start_task()
            if self.job.in_process is not None:
                self.started = True
                self.outcome = self._in_process(self.job.in_process)
            elif self.launch is None:
                raise RuntimeError("AgentRunner.prepare() first")
            else:  # supervised, in a slot of its adapter, rate limits waited out
                attempts = Attempts(self, cancel)
                for launch in attempts:
                    with attempts.slot() as free:  # the budget asked again once it is ours
                        held = attempts.refused(launch) if free else attempts.slot_canceled()
                        attempts.ended(
                            supervise(
                                launch._replace(judge=self._judge()),
                                self.files,
                                self.job.limits,
                                hub=self.hub,
                                run_dir=self.paths.run_dir,
                                cancel=cancel,
                                secrets=self.job.secrets,
                            )
                            if held is None
                            else held
                        )
                self.started = attempts.started
                self.outcome = self._judged(attempts.outcome)  # each attempt's own figures
        except BaseException as exc:
            self.fail(exc)
            raise
        self._end_task(self.outcome.status, self.outcome.reason)
        return self.outcome

    def fill_stats(self) -> None:
        """A job with ``stats_against`` that succeeded, or that a budget stopped, with its
        completed report: the report's git-stats marker filled (``record.fill_git_stats``)."""
        job, outcome, start = self.job, self.outcome, self.facts.base_sha
        if job.stats_against is None or start is None or outcome is None:
            return
        if outcome.status not in ("succeeded", "budget") or not self.files.success.exists():
            return
        exclude = (job.config.flow_dir.strip("/"), *sorted(own_files(job.root, job.card)))
        fill_git_stats(self.files.success, self.workdir, job.stats_against, start, exclude)

    def _judge(self) -> Callable[[Any], str | None] | None:
        """What judges an attempt at its end on the usage its CLI said then, when no watch
        reads it as it runs (Gemini CLI, Aider, Auggie say it only then): the supervisor ends
        it ``budget`` over a limit (``Launch.judge``), so its end event says so; None when
        no budget needs it."""
        budget, prepared = self.job.budget, self.launch
        if budget is None or prepared is None or isinstance(prepared.launch.budget, Watch):
            return None
        if prepared.launch.adapter in FREE or not budget.active:
            return None
        return self._over_at_end

    def _over_at_end(self, output: Any) -> str | None:
        """The budget message when ``output``, a run's usage at its end, is over a limit (only
        a limit gone over: it ended on its own, having spent what it could); the first time
        its tokens are known but its model has no price under a USD limit, a warning."""
        budget, prepared = self.job.budget, self.launch
        assert budget is not None and prepared is not None
        model = self.job.config.agent(self.job.agent).model
        spend = budget.priced(output, model)
        tokens = None not in (spend.input_tokens, spend.output_tokens)
        if tokens and spend.cost_usd is None and budget.usd_left() is not None:
            warn_unpriced(prepared.launch.adapter, output.model or model, at_end=True)
        return budget.over(spend, strictly=True)

    def _judged(self, outcome: Outcome) -> Outcome:
        """``outcome`` judged on the usage its CLI said at its end, every attempt's (each was
        judged on its own as it ended, :meth:`_judge`): over a limit, it ends ``budget``, as a
        watched agent's last usage line ends it (``supervisor/run.finish``; docs/
        configuration.md, "budget"): a reviewer over its budget is not approved."""
        if self._judge() is None:
            return outcome
        if outcome.status not in ("succeeded", "failed") or outcome.output is None:
            return outcome
        over = self._over_at_end(outcome.output)
        if over is None:
            return outcome
        update_status(self.paths.run_dir, state="budget", reason=over)
        return dataclasses.replace(outcome, status="budget", reason=over)

    def _in_process(self, work: InProcess) -> Outcome:
        """The Outcome of an agent that is a function of this process."""
        started = time.time()
        status, reason = work()
        ended = time.time()
        files = self.files
        return Outcome(
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

    def start_task(self) -> None:
        """Emit ``task:start`` (once; :meth:`run` does it unless the caller did)."""
        if self._task_open or self.outcome is not None:
            return
        job = self.job
        self.emit("task:start", {"node": job.agent_id, "kind": job.kind, "step": job.step})
        self._task_open = True

    def fail(self, exc: BaseException) -> None:
        """A step raised ``exc``: note why for the record, and end the task it interrupted.
        On Ctrl-C the supervisor's Outcome (tree already killed) rides on the exception.
        The same exception noted again changes nothing."""
        if exc is self.error:
            return
        self.error = exc
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
        review: Review | None = None,
    ) -> dict[str, Any]:
        """Write result.json and the final status.json (never raises), emit ``agent:reply``,
        bring ``card`` to the run's end state. ``run_extra`` is added to result.json's ``run``,
        ``extra`` to its top level (a caller's own facts: its chain run, git statistics);
        ``review``: a reviewer's Review the caller already read (it is not parsed again). The
        first call records; later ones return that result."""
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
            review=review,
        )
        self._result = result
        if job.budget is not None:  # every open scope counts what the run spent
            spend = run_spend(result["run"])
            watch = self.launch.launch.budget if self.launch is not None else None
            job.budget.add(spend, watch if isinstance(watch, Watch) else None)
            if job.budget.active:
                warn_uncounted(str(result["run"].get("adapter")), spend)
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
        self._task_open = False
        ok = result_status(outcome_status) == "succeeded"
        self.emit(
            "task:complete" if ok else "task:failed",
            {"node": self.job.agent_id, "status": outcome_status, "reason": reason},
        )


def clear_previous(files: ReportFiles, *, rerun: bool) -> None:
    """Make room for a new run of an agent whose earlier run left a renamed report: UsageError
    unless ``rerun``, which moves the old report(s) to ``previous/``."""
    stale = [p for p in (files.success, files.failure) if p.exists()]
    if not stale:
        return
    if not rerun:
        raise UsageError(
            f"{stale[0]} is left from an earlier run of this agent; give a new --agent-name, "
            "or --rerun to move the old report to previous/"
        )
    previous = files.folder / "previous"
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


def _write_queued(job: AgentJob, facts: RunFacts, agent_dir: Path) -> None:
    """The run's first ``status.json``: queued, who runs, with which limits."""
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
            "stuck_timeout": job.limits.stuck_timeout,
            "timeout": job.limits.timeout,
            "workdir": str(job.workdir or job.root),  # whose work tree (lost_runs.lost_in)
            **({"chainRunID": job.chain_run} if job.chain_run else {}),
            **({"session": dict(facts.session)} if facts.session else {}),
        },
    )
    write_status(facts.paths, status)


def _run_events(
    job: AgentJob, paths: RunPaths, shared: EventHub | None
) -> tuple[EventHub, Callable[[], None]]:
    """The hub the run emits to and how to stop: a hub of its own (events.jsonl and console),
    or ``shared`` with this run's events copied into its events.jsonl."""
    run_id = paths.run_dir.name
    if shared is None:
        hub = event_hub(paths.events, run_id, quiet=job.quiet, tty=job.tty)
        if job.control:
            listening(hub)
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
    if card is None:
        yield None
        return
    with card_lock(card, run_id):
        yield card
