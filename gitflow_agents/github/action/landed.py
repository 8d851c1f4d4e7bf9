"""A push to the target, checked: did a tree the tool approved land?

GitHub's auto-merge squashes a pull request that is behind its target onto the new target when
nothing requires branches to be up to date, so the landed tree can be one no review saw. On a
``push`` event the action compares the tree of the pushed commit (``after``, read from git in
the workspace) with the trees the tool approved:

1. the pushed commit itself has ``gitflow-agents/review`` ``success`` (a merge queue's group,
   whose head the queue pushes as it is; or an approved head pushed as it is);
2. else each pull request GitHub lists for the commit (``GET /commits/{sha}/pulls``): a commit
   of it (``GET /pulls/{n}/commits``, trees included) whose tree is the landed tree and whose
   newest ``gitflow-agents/review`` status is ``success``.

The verdict is the ``gitflow-agents/landed`` status on the pushed commit: ``success`` naming
the approved head, ``failure`` naming what landed unreviewed (also in the job summary and a
warning annotation), and the job exits 1 then. Only the pushed tip is judged: the commits a
rebase merge lands before it are steps on the way to that tree. About four requests a push.
docs/github.md, "Only reviewed trees land".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gitflow_agents.base.errors import ExitCode, GitError, GitflowError, GitHubError
from gitflow_agents.git import queries as git
from gitflow_agents.github.action import status
from gitflow_agents.github.action.runner import (
    PREFIX,
    RunnerEnv,
    append_summary,
    github_failed,
    notice,
    write_outputs,
)
from gitflow_agents.github.api.client import Client
from gitflow_agents.github.api.commits import newest_state, pull_trees, pulls_of_commit

CONTEXT = "gitflow-agents/landed"


@dataclass(frozen=True)
class Landed:
    """A push of ``branch`` from ``before`` to ``after`` (full commit ids)."""

    branch: str
    before: str
    after: str


@dataclass(frozen=True)
class Verdict:
    approved: bool
    description: str  # the status description (clipped to GitHub's 140 characters)
    detail: str  # the job summary's sentence


def landed_tree(workspace: Path, sha: str) -> str:
    """The tree of ``sha``, fetched from origin first when the checkout lacks it (GitError,
    exit 2, naming the commit, when it cannot be)."""
    try:
        return git.tree_sha(workspace, sha)
    except GitflowError:  # not in the checkout (git's failure; it never was a GitError)
        git.fetch_ref(workspace, sha)
    try:
        return git.tree_sha(workspace, sha)
    except GitflowError:
        raise GitError(
            f"the pushed commit {sha[:12]} is not in the checkout and could not be fetched from "
            "origin (check out the pushed commit: actions/checkout checks out the push's own)"
        ) from None


def judge(client: Client, repo: str, sha: str, tree: str) -> Verdict:
    """Whether ``tree`` (of the pushed commit ``sha``) is a tree the tool approved."""
    if newest_state(client, repo, sha, status.CONTEXT) == "success":
        return Verdict(
            True,
            f"Landed as approved: {sha[:12]} itself",
            f"{sha[:12]} itself carries an approving `{status.CONTEXT}` (a merge queue's "
            "group, or an approved head pushed as it is).",
        )
    pulls = pulls_of_commit(client, repo, sha)
    if not pulls:
        return Verdict(
            False,
            f"Not reviewed: {sha[:12]} came through no pull request",
            f"{sha[:12]} (tree {tree[:12]}) was pushed without a pull request or an approving "
            f"`{status.CONTEXT}`: no review saw this tree.",
        )
    for pull in pulls:
        for commit in pull_trees(client, repo, pull.number):
            if commit.tree != tree:
                continue
            if newest_state(client, repo, commit.sha, status.CONTEXT) == "success":
                return Verdict(
                    True,
                    f"Landed as approved: tree of {commit.sha[:12]} (PR #{pull.number})",
                    f"The tree of {sha[:12]} is the tree of {commit.sha[:12]}, approved in "
                    f"PR #{pull.number}.",
                )
    numbers = ", ".join(f"#{p.number}" for p in pulls)
    return Verdict(
        False,
        f"Not reviewed: tree {tree[:12]} matches no approved head of PR {numbers}",
        f"The tree of {sha[:12]} ({tree[:12]}) is not the tree of any approved head of PR "
        f"{numbers}: a combined tree no review saw landed (a pull request merged while behind "
        "its target, or a change pushed after the approval). Review it, and require branches "
        "to be up to date or use a merge queue.",
    )


def check_landed(env: RunnerEnv, client: Client, push: Landed, run_id: str) -> int:
    """Judge the push and set ``gitflow-agents/landed`` on its commit; exit 1 when the tree
    landed unreviewed."""
    outputs = {"review-result": "error", "run-id": run_id, "head-sha": push.after}
    try:
        tree = landed_tree(env.workspace, push.after)
        verdict = judge(client, env.repository, push.after, tree)
        state = "success" if verdict.approved else "failure"
        status.set_status(
            client,
            env.repository,
            push.after,
            state,
            status.clip(verdict.description),
            target_url=env.run_url,
            context=CONTEXT,
        )
    except GitflowError as exc:  # the outputs say so too: a later step reads review-result
        not_judged(env, push, exc, outputs)
        raise
    title = "landed as approved" if verdict.approved else "an unreviewed tree landed"
    if not verdict.approved:
        notice("warning", f"{push.branch} {push.after[:12]}: {verdict.detail}")
    append_summary(env.step_summary, f"### {PREFIX}: {title}\n\n{verdict.detail}")
    outputs["review-result"] = "landed-approved" if verdict.approved else "landed-unreviewed"
    write_outputs(env.output, outputs)
    return int(ExitCode.OK if verdict.approved else ExitCode.REVISE)


def not_judged(env: RunnerEnv, push: Landed, exc: GitflowError, outputs: dict[str, str]) -> None:
    """A push the check could not judge (its commit not to be had, GitHub failing after its
    retries): the job summary and an ``::error`` annotation say why, and the outputs are
    written all the same (``review-result`` ``error``; ``github-error`` when GitHub failed,
    ``runner.github_failed``, as for a pull request's run). No ``gitflow-agents/landed``
    status is tried: GitHub just failed or refused a request, and the commit has none of ours
    to correct."""
    why = f"{push.branch} {push.after[:12]} was not judged: {exc.message}"
    notice("error", why)
    summary = f"### {PREFIX}: the landed check did not complete\n\n{why}"
    if isinstance(exc, GitHubError):
        github_failed(env, exc, outputs, summary)
        return
    append_summary(env.step_summary, summary)
    write_outputs(env.output, outputs)
