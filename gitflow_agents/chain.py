"""Implement → review → (fix → review)* → merge: one plan step on its own branch and work tree.

The loop (``run_step``) reads top to bottom: the implementer works, then up to
``max_iterations`` review rounds; between rounds the fixer gets every review report (``--after``).
The last action is always a review. A round approves only when every reviewer approves and the
gate (DESIGN §4: verdict APPROVED, no finding at or above the threshold, about exactly the
reviewed commit) passes. Approved: the step branch is merged into the target (fast-forward or a
merge commit, never forced), a git note records the verdict, and the plan step gets ✅. Anything
else: ❌ and nothing merged. The run record (``result.json``, history line) is written in a
``finally`` so a crash still leaves evidence.

Agents run in a work tree of the step branch (``git.tool_worktree_root``: the user cache), so
the user's own work tree and uncommitted changes are never touched. The run artifacts stay in the
user's ``<flow_dir>/`` (a symlink from the step work tree points there); ``info/exclude`` keeps
them out of commits and statistics. Resuming: an agent whose ``report.complete.md`` exists and
that started from the same commit is reused instead of run again.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gitflow_agents import git, lock, stats
from gitflow_agents.config import FlowConfig
from gitflow_agents.errors import AgentError, ExitCode, GitError, UsageError
from gitflow_agents.events import EventHub
from gitflow_agents.findings import (
    GateResult,
    Review,
    Severity,
    gate,
    merge_reviews,
    parse_review,
)
from gitflow_agents.plan import Plan
from gitflow_agents.runs import RunPaths, read_json, write_json_atomic

if TYPE_CHECKING:
    from gitflow_agents.assets import PromptAssetManifest
    from gitflow_agents.launch import Prepared

Outcome = Literal["approved", "rejected", "failed", "canceled", "skipped"]
AgentKind = Literal["implement", "review", "fix", "research"]

TRAILER_RUN = "Gitflow-Agents-Run"
TRAILER_AGENT = "Gitflow-Agents-Agent"
META_FILE = "chain.json"
DONE, FAILED = "✅", "❌"

REVIEW_PREAMBLE = """\
It is now your job to review the changes for this plan-step: commit {head} on branch {branch},
compared with {base} (the merge-base with {target}); see them with `git diff {base} {head}`.
Do not change, stage or commit any file.

Your verdict is read by a program. End your report with exactly one of these lines, alone on its
line (no bold, no quotes, not inside a code block):

REVIEW_RESULT: APPROVED
REVIEW_RESULT: REVISE

