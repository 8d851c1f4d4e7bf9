"""``run --step N --pr`` stopped by a budget: the work a budget stopped is kept on origin's step
branch (the README's exit code 5: "a step's work so far is kept on its branch"), with what it
spent in the branch's lease, so a re-run on any runner continues it instead of paying for it
again from the target."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import git
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.step_pr import BRANCH, env, lease_on_origin, origin_sha, run_pr, setup_repo

__all__ = ["env", "gh"]

ISSUE = 5

# An implementer that adds a line to work.txt, then streams five Claude-style usage lines of
# 1,200 tokens each before it completes: a budget of 2,500 tokens stops it after its work.
SPENDING_IMPLEMENTER = """\
import json, os, pathlib, time
folder = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
with open("work.txt", "a") as work:
    work.write("more work\\n")
for n in range(5):
    message = {"id": f"m{time.time_ns()}", "model": "claude-sonnet-4-5",
               "usage": {"input_tokens": 1000, "output_tokens": 200}}
    print(json.dumps({"type": "assistant", "message": message}), flush=True)
    time.sleep(0.1)
(folder / "report.md").write_text("## Summary\\n\\nmore work\\n")
(folder / "report.md").rename(folder / "report.complete.md")
"""


def test_work_a_budget_stopped_is_kept_on_origin_and_a_fresh_clone_continues_it(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    script = tmp_path / "implementer.py"
    script.write_text(SPENDING_IMPLEMENTER)
    repo = setup_repo(tmp_path, gh, implementer=[sys.executable, str(script)])
    gh.state.issues.add(ISSUE)
    stopped = run_pr(repo, "--step", "1", "--budget-tokens", "2500", "--plan-issue", str(ISSUE))
    assert stopped.returncode == 5, stopped.stdout + stopped.stderr
    tip = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert tip is not None and gh.state.pulls == {}  # kept on origin, no pull request
    assert "Gitflow-Agents-Stopped: budget" in git(gh.state.origin, "log", "-1", "--format=%B", tip)
    assert git(gh.state.origin, "show", f"{tip}:work.txt") == "more work\n"
    lease = lease_on_origin(gh)
    assert lease["stopped"] == "budget" and lease["spend"]["inputTokens"] >= 2000
    (comment,) = gh.comments_on(ISSUE)  # the plan at a glance: stopped, and what it spent
    row = next(line for line in str(comment["body"]).splitlines() if line.startswith("| 1: "))
    assert "❌ stopped (budget): a re-run continues it" in row and "· tokens " in row

    again = run_pr(repo, "--step", "1", "--budget-tokens", "2500")  # the same clone
    assert again.returncode == 5, again.stdout + again.stderr
    grown = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert grown != tip and git(gh.state.origin, "merge-base", "--is-ancestor", tip, grown) == ""
    assert git(gh.state.origin, "show", f"{grown}:work.txt") == "more work\n" * 2
    spent = lease_on_origin(gh)["spend"]["inputTokens"]
    assert spent >= 2 * lease["spend"]["inputTokens"] - 1000  # both runs, each ≥ 2,000

    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(gh.state.origin), str(fresh))
    done = run_pr(fresh, "--step", "1", "--budget-tokens", "100000")  # another runner
    assert done.returncode == 0, done.stdout + done.stderr
    assert "taking over" in done.stdout
    (pull,) = gh.state.pulls.values()
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert (
        head is not None and git(gh.state.origin, "show", f"{head}:work.txt") == "more work\n" * 3
    )
    final = lease_on_origin(gh)
    assert "stopped" not in final and final["pull"] == pull.number
    assert final["spend"]["inputTokens"] >= spent + 5000
