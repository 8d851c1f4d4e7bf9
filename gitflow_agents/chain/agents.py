"""Running the chain's agents: one at a time, or several at once sharing one work tree.

``run_agent`` runs (or reuses, see ``chain/resume.py``) one agent; ``run_together`` runs several
(the reviewers of a round) as separate processes that all start once every one of them is
prepared. Each invocation is an ``_Attempt`` run by the one agent-run engine
(``agent_run.run.AgentRunner``, as ``spawn`` and ``send`` are): ``prepare`` (run folder, events,
prompt, launch), ``AgentRunner.run`` (the supervised process, or the builtin reviewer in
process), ``finish`` (the commit and statistics of an implement / fix) and ``close`` (the run
record: ``result.json`` and the task event; docs/protocol.md, Run records).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gitflow_agents import supervisor
from gitflow_agents.agent_run.launch import report_files
from gitflow_agents.agent_run.run import AgentJob, AgentRunner, limits
from gitflow_agents.agents.installed import check_agents
from gitflow_agents.base.errors import AgentError, ExitCode
from gitflow_agents.base.fsutil import write_text_atomic
from gitflow_agents.chain.builtin import BUILTIN_USAGE_JSON, builtin_review, is_builtin
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.resume import (
    TRAILER_AGENT,
    TRAILER_STOPPED,
    completed_meta,
    set_aside,
    write_meta,
)
from gitflow_agents.chain.workspace import Lost, Workspace, reset_unless_clean
from gitflow_agents.findings.report import read_review
from gitflow_agents.git import queries as git
from gitflow_agents.git import stats
from gitflow_agents.prompt import PromptRequest, agent_dir, assemble_prompt, default_agent_id
from gitflow_agents.render import git_stats
from gitflow_agents.runs.fields import mapping
from gitflow_agents.runs.lost import lifetime
from gitflow_agents.runs.schema import AgentEntry
from gitflow_agents.runs.status import LOST_REASON

if TYPE_CHECKING:
    from gitflow_agents.findings import Review
    from gitflow_agents.supervisor import Outcome, ReportFiles, Status

AgentKind = Literal["implement", "review", "fix", "research"]

TRAILER_RUN = "Gitflow-Agents-Run"


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
    attempt: int = 1  # 2: run again after the first attempt got stuck
    earlier: tuple[AgentRun, ...] = ()  # the attempts before this one (a stuck one)
    review: Review | None = None  # a reviewer's review, read once (chain/review.py gates it)
    left_out: tuple[str, ...] = ()  # nested repositories its commit left out (commit_work)
    discarded: str = ""  # reused: why the round it ran in discarded its review (resume.discard)
    # a spent budget started no process of it (asked again once its max_parallel slot was
    # granted): no agent ran, as when the chain's own check refused it before it was prepared
    refused: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    def attempts(self) -> tuple[AgentRun, ...]:
        """Every attempt of this agent in this run that ran, oldest first (usually just this
        one): not one a spent budget refused before its process started (the step's record
        lists no agent that never ran, as when the budget refused it before it was prepared)."""
        return tuple(run for run in (*self.earlier, self) if not run.refused)

    def entry(self) -> AgentEntry:
        """The attempt as the step run's record holds it (``runs/schema.py``)."""
        return AgentEntry(
            agent=self.agent,
            agent_id=self.agent_id,
            kind=self.kind,
            run_id=self.run_id,
            status=self.status,
            reason=self.reason,
            reused=self.reused,
            start_sha=self.start_sha,
            end_sha=self.end_sha,
            report=str(self.report) if self.report else None,
            duration_ms=round(self.duration * 1000),
            attempt=self.attempt,
            left_out=self.left_out,
        )


class AgentFailed(AgentError):
    """An agent did not complete (failed, stuck, timed out, crashed): exit code 3; 5 when a
    budget stopped it; 6 when it was rate limited for longer than the configured wait."""

    def __init__(self, run: AgentRun, wave: Sequence[AgentRun] = ()) -> None:
        super().__init__(f"{run.agent_id}: {run.status}: {run.reason}")
        self.run = run
        # every run of the agents started together with it (parallel reviewers), in order: the
        # step's record lists each, and what each spent (``run`` alone when it ran alone)
        self.wave: tuple[AgentRun, ...] = tuple(wave) or (run,)
        if run.status == "budget":
            self.exit_code = ExitCode.BUDGET
        if run.status == "rate_limited":
            self.exit_code = ExitCode.RATE_LIMITED


