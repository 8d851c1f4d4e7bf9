"""Running the chain's agents: one at a time, or several at once sharing one work tree.

``run_agent`` runs (or reuses, see ``chain/resume.py``) one agent; ``run_together`` runs several
(the reviewers of a round) as separate processes that all start once every one of them is
prepared. Each invocation is an ``_Attempt`` in three steps, kept apart so each can be pointed at
another engine: ``prepare`` (run folder, events, prompt, launch spec), ``start`` (the supervised
process, then the commit and statistics of an implement / fix) and ``close`` (the run record:
``result.json`` and the task event; docs/protocol.md, Run records).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gitflow_agents import git, stats
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.resume import agent_files, completed_meta, set_aside, write_meta
from gitflow_agents.chain.workspace import Workspace
from gitflow_agents.errors import AgentError
from gitflow_agents.events import EventHub
from gitflow_agents.runs import RunPaths

if TYPE_CHECKING:
    from gitflow_agents.launch import Prepared

AgentKind = Literal["implement", "review", "fix", "research"]

TRAILER_RUN = "Gitflow-Agents-Run"
TRAILER_AGENT = "Gitflow-Agents-Agent"


@dataclass(frozen=True)
class AgentRun:
    agent: str
    agent_id: str
    kind: AgentKind
    run_id: str
    status: str  # the supervisor's outcome status; "reused" is never stored here
    reason: str
    reused: bool
    start_sha: str
    end_sha: str
    report: Path | None
    duration: float

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "agentId": self.agent_id,
            "kind": self.kind,
            "runID": self.run_id,
            "status": self.status,
            "reason": self.reason,
            "reused": self.reused,
            "startSha": self.start_sha,
            "endSha": self.end_sha,
            "report": str(self.report) if self.report else None,
            "durationMs": round(self.duration * 1000),
        }


class AgentFailed(AgentError):
    """An agent did not complete (failed, stuck, timed out, crashed): exit code 3."""

    def __init__(self, run: AgentRun) -> None:
        super().__init__(f"{run.agent_id}: {run.status}: {run.reason}")
        self.run = run


def agent_id_for(agent: str, step: int | None, iteration: int | None = None) -> str:
    from gitflow_agents.prompt import default_agent_id

    base = default_agent_id(agent, step)
    return base if iteration is None else f"{base}-{iteration}"


def run_agent(
    ctx: Context,
    ws: Workspace,
    *,
    agent: str,
    agent_id: str,
    kind: AgentKind,
    start_sha: str,
    step: int | None = None,
    after: Sequence[str] = (),
    preamble: str | None = None,
    task: str | None = None,
    commit_message: str | None = None,
) -> AgentRun:
    """Run (or reuse) one agent in ``ws``; commit its changes (implement/fix) with the run's
    trailer and fill its report's git statistics. AgentFailed unless it completed."""
    job = Job(agent, agent_id, kind, start_sha, step, tuple(after), preamble, task, commit_message)
    return run_together(ctx, ws, [job])[0]


@dataclass(frozen=True)
class Job:
    """What one agent invocation is asked to do (see ``run_agent``)."""

    agent: str
    agent_id: str
    kind: AgentKind
    start_sha: str
    step: int | None = None
    after: tuple[str, ...] = ()
    preamble: str | None = None
    task: str | None = None
    commit_message: str | None = None


def run_together(ctx: Context, ws: Workspace, jobs: Sequence[Job]) -> list[AgentRun]:
    """Run ``jobs`` at the same time (separate processes sharing ``ws``): every run folder,
    prompt and launch spec is prepared first, then all agents start together. Completed agents
    that started from the same commit are reused. AgentFailed (the first, in job order) once all
    have finished; on any other error or Ctrl-C the others are canceled (trees killed)."""
    done: dict[int, AgentRun] = {}
    attempts: list[tuple[int, _Attempt]] = []
    try:
        for index, job in enumerate(jobs):
            reused = _reuse(ctx, job)
            if reused is not None:
                done[index] = reused
                continue
            attempt = _Attempt(ctx, ws, job)
            attempts.append((index, attempt))
            attempt.prepare()
        if len(attempts) == 1:
            attempts[0][1].start()
        elif attempts:
            _warm_up()
            with ThreadPoolExecutor(max_workers=len(attempts)) as pool:
                futures = [pool.submit(_start_and_close, attempt) for _, attempt in attempts]
                try:
                    for future in futures:
                        future.result()
                except BaseException:
                    ctx.cancel.set()  # Ctrl-C or a crash: every supervisor kills its agent's tree
                    raise
    finally:
        for index, attempt in attempts:
            done[index] = attempt.close()
    runs = [done[index] for index in range(len(jobs))]
    failed = next((run for run in runs if not run.ok), None)
    if failed is not None:
        raise AgentFailed(failed)
    return runs


