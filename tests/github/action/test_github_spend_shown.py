"""What an agent reviewer spent, and how its review ended, as the sticky summary comment shows it.

A configured reviewer (a ``command`` agent, a Python one-liner defined by the base branch's
``.flow/base.yaml``) streams Claude-style usage; the comment's run history shows its tokens and
its cost, whatever the cost's size. A review of a new head that did not complete (stopped by
its budget, failed) replaces the comment's verdict about the older head: no approval stays.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gitflow_agents.github.action.comment import MARKER, recorded_states
from tests.conftest import git
from tests.github_standin import GitHubStandIn, Pull, gh
from tests.helpers.action_runner import (
    Runner,
    add_pull,
    comment_event,
    pr_event,
    pr_files,
    runner,
    states,
)
from tests.helpers.flow_config import command_agents

__all__ = ["gh", "runner"]

CALC = "def div(a, b):\n    return a / b\n"


def paid_reviewer(cost: float) -> list[str]:
    """An approving reviewer whose CLI says it cost ``cost`` USD (1,200/340 tokens)."""
    return [
        sys.executable,
        "-c",
        "import json, os, pathlib\n"
        "folder = pathlib.Path(os.environ['GITFLOW_AGENTS_AGENT_DIR'])\n"
        "block = {'overall': 'approve', 'summary': 'looked', 'findings': []}\n"
        "(folder / 'report.md').write_text('Summary.\\n\\n```json\\n' + json.dumps(block)"
        " + '\\n```\\n\\nREVIEW_RESULT: APPROVED\\n')\n"
        "(folder / 'report.md').rename(folder / 'report.complete.md')\n"
        "usage = {'input_tokens': 1200, 'output_tokens': 340}\n"
        f"print(json.dumps({{'type': 'result', 'usage': usage, 'total_cost_usd': {cost!r}}}))\n",
    ]


def configure(repo: Path, reviewer: list[str], extra: str = "") -> None:
    """The base branch's ``.flow/``: ``gate`` runs ``reviewer`` (``extra``: more YAML)."""
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(command_agents({"gate": reviewer}) + extra)
    git(repo, "add", ".flow")
    git(repo, "commit", "-q", "-m", "configure the reviewer")


def summary(gh: GitHubStandIn) -> str:
    (body,) = [c["body"] for c in gh.comments_on(7) if c["body"].startswith(MARKER)]
    return body


def history_rows(body: str) -> list[list[str]]:
    """The run-history rows of a summary comment, as lists of their cells."""
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in body.splitlines()
        if line.startswith("| PR #")
    ]