def lost_runs(ended: Sequence[Lost]) -> list[AgentRun]:
    """The lost runs a new run of their step ended (``workspace.take_over``), as the step's
    record lists them: canceled, at the start of its agents (what they spent counts), timed
    to their last sign of life (``lost.lifetime``), not to when they were ended."""
    runs = []
    for run_id, status in ended:
        agent_id = str(status.get("agent") or "?")
        name = mapping(status, "extra").get("agent_config")  # its name in .flow/
        kind = status.get("kind")
        runs.append(
            AgentRun(
                agent=name if isinstance(name, str) and name else agent_id,
                agent_id=agent_id,
                kind=kind if kind in ("implement", "review", "fix", "research") else "implement",
                run_id=run_id,
                status="canceled",
                reason=_lost_reason(status),
                reused=False,
                start_sha="",
                end_sha="",
                report=None,
                duration=lifetime(status) or 0.0,
            )
        )
    return runs


def _lost_reason(status: Mapping[str, Any]) -> str:
    """Why a lost run ended, as the step's record says it: what ended it when that was
    `cancel` or `gc` (their reasons, ``lost ...`` already when it was `gc`'s), else this run."""
    ended_by = status.get("reason") if status.get("state") == "canceled" else None
    if not isinstance(ended_by, str) or not ended_by:
        return f"{LOST_REASON}; killed by a new run of its step"
    return ended_by if ended_by.startswith(LOST_REASON) else f"{LOST_REASON}; {ended_by}"


def agent_id_for(agent: str, step: int | None, iteration: int | None = None) -> str:
    base = default_agent_id(agent, step)
    return base if iteration is None else f"{base}-{iteration}"


def run_agent(ctx: Context, ws: Workspace, job: Job) -> AgentRun:
    """Run (or reuse) one agent in ``ws``; commit its changes (implement/fix) with the run's
    trailer and fill its report's git statistics. AgentFailed unless it completed."""
    return run_together(ctx, ws, [job])[0]


@dataclass(frozen=True)
class Job:
    """What one agent invocation is asked to do (see ``run_agent``). ``resolve_merge``: the
    work tree holds a conflicted merge the agent resolves (it is kept as it is, and the commit
    completes the merge); such a run is never reused, nor one with ``reuse`` False (a research
    question asked again)."""

    agent: str
    agent_id: str
    kind: AgentKind
    start_sha: str
    step: int | None = None
    after: tuple[str, ...] = ()
    preamble: str | None = None
    task: str | None = None
    commit_message: str | None = None
    resolve_merge: bool = False  # the work tree holds a merge in progress for it: keep it
    reuse: bool = True  # False: run it even when an earlier run completed from the same commit


def run_together(ctx: Context, ws: Workspace, jobs: Sequence[Job]) -> list[AgentRun]:
    """Run ``jobs`` at the same time (separate processes sharing ``ws``): every run folder,
    prompt and launch spec is prepared first, then all agents start together. Completed agents
    that started from the same commit are reused. An agent that got stuck (idle for the stuck
    timeout and then the grace, ``defaults.stuck_retry_grace_secs``; its tree is killed) is run
    once more from the same commit; both attempts are recorded. AgentFailed (the first, in job
    order) once all have finished; on any other error or Ctrl-C the others are canceled."""
    runs = _wave(ctx, ws, jobs)
    stuck = [index for index, run in enumerate(runs) if run.status == "stuck"]
    if stuck:
        again = _wave(ctx, ws, [replace(jobs[index], reuse=False) for index in stuck])
        for index, retry in zip(stuck, again, strict=True):
            runs[index] = replace(retry, attempt=2, earlier=(runs[index],))
    failed = next((run for run in runs if not run.ok), None)
    if failed is not None:
        raise AgentFailed(failed, runs)
    return runs


_ROLE = {"implement": "implementer", "review": "reviewer", "fix": "fixer"}
"""The agent a budget message names by the kind of its job (``no reviewer started``)."""


