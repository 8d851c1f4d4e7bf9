"""The PyGithub boundary against the stand-in: identity, retries, errors, Enterprise URLs."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from gitflow_agents.base.errors import ExitCode, GitHubError, UsageError
from gitflow_agents.github.api.client import (
    GitHubForbidden,
    GitHubRejected,
    InlineComment,
    settings_from_env,
)
from tests.github_standin import GitHubStandIn, client_for, gh, simple_pull

__all__ = ["gh"]

SHA = "a" * 40


def test_reads_a_pull_request_and_its_files_through_an_enterprise_prefix(gh: GitHubStandIn) -> None:
    simple_pull(gh, head_repo="fork/demo")
    client = client_for(gh)
    pull = client.pulls.get(gh.full_name, 7)
    assert (pull.number, pull.head_sha, pull.base_sha) == (7, SHA, "b" * 40)
    assert pull.is_fork and pull.head_repo == "fork/demo"
    files = client.pulls.files(gh.full_name, 7)
    assert [(f.filename, f.patch is None) for f in files] == [("app.py", False), ("logo.png", True)]
    # Every request went to the GHE-style prefix: the stand-in only answers under /api/v3.
    assert gh.base_url.endswith("/api/v3")
    assert [r.path for r in gh.log] == [
        "/repos/octo/demo/pulls/7",
        "/repos/octo/demo/pulls/7/files",
    ]


def test_login_comes_from_the_token_and_is_none_for_the_actions_token(gh: GitHubStandIn) -> None:
    assert client_for(gh).login() == "gitflow-bot"
    assert client_for(gh, "tok-actions").login() is None
    assert client_for(gh, "ghs_installation").login() is None
    assert len(gh.requests("GET", "/user$")) == 2  # an installation token is not even asked


def test_lists_every_page_of_comments_100_at_a_time(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    for index in range(135):
        gh.add_issue_comment(7, "alice", f"comment {index}")
    comments = client_for(gh).issue_comments(gh.full_name, 7)
    assert [c.body for c in comments] == [f"comment {i}" for i in range(135)]
    pages = gh.requests("GET", r"/issues/7/comments$")
    assert len(pages) == 2  # 100 + 35: GitHub's largest page, not its default of 30
    assert [p.query.get("per_page") for p in pages] == [["100"], ["100"]]


def test_retries_5xx_then_succeeds(gh: GitHubStandIn) -> None:
    gh.fail("POST", r"/statuses/", 502, times=2)
    client = client_for(gh, retries=3)
    client.create_status(gh.full_name, SHA, state="pending", context="c", description="d")
    assert [r.status for r in gh.requests("POST", "/statuses/")] == [502, 502, 201]
    assert [s["state"] for s in gh.statuses_for(SHA)] == ["pending"]


def test_exhausted_retries_raise_github_error_with_exit_4(gh: GitHubStandIn) -> None:
    gh.fail("POST", r"/statuses/", 503, times=10, message="Service Unavailable")
    with pytest.raises(GitHubError) as caught:
        client_for(gh, retries=2).create_status(
            gh.full_name, SHA, state="pending", context="c", description="d"
        )
    error = caught.value
    assert error.exit_code == ExitCode.GITHUB
    assert "POST /repos/octo/demo/statuses/" in str(error)
    assert "HTTP 503" in str(error) and "after 2 retries" in str(error)
    assert len(gh.requests("POST", "/statuses/")) == 3  # the first try and 2 retries, no more
    assert gh.statuses_for(SHA) == []


def test_secondary_rate_limit_waits_for_retry_after(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    gh.secondary_rate_limit("POST", r"/issues/7/comments", retry_after=1)
    sleeps: list[float] = []
    made = client_for(gh, sleeps=sleeps).create_issue_comment(gh.full_name, 7, "hello")
    assert made.body == "hello"
    assert len(sleeps) == 1 and sleeps[0] >= 1.0
    assert [r.status for r in gh.requests("POST", "/issues/7/comments")] == [403, 201]
    assert len(gh.comments_on(7)) == 1


def test_secondary_rate_limit_that_never_ends_is_a_github_error_not_forbidden(
    gh: GitHubStandIn,
) -> None:
    simple_pull(gh)
    gh.secondary_rate_limit("POST", r"/issues/7/comments", times=10, retry_after=0)
    with pytest.raises(GitHubError) as caught:
        client_for(gh).create_issue_comment(gh.full_name, 7, "hello")
    assert not isinstance(caught.value, GitHubForbidden)
    assert "secondary rate limit" in str(caught.value)
    assert len(gh.requests("POST", "/issues/7/comments")) == 3


def test_an_answer_whose_rate_limit_headers_are_not_numbers_is_a_github_error(
    gh: GitHubStandIn,
) -> None:
    """A proxy's ``x-ratelimit-reset: soon`` made PyGithub raise ValueError: exit 70 before."""
    simple_pull(gh)
    gh.fail(
        "GET",
        r"/pulls/7/files$",
        403,
        message="API rate limit exceeded",
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": "soon"},
    )
    with pytest.raises(GitHubError) as caught:
        client_for(gh).pulls.files(gh.full_name, 7)
    assert caught.value.exit_code == ExitCode.GITHUB
    assert "GET /repos/octo/demo/pulls/7/files" in str(caught.value)


