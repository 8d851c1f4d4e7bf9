"""URLs from the environment and from git's config: a ``GITHUB_API_URL`` that is not an http(s)
URL is a usage error naming the variable (exit 2, never a traceback), and credentials in
``origin``'s URL (``https://x-access-token:SECRET@github.com/o/r``) are never printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.base.errors import UsageError
from gitflow_agents.github.api.settings import (
    DEFAULT_API_URL,
    settings_from_env,
    without_credentials,
)
from tests.conftest import git
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.action_runner import FINE, Runner, add_pull, pr_event
from tests.helpers.step_pr import BRANCH, env, origin_sha, run_pr, setup_repo

__all__ = ["env", "gh"]

SECRET = "ghs_" + "S3cr3tT0k3nV4lu3Xy7Zq9Wv2Rt5Lm8Np1Kj4"
BAD_API_URLS = [
    "not a url",
    "ftp://x",
    "https://",
    "api.github.com",
    "https://api.github.com:port/",
    "https://api.github.com:0/",
    "http://127.0.0.1:00",
    "https://api.github.com:65536/",
    "http://[::1",
    "https:// api.github.com",
    "file:///etc/passwd",
    f"ftp://u:{SECRET}@x",
]


@pytest.mark.parametrize("url", BAD_API_URLS)
def test_an_api_url_that_is_not_http_is_a_usage_error_naming_the_variable(url: str) -> None:
    with pytest.raises(UsageError, match=r"^GITHUB_API_URL: expected an http\(s\) URL") as caught:
        settings_from_env({"GITHUB_TOKEN": "t", "GITHUB_API_URL": url})
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "",
        DEFAULT_API_URL,
        "https://ghe.example/api/v3/",
        "http://127.0.0.1:8080",
        "http://127.0.0.1:1",
        "https://ghe.example:65535/api/v3",
    ],
)
def test_http_api_urls_are_taken(url: str) -> None:
    settings = settings_from_env({"GITHUB_TOKEN": "t", "GITHUB_API_URL": url})
    assert settings.api_url == (url or DEFAULT_API_URL).rstrip("/")


@pytest.mark.parametrize("url", ["not a url", "ftp://x"])
def test_the_action_with_a_bad_api_url_exits_2_in_one_line(
    gh: GitHubStandIn, repo: Path, tmp_path: Path, url: str
) -> None:
    runner = Runner(tmp_path, gh, repo)
    pull = add_pull(gh, repo, {"fine.py": FINE})
    result = runner.run_with({"GITHUB_API_URL": url}, "pull_request", pr_event(gh, pull))
    assert result.returncode == 2, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.strip()]
    assert "GITHUB_API_URL: expected an http(s) URL" in line
    assert "internal error" not in line and gh.requests() == []


def test_run_pr_with_a_bad_api_url_is_a_usage_error_before_any_agent_runs(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = setup_repo(tmp_path, gh)
    monkeypatch.setenv("GITHUB_API_URL", "ftp://x")
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "GITHUB_API_URL: expected an http(s) URL" in out.stderr
    assert "internal error" not in out.stderr
    assert origin_sha(gh, f"refs/heads/{BRANCH}") is None and not (repo / "flows").exists()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"https://x-access-token:{SECRET}@github.com/o/r", "https://***@github.com/o/r"),
        (f"https://{SECRET}@github.com/r", "https://***@github.com/r"),
        (f"https://u:p@ss{SECRET}@ghe.example:8443/r", "https://***@ghe.example:8443/r"),
        (f"ssh://git:{SECRET}@host/o/r.git", "ssh://***@host/o/r.git"),
        ("git@github.com:o/r.git", "git@github.com:o/r.git"),  # a user name, no secret
        ("https://github.com/o/r@x", "https://github.com/o/r@x"),  # "@" in the path
        ("/srv/git/r.git", "/srv/git/r.git"),
    ],
)
def test_without_credentials_masks_the_userinfo_of_a_url(url: str, shown: str) -> None:
    assert without_credentials(url) == shown


def test_run_pr_never_prints_a_token_from_origins_url(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--pr needs GitHub`` names origin's URL when it names no repository: masked."""
    repo = setup_repo(tmp_path, gh)
    monkeypatch.delenv("GITHUB_REPOSITORY")
    git(repo, "remote", "set-url", "origin", f"https://x-access-token:{SECRET}@github.com/r")
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "--pr needs GitHub" in out.stderr and "https://***@github.com/r" in out.stderr
    assert SECRET not in out.stdout + out.stderr