def _wave(ctx: Context, ws: Workspace, jobs: Sequence[Job]) -> list[AgentRun]:
    """The runs of ``jobs``, started together (see ``run_together``), whatever their outcome.
    AgentNotInstalled before anything of the wave runs when one agent's program is missing.
    One agent runs in this thread (the chain's loop is a few frames above its process),
    several each in a thread of their own."""
    done: dict[int, AgentRun] = {}
    files = [_report_files(ctx, job) for job in jobs]  # named once per agent, handed down
    for index, job in enumerate(jobs):
        reused = _reuse(ctx, ws, job, files[index]) if job.reuse and not job.resolve_merge else None
        if reused is not None:
            done[index] = reused
    to_run = [job.agent for index, job in enumerate(jobs) if index not in done]
    if ctx.budget is not None and to_run:  # a spent scope starts no agent (BudgetError)
        adapters = (ctx.config.agent(agent).adapter for agent in to_run)
        ctx.budget.refuse(*adapters, what=_ROLE.get(jobs[0].kind, ""))
    check_agents(ctx.config, to_run, cwd=ws.worktree, env=ctx.env)
    attempts: list[tuple[int, _Attempt]] = []
    try:
        for index, job in enumerate(jobs):
            if index in done:
                continue
            attempt = _Attempt(ctx, ws, job, files[index])
            attempts.append((index, attempt))
            attempt.prepare()
        if len(attempts) == 1:
            attempt = attempts[0][1]
            attempt.finish(attempt.runner.run(ctx.cancel))
        elif attempts:
            _warm_up()
            with ThreadPoolExecutor(max_workers=len(attempts)) as pool:
                futures = [pool.submit(_run_and_close, attempt) for _, attempt in attempts]
                try:
                    for future in futures:
                        future.result()
                except BaseException as exc:  # every supervisor kills its agent's tree
                    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C or SIGTERM, said so
                        ctx.cancel.set_for(exc)
                    else:  # a crash
                        ctx.cancel.set()
                    raise
    finally:
        for index, attempt in attempts:
            done[index] = attempt.close()
        interrupted = sys.exc_info()[1]
        if isinstance(interrupted, KeyboardInterrupt):  # Ctrl-C: the step's record lists them
            interrupted.wave = [done[index] for index in sorted(done)]  # type: ignore[attr-defined]
    return [done[index] for index in range(len(jobs))]


def _run_and_close(attempt: _Attempt) -> AgentRun:
    try:
        attempt.finish(attempt.runner.run(attempt.ctx.cancel))
    finally:
        run = attempt.close()
    return run


def _report_files(ctx: Context, job: Job) -> ReportFiles:
    return report_files(
        ctx.config, job.agent, agent_dir(ctx.root, ctx.config.flow_dir, ctx.flow, job.agent_id)
    )


def _reuse(ctx: Context, ws: Workspace, job: Job, files: ReportFiles) -> AgentRun | None:
    """The earlier run of ``job`` when it completed from the same commit and its work is on the
    work tree's branch (resuming), else None.
    A builtin review is never reused: it takes a fraction of a second, and what it accepts (the
    ``review:`` settings, the baseline) may have changed since; nor an implementer or fixer
    that changed nothing (the step ended ``empty``): running the step again asks it again,
    else it could never be retried (docs/chains.md, Resuming)."""
    if is_builtin(ctx, job.agent):
        return None
    success = files.success
    meta = completed_meta(files.folder, success, job.start_sha, ctx.root)
    if meta is None:
        return None
    if job.kind in ("implement", "fix") and meta.end_sha == meta.start_sha:
        return None  # ``empty``: its reports go to previous/ and it runs again
    if not git.is_ancestor(ws.worktree, meta.end_sha, "HEAD"):
        return None  # its commit is not on this branch: another branch's run from that commit
    ctx.hub.emit("task:complete", {"node": job.agent_id, "status": "reused"})
    return AgentRun(
        agent=job.agent,
        agent_id=job.agent_id,
        kind=job.kind,
        run_id=meta.run_id,
        status="succeeded",
        reason="reused: completed earlier from the same commit",
        reused=True,
        start_sha=job.start_sha,
        end_sha=meta.end_sha,
        report=success,
        duration=0.0,
        review=_read_review(ws, job, success),
        left_out=meta.left_out,
        discarded=meta.discarded,
    )


def nested_repositories(paths: Sequence[str]) -> str:
    """``nested repository a`` or ``nested repositories a, b``: what the lines about nested
    repositories left out of a commit (``git.commit_work``) call them."""
    noun = "nested repository" if len(paths) == 1 else "nested repositories"
    return f"{noun} {', '.join(paths)}"


def left_out_line(agent_id: str, paths: Sequence[str]) -> str:
    """The line a step's output and record give the nested repositories an agent's commit
    left out (``git.commit_work``)."""
    how = (
        "not a submodule; add it with git submodule add to commit it"
        if len(paths) == 1
        else "not submodules; add each with git submodule add to commit it"
    )
    return f"{agent_id}: left out of the commit: {nested_repositories(paths)} ({how})"


# --------------------------------------------------------------------------------------------
def _own_commits(worktree: Path, start_sha: str) -> str:
    """The work tree's HEAD when the agent committed on the step branch itself (its definition
    may tell it to; Aider's ``auto_commits``), else ``start_sha``: only commits on top of where
    it started count, not a branch it moved HEAD to."""
    head = git.head_sha(worktree)
    return head if head != start_sha and git.is_ancestor(worktree, start_sha, head) else start_sha