def test_read_only_token_is_forbidden_at_once(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    with pytest.raises(GitHubForbidden, match="Resource not accessible by integration"):
        client_for(gh, "tok-read").create_issue_comment(gh.full_name, 7, "hello")
    assert len(gh.requests("POST")) == 1  # a plain 403 is not retried


def test_a_comment_outside_the_diff_is_rejected_as_422(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    with pytest.raises(GitHubRejected, match="must be part of the diff"):
        client_for(gh).create_review(
            gh.full_name, 7, SHA, "body", [InlineComment("app.py", 10, "not in a hunk")]
        )
    assert gh.state.reviews == {}


def test_connection_refused_is_a_github_error(gh: GitHubStandIn) -> None:
    from gitflow_agents.github.api.client import Client, Settings

    gh.stop()
    client = Client(Settings(token="t", api_url=gh.base_url, retries=1, backoff=0, timeout=2))
    with pytest.raises(GitHubError, match=r"GET /user: ConnectionError"):
        client.login()
    gh.start()  # let the fixture's teardown stop a running server


def test_settings_from_env() -> None:
    settings = settings_from_env(
        {
            "GITHUB_TOKEN": "t",
            "GITHUB_API_URL": "https://ghe.example/api/v3/",
            "GITFLOW_AGENTS_GITHUB_RETRIES": "7",
            "GITFLOW_AGENTS_GITHUB_WRITE_DELAY": "0",
        }
    )
    assert settings.api_url == "https://ghe.example/api/v3"
    assert settings.retries == 7 and settings.seconds_between_writes is None
    assert settings_from_env({}, token="input").token == "input"
    assert settings_from_env({"GH_TOKEN": "x"}).api_url == "https://api.github.com"
    with pytest.raises(UsageError, match="no GitHub token"):
        settings_from_env({})
    with pytest.raises(UsageError, match="GITFLOW_AGENTS_GITHUB_TIMEOUT: expected a number"):
        settings_from_env({"GITHUB_TOKEN": "t", "GITFLOW_AGENTS_GITHUB_TIMEOUT": "soon"})


_KNOBS = ("TIMEOUT", "RETRIES", "BACKOFF", "MAX_WAIT", "WAIT_BUDGET", "WRITE_DELAY")


@pytest.mark.parametrize("name", _KNOBS)
@pytest.mark.parametrize(
    "value", ["nan", "inf", "-inf", "1e400", "1" + "0" * 400, "86401", "-1", "soon"]
)
def test_a_github_knob_out_of_range_is_a_usage_error_naming_it(name: str, value: str) -> None:
    """``nan``, ``inf`` and 400 digits were exit 70 (``int()`` of RETRIES, of TIMEOUT in the
    client); 1e300 s would be past what a wait takes. Each knob has a range, said in one line."""
    variable = f"GITFLOW_AGENTS_GITHUB_{name}"
    with pytest.raises(UsageError) as info:
        settings_from_env({"GITHUB_TOKEN": "t", variable: value})
    assert str(info.value).startswith(f"{variable}: expected a "), info.value
    assert "\n" not in str(info.value) and len(str(info.value)) < 120, info.value


def test_each_github_knob_may_be_its_maximum() -> None:
    knobs = {f"GITFLOW_AGENTS_GITHUB_{name}": "86400" for name in _KNOBS}
    knobs["GITFLOW_AGENTS_GITHUB_RETRIES"] = "100"
    settings = settings_from_env({"GITHUB_TOKEN": "t", **knobs})
    assert (settings.timeout, settings.retries, settings.wait_budget) == (86400, 100, 86400)
    with pytest.raises(UsageError, match="RETRIES: expected a whole number from 0 to 100"):
        settings_from_env({"GITHUB_TOKEN": "t", "GITFLOW_AGENTS_GITHUB_RETRIES": "2.5"})


def test_the_standin_catches_requests_that_break_the_openapi_description(
    gh: GitHubStandIn,
) -> None:
    """The validation is real: a request GitHub's description forbids is recorded."""
    request = urllib.request.Request(
        f"{gh.repo_url}/statuses/{SHA}",
        data=json.dumps({"state": "green"}).encode(),
        method="POST",
        headers={"Authorization": "token tok-write", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(request, timeout=5)
    assert any("request POST /repos/octo/demo/statuses" in v for v in gh.violations)
    assert any("green" in v for v in gh.violations)
    gh.violations.clear()
