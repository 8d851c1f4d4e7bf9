"""The record of one step run: ``result.json``, the history line and the typed result.

``StepRecord`` collects what the run did (agents, review rounds, merge, outcome); ``write``
turns it into ``<flow_dir>/<flow>/runs/<runID>/result.json`` (the implement result plus
``chain`` and ``gitStats``; docs/protocol.md, Run records), appends the line to
``<flow_dir>/<flow>/history.md`` and returns the ``ChainResult``. ``run_step`` calls it in a
``finally``, so a crash still leaves evidence.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from gitflow_agents.base.errors import ExitCode
from gitflow_agents.base.fsutil import MAX_REPORT_CHARS, read_agent_text, write_json_atomic
from gitflow_agents.base.redact import redact_data, redact_text
from gitflow_agents.chain.agents import TRAILER_RUN, AgentRun
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.resume import TRAILER_AGENT
from gitflow_agents.chain.review import ReviewRound
from gitflow_agents.chain.state import target_tip
from gitflow_agents.chain.workspace import Workspace
from gitflow_agents.git import queries as git
from gitflow_agents.git import stats
from gitflow_agents.runs import (
    RunPaths,
    flow_result,
    new_run_id,
    read_json,
    runs_root,
    write_result,
)
from gitflow_agents.runs.cards import history_line
from gitflow_agents.runs.fields import mapping, strings, text
from gitflow_agents.runs.schema import SetupEntry, StepChain
from gitflow_agents.runs.spend import run_folder, step_spend
from gitflow_agents.runs.status import StepOutcome as StepOutcome
from gitflow_agents.runs.status import step_result_status


@dataclass(frozen=True)
class ChainResult:
    outcome: StepOutcome
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
    notices: tuple[str, ...] = ()  # what the run did on its own (a lost run killed, ...)


class StepRecord:
    """What a step run did so far; ``write`` turns it into result.json and a history line."""

    def __init__(self, ctx: Context, step: int, run_id: str | None = None) -> None:
        self.ctx, self.step = ctx, step
        self.run_id = run_id or new_run_id()
        self.started = time.monotonic()
        self.ws: Workspace | None = None
        self.agents: list[AgentRun] = []
        self.rounds: list[ReviewRound] = []
        self.merged: git.MergeResult | None = None
        self.integrated: str | None = None  # the moved target merged into the branch, last
        self.outcome: StepOutcome = "failed"
        self.exit_code = int(ExitCode.AGENT_FAILED)
        self.reason = "the run stopped unexpectedly"
        self.failed_what: str | None = None  # history line: "failed (<this>)", default implement
        self.setup: SetupEntry | None = None  # chain.setup in the step's work tree

    @property
    def run_dir(self) -> Path:
        """The step run's folder (its result.json, the setup's log)."""
        return runs_root(self.ctx.root, self.ctx.config.flow_dir, self.ctx.flow) / self.run_id

    @property
    def fixes(self) -> int:
        """How many fixer runs the step had (a stuck fixer run again counts once)."""
        return sum(1 for a in self.agents if a.kind == "fix" and a.attempt == 1)

    def add(self, run: AgentRun) -> AgentRun:
        self.agents.extend(run.attempts())
        return run

    def add_round(self, review: ReviewRound) -> ReviewRound:
        self.rounds.append(review)
        for run in review.agents:
            self.agents.extend(run.attempts())
        return review

    def finish(self, outcome: StepOutcome, code: int, reason: str) -> None:
        self.outcome, self.exit_code, self.reason = outcome, code, reason

    def write(self) -> ChainResult:
        return _write_record(self)

    def result(
        self, git_stats: stats.GitStats | None = None, line: str = "", path: Path | None = None
    ) -> ChainResult:
        """The typed result as the record stands (``write`` gives it with the file written)."""
        return ChainResult(
            outcome=self.outcome,
            exit_code=self.exit_code,
            reason=redact_text(self.reason, self.ctx.secrets),  # it may quote an agent
            run_id=self.run_id,
            step=self.step,
            branch=self.ws.branch if self.ws else None,
            iterations=len(self.rounds),
            fixes=self.fixes,
            stats=git_stats,
            merged=self.merged,
            result_path=path,
            history_line=line,
            notices=tuple(self.ctx.notices),
        )


def _head(rec: StepRecord) -> str | None:
    """The commit the step's work ended at: the last round's reviewed head, unless an
    implementer or fixer ran after that round and left a commit (one a budget stopped: its
    work so far is committed on the step branch, no review follows; a fix whose review then
    failed); without a round, the
    last commit an implementer or fixer left. The moved target merged in after that commit
    (a round whose review then did not complete: a budget stopped its reviewer) is part of
    it: its statistics are against the new base."""
    head = _work_head(rec)
    merged = rec.integrated
    after_merge = head is not None and merged is not None and merged != head
    if after_merge and git.is_ancestor(rec.ctx.root, str(head), str(merged)):
        return merged
    return head


def _work_head(rec: StepRecord) -> str | None:
    """``_head`` before the moved target's merge: the last commit an implementer or fixer
    left, unless the last round reviewed a later one (the target merged in). A commit made
    after the last round counts whether or not a review of it completed: a reviewer of the
    next round that failed, was canceled or was stopped by a budget leaves no round, and the
    fix it was to review is on the step branch all the same."""
    work = next((a.end_sha for a in reversed(rec.agents) if a.kind != "review" and a.end_sha), None)
    if not rec.rounds:
        return work
    reviewed = rec.rounds[-1].reviewed_sha
    if work is not None and work != reviewed and git.is_ancestor(rec.ctx.root, reviewed, work):
        return work
    return reviewed


def _write_record(rec: StepRecord) -> ChainResult:
    """result.json (the implement shape + ``chain`` + ``gitStats``; docs/protocol.md, Run
    records) and the history line; a landing's record kept before its merge goes."""
    ctx = rec.ctx
    paths = RunPaths(rec.run_dir)
    result, git_stats, line = _built(rec, paths)
    written: Path | None = None
    with contextlib.suppress(OSError):
        write_result(paths, result)
        written = paths.result
        _append_history(ctx, line)
        paths.landing.unlink(missing_ok=True)
    # the step's spend as its record sums it (a lost run it lists too, which sent no event):
    # what the live views end the step with
    spend = step_spend(paths.run_dir, result).to_json()
    ctx.hub.emit("harness:complete", {"outcome": rec.outcome, "runID": rec.run_id, "spend": spend})
    return rec.result(git_stats, line, written)


