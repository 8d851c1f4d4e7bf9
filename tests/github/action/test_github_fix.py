"""``/agent fix`` from a PR comment: fixer on the PR's branch, push, review of the new head.

Runner-shaped like tests/github/action/test_github_action.py: a real checkout (the workspace, on the default
branch), the PR's branch ``feature`` in a local bare repository that is the checkout's ``origin``
(the push target), the stand-in as the GitHub API, and a fake fixer (tests/fakes/fake_fixer)
defined by the base branch's ``.flow/base.yaml``. The fixer repairs the syntax error the builtin
reviewer finds, so the pushed commit is approved by the review that runs after the push.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.findings import Finding, GateResult, Overall, Review, Severity
from gitflow_agents.github.action.comment import MARKER
from gitflow_agents.github.action.fix import FixOutcome
from gitflow_agents.github.action.fix_reply import FIX_MARKER, fix_reply, reply_marker
from tests.conftest import FAKES, git
from tests.github_standin import GitHubStandIn, Pull, gh
from tests.helpers.action_runner import (
    BROKEN,
    FINE,
    Runner,
    add_pull,
    comment_event,
    pr_files,
    runner,
    states,
)
from tests.helpers.flow_config import command_agents

__all__ = ["gh", "runner"]

REPAIRED = BROKEN.replace("def broken(:", "def broken():")


def flow_config(mode: str) -> str:
    command = [sys.executable, str(FAKES / "fake_fixer"), mode, "{system_prompt_file}"]
    return command_agents({"fixer": command}, allow_env={"fixer": ["FAKE_FIXER_RACE"]})


def set_up(
    gh: GitHubStandIn, repo: Path, tmp_path: Path, mode: str, budget: str = "", **pull: str
) -> Pull:
    """Base branch with the fixer configured (and ``budget``, a ``budget:`` section), the PR's
    branch, and ``origin`` (a bare repo)."""
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(flow_config(mode) + budget)
    git(repo, "add", ".flow")
    git(repo, "commit", "-q", "-m", "configure the fixer")
    made = add_pull(gh, repo, {"broken.py": BROKEN, "fine.py": FINE}, **pull)
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(tmp_path / "origin.git"))
    git(repo, "remote", "add", "origin", str(tmp_path / "origin.git"))
    gh.state.origin = tmp_path / "origin.git"  # GitHub knows only what reached origin
    gh.state.permissions["maintainer"] = "write"
    return made


def origin_tip(tmp_path: Path) -> str:
    return git(tmp_path / "origin.git", "rev-parse", "refs/heads/feature").strip()


def fix(
    runner: Runner, gh: GitHubStandIn, login: str = "maintainer", **env: str
) -> tuple[int, str, str]:
    event = comment_event(gh, 7, login, "/agent fix")
    result = runner.run_with(env, "issue_comment", event)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, result.stdout, result.stderr


def replies(gh: GitHubStandIn) -> list[str]:
    return [c["body"] for c in gh.comments_on(7) if c["body"].startswith(FIX_MARKER)]


def test_a_writers_fix_is_pushed_to_the_pr_branch_and_the_new_head_reviewed(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    pull = set_up(gh, repo, tmp_path, "fix")
    code, stdout, stderr = fix(runner, gh)
    assert code == 0, stderr
    assert "::notice title=gitflow-agents::/agent fix: pushed" in stdout
    outputs = runner.outputs()
    assert outputs["fix-result"] == "pushed"
    assert outputs["review-result"] == "approved"
    new_head = origin_tip(tmp_path)
    assert outputs["fix-sha"] == new_head == outputs["head-sha"]
    # A normal fast-forward push of one commit on top of the PR's head, with the run trailer.
    assert git(repo, "rev-parse", f"{new_head}^").strip() == pull.head_sha
    assert git(repo, "show", f"{new_head}:broken.py") == REPAIRED
    message = git(repo, "log", "-1", "--format=%B", new_head)
    assert message.startswith("Fix review findings of PR #7")
    assert "Gitflow-Agents-Run: " in message and "Gitflow-Agents-Agent: pr-7-fixer" in message
    assert git(repo, "show", "--name-only", "--format=", new_head).split() == ["broken.py"]
    # The gate: the old head keeps its failure, the new head is green (reviewed in this job).
    assert states(gh, pull.head_sha) == ["pending", "failure"]
    assert states(gh, new_head) == ["pending", "success"]
    (summary,) = [c["body"] for c in gh.comments_on(7) if c["body"].startswith(MARKER)]
    assert "APPROVED" in summary and new_head[:12] in summary
    assert "| fix |" in summary.replace("`", "")  # the fixer's row in the run history
    (reply,) = replies(gh)
    assert "@maintainer" in reply and "fix pushed" in reply
    assert "**Fixed** (1 of 1 findings" in reply and "broken.py:5" in reply
    assert "**APPROVED**" in reply
    assert "fix pushed" in runner.summary.read_text()
    # Nothing left behind in the checkout: no work trees, no fix branches; artifacts in flows/.
    assert git(repo, "worktree", "list").count("\n") == 1
    assert "fix-pr-7" not in git(repo, "branch", "--list")
    assert (
        repo / "flows" / "github-fix" / "agents" / "pr-7-fixer" / "report.complete.md"
    ).is_file()
    assert git(repo, "status", "--porcelain") == ""


def test_the_fixers_spend_counts_in_the_outputs_and_its_row_of_the_comment(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """The run's spend is its agents' (docs/github.md, "Outputs"): both reviews are the builtin
    reviewer's ($0, 0 tokens), the fixer's is what its CLI said; its row in the sticky
    comment's run history shows it."""
    set_up(gh, repo, tmp_path, "paid")
    code, stdout, stderr = fix(runner, gh)
    assert code == 0, stdout + stderr
    outputs = runner.outputs()
    assert outputs["fix-result"] == "pushed"
    assert (outputs["input-tokens"], outputs["output-tokens"]) == ("1200", "340")
    assert (outputs["cost-usd"], outputs["cost-estimated"]) == ("0.0123", "false")
    (summary,) = [c["body"] for c in gh.comments_on(7) if c["body"].startswith(MARKER)]
    (row,) = [line for line in summary.replace("`", "").splitlines() if "| fix |" in line]
    assert "| 1,540 | $0.01 |" in row, row  # its tokens in all, its cost


