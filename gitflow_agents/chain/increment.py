"""A chain's re-review after a fix reviews the fix: the commits since the last reviewed head.

On a review round that follows a fix in the same step run, an agent reviewer gets the diff of
the commits since the previous round's reviewed head (its own earlier review, the head an
ancestor of the new one, the step's base unchanged), with the step's files and the findings its
previous review left open: the same scope and assignment as ``git agent-review``'s incremental
review (``reviewer/incremental.py``, ``reviewer/agent.incremental_intro``). Open findings carry
over unless the fix touched their lines and the reviewer no longer reports them; the verdict
covers the whole step. Anything else is a full review: the first round, a previous head or
review not known, the target merged in (a new base), ``review.incremental: false``, the builtin
reviewer (docs/chains.md, "Re-review after a fix").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitflow_agents.chain.builtin import is_builtin
from gitflow_agents.chain.context import Context
from gitflow_agents.findings import Finding, Review, Severity
from gitflow_agents.git import queries as git
from gitflow_agents.reviewer.agent import incremental_intro
from gitflow_agents.reviewer.flow_settings import local_settings, settings_at
from gitflow_agents.reviewer.incremental import FULL, INCREMENTAL, Earlier, Prior, Scope, decide
from gitflow_agents.reviewer.incremental import full as full_scope
from gitflow_agents.reviewer.incremental import merged as whole_range

if TYPE_CHECKING:
    from gitflow_agents.chain.agents import AgentRun

FIRST_ROUND = full_scope("the step's first review round")


def after_landing(ctx: Context, approved: int) -> Scope:
    """The scope of the round after review ``approved``, whose landing found the target moved
    on: the target is merged in (a new base), so the round reviews the whole step."""
    return full_scope(
        f"review {approved} approved, but its landing found {ctx.target} moved on: "
        f"{ctx.target} merged in, a new base"
    )


def full_again() -> Scope:
    """The scope of the whole-step review that follows an approving incremental one whose
    verdict only carried findings blocked (``chain/review.py``)."""
    return full_scope(
        "the reviewer approved the fix; findings carried over on lines it did not change "
        "are decided by a review of the whole step"
    )


def incremental_enabled(ctx: Context) -> bool:
    """``review.incremental`` as the chain reads the ``review:`` settings: your work tree's
    ``.flow/base.yaml``, or with ``run --pr`` the target's commit (``chain/builtin.py``)."""
    if ctx.target_remote is None:
        return local_settings(ctx.root).incremental
    return settings_at(ctx.root, git.rev_parse(ctx.root, ctx.target_rev)).incremental


def scopes(
    ctx: Context,
    base: str,
    head: str,
    names: Sequence[str],
    previous: tuple[str, Sequence[AgentRun], Sequence[Review]] | None,
    whole: Scope = FIRST_ROUND,
) -> list[Scope]:
    """The scope of each reviewer in ``names`` reviewing ``base..head``; ``previous``: the
    previous round of this step run after which a fix ran (its reviewed head, runs and
    reviews), None on a round that follows no fix, which every reviewer reviews ``whole``
    (the step's first round, or ``after_landing``)."""
    if previous is None:
        return [whole for _ in names]
    reviewed, runs, reviews = previous
    enabled = incremental_enabled(ctx)
    found: list[Scope] = []
    for name in names:
        review = next((r for run, r in zip(runs, reviews, strict=True) if run.agent == name), None)
        if review is None or review.overall is None or review.base_sha is None:
            earlier = Earlier(unknown=f"the previous round has no review by {name} to build on")
        else:
            prior = Prior(reviewed, review.base_sha, name, review.findings)
            earlier = Earlier(prior, enabled=enabled)
        found.append(_builtin_full(ctx, name) or decide(ctx.root, base, head, name, earlier))
    return found


def _builtin_full(ctx: Context, name: str) -> Scope | None:
    if not is_builtin(ctx, name):
        return None
    return full_scope("the builtin reviewer reviews the whole step")


def preamble(scope: Scope, head: str, branch: str, base: str, verdict: str) -> str:
    """An incremental reviewer's assignment: which commit, the fix commits' diff and the
    step's context (``incremental_intro``), then ``verdict`` (the report contract)."""
    intro = (
        f"It is now your job to review the fix of this plan-step: commit {head} on branch "
        f"{branch}. Do not change, stage or commit any file.\n\n"
    )
    return intro + incremental_intro(scope, base, head) + verdict


def whole_step(review: Review, scope: Scope) -> Review:
    """``review`` as the verdict on the whole step: after an incremental review, the open
    findings it did not touch carried over (``incremental.merged``); its kind and why."""
    if scope.kind != INCREMENTAL:
        return review._replace(kind=FULL, kind_reason=scope.reason)
    if review.overall is None:  # no review was read: nothing to build the whole verdict on
        return review._replace(kind=INCREMENTAL, kind_reason=scope.reason)
    found, fixed = whole_range(scope, review.findings)
    carried = len(found) - len(review.findings)
    why = f"{scope.reason}; {carried} open finding(s) carried over, {fixed} fixed"
    return review._replace(findings=found, kind=INCREMENTAL, kind_reason=why)


def carried_block(review: Review, own: Review, threshold: Severity) -> bool:
    """Whether only findings carried over block ``review`` (``own``: what the reviewer itself
    reported): it approved, and reported nothing at or above ``threshold``."""
    if own.overall is None or own.overall.value != "approve":
        return False
    if any(f.severity.rank >= threshold.rank for f in own.findings):
        return False
    return any(f.severity.rank >= threshold.rank for f in carried(review, own))


def carried(review: Review, own: Review) -> tuple[Finding, ...]:
    """The findings of ``review`` (``whole_step``) carried over: those ``own`` did not report."""
    return review.findings[len(own.findings) :]