def _append_history(ctx: Context, line: str) -> None:
    history = ctx.root / ctx.config.flow_dir / ctx.flow / "history.md"
    with history.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def _built(rec: StepRecord, paths: RunPaths) -> tuple[dict[str, Any], stats.GitStats | None, str]:
    """The step run's result.json as it stands, its git statistics and its history line."""
    ctx = rec.ctx
    git_stats: stats.GitStats | None = None
    head = _head(rec)
    if rec.ws is not None and head is not None:
        with contextlib.suppress(Exception):
            git_stats = stats.compute(ctx.root, rec.ws.base_sha, head, exclude=ctx.exclude)
    builder = next((a for a in rec.agents if a.kind == "implement" and a.report), None)
    text = ""
    if builder is not None and builder.report is not None:
        # bounded; flow_result notes a report over the cap instead of reading it
        text = read_agent_text(builder.report, MAX_REPORT_CHARS)
    status = step_result_status(rec.outcome)
    changed = git_stats.changed_files if git_stats else ()
    result = flow_result("implement", status, report_text=text, changed_files=changed)

    line = redact_text(_history_line(rec, result, git_stats, paths), ctx.secrets)
    result["chain"] = StepChain(
        outcome=rec.outcome,
        exit_code=rec.exit_code,
        reason=rec.reason,
        step=rec.step,
        plan=str(ctx.plan.path) if ctx.plan else None,
        branch=rec.ws.branch if rec.ws else None,
        target=ctx.target,
        base_sha=rec.ws.base_sha if rec.ws else None,
        head_sha=head,
        iterations=len(rec.rounds),
        fixes=rec.fixes,
        max_iterations=ctx.settings.max_iterations,
        reviewers=ctx.settings.reviewers,
        merged=rec.merged,
        agents=tuple(a.entry() for a in rec.agents),
        rounds=tuple(r.entry() for r in rec.rounds),
        notices=tuple(ctx.notices),
        setup=rec.setup,
    ).to_json()
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
    # agent text (the implementer's summary, reviews, reasons): masked like every agent text,
    # with the exact values of the secrets the step's diff adds
    return redact_data(result, ctx.secrets), git_stats, line


def keep_landing(rec: StepRecord, before: str, tip: str) -> None:
    """Right before the merge of ``tip`` into the target (at ``before``): the record this run
    writes once the merge landed (approved in its last review), kept in the run folder's
    ``landing.json``. ``_write_record`` removes it; a run killed after its merge and before its
    record leaves it, and the run that finishes the landing writes it (``record_landing``)."""
    kept = rec.outcome, rec.exit_code, rec.reason
    rec.finish("approved", int(ExitCode.OK), f"approved in review {len(rec.rounds)}")
    paths = RunPaths(rec.run_dir)
    # the merge does not depend on it: without it, a kill after the merge leaves no record
    try:
        with contextlib.suppress(Exception):
            result, _stats, _line = _built(rec, paths)
            paths.run_dir.mkdir(parents=True, exist_ok=True)
            write_json_atomic(paths.landing, {"before": before, "tip": tip, "result": result})
    finally:
        rec.finish(*kept)


