"""The stand-in refuses statuses and check runs on commits its origin does not have, as GitHub
does (422 ``No commit found for SHA: <sha>``), and the product meets that answer with one
error line (exit 4), never a traceback.

A local bare ``origin`` holds what was pushed; the checkout has one more commit that was not.
Real PyGithub (through the product's ``Client``) talks to the stand-in.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import NamedTuple

import pytest

from gitflow_agents.base.errors import ExitCode
from gitflow_agents.findings import Overall, Review, Severity, gate
from gitflow_agents.github.action import checks, status
from gitflow_agents.github.api.client import GitHubRejected
from tests.conftest import git
from tests.github_standin import GitHubStandIn, client_for, gh

__all__ = ["gh"]


class Commits(NamedTuple):
    pushed: str
    local: str
    """Committed in the checkout only: GitHub has never seen it."""


@pytest.fixture
def commits(gh: GitHubStandIn, repo: Path, tmp_path: Path) -> Commits:
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(origin))
    gh.state.origin = origin
    pushed = git(repo, "rev-parse", "HEAD").strip()
    (repo / "more.txt").write_text("not pushed\n")
    git(repo, "add", "more.txt")
    git(repo, "commit", "-q", "-m", "local only")
    return Commits(pushed, git(repo, "rev-parse", "HEAD").strip())


def _post(gh: GitHubStandIn, path: str, body: dict[str, object], token: str) -> tuple[int, object]:
    request = urllib.request.Request(
        f"{gh.repo_url}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_status_on_a_commit_origin_lacks_is_githubs_422(
    gh: GitHubStandIn, commits: Commits
) -> None:
    code, body = _post(gh, f"/statuses/{commits.local}", {"state": "pending"}, "tok-write")
    assert (code, body) == (
        422,
        {
            "message": f"No commit found for SHA: {commits.local}",
            "documentation_url": (
                "https://docs.github.com/rest/commits/statuses#create-a-commit-status"
            ),
        },
    )
    assert gh.state.statuses == []
    code, _ = _post(gh, f"/statuses/{commits.pushed}", {"state": "pending"}, "tok-write")
    assert code == 201
    code, _ = _post(gh, f"/statuses/{'0' * 40}", {"state": "pending"}, "tok-write")
    assert code == 422  # a well-formed sha of nothing at all


def test_a_check_run_on_a_commit_origin_lacks_is_422_and_so_is_listing_its_runs(
    gh: GitHubStandIn, commits: Commits
) -> None:
    run = {"name": "x", "head_sha": commits.local, "status": "completed", "conclusion": "success"}
    code, body = _post(gh, "/check-runs", run, "tok-actions")
    assert (code, body) == (
        422,
        {
            "message": f"No commit found for SHA: {commits.local}",
            "documentation_url": "https://docs.github.com/rest/checks/runs#create-a-check-run",
        },
    )
    assert gh.state.check_runs == {}
    code, _ = _post(gh, "/check-runs", {**run, "head_sha": commits.pushed}, "tok-actions")
    assert code == 201
    # A personal token is still refused for what it is first (GitHub's order: who, then what).
    code, _ = _post(gh, "/check-runs", run, "tok-write")
    assert code == 403
    with urllib.request.urlopen(
        urllib.request.Request(
            f"{gh.repo_url}/commits/{commits.pushed}/check-runs",
            headers={"Authorization": "token tok-actions"},
        ),
        timeout=5,
    ) as answer:
        assert json.loads(answer.read())["total_count"] == 1
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(
            urllib.request.Request(
                f"{gh.repo_url}/commits/{commits.local}/check-runs",
                headers={"Authorization": "token tok-actions"},
            ),
            timeout=5,
        )
    assert refused.value.code == 422


def test_without_an_origin_every_sha_is_accepted_as_before(gh: GitHubStandIn) -> None:
    # Those tests' pull request heads live only in their local clone (or are made up).
    assert gh.state.origin is None
    status.set_pending(client_for(gh), gh.full_name, "c" * 40)
    assert [s["state"] for s in gh.statuses_for("c" * 40)] == ["pending"]


def test_the_product_meets_the_422_with_one_exit_4_error_and_no_retry(
    gh: GitHubStandIn, commits: Commits
) -> None:
    client = client_for(gh)
    with pytest.raises(GitHubRejected) as refused:
        status.set_pending(client, gh.full_name, commits.local)
    assert refused.value.exit_code == ExitCode.GITHUB
    assert str(refused.value) == (
        f"GitHub API: POST /repos/{gh.full_name}/statuses/{commits.local[:12]}: "
        f"HTTP 422: No commit found for SHA: {commits.local}"
    )
    assert "\n" not in str(refused.value)
    assert len(gh.requests("POST", "/statuses/")) == 1  # a refusal is final: never retried
    review = Review(overall=Overall.APPROVE, reviewed_sha=commits.local)
    verdict = gate(review, threshold=Severity.ERROR, head_sha=commits.local)
    with pytest.raises(GitHubRejected, match="No commit found for SHA"):
        checks.create(client_for(gh, "tok-actions"), gh.full_name, commits.local, review, verdict)
    assert len(gh.requests("POST", "/check-runs$")) == 1


def test_once_the_commit_is_pushed_the_same_status_goes_through(
    gh: GitHubStandIn, commits: Commits, repo: Path
) -> None:
    """The second time: the write GitHub refused before the push is accepted after it, and a
    write whose answer was lost (502 after GitHub kept it) is still only repeated harmlessly."""
    client = client_for(gh)
    with pytest.raises(GitHubRejected):
        status.set_pending(client, gh.full_name, commits.local)
    assert gh.state.origin is not None
    git(repo, "push", "-q", str(gh.state.origin), "HEAD:refs/heads/main")
    gh.fail("POST", r"/statuses/", 502, store=True)
    status.set_pending(client, gh.full_name, commits.local)
    assert [s["state"] for s in gh.statuses_for(commits.local)] == ["pending", "pending"]