def test_a_budget_stopped_fixers_spend_counts_in_the_outputs(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """A fixer stopped at its budget spent what it read before the stop: the outputs say it
    (its tokens; its cost unknown, no model named), never nothing."""
    set_up(gh, repo, tmp_path, "spend", budget="budget:\n  agent: {tokens: 2500}\n")
    code, stdout, stderr = fix(runner, gh)
    assert code == 5, stdout + stderr
    outputs = runner.outputs()
    assert int(outputs["input-tokens"]) >= 2500 and outputs["cost-usd"] == ""


# The fixer of ``spend`` mode, naming its model (priced in the default price table) the way
# Claude Code's stream does: a budget stops it, its cost estimated from what it read.
PRICED_SPENDER = [
    sys.executable,
    "-c",
    "import json, time\n"
    "for n in range(10_000):\n"
    "    usage = {'input_tokens': 1000, 'output_tokens': 0}\n"
    "    message = {'id': f'm{n}', 'model': 'claude-sonnet-4-5', 'usage': usage}\n"
    "    print(json.dumps({'type': 'assistant', 'message': message}), flush=True)\n"
    "    time.sleep(0.05)\n",
]


def summary_rows(gh: GitHubStandIn, flow: str) -> list[str]:
    """The run-history rows of ``flow`` in our summary comment."""
    (summary,) = [c["body"] for c in gh.comments_on(7) if c["body"].startswith(MARKER)]
    return [line for line in summary.replace("`", "").splitlines() if f"| {flow} |" in line]


def test_a_budget_stopped_fixers_row_has_the_outcome_budget(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """docs/configuration.md, "budget": the agent run ends with the outcome ``budget``; its
    row in the run history says so (not ``failed``), with the tokens it read (its cost
    unknown: it names no model)."""
    set_up(gh, repo, tmp_path, "spend", budget="budget:\n  agent: {tokens: 2500}\n")
    code, stdout, stderr = fix(runner, gh)
    assert code == 5, stdout + stderr
    (row,) = summary_rows(gh, "fix")
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[3] == "budget", row
    assert int(cells[7].replace(",", "")) >= 2500 and cells[8] == "unknown", row


def test_a_budget_stopped_fixer_naming_a_priced_model_has_an_estimated_cost(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """The fixer's stream names a model of the price table: what it read before the stop is
    priced, in its row (``~$``) and the outputs, as a stopped reviewer's is."""
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        command_agents({"fixer": PRICED_SPENDER}) + "budget:\n  agent: {tokens: 2500}\n"
    )
    git(repo, "add", ".flow")
    git(repo, "commit", "-q", "-m", "configure the fixer")
    add_pull(gh, repo, {"broken.py": BROKEN, "fine.py": FINE})
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(tmp_path / "origin.git"))
    git(repo, "remote", "add", "origin", str(tmp_path / "origin.git"))
    gh.state.origin = tmp_path / "origin.git"
    gh.state.permissions["maintainer"] = "write"
    code, stdout, stderr = fix(runner, gh)
    assert code == 5, stdout + stderr
    outputs = runner.outputs()
    assert outputs["cost-estimated"] == "true" and float(outputs["cost-usd"]) > 0, outputs
    (row,) = summary_rows(gh, "fix")
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[3] == "budget" and cells[8].startswith("~$"), row


def test_a_commenter_without_write_access_is_refused(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    pull = set_up(gh, repo, tmp_path, "fix")
    code, _, stderr = fix(runner, gh, login="drive-by")
    assert code == 0, stderr
    outputs = runner.outputs()
    assert outputs["review-result"] == "skipped"
    assert "@drive-by asked for /agent fix" in outputs["reason"]
    assert origin_tip(tmp_path) == pull.head_sha
    assert gh.writes() == []


def test_a_fork_pr_is_refused_politely(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    pull = set_up(gh, repo, tmp_path, "fix", head_repo="stranger/demo")
    code, stdout, stderr = fix(runner, gh)
    assert code == 0, stderr
    assert "::notice title=gitflow-agents::nothing to do: /agent fix pushes" in stdout
    outputs = runner.outputs()
    assert (outputs["review-result"], outputs["fix-result"]) == ("skipped", "refused")
    assert "stranger/demo" in outputs["reason"] and "cannot push" in outputs["reason"]
    assert origin_tip(tmp_path) == pull.head_sha
    assert gh.statuses_for(pull.head_sha) == []
    (reply,) = replies(gh)
    assert "not run" in reply and "cannot push there" in reply
    assert not (repo / "flows").exists()  # no fixer ran


def test_the_branch_moving_while_the_fixer_works_stops_without_force(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    pull = set_up(gh, repo, tmp_path, "race")
    tree = git(repo, "rev-parse", f"{pull.head_sha}^{{tree}}").strip()
    concurrent = git(repo, "commit-tree", tree, "-p", pull.head_sha, "-m", "a concurrent push")
    concurrent = concurrent.strip()
    git(repo, "push", "-q", str(tmp_path / "origin.git"), f"{concurrent}:refs/heads/elsewhere")
    bare = tmp_path / "origin.git"
    race = f"{bare}\trefs/heads/feature\t{concurrent}"
    code, stdout, stderr = fix(runner, gh, FAKE_FIXER_RACE=race)
    assert code == 2, stderr
    assert origin_tip(tmp_path) == concurrent  # the concurrent push stands: nothing forced
    outputs = runner.outputs()
    assert outputs["fix-result"] == "branch-moved"
    assert outputs["fix-sha"] and outputs["fix-sha"] != concurrent
    assert "feature moved on (someone pushed to it) while the fixer worked" in stdout
    assert "success" not in states(gh, pull.head_sha)
    assert states(gh, pull.head_sha) == ["pending", "failure"]
    assert gh.statuses_for(outputs["fix-sha"]) == [] and gh.statuses_for(concurrent) == []
    assert not [c for c in gh.comments_on(7) if c["body"].startswith(MARKER)]
    (reply,) = replies(gh)
    assert "not pushed: the branch moved" in reply


def test_a_branch_that_moved_before_the_run_is_not_touched(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    pull = set_up(gh, repo, tmp_path, "fix")
    git(tmp_path / "origin.git", "update-ref", "refs/heads/feature", pull.base_sha)
    code, stdout, stderr = fix(runner, gh)
    assert code == 2, stderr
    assert runner.outputs()["fix-result"] == "branch-moved"
    assert "it moved on since" in stdout
    assert origin_tip(tmp_path) == pull.base_sha
    assert gh.statuses_for(pull.head_sha) == []
    assert not (repo / "flows").exists()


def test_a_failing_fixer_exits_3_and_pushes_nothing(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    pull = set_up(gh, repo, tmp_path, "fail")
    code, stdout, stderr = fix(runner, gh)
    assert code == 3, stderr
    assert "::error title=gitflow-agents::/agent fix: the fixer fixer did not complete" in stdout
    outputs = runner.outputs()
    assert (outputs["fix-result"], outputs["review-result"]) == ("fixer-failed", "revise")
    assert outputs["fix-sha"] == ""
    assert origin_tip(tmp_path) == pull.head_sha
    assert states(gh, pull.head_sha) == ["pending", "failure"]
    (reply,) = replies(gh)
    assert "the fixer failed" in reply and "nothing was pushed" in reply
    assert "broken.py:5" in reply  # what is still open
    assert git(repo, "worktree", "list").count("\n") == 1
    assert "fix-pr-7" not in git(repo, "branch", "--list")


def test_a_fixer_over_the_flow_budget_is_stopped_exit_5_and_pushes_nothing(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """The `/agent fix` fixer is an agent run: `.flow/`'s ``budget.agent`` stops it."""
    pull = set_up(gh, repo, tmp_path, "spend", budget="budget:\n  agent: {tokens: 2500}\n")
    code, stdout, stderr = fix(runner, gh)
    assert code == 5, stdout + stderr
    assert runner.outputs()["fix-result"] == "fixer-failed"
    assert "budget: agent spent" in stdout and "of 2,500" in stdout
    assert origin_tip(tmp_path) == pull.head_sha


def test_a_refused_push_is_a_clear_error_never_green(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """What GitHub answers a GITHUB_TOKEN without ``contents: write``, played by a hook."""
    pull = set_up(gh, repo, tmp_path, "fix")
    hook = tmp_path / "origin.git" / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\necho 'Permission to owner/demo.git denied to github-actions[bot].' >&2\n"
        "echo 'The requested URL returned error: 403' >&2\nexit 1\n"
    )
    hook.chmod(0o755)
    code, stdout, stderr = fix(runner, gh)
    assert code == 4, stderr
    outputs = runner.outputs()
    assert outputs["fix-result"] == "push-refused"
    assert origin_tip(tmp_path) == pull.head_sha
    assert "contents: write" in stdout
    assert states(gh, pull.head_sha) == ["pending", "failure"]
    assert gh.statuses_for(outputs["fix-sha"]) == []
    (reply,) = replies(gh)
    assert "not pushed" in reply and "contents: write" in reply


def test_a_remote_that_refuses_pushes_stops_before_the_fixer_runs(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """``git push --dry-run`` first: an agent run is not wasted on a fix that cannot land."""
    pull = set_up(gh, repo, tmp_path, "fix")
    git(repo, "remote", "set-url", "--push", "origin", str(tmp_path / "no-such-repo.git"))
    code, stdout, stderr = fix(runner, gh)
    assert code == 4, stderr
    assert runner.outputs()["fix-result"] == "push-refused"
    assert "cannot push to feature, so the fixer was not run" in stdout
    assert gh.statuses_for(pull.head_sha) == []
    assert not (repo / "flows").exists()
    (reply,) = replies(gh)
    assert "not run" in reply


def test_a_fixer_that_changes_nothing_pushes_nothing(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    pull = set_up(gh, repo, tmp_path, "noop")
    code, _, stderr = fix(runner, gh)
    assert code == 1, stderr  # the head is still not approved
    assert runner.outputs()["fix-result"] == "no-changes"
    assert origin_tip(tmp_path) == pull.head_sha
    assert states(gh, pull.head_sha) == ["pending", "failure"]


# ---------------------------------------------------------------------------------------------
# The reply to the comment (no network, no git)
# ---------------------------------------------------------------------------------------------


def finding(n: int, message: str = "broken") -> Finding:
    """Line ``n`` of broken.py; its own fingerprint (line content ``code n``)."""
    return Finding(Severity.ERROR, f"{message} {n}", "broken.py", n).with_fingerprint(f"code {n}")


def outcome(result: str, review: Review, *, before: Review | None = None) -> FixOutcome:
    approved = not review.findings
    gate = GateResult(approved=approved, exit_code=0 if approved else 1)
    return FixOutcome(result, f"{result}: what happened", review, gate, (), before=before)


def test_the_reply_lists_what_the_fix_removed_and_what_is_still_open() -> None:
    before = Review(Overall.REVISE, findings=(finding(1), finding(2)), reviewed_sha="a" * 40)
    after = Review(Overall.REVISE, findings=(finding(2),), reviewed_sha="b" * 40)
    reply = fix_reply(outcome("pushed", after, before=before), "maintainer", "https://run/1")
    assert reply.startswith(FIX_MARKER + "\n")
    assert "`/agent fix` asked by @maintainer: ✅ fix pushed\n\npushed: what happened" in reply
    fixed, still = reply.split("**Fixed** ")[1], reply.split("**Still open** ")[1]
    assert fixed.startswith("(1 of 2 findings of the review before):\n\n- error `broken.py:1`")
    assert "broken.py:2" not in fixed.split("The new head")[0]
    assert f"The new head `{'b' * 12}` was reviewed in the same run: **REVISE**." in reply
    assert still.startswith("(1):\n\n- error `broken.py:2` broken 2")
    assert reply.endswith("[workflow run](https://run/1)\n")


def test_the_reply_trusts_no_login_and_no_message() -> None:
    review = Review(Overall.REVISE, findings=(finding(1, "<b>@everyone</b>"),))
    reply = fix_reply(outcome("fixer-failed", review), "x <img src=y>", None)
    assert "asked by a maintainer: ❌ the fixer failed" in reply
    assert "<b>" not in reply and "@everyone" not in reply
    assert "**Findings of the review** (1)" in reply and "[workflow run]" not in reply
    assert "@github-actions[bot]" in fix_reply(
        outcome("no-changes", review), "github-actions[bot]", None
    )


def test_the_reply_lists_at_most_twenty_findings() -> None:
    review = Review(Overall.REVISE, findings=tuple(finding(n) for n in range(1, 26)))
    reply = fix_reply(outcome("no-changes", review), "maintainer", None)
    assert reply.count("\n- error ") == 20
    assert reply.endswith("- … and 5 more\n")
    nothing = fix_reply(outcome("nothing-to-fix", review), "maintainer", None)
    assert "✅ nothing to fix" in nothing and "- error" not in nothing


# ---------------------------------------------------------------------------------------------
# A review that ends in an error: what was done (a pushed fix stays pushed) and spent is told
# ---------------------------------------------------------------------------------------------

# A reviewer whose review number N (counted in the file named by its argument) is in its
# ``modes`` (its second argument, comma separated; ``revise`` when there are fewer):
# ``revise`` finds broken.py's syntax error (1,200/340 tokens, $0.12), ``budget`` streams
# 1,000 input tokens of a priced model every 50 ms until a budget stops it, ``ratelimit`` is
# refused by its model API (429) after its first message.
COUNTING_REVIEWER = [
    sys.executable,
    "-c",
    "import json, os, pathlib, sys, time\n"
    "counter = pathlib.Path(sys.argv[1])\n"
    "n = int(counter.read_text()) if counter.exists() else 0\n"
    "counter.write_text(str(n + 1))\n"
    "modes = sys.argv[2].split(',')\n"
    "mode = modes[n] if n < len(modes) else 'revise'\n"
    "folder = pathlib.Path(os.environ['GITFLOW_AGENTS_AGENT_DIR'])\n"
    "usage = {'input_tokens': 1000, 'output_tokens': 0}\n"
    "message = {'id': 'm0', 'model': 'claude-sonnet-4-5', 'usage': usage}\n"
    "if mode == 'ratelimit':\n"
    "    print(json.dumps({'type': 'assistant', 'message': message}), flush=True)\n"
    "    print('API Error: Request rejected (429) · rate limit exceeded', file=sys.stderr)\n"
    "    sys.exit(1)\n"
    "if mode == 'budget':\n"
    "    for k in range(10_000):\n"
    "        message = {**message, 'id': f'm{k}'}\n"
    "        print(json.dumps({'type': 'assistant', 'message': message}), flush=True)\n"
    "        time.sleep(0.05)\n"
    "finding = {'severity': 'error', 'file': 'broken.py', 'line': 5, 'message': 'syntax error',"
    " 'rule': 'python-syntax'}\n"
    "block = {'overall': 'revise', 'summary': 'looked', 'findings': [finding]}\n"
    "(folder / 'report.md').write_text('Summary.\\n\\n```json\\n' + json.dumps(block)"
    " + '\\n```\\n\\nREVIEW_RESULT: REVISE\\n')\n"
    "(folder / 'report.md').rename(folder / 'report.complete.md')\n"
    "usage = {'input_tokens': 1200, 'output_tokens': 340}\n"
    "print(json.dumps({'type': 'result', 'usage': usage, 'total_cost_usd': 0.12}))\n",
]


def set_up_reviewer(
    gh: GitHubStandIn, repo: Path, tmp_path: Path, modes: str, fixer: str = "paid"
) -> Pull:
    """``set_up`` with the ``gate`` reviewer (``COUNTING_REVIEWER`` in ``modes``): a review
    budget of 5,000 tokens, no waiting out a rate limit."""
    command = [sys.executable, str(FAKES / "fake_fixer"), fixer, "{system_prompt_file}"]
    reviewer = [*COUNTING_REVIEWER, str(tmp_path / "reviews"), modes]
    config = command_agents({"fixer": command, "gate": reviewer})
    config = config.replace("defaults:\n", "defaults:\n  rate_limit_wait_secs: 0\n")
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(config + "budget:\n  review: {tokens: 5000}\n")
    git(repo, "add", ".flow")
    git(repo, "commit", "-q", "-m", "configure the reviewer and the fixer")
    made = add_pull(gh, repo, {"broken.py": BROKEN, "fine.py": FINE})
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(tmp_path / "origin.git"))
    git(repo, "remote", "add", "origin", str(tmp_path / "origin.git"))
    gh.state.origin = tmp_path / "origin.git"
    gh.state.permissions["maintainer"] = "write"
    return made


@pytest.mark.parametrize(
    ("mode", "code", "outcome"), [("budget", 5, "budget"), ("ratelimit", 6, "rate_limited")]
)
def test_a_pushed_fix_whose_new_heads_review_ends_in_an_error_says_it_was_pushed(
    runner: Runner,
    gh: GitHubStandIn,
    repo: Path,
    tmp_path: Path,
    mode: str,
    code: int,
    outcome: str,
) -> None:
    """The fix is pushed, and the review of the new head is stopped by its budget (exit 5) or
    rate limited (exit 6): the new head's status is ``error`` and the summary comment says its
    review did not complete, with the run history's three rows (review, fix, the stopped
    review); the outputs say the fix was pushed (``fix-sha``, ``head-sha``) and sum what the
    three spent; the reply, the job summary and an annotation say it was pushed and why its
    review did not complete."""
    pull = set_up_reviewer(gh, repo, tmp_path, f"revise,{mode}")
    result = runner.run_with(
        {}, "issue_comment", comment_event(gh, 7, "maintainer", "/agent fix"), "--agent", "gate"
    )
    assert result.returncode == code, result.stdout + result.stderr
    new_head = origin_tip(tmp_path)
    assert new_head != pull.head_sha  # the fix is on the branch
    outputs = runner.outputs()
    assert (outputs["review-result"], outputs["fix-result"]) == ("error", "pushed")
    assert outputs["fix-sha"] == outputs["head-sha"] == new_head
    assert states(gh, pull.head_sha) == ["pending", "failure"]
    assert states(gh, new_head) == ["pending", "error"]
    body = summary_rows(gh, "review")
    assert len(body) == 2 and len(summary_rows(gh, "fix")) == 1, body
    stopped = [cell.strip() for cell in body[1].strip("|").split("|")]
    assert stopped[3] == outcome, body
    (sticky,) = [c for c in gh.comments_on(7) if c["body"].startswith(MARKER)]
    assert "DID NOT COMPLETE" in sticky["body"] and new_head[:12] in sticky["body"]
    assert outputs["comment-id"] == str(sticky["id"])
    # 1,540 (first review) + 1,540 (fixer) + what the stopped review read
    spent = 1000 if mode == "ratelimit" else 5000
    assert int(outputs["input-tokens"]) >= 1200 + 1200 + spent, outputs
    assert float(outputs["cost-usd"]) > 0.12 + 0.0123 and outputs["cost-estimated"] == "true"
    (reply,) = replies(gh)
    assert "fix pushed, its review did not complete" in reply
    assert f"pushed {new_head[:12]} to feature" in reply
    assert f"The review of the new head {new_head[:12]} did not complete" in reply
    assert "fix pushed, its review did not complete" in runner.summary.read_text()
    assert "::error title=gitflow-agents::/agent fix: pushed " in result.stdout


def test_a_fixer_its_model_api_refused_longer_than_the_wait_exits_6_and_pushes_nothing(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """The README's exit 6 (an agent's model API refused it for longer than the wait) holds
    for the fixer as for a reviewer: nothing pushed, `fixer-failed`, its row `rate_limited`."""
    pull = set_up_reviewer(gh, repo, tmp_path, "revise", fixer="ratelimit")
    result = runner.run_with(
        {}, "issue_comment", comment_event(gh, 7, "maintainer", "/agent fix"), "--agent", "gate"
    )
    assert result.returncode == 6, result.stdout + result.stderr
    assert origin_tip(tmp_path) == pull.head_sha  # nothing pushed
    assert runner.outputs()["fix-result"] == "fixer-failed"
    (row,) = summary_rows(gh, "fix")
    assert [cell.strip() for cell in row.strip("|").split("|")][3] == "rate_limited", row


def test_a_first_review_stopped_by_its_budget_says_what_it_spent_and_that_nothing_ran(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """The review of the PR's head is stopped by its budget (exit 5): nothing else runs; the
    outputs still say what it spent, and the reply and the job summary say it did not
    complete and that nothing was pushed."""
    pull = set_up_reviewer(gh, repo, tmp_path, "budget")
    event = comment_event(gh, 7, "maintainer", "/agent fix")
    result = runner.run_with({}, "issue_comment", event, "--agent", "gate")
    assert result.returncode == 5, result.stdout + result.stderr
    assert origin_tip(tmp_path) == pull.head_sha
    outputs = runner.outputs()
    assert (outputs["review-result"], outputs["fix-result"]) == ("error", "error")
    assert outputs["fix-sha"] == "" and outputs["head-sha"] == pull.head_sha
    assert int(outputs["input-tokens"]) >= 5000 and outputs["cost-estimated"] == "true"
    assert float(outputs["cost-usd"]) > 0
    (reply,) = replies(gh)
    assert "the review did not complete" in reply
    assert "The fixer was not run; nothing was pushed." in reply
    summary = runner.summary.read_text()
    assert "The fixer was not run; nothing was pushed." in summary
    # and what the summary comment says: did not complete, with the run history's row
    assert "DID NOT COMPLETE" in summary and "| budget |" in summary
    assert "::error title=gitflow-agents::/agent fix: the review of" in result.stdout


def test_one_reply_per_fix_comment_edited_in_place_on_a_re_run(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """docs/github.md: a re-run with nothing changed posts no new comment. The reply is keyed
    to the ``/agent fix`` comment's id: the same event delivered again leaves the identical
    reply as it is, a different answer edits it in place; a quoted key in someone else's
    comment is never touched; a new ``/agent fix`` comment gets a reply of its own."""
    pull = set_up(gh, repo, tmp_path, "fail")
    event = comment_event(gh, 7, "maintainer", "/agent fix")
    asked = event["comment"]["id"]
    quoted = gh.add_issue_comment(7, "drive-by", reply_marker(asked) + "\nnot yours")
    for _ in range(2):  # the event, then the same event re-run: the fixer fails again
        result = runner.run_with({}, "issue_comment", event)
        assert result.returncode == 3, result.stdout + result.stderr
        (reply,) = [
            c for c in gh.comments_on(7) if c["user"]["login"] != "drive-by" and is_reply(c)
        ]
        assert reply["body"].startswith(reply_marker(asked) + "\n")
        assert "the fixer failed" in reply["body"]
    assert not gh.requests("PATCH", rf"/issues/comments/{reply['id']}$")  # identical: no write
    # The branch moved on before a third delivery: the same reply now says so.
    git(tmp_path / "origin.git", "update-ref", "refs/heads/feature", pull.base_sha)
    result = runner.run_with({}, "issue_comment", event)
    assert result.returncode == 2, result.stdout + result.stderr
    (edited,) = [c for c in gh.comments_on(7) if c["user"]["login"] != "drive-by" and is_reply(c)]
    assert edited["id"] == reply["id"] and "not run" in edited["body"]
    assert gh.state.issue_comments[quoted["id"]]["body"].endswith("not yours")
    # A new /agent fix comment: a reply of its own.
    again = {**event, "comment": {**event["comment"], "id": asked + 1}}
    runner.run_with({}, "issue_comment", again)
    ours = [c for c in gh.comments_on(7) if c["user"]["login"] != "drive-by" and is_reply(c)]
    assert [c["body"].startswith(reply_marker(asked + 1)) for c in ours] == [False, True]


def test_a_re_run_after_a_pushed_fix_keeps_the_replys_record_of_it(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """ "Re-run jobs" of the workflow run (GITHUB_RUN_ATTEMPT 2) after attempt 1 pushed its fix:
    the new head needs no fix, and the reply keeps "fix pushed" and what it fixed, with a line
    of the re-run's own added; the same attempt delivered again writes nothing."""
    pull = set_up(gh, repo, tmp_path, "fix")
    event = comment_event(gh, 7, "maintainer", "/agent fix")
    first = runner.run_with({"GITHUB_RUN_ATTEMPT": "1"}, "issue_comment", event)
    assert first.returncode == 0, first.stdout + first.stderr
    (pushed,) = [c for c in gh.comments_on(7) if is_reply(c)]
    recorded = str(pushed["body"])
    pull.head_sha = origin_tip(tmp_path)  # GitHub's PR follows the pushed fix
    pull.files = pr_files(repo, pull.base_sha, pull.head_sha)
    for _ in range(2):
        again = runner.run_with({"GITHUB_RUN_ATTEMPT": "2"}, "issue_comment", event)
        assert again.returncode == 0, again.stdout + again.stderr
        assert runner.outputs()["fix-result"] == "nothing-to-fix"
        (reply,) = [c for c in gh.comments_on(7) if is_reply(c)]
        assert reply["id"] == pushed["id"]
        assert reply["body"] == (
            f"{recorded.rstrip()}\n\n**Re-run, attempt 2:** ✅ nothing to fix: the review "
            f"of {pull.head_sha[:12]} approves it.\n"
        )
    assert "**Fixed** (1 of 1 findings" in reply["body"] and "broken.py:5" in reply["body"]
    assert len(gh.requests("PATCH", rf"/issues/comments/{reply['id']}$")) == 1


def is_reply(comment: dict[str, Any]) -> bool:
    return str(comment["body"]).startswith(FIX_MARKER)
