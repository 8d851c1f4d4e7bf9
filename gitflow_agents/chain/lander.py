"""What the end of a step run does with the step branch: merge it, or leave it for a PR.

``run_step`` takes the lander as its strategy (``run_step(ctx, step, lander)``) and hands it an
approved (and a rejected) step; the lander also says where the step's record goes
(``run_id``) and whether the implementer builds on the step branch's tip
(``build_on_branch``), so ``run --pr`` steers a run without writing into the shared
``Context``. ``MergeLander`` (the default) is today's ending: an approved step is marked ✅ on its branch and merged into the
target (``land.py``); a rejected one is left as it is. ``BranchLander`` (``run --pr``) never
touches the target: an approved *and* a rejected step get the commit that marks them ✅ on the
step branch, so that merging the pull request is what makes the step ✅ on the target (a rejected
one after ``/agent fix`` or a human turned it green); the caller pushes the branch and opens the
pull request (``github/step_pr.py``; docs/github.md, "Plan steps as pull requests").
"""

from __future__ import annotations

from typing import Protocol

from gitflow_agents.chain.context import Context
from gitflow_agents.chain.land import (
    carry_note,
    land,
    mark_done,
    plan_in_tree,
    remove_step_worktree,
)
from gitflow_agents.chain.record import StepRecord
from gitflow_agents.chain.review import ReviewRound
from gitflow_agents.chain.state import DONE, committed_status
from gitflow_agents.chain.workspace import Workspace
from gitflow_agents.git import queries as git


class Lander(Protocol):
    @property
    def run_id(self) -> str | None:
        """The id the step run records under (None: a new one)."""

    @property
    def build_on_branch(self) -> bool:
        """Whether the implementer starts from the step branch's tip (a branch continued
        from the remote) instead of the step's base."""

    @property
    def implemented(self) -> str | None:
        """The step branch's commit that already holds the step's finished work (a branch
        continued from the remote): the run reviews it, no implementer runs. None: implement."""

    def approved(
        self, ctx: Context, rec: StepRecord, ws: Workspace, step: int, review: ReviewRound
    ) -> None:
        """The last review approved exactly the step branch's head."""

    def rejected(
        self, ctx: Context, rec: StepRecord, ws: Workspace, step: int, review: ReviewRound
    ) -> None:
        """The last review (the run's last action) did not approve."""


class MergeLander:
    """Mark ✅ and merge into the target (``land.land``); a rejected step stays as it is."""

    run_id: str | None = None
    build_on_branch = False
    implemented: str | None = None

    def approved(
        self, ctx: Context, rec: StepRecord, ws: Workspace, step: int, review: ReviewRound
    ) -> None:
        assert ctx.plan is not None
        land(
            ctx,
            rec,
            ws,
            step,
            review,
            f"[{ctx.plan.name}] Step {step}: {ctx.plan.step(step).title}",
        )

    def rejected(
        self, ctx: Context, rec: StepRecord, ws: Workspace, step: int, review: ReviewRound
    ) -> None:
        return None


class BranchLander:
    """Mark ✅ on the step branch, approved or not; nothing is merged. ``remote_tip``: the
    branch's tip on the remote when the run started (a run continuing a branch that an earlier
    run pushed): the implementer builds on it, and when it is already the mark of exactly the
    reviewed commit, it is kept instead of making a second one, so the next push is a
    fast-forward (or nothing). ``run_id``: the step run's id (its claim is recorded first).
    ``implemented``: the branch's commit holding finished work, which the run reviews instead
    of running the implementer again."""

    def __init__(
        self,
        remote_tip: str | None = None,
        run_id: str | None = None,
        implemented: str | None = None,
    ) -> None:
        self.remote_tip = remote_tip
        self.run_id = run_id
        self.implemented = implemented
        """The continued branch's tip when it holds work not on the target (reviewed, not
        implemented again: ``github/pr/recover.py``)."""
        self.tip: str | None = None
        """The step branch's tip once marked (what the caller pushes)."""

    @property
    def build_on_branch(self) -> bool:
        return self.remote_tip is not None

    def approved(
        self, ctx: Context, rec: StepRecord, ws: Workspace, step: int, review: ReviewRound
    ) -> None:
        self._mark(ctx, rec, ws, step, review)
        remove_step_worktree(ctx, ws)

    def rejected(
        self, ctx: Context, rec: StepRecord, ws: Workspace, step: int, review: ReviewRound
    ) -> None:
        self._mark(ctx, rec, ws, step, review)

    def _mark(
        self, ctx: Context, rec: StepRecord, ws: Workspace, step: int, review: ReviewRound
    ) -> None:
        pushed = self._pushed_mark(ctx, ws, step, review)
        if pushed is None:
            self.tip = mark_done(ctx, rec, ws, step, review)
            return
        git.discard_changes(ws.worktree, pushed)  # the branch takes the pushed mark back
        if review.gate.approved:
            carry_note(ctx, ws, review, pushed, f"this commit only marks step {step} {DONE}")
        ctx.notices.append(
            f"{ws.branch} on the remote already holds the mark of {review.reviewed_sha[:12]} "
            f"({pushed[:12]}, pushed by an earlier run): kept"
        )
        self.tip = pushed

    def _pushed_mark(
        self, ctx: Context, ws: Workspace, step: int, review: ReviewRound
    ) -> str | None:
        """``remote_tip`` when it is the reviewed commit plus only this step's ✅, else None."""
        tip, reviewed = self.remote_tip, review.reviewed_sha
        plan = plan_in_tree(ctx, ws)
        if tip is None or tip == reviewed or plan is None:
            return None
        if git.parents(ctx.root, tip) != (reviewed,):
            return None
        rel = plan.relative_to(ws.worktree).as_posix()
        if tuple(git.numstat(ctx.root, git.DiffSpec(reviewed, tip))) != (rel,):
            return None
        status = committed_status(ctx, tip, step) or ""
        return tip if status.startswith(DONE) else None
