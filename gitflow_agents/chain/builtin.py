"""The chain's builtin reviewer: the offline reviewer run in process, exactly as
``git agent-review`` runs it (the same Review, with the same findings accepted)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitflow_agents.agents import BUILTIN
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.workspace import Workspace
from gitflow_agents.git import queries as git
from gitflow_agents.reviewer.builtin_report import report
from gitflow_agents.reviewer.checks import CheckOptions
from gitflow_agents.reviewer.flow_settings import acceptance_at, local_acceptance
from gitflow_agents.reviewer.target import Target, builtin_as_review, builtin_result

if TYPE_CHECKING:
    from gitflow_agents.findings import Review
    from gitflow_agents.reviewer.acceptance import Acceptance


# Its run record's usage: it calls no model, so zero tokens and $0 are known, not unknown
# (result.json ``run`` keys, agent_run/record.py USAGE_KEYS).
BUILTIN_USAGE_JSON = {
    "inputTokens": 0,
    "outputTokens": 0,
    "cachedTokens": 0,
    "costUsd": 0.0,
    "costEstimated": False,
}


def is_builtin(ctx: Context, agent: str) -> bool:
    """Whether ``agent`` is the offline reviewer (``adapter: builtin``), run in process."""
    return ctx.config.agent(agent).adapter == BUILTIN


def builtin_review(ctx: Context, ws: Workspace) -> tuple[Review, str]:
    """The Review of ``ws``'s change (handed on as it is, never parsed back from text) and its
    report for people and the fixer (``report.complete.md``)."""
    head = git.head_sha(ws.worktree)
    target = Target(ws.base_sha, head, f"{ws.base_sha[:12]}..{head[:12]}")
    acceptance = step_acceptance(ctx)
    threshold = ctx.settings.threshold
    with git.BlobReader(ws.worktree) as blobs:
        result, accepted = builtin_result(
            ws.worktree, target, threshold, CheckOptions().max_file_bytes, blobs, acceptance
        )
        review = builtin_as_review(result, accepted, target, threshold, blobs)
    text = report(result, reviewed_sha=head, base_sha=ws.base_sha, threshold=threshold)
    return review, text


def step_acceptance(ctx: Context) -> Acceptance:
    """What the chain's builtin reviewer accepts besides the markers on the reviewed lines
    (docs/chains.md, "Accepting a finding"): the ``review:`` settings and the baseline of the
    config the run reads, never the step branch's own. A local run reads them from your work
    tree (``ctx.root``), as it reads ``.flow/``; ``run --pr`` from the target's commit on the
    remote, as it reads the plan, so a step's pull request cannot switch off its own review."""
    if ctx.target_remote is None:
        return local_acceptance(ctx.root, None)
    return acceptance_at(ctx.root, git.rev_parse(ctx.root, ctx.target_rev))