def _start_and_close(attempt: _Attempt) -> AgentRun:
    try:
        attempt.start()
    finally:
        run = attempt.close()
    return run


def _reuse(ctx: Context, job: Job) -> AgentRun | None:
    """The earlier run of ``job`` when it completed from the same commit (resuming), else None."""
    folder, _report, success, _failure = agent_files(ctx, job.agent, job.agent_id)
    meta = completed_meta(folder, success, job.start_sha, ctx.root)
    if meta is None:
        return None
    ctx.hub.emit("task:complete", {"node": job.agent_id, "status": "reused"})
    return AgentRun(
        job.agent, job.agent_id, job.kind, str(meta.get("runID", "")), "succeeded",
        "reused: completed earlier from the same commit", True, job.start_sha,
        str(meta["endSha"]), success, 0.0,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# One attempt: prepare, start (supervise), close (record)


class _Attempt:
    """One agent invocation in three steps: ``prepare`` (its run folder, events, prompt and
    launch spec), ``start`` (the supervised process; then the commit and statistics of an
    implement / fix), ``close`` (result.json and the task event; always, once)."""

    def __init__(self, ctx: Context, ws: Workspace, job: Job) -> None:
        self.ctx, self.ws, self.job = ctx, ws, job
        self.folder, self.report, self.success, self.failure = agent_files(
            ctx, job.agent, job.agent_id
        )
        self.paths: RunPaths | None = None
        self.unsubscribe: Any = None
        self.launch: Prepared | None = None  # None: the builtin reviewer (in process)
        self.started = time.monotonic()
        self.status, self.reason = "failed", "the agent did not finish"
        self.end_sha = job.start_sha
        self.run: AgentRun | None = None

    @property
    def run_id(self) -> str:
        return self.paths.run_dir.name if self.paths is not None else ""

    def prepare(self) -> None:
        from gitflow_agents.launch import prepare, write_prompt
        from gitflow_agents.prompt import PromptRequest

        ctx, ws, job = self.ctx, self.ws, self.job
        set_aside(self.folder, (self.success, self.failure, self.report))
        if (
            job.kind in ("implement", "fix")
            and ws.branch is not None
            and (git.head_sha(ws.worktree) != job.start_sha or git.dirty_paths(ws.worktree))
        ):
            git.discard_changes(ws.worktree, job.start_sha)  # a crashed attempt's leftovers
        self.paths = ctx.new_run()
        self.unsubscribe = _agent_events(ctx.hub, self.paths, self.run_id)
        ctx.hub.emit(
            "task:start",
            {"node": job.agent_id, "kind": job.kind, "step": job.step},
            run_id=self.run_id,
        )
        self.started = time.monotonic()
        request = PromptRequest(
            root=ctx.root,
            config=ctx.config,
            agent=job.agent,
            agent_id=job.agent_id,
            flow_name=ctx.flow,
            step=job.step,
            plan=ctx.plan if job.step is not None else None,
            task=job.task,
            after=job.after,
            preamble=job.preamble,
            manifest=ctx.manifest(),
        )
        prompt, prompt_path = write_prompt(request)
        if ctx.config.agent(job.agent).adapter == "builtin":
            return
        self.launch = prepare(
            ctx.config,
            job.agent,
            agent_id=job.agent_id,
            agent_dir=self.folder,
            workdir=ws.worktree,
            prompt_path=prompt_path,
            prompt_text=prompt.text,
            env=ctx.env,
        )

    def start(self) -> None:
        from gitflow_agents.launch import supervise_agent

        ctx, ws, job = self.ctx, self.ws, self.job
        assert self.paths is not None, "prepare() first"
        if self.launch is None:
            self.status, self.reason = _builtin_review(ctx, ws, self.folder, self.success)
        else:
            settings, config = ctx.settings, ctx.config
            outcome = supervise_agent(
                self.launch,
                run_dir=self.paths.run_dir,
                hub=ctx.hub,
                run_id=self.run_id,
                stuck_timeout=float(settings.stuck_timeout or config.stuck_timeout_secs),
                timeout=float(settings.timeout or config.max_wait_secs),
                cancel=ctx.cancel,
                kill_grace=settings.kill_grace,
            )
            self.status, self.reason = outcome.status, outcome.reason
        if self.status != "succeeded":
            return
        if job.kind in ("implement", "fix") and ws.branch is not None:
            committed = git.commit_all(
                ws.worktree,
                job.commit_message or f"{ctx.flow}: {job.agent_id}",
                trailers={TRAILER_RUN: self.run_id, TRAILER_AGENT: job.agent_id},
                exclude=ctx.exclude,
            )
            self.end_sha = committed or job.start_sha
            if self.success.exists():
                own = stats.compute(ws.worktree, job.start_sha, self.end_sha, exclude=ctx.exclude)
                stats.fill_report_file(self.success, own)
        write_meta(
            self.folder,
            run_id=self.run_id,
            kind=job.kind,
            start_sha=job.start_sha,
            end_sha=self.end_sha,
        )

    def close(self) -> AgentRun:
        """The AgentRun as it stands; the first call records it (result.json, task event)."""
        if self.run is not None:
            return self.run
        job = self.job
        self.run = AgentRun(
            job.agent, job.agent_id, job.kind, self.run_id, self.status, self.reason, False,
            job.start_sha, self.end_sha,
            next((p for p in (self.success, self.failure, self.report) if p.exists()), None),
            time.monotonic() - self.started,
        )  # fmt: skip
        if self.paths is not None:
            _write_agent_result(self.paths, self.run, self.ctx)
            self.ctx.hub.emit(
                "task:complete" if self.run.ok else "task:failed",
                {"node": job.agent_id, "status": self.status, "reason": self.reason},
                run_id=self.run_id,
            )
        if self.unsubscribe is not None:
            self.unsubscribe()
        return self.run


def _builtin_review(ctx: Context, ws: Workspace, folder: Path, success: Path) -> tuple[str, str]:
    """The offline reviewer, in process: its report goes straight to ``report.complete.md``."""
    from gitflow_agents.reviewer import builtin
    from gitflow_agents.runs import write_text_atomic

    head = git.head_sha(ws.worktree)
    spec = git.DiffSpec(ws.base_sha, head)
    result = builtin.review_diff(ws.worktree, spec, threshold=ctx.settings.threshold)
    text = builtin.report(
        result, reviewed_sha=head, base_sha=ws.base_sha, threshold=ctx.settings.threshold
    )
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(success, text)
    return "succeeded", "builtin reviewer finished"


def _agent_events(hub: EventHub, paths: RunPaths, run_id: str) -> Any:
    """Mirror the events of one agent invocation into its own ``events.jsonl``."""
    from gitflow_agents.events import Event, JsonlChannel

    channel = JsonlChannel(paths.events)

    def forward(event: Event) -> None:
        channel.handle(event)

    unsubscribe = hub.subscribe("*", forward, run_id=run_id)

    def close() -> None:
        unsubscribe()
        channel.close()

    return close


def _write_agent_result(paths: RunPaths, run: AgentRun, ctx: Context) -> None:
    """The ``result.json`` of one agent invocation (docs/protocol.md, Run records; never
    raises)."""
    from gitflow_agents.runs import flow_result, result_status, write_result

    with contextlib.suppress(Exception):
        text = run.report.read_text(encoding="utf-8", errors="replace") if run.report else ""
        kind = "implement" if run.kind == "fix" else run.kind
        own = None
        if run.kind in ("implement", "fix"):
            own = stats.compute(ctx.root, run.start_sha, run.end_sha, exclude=ctx.exclude)
        changed = own.changed_files if own is not None else ()
        result = flow_result(
            kind, result_status(run.status), report_text=text, changed_files=changed
        )
        if own is not None:
            result["gitStats"] = own.to_json()
        result["run"] = {
            **run.to_json(),
            "flow": ctx.flow,
            "logDirectory": str(paths.run_dir),
            "chainRunID": ctx.chain_run,
            "finishedAt": time.time(),
        }
        write_result(paths, result)


def _warm_up() -> None:
    """Before parallel agents start: look libc up once for the supervisor's inotify watcher
    (``ldconfig -p``, a subprocess), instead of every agent thread racing to do it. The
    imports the threads need were done while preparing the agents."""
    from gitflow_agents import supervisor

    with contextlib.suppress(Exception):
        supervisor._libc()