Include exactly one fenced ```json block: {{"overall": "approve" | "revise", "summary": "...",
"findings": [{{"severity": "error" | "warn" | "info", "file": "...", "line": 1, "message": "..."}}],
"reviewed_sha": "{head}"}}. The verdict line and "overall" must agree. Findings of severity
{threshold} or above block the merge."""

FIX_PREAMBLE = """\
The review of this plan-step asked for changes. Read every report listed under "Previous Agent
Reports" and fix what they ask for, nothing more. Leave your changes uncommitted in the work tree:
gitflow-agents commits them and the step is reviewed again."""


class AgentFailed(AgentError):
    """An agent did not complete (failed, stuck, timed out, crashed): exit code 3."""

    def __init__(self, run: AgentRun) -> None:
        super().__init__(f"{run.agent_id}: {run.status}: {run.reason}")
        self.run = run


@dataclass(frozen=True)
class ChainSettings:
    implementer: str = "builder"
    reviewers: tuple[str, ...] = ("reviewer",)
    fixer: str = "fixer"
    max_iterations: int = 3
    target: str | None = None  # default: config.default_branch
    branch_pattern: str = "agents/{plan_name}/step-{step}"  # also {plan}, {step2}
    merge: str = "ff"  # "ff" (fast-forward only) or "merge" (always a merge commit)
    threshold: Severity = Severity.ERROR
    stuck_timeout: float | None = None  # default: config defaults.stuck_timeout_secs
    timeout: float | None = None  # default: config defaults.max_wait_secs
    kill_grace: float = 3.0


@dataclass
class Context:
    """What every agent of a run shares: project, config, plan, settings, events, cancel."""

    root: Path  # the user's work tree (run artifacts live under root/flow_dir)
    config: FlowConfig
    plan: Plan | None
    flow: str  # flow name: the plan's name, else given
    settings: ChainSettings
    hub: EventHub
    cancel: threading.Event = field(default_factory=threading.Event)
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    chain_run: str | None = None  # the step run agents belong to (None: a single flow)
    _manifest: Any = field(default=None, init=False, repr=False)

    @property
    def target(self) -> str:
        return self.settings.target or self.config.default_branch

    @property
    def exclude(self) -> tuple[str, ...]:
        return (self.config.flow_dir.strip("/"),)

    def manifest(self) -> PromptAssetManifest:
        """The `.agents-flow/` manifest of ``root``, read once per run (every agent's prompt
        resolves its agent through it)."""
        if self._manifest is None:
            from gitflow_agents.assets import load_manifest

            self._manifest = load_manifest(self.root)
        manifest: PromptAssetManifest = self._manifest
        return manifest

    def new_run(self) -> RunPaths:
        """A fresh ``<flow_dir>/<flow>/runs/<runID>/`` for one agent invocation.

        No git call per agent: the flow dir is already in ``info/exclude``, put there when the
        workspace was made (``step_workspace``, ``branch_workspace``, ``scratch_workspace``; a
        caller that builds a Workspace itself excludes it with ``git.ensure_info_exclude``)."""
        from gitflow_agents.runs import new_run_id, runs_root

        paths = RunPaths(runs_root(self.root, self.config.flow_dir, self.flow) / new_run_id())
        paths.run_dir.mkdir(parents=True)
        return paths


@dataclass(frozen=True)
class Workspace:
    worktree: Path
    branch: str | None  # None: detached (review / research of an arbitrary commit)
    base_sha: str  # merge-base with the target: what statistics and reviews compare against


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


@dataclass(frozen=True)
class ReviewRound:
    iteration: int | None  # None: a single review flow
    reviewed_sha: str
    agents: tuple[AgentRun, ...]
    reviews: tuple[Review, ...]
    gate: GateResult

    def to_json(self) -> dict[str, Any]:
        return {
            "iteration": self.iteration,
            "reviewedSha": self.reviewed_sha,
            "approved": self.gate.approved,
            "reasons": list(self.gate.reasons),
            "reviewers": [
                {
                    "agentId": run.agent_id,
                    "overall": review.overall.value if review.overall else None,
                    "reason": review.reason,
                    "findings": [f.to_dict() for f in review.findings],
                }
                for run, review in zip(self.agents, self.reviews, strict=True)
            ],
        }


@dataclass(frozen=True)
class ChainResult:
    outcome: Outcome
    exit_code: int
    reason: str
    run_id: str
    step: int | None
    branch: str | None
    iterations: int  # review rounds run
    fixes: int
    stats: stats.GitStats | None
    merged: git.MergeResult | None
    result_path: Path | None
    history_line: str


# --------------------------------------------------------------------------------------------
# Workspaces


def branch_name(settings: ChainSettings, plan: str, step: int) -> str:
    from gitflow_agents.config import format_branch

    return format_branch(settings.branch_pattern, plan, step)


def worktree_path(root: Path, flow: str, name: str) -> Path:
    return git.tool_worktree_root(root) / flow / name


def refuse_foreign_checkout(ctx: Context, name: str) -> None:
    """UsageError when branch ``name`` is checked out in a work tree gitflow-agents did not
    create (the user's own, or a worktree the user made): the tool resets and cleans the work
    tree it runs agents in, so it works on a branch only in a work tree of its own."""
    tree = git.worktree_of_branch(ctx.root, name)
    if tree is None or git.is_tool_worktree(ctx.root, tree):
        return
    raise UsageError(
        f"branch {name} is checked out in the work tree {tree}: gitflow-agents runs agents only "
        "in work trees of its own and never resets yours; switch that work tree to another "
        f"branch (`git -C {tree} switch {ctx.target}`, uncommitted changes stay with you) or "
        "remove it, then run again"
    )


def _link_flow_dir(ctx: Context, worktree: Path) -> None:
    """``<worktree>/<flow_dir>`` → the user's flow dir, so agents' relative report paths land
    in one place; both spellings are excluded (a symlink is not a directory to git)."""
    flow_dir = ctx.exclude[0]
    git.ensure_info_exclude(ctx.root, (f"/{flow_dir}/", f"/{flow_dir}"))
    real = ctx.root / flow_dir
    real.mkdir(parents=True, exist_ok=True)
    link = worktree / flow_dir
    if not link.is_symlink() and not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(real.resolve(), target_is_directory=True)


def step_workspace(ctx: Context, step: int) -> Workspace:
    """The step branch (``branch_pattern``) in its own work tree."""
    assert ctx.plan is not None
    name = branch_name(ctx.settings, ctx.plan.name, step)
    return branch_workspace(ctx, name, f"step-{step:02d}")


def branch_workspace(ctx: Context, name: str, key: str | None = None) -> Workspace:
    """Branch ``name`` (created at the target's tip when new) checked out in a work tree of its
    own (an existing one is reused); ``key`` names the work tree folder."""
    git.check_branch_name(ctx.root, name)
    target_sha = git.branch_sha(ctx.root, ctx.target)
    if target_sha is None:
        raise UsageError(f"target branch {ctx.target!r} does not exist (use --target)")
    refuse_foreign_checkout(ctx, name)  # before anything is created or reset
    if git.branch_sha(ctx.root, name) is None:
        git.create_branch(ctx.root, name, target_sha)
    tree = git.worktree_of_branch(ctx.root, name)
    if tree is None:
        tree = worktree_path(ctx.root, ctx.flow, key or name.replace("/", "-"))
        if tree.exists():  # left over from a crash: git no longer knows it
            git.remove_tool_worktree(ctx.root, tree)
        git.add_worktree(ctx.root, tree, name)
    _link_flow_dir(ctx, tree)
    return Workspace(tree, name, git.merge_base(ctx.root, ctx.target, name))


@contextlib.contextmanager
def scratch_workspace(ctx: Context, ref: str, base: str) -> Iterator[Workspace]:
    """A detached work tree at ``ref`` for read-only flows (review, research), removed after."""
    from gitflow_agents.runs import new_run_id

    sha = git.rev_parse(ctx.root, ref)
    tree = worktree_path(ctx.root, ctx.flow, f"scratch-{new_run_id()[:13]}")
    git.add_worktree(ctx.root, tree, sha, detach=True)
    try:
        _link_flow_dir(ctx, tree)
        yield Workspace(tree, None, git.rev_parse(ctx.root, base))
    finally:
        git.remove_tool_worktree(ctx.root, tree)


# --------------------------------------------------------------------------------------------
# One agent


def _agent_paths(ctx: Context, agent: str, agent_id: str) -> tuple[Path, Path, Path, Path]:
    from gitflow_agents.launch import signal_files
    from gitflow_agents.prompt import agent_dir

    folder = agent_dir(ctx.root, ctx.config.flow_dir, ctx.flow, agent_id)
    return (folder, *signal_files(ctx.config, agent, folder))


def _reusable(folder: Path, success: Path, start_sha: str, root: Path) -> dict[str, Any] | None:
    """The stored meta of a completed agent that started from ``start_sha``, else None."""
    meta = read_json(folder / META_FILE)
    if meta is None or not success.exists() or meta.get("startSha") != start_sha:
        return None
    end = meta.get("endSha")
    if not isinstance(end, str) or not git.is_ancestor(root, start_sha, end):
        return None
    return meta


def _set_aside(folder: Path, paths: Sequence[Path]) -> None:
    """Move an earlier attempt's reports to ``previous/`` (the supervisor wants a clean slate)."""
    stale = [p for p in paths if p.exists()]
    if not stale:
        return
    previous = folder / "previous"
    previous.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for path in stale:
        path.rename(previous / f"{stamp}-{os.getpid()}-{path.name}")
    (folder / META_FILE).unlink(missing_ok=True)


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
    job = _Job(agent, agent_id, kind, start_sha, step, tuple(after), preamble, task, commit_message)
    return _run_together(ctx, ws, [job])[0]


@dataclass(frozen=True)
class _Job:
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


def _run_together(ctx: Context, ws: Workspace, jobs: Sequence[_Job]) -> list[AgentRun]:
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
                    _warm_up_records()
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


def _reuse(ctx: Context, job: _Job) -> AgentRun | None:
    """The earlier run of ``job`` when it completed from the same commit (resuming), else None."""
    folder, _report, success, _failure = _agent_paths(ctx, job.agent, job.agent_id)
    meta = _reusable(folder, success, job.start_sha, ctx.root)
    if meta is None:
        return None
    ctx.hub.emit("task:complete", {"node": job.agent_id, "status": "reused"})
    return AgentRun(
        job.agent, job.agent_id, job.kind, str(meta.get("runID", "")), "succeeded",
        "reused: completed earlier from the same commit", True, job.start_sha,
        str(meta["endSha"]), success, 0.0,
    )  # fmt: skip


class _Attempt:
    """One agent invocation in three steps: ``prepare`` (its run folder, events, prompt and
    launch spec), ``start`` (the supervised process; then the commit and statistics of an
    implement / fix), ``close`` (result.json and the task event; always, once)."""

    def __init__(self, ctx: Context, ws: Workspace, job: _Job) -> None:
        self.ctx, self.ws, self.job = ctx, ws, job
        self.folder, self.report, self.success, self.failure = _agent_paths(
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
        _set_aside(self.folder, (self.success, self.failure, self.report))
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
        write_json_atomic(
            self.folder / META_FILE,
            {
                "runID": self.run_id,
                "kind": job.kind,
                "startSha": job.start_sha,
                "endSha": self.end_sha,
            },
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
    """The seed-001 ``result.json`` of one agent invocation (never raises)."""
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


# --------------------------------------------------------------------------------------------
# A review round


def agent_id_for(agent: str, step: int | None, iteration: int | None = None) -> str:
    from gitflow_agents.prompt import default_agent_id

    base = default_agent_id(agent, step)
    return base if iteration is None else f"{base}-{iteration}"


def review_round(
    ctx: Context,
    ws: Workspace,
    *,
    iteration: int | None,
    step: int | None,
    after: Sequence[str],
    reviewers: Sequence[str] | None = None,
    head: str | None = None,
    task: str | None = None,
    focus_paths: Sequence[str] = (),
) -> ReviewRound:
    """Every reviewer on ``head`` (default: the work tree's HEAD), concurrently (separate
    processes sharing the one work tree), then the gate."""
    head = head or git.head_sha(ws.worktree)
    if ws.branch is not None and (
        git.head_sha(ws.worktree) != head or git.dirty_paths(ws.worktree)
    ):
        git.discard_changes(ws.worktree, head)  # a crashed attempt's leftovers
    names = tuple(reviewers or ctx.settings.reviewers)
    preamble = REVIEW_PREAMBLE.format(
        head=head,
        branch=ws.branch or "(detached)",
        base=ws.base_sha,
        target=ctx.target,
        threshold=ctx.settings.threshold.value,
    )
    if task is None and (step is None or ctx.plan is None):
        task = f"Review the changes from {ws.base_sha} to {head}."
    if focus_paths:
        preamble += "\n\nFocus on these paths: " + ", ".join(f"`{p}`" for p in focus_paths) + "."

    jobs = [
        _Job(name, agent_id_for(name, step, iteration), "review", head, step, tuple(after),
             preamble, task)
        for name in names
    ]  # fmt: skip
    runs = _run_together(ctx, ws, jobs)
    reviews = tuple(_focus(_read_review(run, head, ws.base_sha), focus_paths) for run in runs)
    combined = reviews[0] if len(reviews) == 1 else merge_reviews(reviews)
    verdict = gate(combined, threshold=ctx.settings.threshold, head_sha=head)
    extra = _untouched(ws, head)
    if extra:
        verdict = GateResult(False, 1, (*verdict.reasons, extra), verdict.threshold)
    return ReviewRound(iteration, head, tuple(runs), reviews, verdict)


def _warm_up() -> None:
    """Before parallel agents start: look libc up once for the supervisor's inotify watcher
    (``ldconfig -p``, a subprocess), instead of every agent thread racing to do it. The
    imports the threads need were done while preparing the agents."""
    from gitflow_agents import supervisor

    with contextlib.suppress(Exception):
        supervisor._libc()


def _warm_up_records() -> None:
    """While parallel agents run: prime recording their results (markdown-it's import, the
    reply and review parsers' first use), which every agent thread would otherwise do at once
    the moment the agents finish."""
    from gitflow_agents.runs import flow_result

    with contextlib.suppress(Exception):
        flow_result("review", "succeeded", report_text="REVIEW_RESULT: APPROVED\n")


def _read_review(run: AgentRun, head: str, base: str) -> Review:
    text = run.report.read_text(encoding="utf-8", errors="replace") if run.report else ""
    return parse_review(text, reviewed_sha=head, base_sha=base, source=run.agent_id)


def _focus(review: Review, paths: Sequence[str]) -> Review:
    """Only findings inside ``paths`` (and those about no file) count; none given: all count."""
    if not paths:
        return review
    prefixes = tuple(p.strip("/") for p in paths)

    def inside(file: str | None) -> bool:
        return file is None or any(file == p or file.startswith(p + "/") for p in prefixes)

    return replace(review, findings=tuple(f for f in review.findings if inside(f.file)))


def _untouched(ws: Workspace, head: str) -> str:
    """Reviewers must not change the work tree: '' when they did not, else why not approved
    (changes are discarded so the next agent starts from the reviewed commit)."""
    moved = git.head_sha(ws.worktree) != head
    dirty = git.dirty_paths(ws.worktree)
    if not moved and not dirty:
        return ""
    git.discard_changes(ws.worktree, head)
    if moved:
        return "a reviewer committed during the review; the commit was dropped"
    return f"a reviewer changed files during the review ({', '.join(dirty[:5])}); discarded"


# --------------------------------------------------------------------------------------------
# The chain


class _Record:
    """What a step run did so far; ``write`` turns it into result.json and a history line."""

    def __init__(self, ctx: Context, step: int) -> None:
        from gitflow_agents.runs import new_run_id

        self.ctx, self.step = ctx, step
        self.run_id = new_run_id()
        self.started = time.monotonic()
        self.ws: Workspace | None = None
        self.agents: list[AgentRun] = []
        self.rounds: list[ReviewRound] = []
        self.merged: git.MergeResult | None = None
        self.outcome: Outcome = "failed"
        self.exit_code = int(ExitCode.AGENT_FAILED)
        self.reason = "the run stopped unexpectedly"
        self.failed_what: str | None = None  # history line: "failed (<this>)", default implement

    def add(self, run: AgentRun) -> AgentRun:
        self.agents.append(run)
        return run

    def add_round(self, review: ReviewRound) -> ReviewRound:
        self.rounds.append(review)
        self.agents.extend(review.agents)
        return review

    def finish(self, outcome: Outcome, code: int, reason: str) -> None:
        self.outcome, self.exit_code, self.reason = outcome, code, reason

    def write(self) -> ChainResult:
        return _write_record(self)


def run_step(ctx: Context, step: int) -> ChainResult:
    """Implement → review → (fix → review)* for one plan step; merge when approved.

    Returns the typed outcome (approved 0, rejected 1, agent failed 3, merge failed 2); other
    errors propagate after the run record is written. StepLockedError when the step is busy.
    """
    assert ctx.plan is not None
    rec = _Record(ctx, step)
    ctx.chain_run = rec.run_id
    if ctx.plan.step(step).status.strip().startswith(DONE):
        rec.finish("skipped", int(ExitCode.OK), f"step {step} is already {DONE}")
        return _result(rec, None, "")
    refuse_foreign_checkout(ctx, branch_name(ctx.settings, ctx.plan.name, step))  # touch nothing
    lock_file = lock.step_lock_path(ctx.root, ctx.config.flow_dir, ctx.flow, step)
    with lock.hold(lock_file, rec.run_id):
        try:
            ctx.hub.emit("harness:start", {"flow": ctx.flow, "step": step, "runID": rec.run_id})
            _chain(ctx, rec, step)
        except AgentFailed as exc:
            rec.agents.append(exc.run)
            rec.failed_what = exc.run.kind
            rec.finish("failed", int(ExitCode.AGENT_FAILED), str(exc))
            _set_status(ctx, step, FAILED)
        except GitError as exc:  # the merge (conflict, target moved, dirty checkout)
            rec.finish("failed", int(exc.exit_code), str(exc))
            _set_status(ctx, step, FAILED)
        except KeyboardInterrupt:
            rec.finish("canceled", int(ExitCode.INTERRUPTED), "interrupted")
            raise
        except Exception as exc:
            code = getattr(exc, "exit_code", ExitCode.USAGE)
            rec.finish("failed", int(code), f"{type(exc).__name__}: {exc}")
            raise
        finally:
            result = rec.write()
    return result


def _chain(ctx: Context, rec: _Record, step: int) -> None:
    """The loop itself: the last action is always a review; ends with ``rec.finish``."""
    assert ctx.plan is not None
    settings = ctx.settings
    ws = rec.ws = step_workspace(ctx, step)
    title = f"[{ctx.plan.name}] Step {step}: {ctx.plan.step(step).title}"
    builder = rec.add(
        run_agent(
            ctx, ws, agent=settings.implementer, kind="implement", step=step,
            agent_id=agent_id_for(settings.implementer, step),
            start_sha=ws.base_sha, commit_message=title,
        )
    )  # fmt: skip
    head, after = builder.end_sha, (builder.agent_id,)
    for iteration in range(1, settings.max_iterations + 1):
        ctx.hub.emit("phase:start", {"phase": f"review-{iteration}", "step": step})
        review = rec.add_round(
            review_round(ctx, ws, iteration=iteration, step=step, after=after, head=head)
        )
        record_note(ctx, ws, review)
        if review.gate.approved:
            tip = _mark_done(ctx, rec, ws, step, review)
            try:
                rec.merged = git.merge_into(
                    ctx.root, ctx.target, tip, mode=settings.merge,
                    message=f"Merge {ws.branch}: {title}",
                )  # fmt: skip
            except GitError as exc:
                rec.failed_what = "merge refused"
                kept = f"; {DONE} stays committed on {ws.branch} ({tip[:12]})"
                raise GitError(
                    f"approved in review {iteration}, but the merge was refused: {exc}"
                    + (kept if tip != review.reviewed_sha else "")
                ) from None
            if tip == review.reviewed_sha:  # the plan is not on the branch (not committed)
                _set_status(ctx, step, DONE)
            git.remove_tool_worktree(ctx.root, ws.worktree)
            rec.finish("approved", int(ExitCode.OK), f"approved in review {iteration}")
            return
        if iteration == settings.max_iterations:
            break
        fix = rec.add(
            run_agent(
                ctx, ws, agent=settings.fixer, kind="fix", step=step,
                agent_id=agent_id_for(settings.fixer, step, iteration),
                start_sha=head, preamble=FIX_PREAMBLE,
                after=[run.agent_id for run in review.agents],
                commit_message=f"{title} (fix {iteration})",
            )
        )  # fmt: skip
        head, after = fix.end_sha, (fix.agent_id,)
    reasons = "; ".join(rec.rounds[-1].gate.reasons)
    rec.finish(
        "rejected",
        int(ExitCode.REVISE),
        f"not approved after {len(rec.rounds)} review(s): {reasons}",
    )
    _set_status(ctx, step, FAILED)


def record_note(ctx: Context, ws: Workspace, review: ReviewRound) -> None:
    """The git note on the reviewed commit: verdict, reviewed commit and tree (the hook reads it)."""
    from gitflow_agents.reviewer import record_review

    record_review(
        ctx.root,
        reviewed_sha=review.reviewed_sha,
        base_sha=ws.base_sha,
        approved=review.gate.approved,
        agent=",".join(run.agent for run in review.agents),
        threshold=ctx.settings.threshold.value,
    )


def _plan_in_tree(ctx: Context, ws: Workspace) -> Path | None:
    """The plan's path inside the step work tree (it is the committed plan there), or None when
    the plan lies outside the repository or is not on the branch."""
    assert ctx.plan is not None
    try:
        rel = ctx.plan.path.resolve().relative_to(ctx.root.resolve())
    except ValueError:
        return None
    path = ws.worktree / rel
    return path if path.is_file() and not path.is_symlink() else None


def _mark_done(ctx: Context, rec: _Record, ws: Workspace, step: int, review: ReviewRound) -> str:
    """On approval: set the step's status to ✅ in the plan *inside the step work tree* and
    commit it on the step branch (the run's trailer), so the merge takes it to the target and,
    by the fast-forward, to the user's checkout of the target. The approval note is carried to
    that commit, whose only change is the status line, so the pushed tip passes the gate hook.

    Returns the commit to merge: the reviewed one when the plan is not on the branch (then the
    user's copy gets the status, as before) or already says ✅."""
    from gitflow_agents.errors import PlanError
    from gitflow_agents.plan import set_step_status
    from gitflow_agents.reviewer import record_review

    assert ctx.plan is not None
    plan = _plan_in_tree(ctx, ws)
    if plan is None:
        return review.reviewed_sha
    try:
        set_step_status(plan, step, DONE, ctx.config.spec_plan)
    except (PlanError, OSError):  # the committed plan has no such step: leave it alone
        git.discard_changes(ws.worktree, review.reviewed_sha)
        return review.reviewed_sha
    rel = plan.relative_to(ws.worktree).as_posix()
    sha = git.commit_paths(
        ws.worktree, (rel,), f"[{ctx.plan.name}] Mark step {step} done",
        trailers={TRAILER_RUN: rec.run_id},
    )  # fmt: skip
    if sha is None:
        return review.reviewed_sha
    reviewers = ",".join(run.agent for run in review.agents)
    record_review(
        ctx.root,
        reviewed_sha=sha,
        base_sha=ws.base_sha,
        approved=True,
        agent=f"{reviewers} (approved {review.reviewed_sha[:12]}; this commit only marks "
        f"step {step} {DONE} in {rel})",
        threshold=ctx.settings.threshold.value,
    )
    return sha


def _set_status(ctx: Context, step: int, status: str) -> None:
    from gitflow_agents.plan import set_step_status

    assert ctx.plan is not None
    with contextlib.suppress(OSError):
        set_step_status(ctx.plan.path, step, status, ctx.config.spec_plan)


# --------------------------------------------------------------------------------------------
# The run record


def _write_record(rec: _Record) -> ChainResult:
    """result.json (seed-001 implement shape + ``chain`` + ``gitStats``) and the history line."""
    from gitflow_agents.runs import flow_result, runs_root, write_result

    ctx = rec.ctx
    paths = RunPaths(runs_root(ctx.root, ctx.config.flow_dir, ctx.flow) / rec.run_id)
    git_stats: stats.GitStats | None = None
    head = rec.rounds[-1].reviewed_sha if rec.rounds else None
    if head is None:
        head = next((a.end_sha for a in reversed(rec.agents) if a.kind != "review"), None)
    if rec.ws is not None and head is not None:
        with contextlib.suppress(Exception):
            git_stats = stats.compute(ctx.root, rec.ws.base_sha, head, exclude=ctx.exclude)
    builder = next((a for a in rec.agents if a.kind == "implement" and a.report), None)
    text = ""
    if builder is not None and builder.report is not None:
        with contextlib.suppress(OSError):
            text = builder.report.read_text(encoding="utf-8", errors="replace")
    status = {"approved": "succeeded", "canceled": "canceled", "skipped": "succeeded"}.get(
        rec.outcome, "failed"
    )
    changed = git_stats.changed_files if git_stats else ()
    result = flow_result("implement", status, report_text=text, changed_files=changed)  # type: ignore[arg-type]
    line = _history_line(rec, result, git_stats, paths)
    result["chain"] = {
        "outcome": rec.outcome,
        "exitCode": rec.exit_code,
        "reason": rec.reason,
        "step": rec.step,
        "plan": str(ctx.plan.path) if ctx.plan else None,
        "branch": rec.ws.branch if rec.ws else None,
        "target": ctx.target,
        "baseSha": rec.ws.base_sha if rec.ws else None,
        "headSha": head,
        "iterations": len(rec.rounds),
        "fixes": sum(1 for a in rec.agents if a.kind == "fix"),
        "maxIterations": ctx.settings.max_iterations,
        "reviewers": list(ctx.settings.reviewers),
        "merged": (
            {"sha": rec.merged.sha, "previous": rec.merged.previous, "kind": rec.merged.kind}
            if rec.merged
            else None
        ),
        "agents": [a.to_json() for a in rec.agents],
        "rounds": [r.to_json() for r in rec.rounds],
    }
    result["gitStats"] = git_stats.to_json() if git_stats else None
    result["run"] = {
        "runID": rec.run_id,
        "flow": ctx.flow,
        "kind": "chain",
        "durationMs": round((time.monotonic() - rec.started) * 1000),
        "finishedAt": time.time(),
        "logDirectory": str(paths.run_dir),
        "historyLine": line,
    }
    written: Path | None = None
    with contextlib.suppress(OSError):
        write_result(paths, result)
        written = paths.result
        history = ctx.root / ctx.config.flow_dir / ctx.flow / "history.md"
        with history.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    ctx.hub.emit("harness:complete", {"outcome": rec.outcome, "runID": rec.run_id})
    return _result(rec, git_stats, line, written)


def _history_line(
    rec: _Record, result: dict[str, Any], git_stats: stats.GitStats | None, paths: RunPaths
) -> str:
    """The seed-001 implement line, plus the chain's outcome, reviews and git statistics."""
    from gitflow_agents.cards import history_line

    event = {"approved": "succeeded", "canceled": "canceled", "skipped": "succeeded"}.get(
        rec.outcome, "failed"
    )
    tests = result["tests"]
    verdict = ("pass" if tests["passed"] else "fail") if tests["ran"] else "none"
    log = os.path.relpath(paths.run_dir, rec.ctx.root)
    base = history_line(
        "implement",
        event,  # type: ignore[arg-type]
        run_id=rec.run_id,
        day=date.today(),
        checked=len(result["checkedCriteria"]),
        tests=verdict,
        log_path=log,
    ).rstrip(".")
    if event == "failed" and rec.failed_what:  # say what failed: "merge refused", "review"
        base = base.replace(" failed (implement)", f" failed ({rec.failed_what})", 1)
    reviews = len(rec.rounds)
    extra = f"step {rec.step} {rec.outcome} after {reviews} review{'s' if reviews != 1 else ''}"
    if git_stats is not None:
        extra += f"; git: {stats.summary(git_stats)}"
    return f"{base}; {extra}."


def _result(
    rec: _Record, git_stats: stats.GitStats | None, line: str, path: Path | None = None
) -> ChainResult:
    return ChainResult(
        outcome=rec.outcome,
        exit_code=rec.exit_code,
        reason=rec.reason,
        run_id=rec.run_id,
        step=rec.step,
        branch=rec.ws.branch if rec.ws else None,
        iterations=len(rec.rounds),
        fixes=sum(1 for a in rec.agents if a.kind == "fix"),
        stats=git_stats,
        merged=rec.merged,
        result_path=path,
        history_line=line,
    )


def dumps(result: ChainResult) -> str:
    data = read_json(result.result_path) if result.result_path else None
    return json.dumps(data or {"outcome": result.outcome, "reason": result.reason}, indent=2)
