"""``plan tend PLAN`` under a budget (``.flow/`` ``budget:``): a budget that stops the tend's
reviewer is no verdict. Nothing is pushed or published (the head's status, the labels, the
sticky comment stay as they were), the tend exits 5 as any command a budget stopped, and the
next tend tries again.

Real git against a bare origin, the fake agents, a reviewer that streams what it spends as
Claude Code does (``spender``: 1,200 tokens, then it waits to be stopped), and real PyGithub
against the stand-in.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gitflow_agents.github.pr.body import CHANGES_LABEL
from tests.conftest import CliResult
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.chain import call
from tests.helpers.origin_commit import commit_on_origin
from tests.helpers.step_pr import (
    BRANCH,
    env,
    origin_sha,
    run_pr,
    setup_repo,
    statuses,
    summaries,
)

__all__ = ["env", "gh"]


def tend(repo: Path, *args: str) -> CliResult:
    return call(repo, "plan", "tend", "specs/feature.md", "--quiet", "--kill-grace", "0.2", *args)


SPENDER = """\
import json, time
usage = {"input_tokens": 1000, "output_tokens": 200}
print(json.dumps({"type": "assistant", "message": {"id": "m1", "usage": usage}}), flush=True)
time.sleep(60)  # stopped by the budget long before
"""


def behind_green_pull(tmp_path: Path, gh: GitHubStandIn, budget: str) -> tuple[Path, str]:
    """A checkout whose step 1 is an open pull request, approved (green) and then left behind
    main by a teammate's commit; its head. The checkout's config gains ``budget`` (a
    ``budget:`` entry) and the agent ``spender``."""
    repo = setup_repo(tmp_path, gh)
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert head is not None and statuses(gh, head) == ["pending", "success"]
    origin = tmp_path / "origin.git"
    commit_on_origin(origin, "main", "OTHER.md", "landed meanwhile\n", "a teammate's commit")
    script = tmp_path / "spender.py"
    script.write_text(SPENDER)
    argv = json.dumps([sys.executable, str(script)])
    config = repo / ".flow" / "base.yaml"
    spender = f"  spender:\n    adapter: command\n    command: {argv}\n"
    config.write_text(config.read_text() + spender + f"budget:\n  {budget}\n")
    return repo, head


@pytest.mark.parametrize("scope", ["agent", "review"])
def test_a_budget_that_stops_the_tends_reviewer_is_exit_5_and_no_verdict(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], scope: str
) -> None:
    """The reviewer's 1,200 tokens reach the limit of 1,000 (the agent's, or that of the
    tend's review round, `budget.review`, as a step run's rounds are held to it): the tend
    exits 5, not 1, and
    leaves the green pull request as it was (no `failure` status, no changes-requested label,
    no sticky comment written over, nothing pushed); run again, it is stopped again and
    writes nothing either."""
    repo, head = behind_green_pull(tmp_path, gh, f"{scope}: {{tokens: 1000}}")
    (pull,) = gh.state.pulls.values()
    comments, writes = summaries(gh, pull.number), len(gh.writes())
    for _ in range(2):
        out = tend(repo, "--reviewers", "spender")
        assert out.returncode == 5, out.stdout + out.stderr
        assert f"budget: {scope} spent 1,200 tokens of 1,000" in out.stdout
        assert "left as it was, for the next tend" in out.stdout
        assert "plan tend: 0 green, 0 waiting, 0 red, 1 stopped by a budget" in out.stdout
        assert origin_sha(gh, f"refs/heads/{BRANCH}") == head
        assert statuses(gh, head) == ["pending", "success"]
        assert CHANGES_LABEL not in pull.labels
        assert summaries(gh, pull.number) == comments and len(gh.writes()) == writes


RATE_LIMITED = """\
import json, sys
sys.stderr.write("API Error: Request rejected (429) rate limit exceeded; retry in 30s\\n")
print(json.dumps({"type": "result", "is_error": True, "result": "API Error: 429 rate limit"}))
sys.exit(1)
"""


def test_a_rate_limit_that_outlasts_the_wait_is_exit_6_and_no_verdict(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """The tend's reviewer is refused by its model API for longer than the wait allows
    (`rate_limit_wait_secs: 0`): not a verdict on the pull request either. The tend exits 6,
    says so, and leaves the green pull request as it was."""
    repo, head = behind_green_pull(tmp_path, gh, "agent: {tokens: 1000000}")
    (tmp_path / "spender.py").write_text(RATE_LIMITED)
    config = repo / ".flow" / "base.yaml"
    text = config.read_text().replace("defaults:\n", "defaults:\n  rate_limit_wait_secs: 0\n", 1)
    config.write_text(text)
    (pull,) = gh.state.pulls.values()
    writes = len(gh.writes())
    out = tend(repo, "--reviewers", "spender")
    assert out.returncode == 6, out.stdout + out.stderr
    assert "left as it was, for the next tend" in out.stdout
    assert "plan tend: 0 green, 0 waiting, 0 red, 1 stopped by a rate limit" in out.stdout
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == head
    assert statuses(gh, head) == ["pending", "success"]
    assert CHANGES_LABEL not in pull.labels
    assert len(gh.writes()) == writes