# One attempt: prepare, run, finish, close; the run itself is the agent-run engine's


class _Attempt:
    """One agent invocation through the agent-run engine (``agent_run.run.AgentRunner``):
    ``prepare`` (clean slate, run folder, task announced, prompt and launch), then the caller
    runs ``runner.run`` (the supervised process or the in-process reviewer) and hands its
    Outcome to ``finish`` (the commit and statistics of an implement / fix), ``close``
    (result.json and the task's end event; always, once)."""

    def __init__(self, ctx: Context, ws: Workspace, job: Job, files: ReportFiles) -> None:
        self.ctx, self.ws, self.job, self.files = ctx, ws, job, files
        self.folder = files.folder
        self.report, self.success, self.failure = files
        self._runner: AgentRunner | None = None
        self.builtin = is_builtin(ctx, job.agent)
        self.review: Review | None = None  # the builtin reviewer's, handed on as it is
        self.started = time.monotonic()
        self.status, self.reason = "failed", "the agent did not finish"
        self.end_sha = job.start_sha
        self.own: stats.GitStats | None = None  # an implement / fix: its commit's statistics
        self.left_out: tuple[str, ...] = ()  # nested repositories left out of its commit
        self.error: BaseException | None = None  # what prepare / finish raised
        self.run: AgentRun | None = None

    @property
    def runner(self) -> AgentRunner:
        """The prepared run (``prepare`` first)."""
        if self._runner is None:
            raise RuntimeError("_Attempt.prepare() first")
        return self._runner

    @property
    def run_id(self) -> str:
        return self._runner.run_id if self._runner is not None else ""

    def prepare(self) -> None:
        try:
            self._prepare()
        except BaseException as exc:
            self.error = exc
            raise

    def _prepare(self) -> None:
        ctx, ws, job, settings = self.ctx, self.ws, self.job, self.ctx.settings
        set_aside(self.folder, (self.success, self.failure, self.report))
        clean_at = None
        if ws.branch is not None and not job.resolve_merge:
            # a crashed attempt's leftovers; a reviewer reviews its commit, also when the
            # branch holds an earlier run's later work (``review_round`` leaves that alone
            # while every reviewer of the round is reused)
            reset_unless_clean(ws, job.start_sha)
            clean_at = job.start_sha if job.kind in ("implement", "fix") else None
        prompt = assemble_prompt(
            PromptRequest(
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
        )
        self._runner = AgentRunner(
            AgentJob(
                root=ctx.root,
                config=ctx.config,
                agent=job.agent,
                agent_id=job.agent_id,
                flow_name=ctx.flow,
                kind="implement" if job.kind == "fix" else job.kind,
                prompt_text=prompt.text,
                prompt_segments=prompt.segments,
                limits=limits(
                    ctx.config,
                    stuck_timeout=settings.stuck_timeout,
                    timeout=settings.timeout,
                    kill_grace=settings.kill_grace,
                ),
                step=job.step,
                workdir=ws.worktree,
                env=ctx.env,
                secrets=frozenset(ctx.secrets),
                in_process=self._builtin_review if self.builtin else None,
                budget=ctx.budget,
                role=_ROLE.get(job.kind, ""),
                chain_run=ctx.chain_run,
            ),
            hub=ctx.hub,
            paths=ctx.new_run(),
            files=self.files,
            clean_at=clean_at,
        )
        self.started = time.monotonic()
        self._runner.start_task()  # every parallel agent is announced before any starts
        self._runner.prepare()

    def finish(self, outcome: Outcome) -> None:
        """After the agent ran: an implement / fix that succeeded, or that a budget stopped
        (its work kept, ``TRAILER_STOPPED``), is committed (with the run's trailer) and its
        report gets the commit's statistics."""
        try:
            self._finish(outcome)
        except BaseException as exc:
            self.error = exc
            raise

    def _finish(self, outcome: Outcome) -> None:
        ctx, ws, job = self.ctx, self.ws, self.job
        self.status, self.reason = outcome.status, outcome.reason
        stopped = self.status == "budget"  # its work so far is kept on the step branch
        if self.status != "succeeded" and not stopped:
            return
        if job.kind in ("implement", "fix") and ws.branch is not None:
            message = job.commit_message or f"{ctx.flow}: {job.agent_id}"
            trailers = {TRAILER_RUN: self.run_id, TRAILER_AGENT: job.agent_id}
            if stopped:
                message, trailers[TRAILER_STOPPED] = f"{message} (stopped: budget)", "budget"
            committed = git.commit_work(
                ws.worktree,
                job.start_sha,
                message,
                trailers=trailers,
                exclude=ctx.exclude,
                identity=ctx.commit_identity,
            )
            self.left_out = committed.left_out
            if committed.left_out:
                ctx.notices.append(left_out_line(job.agent_id, committed.left_out))
            self.end_sha = committed.sha or _own_commits(ws.worktree, job.start_sha)
            leaked = git.paths_differing_between(
                ws.worktree, job.start_sha, self.end_sha, ctx.protected
            )
            if leaked:  # the agent committed a file chain.copy_ignored copied in itself
                self.status = "failed"
                self.reason = f"it committed {', '.join(leaked)}, copied in by chain.copy_ignored: such files are never committed"
                return
            if self.success.exists():
                self.own = self._own_stats(ws.worktree)
                git_stats.fill_report_file(self.success, self.own)
        if stopped:  # not completed: nothing to reuse (its commit's trailer marks the work)
            return
        write_meta(
            self.folder,
            run_id=self.run_id,
            kind=job.kind,
            start_sha=job.start_sha,
            end_sha=self.end_sha,
            left_out=self.left_out,
        )

    def _own_stats(self, root: Path) -> stats.GitStats:
        """The statistics of this agent's commit; a merge fixer's: its resolution alone, not
        what the merged target brought in (``stats.compute_resolution``)."""
        job, exclude = self.job, self.ctx.exclude
        if job.resolve_merge and self.end_sha != job.start_sha:
            return stats.compute_resolution(root, job.start_sha, self.end_sha, exclude=exclude)
        return stats.compute(root, job.start_sha, self.end_sha, exclude=exclude)

    def _builtin_review(self) -> tuple[Status, str]:
        """The offline reviewer in process (``chain/builtin.py``): its Review goes to
        ``self.review`` as it is, its report to ``report.complete.md``."""
        self.review, text = builtin_review(self.ctx, self.ws)
        self.folder.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.success, text)
        return "succeeded", "builtin reviewer finished"

    def close(self) -> AgentRun:
        """The AgentRun as it stands; the first call records it (result.json, task event)."""
        if self.run is not None:
            return self.run
        job, runner = self.job, self._runner
        ended = runner.outcome if runner is not None else None
        if ended is not None and self.status == "failed" and ended.status != "succeeded":
            # interrupted (Ctrl-C, SIGTERM) before ``finish``: as its supervisor ended it
            self.status, self.reason = ended.status, ended.reason
        report = next((p for p in (self.success, self.failure, self.report) if p.exists()), None)
        review = self.review
        if review is None and job.kind == "review":
            review = _read_review(self.ws, job, report)
        self.run = AgentRun(
            agent=job.agent,
            agent_id=job.agent_id,
            kind=job.kind,
            run_id=self.run_id,
            status=self.status,
            reason=self.reason,
            reused=False,
            start_sha=job.start_sha,
            end_sha=self.end_sha,
            report=report,
            duration=time.monotonic() - self.started,
            review=review,
            left_out=self.left_out,
            refused=self.status == "budget" and runner is not None and not runner.started,
        )
        if runner is None:
            return self.run
        if self.error is not None:
            runner.fail(self.error)
        elif runner.outcome is None and runner.error is None:
            runner.fail(_NotStarted(self.reason))
        own = self.own
        if own is None and job.kind in ("implement", "fix"):
            with contextlib.suppress(Exception):
                own = self._own_stats(self.ctx.root)
        runner.record(
            run_extra={
                **self.run.entry().to_json(),
                "flow": self.ctx.flow,
                "chainRunID": self.ctx.chain_run,
                "finishedAt": time.time(),
                **(BUILTIN_USAGE_JSON if self.builtin else {}),
            },
            extra={"gitStats": own.to_json()} if own is not None else None,
            review=review,
        )
        runner.close()
        return self.run


def _read_review(ws: Workspace, job: Job, report: Path | None) -> Review:
    """A reviewer's report read into its Review, once: about the commit it reviewed
    (``job.start_sha``), against the step's base."""
    return read_review(
        report,
        reviewed_sha=job.start_sha,
        base_sha=ws.base_sha,
        source=job.agent_id,
        root=ws.worktree,  # where the reviewer worked: its absolute paths are made relative
    )


class _NotStarted(Exception):
    """Why an agent that was prepared never ran (another agent of its round could not be)."""


def _warm_up() -> None:
    """Before parallel agents start: look libc up once for the supervisor's inotify watcher
    (``ldconfig -p``, a subprocess), instead of every agent thread racing to do it. The
    imports the threads need were done while preparing the agents."""
    with contextlib.suppress(Exception):
        supervisor._libc()
