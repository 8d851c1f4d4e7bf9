"""The action on GitHub's own example payloads (``@octokit/webhooks-examples``).

Each example is used as GitHub wrote it, except its commit shas: those are rewritten to the
commits of a real local repository (the pull request's base and head, the merge group's base
and head), pushed to a local bare ``origin`` under the refs the example names. The stand-in
plays the example's repository (``Codertocat/Hello-World``) and pull request #2. The documented
result for each (docs/github.md, "Events"): a review with its status, or a skip with its reason,
and never a traceback.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git
from tests.github_events import examples
from tests.github_standin import GitHubStandIn, Pull, gh
from tests.helpers.action_runner import FINE, Runner, has, pr_files, states

__all__ = ["gh"]

CASES = [
    (event, index, example.get("action"))
    for event in ("pull_request", "issue_comment", "merge_group", "push", "workflow_dispatch")
    for index, example in enumerate(examples(event))
]
REVIEWED = {"opened", "synchronize", "reopened", "ready_for_review", "checks_requested"}
SKIPPED = {
    ("pull_request", "closed"): "pull_request action 'closed' does not start a review",
    ("issue_comment", "created"): "the comment is on an issue, not a pull request",
    ("issue_comment", "edited"): "only new comments are commands",
    ("push", None): "push of 'refs/tags/simple-tag' is not a branch",
    ("workflow_dispatch", None): (
        "event 'workflow_dispatch' is not handled (pull_request, issue_comment, merge_group, push)"
    ),
}


def commits(repo: Path) -> tuple[str, str]:
    """(base, head): ``main`` and one commit on top of it."""
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "work")
    (repo / "fine.py").write_text(FINE)
    git(repo, "add", "fine.py")
    git(repo, "commit", "-q", "-m", "work")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    return base, head


def with_our_commits(event: str, payload: dict[str, Any], base: str, head: str) -> dict[str, Any]:
    """A copy of ``payload`` whose commit shas are ``base`` and ``head``; nothing else changed."""
    payload = copy.deepcopy(payload)
    if event == "pull_request":
        payload["pull_request"]["head"]["sha"] = head
        payload["pull_request"]["base"]["sha"] = base
        if payload["action"] == "synchronize":
            payload.update(before=base, after=head)
    elif event == "merge_group":
        payload["merge_group"].update(head_sha=head, base_sha=base)
    elif event == "push":
        payload.update(
            before=base if payload["before"] != "0" * 40 else payload["before"],
            after=head if payload["after"] != "0" * 40 else payload["after"],
        )
    return payload


@pytest.mark.parametrize(("event", "index", "action"), CASES)
def test_the_action_on_githubs_example(
    gh: GitHubStandIn, repo: Path, tmp_path: Path, event: str, index: int, action: str | None
) -> None:
    example = examples(event)[index]
    gh.state.owner, gh.state.repo = example["repository"]["full_name"].split("/")
    base, head = commits(repo)
    payload = with_our_commits(event, example, base, head)
    workspace = repo
    if event == "pull_request":
        number = payload["number"]
        pr = payload["pull_request"]
        gh.add_pull(
            Pull(number, head, base, pr_files(repo, base, head), pr["user"]["login"], pr["title"])
        )
    if event == "merge_group":  # origin has the queue's ref; the checkout only the group head
        origin = tmp_path / "origin.git"
        git(tmp_path, "init", "-q", "--bare", str(origin))
        git(repo, "push", "-q", str(origin), f"{head}:{payload['merge_group']['head_ref']}")
        git(repo, "push", "-q", str(origin), f"{base}:{payload['merge_group']['base_ref']}")
        gh.state.origin = origin  # GitHub knows only what reached origin
        workspace = tmp_path / "workspace"  # as actions/checkout makes it: init, fetch, checkout
        git(tmp_path, "init", "-q", str(workspace))
        git(workspace, "remote", "add", "origin", origin.as_uri())
        git(workspace, "fetch", "-q", "--depth", "1", "origin", payload["merge_group"]["head_ref"])
        git(workspace, "checkout", "-q", "--detach", head)
        assert not has(workspace, base)  # the action must fetch the group's base
    runner = Runner(tmp_path, gh, workspace)
    # GitHub's examples are captures: some lack fields GitHub added later, so they are written
    # as they are (tests/data/github-webhooks/README.md), not through the schema check.
    result = runner.run(event, json.dumps(payload))
    assert "Traceback" not in result.stderr, result.stderr
    outputs = runner.outputs()
    if action in REVIEWED:
        assert result.returncode == 0, result.stderr
        assert outputs["review-result"] == "approved"
        assert outputs["head-sha"] == head
        assert states(gh, head) == ["pending", "success"]
        assert has(workspace, base)
    elif event == "push" and payload["ref"].startswith("refs/heads/"):
        # a branch pushed: its tree is checked; this one came through no reviewed pull request
        assert result.returncode == 1, result.stderr
        assert outputs["review-result"] == "landed-unreviewed" and outputs["head-sha"] == head
        landed = [st for st in gh.statuses_for(head) if st["context"] == "gitflow-agents/landed"]
        assert [st["state"] for st in landed] == ["failure"]
    else:
        assert result.returncode == 0, result.stderr
        assert outputs["review-result"] == "skipped"
        assert outputs["reason"] == SKIPPED[(event, action)]
        assert gh.requests() == []
