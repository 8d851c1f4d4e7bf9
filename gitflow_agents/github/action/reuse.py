"""A merge queue's group that holds exactly one approved pull request reuses its approval.

The common group is one pull request merged onto the queue's base. Its ref names that pull
request (``refs/heads/gh-readonly-queue/<base>/pr-<N>-<sha>``); when the tree of the group's
head equals the tree of the pull request's head merged onto the group's base (``git merge-tree
--write-tree base pr_head``, computed in the checkout), and that head carries an approval from
this tool, the group changes nothing the approval did not see, so no agent runs again and the
group's status says whose approval it reuses.

The approval is the one the merge gate reads: the newest ``gitflow-agents/review`` status of the
pull request's head is ``success`` and was set by the login this run writes as (learned from the
``pending`` status it has just set; a status someone else set proves nothing). Anything else is a
doubt, and a doubt means a review as before (``why_not`` says which): a ref naming no pull
request, a pull request that is not open or targets another branch, no approval, a merge that
conflicts, a tree that differs (a second pull request in the group, a merge method that changes
the content). docs/github.md, "Merge queue".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gitflow_agents.base.errors import GitError, UsageError
from gitflow_agents.findings import Overall, Review
from gitflow_agents.git import queries as git
from gitflow_agents.github.action import status
from gitflow_agents.github.action.checkout import ensure_commit, ensure_group
from gitflow_agents.github.api.client import Client, GitHubForbidden
from gitflow_agents.github.api.commits import newest_status
from gitflow_agents.github.api.identity import Identity
from gitflow_agents.github.api.values import MergeGroup

QUEUE_REF = re.compile(r"^refs/heads/gh-readonly-queue/(?P<base>.+)/pr-(?P<number>\d+)-[0-9a-f]+$")
OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class Reused:
    """The approval a group reuses: pull request ``number``'s head ``head_sha``."""

    number: int
    head_sha: str

    @property
    def description(self) -> str:
        return f"Approved: reuses the approval of #{self.number} at {self.head_sha[:12]}"

    def review(self, group: MergeGroup) -> Review:
        """The group's review: an approval of its head that no agent wrote."""
        return Review(
            Overall.APPROVE,
            summary=(
                f"The group's tree is the approved head {self.head_sha[:12]} of #{self.number} "
                f"merged onto {group.base_sha[:12]}: its approval is reused, no agent ran."
            ),
            reviewed_sha=group.head_sha,
            base_sha=group.base_sha,
            run={"reused": {"pullRequest": self.number, "headSha": self.head_sha}},
        )


def reusable(
    workspace: Path, client: Client, repo: str, group: MergeGroup, login: Identity
) -> Reused | str:
    """The approval ``group`` may reuse, or why it may not (see the module docstring)."""
    match = QUEUE_REF.match(group.head_ref)
    if match is None:
        return "the group's ref names no pull request"
    number = int(match["number"])
    try:
        pull = client.pulls.get(repo, number)
    except GitHubForbidden as exc:
        return f"pull request #{number} cannot be read ({exc})"
    branch = group.base_ref.removeprefix("refs/heads/")
    if pull.state != "open" or pull.base_ref != branch or match["base"] != branch:
        return f"pull request #{number} is not an open pull request into {branch}"
    if not OBJECT_ID.fullmatch(pull.head_sha):  # it reaches git: a commit id, nothing else
        return f"pull request #{number} has no usable head commit id"
    me = login.login([])
    approval = newest_status(client, repo, pull.head_sha, status.CONTEXT)
    if approval is None or approval.state != "success" or me is None or approval.creator != me:
        return f"the head {pull.head_sha[:12]} of #{number} has no approval of ours"
    root = git.repo_root(workspace)
    try:
        ensure_group(root, group)
        ensure_commit(root, pull.head_sha, number)
    except UsageError as exc:
        return str(exc)
    try:
        merged = git.merged_tree(root, group.base_sha, pull.head_sha)
    except GitError as exc:  # a git before 2.38 (version.GitTooOld) among them: reviewed in full
        return str(exc)
    if merged is None or merged != git.tree_sha(root, group.head_sha):
        return (
            f"the group's tree is not #{number}'s approved head merged onto its base "
            "(another pull request in the group, or a merge that changes it)"
        )
    return Reused(number, pull.head_sha)