def test_a_cost_under_a_cent_is_not_shown_as_free(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """$0.004 is not $0.00 (what a run that called no model shows): the row says ``$0.0040``,
    the four decimals ``history`` shows; the output has the exact figure."""
    configure(repo, paid_reviewer(0.004))
    pull = add_pull(gh, repo, {"calc.py": CALC})
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--agent", "gate")
    assert result.returncode == 0, result.stdout + result.stderr
    assert runner.outputs()["cost-usd"] == "0.004"
    (row,) = history_rows(summary(gh))
    assert row[3] == "approved" and row[7:] == ["1,540", "$0.0040"], row


def test_a_cost_of_cents_keeps_two_decimals(runner: Runner, gh: GitHubStandIn, repo: Path) -> None:
    configure(repo, paid_reviewer(0.1234))
    pull = add_pull(gh, repo, {"calc.py": CALC})
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--agent", "gate")
    assert result.returncode == 0, result.stdout + result.stderr
    (row,) = history_rows(summary(gh))
    assert row[7:] == ["1,540", "$0.12"], row


# ``paid_reviewer(0.12)`` until the file named by its argument says ``budget`` (then it streams
# 1,000 input tokens every 50 ms, naming a priced model, until a budget stops it) or ``fail``
# (then it gives up: report.failed.md).
SWITCHING = [
    sys.executable,
    "-c",
    "import json, os, pathlib, sys, time\n"
    "flag = pathlib.Path(sys.argv[1])\n"
    "mode = flag.read_text() if flag.exists() else 'paid'\n"
    "folder = pathlib.Path(os.environ['GITFLOW_AGENTS_AGENT_DIR'])\n"
    "if mode == 'budget':\n"
    "    for n in range(10_000):\n"
    "        usage = {'input_tokens': 1000, 'output_tokens': 0}\n"
    "        message = {'id': f'm{n}', 'model': 'claude-sonnet-4-5', 'usage': usage}\n"
    "        print(json.dumps({'type': 'assistant', 'message': message}), flush=True)\n"
    "        time.sleep(0.05)\n"
    "block = {'overall': 'approve', 'summary': 'looked', 'findings': []}\n"
    "(folder / 'report.md').write_text('Summary.\\n\\n```json\\n' + json.dumps(block)"
    " + '\\n```\\n\\nREVIEW_RESULT: APPROVED\\n')\n"
    "done = 'report.failed.md' if mode == 'fail' else 'report.complete.md'\n"
    "(folder / 'report.md').rename(folder / done)\n"
    "usage = {'input_tokens': 1200, 'output_tokens': 340}\n"
    "print(json.dumps({'type': 'result', 'usage': usage, 'total_cost_usd': 0.12}))\n",
]


def push(gh: GitHubStandIn, repo: Path, pull: Pull) -> dict[str, object]:
    """A new commit on the PR's branch; the ``synchronize`` event of its push."""
    git(repo, "checkout", "-q", "feature")
    (repo / "calc.py").write_text(CALC + "x = 1\n")
    git(repo, "commit", "-q", "-am", "more")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    files = pr_files(repo, pull.base_sha, head)
    moved = gh.add_pull(Pull(7, head, pull.base_sha, files))
    return pr_event(gh, moved, "synchronize", before=pull.head_sha, after=head)


@pytest.mark.parametrize(
    ("mode", "code", "outcome", "cost"),
    [("budget", 5, "budget", "~$0.0"), ("fail", 3, "failed", "$0.12")],
)
def test_a_review_of_a_new_head_that_did_not_complete_replaces_the_approval(
    runner: Runner,
    gh: GitHubStandIn,
    repo: Path,
    tmp_path: Path,
    mode: str,
    code: int,
    outcome: str,
    cost: str,
) -> None:
    """The PR was approved; the review of a pushed head is stopped by its budget (exit 5) or
    its agent fails (exit 3). The commit status is ``error`` and the summary comment says the
    review of the new head did not complete, why, and what it spent (its row, with its
    agent run's outcome): never the old head's approval. The earlier review's hidden record
    stays for the next, incremental review. Re-running the event adds no comment and no row."""
    flag = tmp_path / "mode"
    budget = "budget:\n  review: {tokens: 5000}\n"
    configure(repo, [*SWITCHING, str(flag)], budget)
    pull = add_pull(gh, repo, {"calc.py": CALC})
    opened = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--agent", "gate")
    assert opened.returncode == 0, opened.stdout + opened.stderr
    assert "APPROVED" in summary(gh)

    flag.write_text(mode)
    event = push(gh, repo, pull)
    head = str(event["after"])
    for _ in range(2):  # the event, then the same event re-run
        result = runner.run("pull_request", event, "tok-actions", "--agent", "gate")
        assert result.returncode == code, result.stdout + result.stderr
        assert states(gh, head)[-1] == "error"
        body = summary(gh)  # one summary comment, whose verdict is about the new head
        assert "APPROVED" not in body and "DID NOT COMPLETE" in body, body
        assert f"The review of `{head[:12]}` did not complete" in body
        assert f"head {head[:12]}" in body and f"head {pull.head_sha[:12]}" not in body
        assert "did not complete the review" in body  # the reason, as the status says it
        ((*_, shown_outcome, _, _, _, tokens, shown_cost),) = history_rows(body)
        assert shown_outcome == outcome and shown_cost.startswith(cost), body
        assert int(tokens.replace(",", "")) >= (5000 if mode == "budget" else 1540)
        assert [s["reviewedSha"] for s in recorded_states(body)] == [pull.head_sha]
        # the run's page says so too: the job summary, an annotation, the outputs
        shown = runner.summary.read_text()
        assert "DID NOT COMPLETE" in shown and f"The review of `{head[:12]}`" in shown
        assert f"::error title=gitflow-agents::the review of {head[:12]} did not complete: " in (
            result.stdout
        )
        outputs = runner.outputs()
        assert outputs["review-result"] == "error" and outputs["head-sha"] == head
        assert outputs["comment-id"] == str(gh.comments_on(7)[0]["id"])
        assert outputs["inline-posted"] == "0"
    assert len(gh.comments_on(7)) == 1


def test_an_agent_fix_whose_review_was_stopped_by_its_budget_says_so_in_the_comment(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """``/agent fix`` reviews the head first; that review stopped by its budget ends the run
    (exit 5, status ``error``), and the summary comment no longer shows the earlier approval:
    it says the review did not complete, with the stopped reviewer's row."""
    flag = tmp_path / "mode"
    configure(repo, [*SWITCHING, str(flag)], "budget:\n  review: {tokens: 5000}\n")
    pull = add_pull(gh, repo, {"calc.py": CALC})
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(tmp_path / "origin.git"))
    git(repo, "remote", "add", "origin", str(tmp_path / "origin.git"))
    gh.state.origin = tmp_path / "origin.git"
    gh.state.permissions["maintainer"] = "write"
    opened = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--agent", "gate")
    assert opened.returncode == 0, opened.stdout + opened.stderr
    assert "APPROVED" in summary(gh)

    flag.write_text("budget")
    event = comment_event(gh, 7, "maintainer", "/agent fix")
    result = runner.run("issue_comment", event, "tok-actions", "--agent", "gate")
    assert result.returncode == 5, result.stdout + result.stderr
    assert states(gh, pull.head_sha)[-1] == "error"
    body = summary(gh)
    assert "APPROVED" not in body and "DID NOT COMPLETE" in body, body
    ((*_, outcome, _, _, _, tokens, cost),) = history_rows(body)
    assert outcome == "budget" and int(tokens.replace(",", "")) >= 5000
    assert cost.startswith("~$0.0"), cost  # 1,000 tokens of a priced model per message