def record_landing(ctx: Context, step: int, tip: str) -> str | None:
    """The record of the step run that merged ``tip`` (the step branch's tip, on the target)
    and was killed before it wrote it: the ``landing.json`` it kept (``keep_landing``), with
    how its merge landed, written as its result.json and history line by the run that
    finishes the landing. Once: a run with a record is left alone. The run is the one
    ``tip``'s trailer names (the mark commit's or the moved target's merge: the step run's; an
    agent's commit: its agent run's, whose record names its step run). What was done, as a
    line; None when nothing was."""
    run_id = _step_run_of(ctx, tip)
    if run_id is None:
        return None
    paths = RunPaths(runs_root(ctx.root, ctx.config.flow_dir, ctx.flow) / run_id)
    kept = (None if paths.result.exists() else read_json(paths.landing)) or {}
    result = mapping(kept, "result")
    chain, before = mapping(result, "chain"), text(kept, "before")
    if text(kept, "tip") != tip or before is None or chain.get("step") != step:
        return None
    merged = _merge_of(ctx, tip, before)
    if merged is None:
        return None
    said = (
        f"run {run_id} ended after its merge landed ({merged.kind} -> {merged.sha[:12]}), "
        "before it wrote its record: written now, as the landing is finished"
    )
    chain["merged"] = {"sha": merged.sha, "previous": merged.previous, "kind": merged.kind}
    chain["reason"] = f"{text(chain, 'reason') or 'approved'}; {said}"
    chain["notices"] = [*strings(chain, "notices"), said]
    with contextlib.suppress(OSError):
        write_result(paths, result)
        paths.landing.unlink(missing_ok=True)
        _append_history(ctx, text(mapping(result, "run"), "historyLine") or "")
    return f"step {step}'s {said}"


def _step_run_of(ctx: Context, tip: str) -> str | None:
    """The step run ``tip``'s trailer names (``record_landing``), None when none does."""
    trailers = git.commit_trailers(ctx.root, tip)
    run_id = trailers.get(TRAILER_RUN)
    if TRAILER_AGENT in trailers and run_folder(run_id):
        runs = runs_root(ctx.root, ctx.config.flow_dir, ctx.flow)
        record = read_json(RunPaths(runs / run_id).result) or {}
        run_id = text(mapping(record, "run"), "chainRunID")
    return run_id if run_folder(run_id) else None


def _merge_of(ctx: Context, tip: str, before: str) -> git.MergeResult | None:
    """How ``tip`` landed on the target, which was at ``before``: the merge commit whose
    parents are ``before`` and ``tip``, else a fast-forward; None when it is not on the target."""
    target = target_tip(ctx, fetch=False)
    if target is None or not git.is_ancestor(ctx.root, tip, target):
        return None
    for merge in git.merges_of(ctx.root, tip, target):
        if git.parents(ctx.root, merge)[:1] == (before,):
            return git.MergeResult(merge, before, "merge-commit")
    return git.MergeResult(tip, before, "fast-forward")


def _history_line(
    rec: StepRecord, result: dict[str, Any], git_stats: stats.GitStats | None, paths: RunPaths
) -> str:
    """The implement history line (``cards.history_line``), plus the chain's outcome, reviews
    and git statistics."""
    event = step_result_status(rec.outcome)
    tests = result["tests"]
    verdict = ("pass" if tests["passed"] else "fail") if tests["ran"] else "none"
    log = os.path.relpath(paths.run_dir, rec.ctx.root)
    base = history_line(
        "implement",
        event,
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
    accepted = len(rec.rounds[-1].accepted) if rec.rounds else 0
    if accepted:  # the decisive round's accepted findings: counted, never dropped silently
        extra += f" ({accepted} finding{'s' if accepted != 1 else ''} accepted)"
    if git_stats is not None:
        extra += f"; git: {stats.summary(git_stats)}"
    return f"{base}; {extra}."


def dumps(result: ChainResult) -> str:
    data = read_json(result.result_path) if result.result_path else None
    # a step run that wrote no record (skipped: done already) says which step it was
    brief = {"step": result.step, "outcome": result.outcome, "reason": result.reason}
    return json.dumps(data or brief, indent=2)
