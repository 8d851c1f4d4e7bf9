"""``run --pr`` checks GitHub before the claim and before any agent (issue 22, item 5): a bad
token, a repository the token cannot see, an API that cannot be reached and a malformed
``GITHUB_REPOSITORY`` each end the run with one line and its exit code, nothing claimed on
origin and no agent run (before, the whole chain ran first, leaving the branch claimed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.github_standin import GitHubStandIn, gh
from tests.helpers.step_pr import BRANCH, env, implementer_runs, origin_sha, run_pr, setup_repo

__all__ = ["env", "gh"]


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("GITHUB_TOKEN", "not-a-token", "HTTP 401"),
        ("GITHUB_REPOSITORY", "octo/nope", "HTTP 404"),
        ("GITHUB_API_URL", "http://127.0.0.1:9/api/v3", "at http://127.0.0.1:9/api/v3 ("),
    ],
)
def test_github_that_cannot_be_used_is_exit_4_before_the_claim(
    tmp_path: Path,
    gh: GitHubStandIn,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    says: str,
) -> None:
    repo = setup_repo(tmp_path, gh)
    monkeypatch.setenv(variable, value)
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 4, out.stdout + out.stderr
    last = out.stderr.splitlines()[-1]  # before it: the retries' notices, if any
    assert "--pr cannot use GitHub" in last and "nothing was claimed" in last
    assert says in last and "Traceback" not in out.stderr
    assert origin_sha(gh, f"refs/heads/{BRANCH}") is None
    assert implementer_runs(repo) == 0


def test_a_malformed_github_repository_is_a_usage_error_before_the_claim(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = setup_repo(tmp_path, gh)
    monkeypatch.setenv("GITHUB_REPOSITORY", "no-slash")
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "GITHUB_REPOSITORY" in out.stderr and "no-slash" in out.stderr
    assert origin_sha(gh, f"refs/heads/{BRANCH}") is None
    assert implementer_runs(repo) == 0
