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
from gitflow_agents.base.fsutil import MAX_REPORT_CHARS, read_agent_text
from gitflow_agents.base.redact import redact_data, redact_text
from gitflow_agents.chain.agents import AgentRun
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.review import ReviewRound
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
from gitflow_agents.runs.schema import SetupEntry, StepChain
from gitflow_agents.runs.spend import step_spend
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
    records) and the history line."""
    ctx = rec.ctx
    paths = RunPaths(rec.run_dir)
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
    written: Path | None = None
    # agent text (the implementer's summary, reviews, reasons): masked like every agent text,
    # with the exact values of the secrets the step's diff adds
    result = redact_data(result, ctx.secrets)
    with contextlib.suppress(OSError):
        write_result(paths, result)
        written = paths.result
        history = ctx.root / ctx.config.flow_dir / ctx.flow / "history.md"
        with history.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    # the step's spend as its record sums it (a lost run it lists too, which sent no event):
    # what the live views end the step with
    spend = step_spend(paths.run_dir, result).to_json()
    ctx.hub.emit("harness:complete", {"outcome": rec.outcome, "runID": rec.run_id, "spend": spend})
    return rec.result(git_stats, line, written)


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
