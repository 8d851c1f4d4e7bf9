"""What an agent reviewer spent, as the sticky summary comment shows it.

A configured reviewer (a ``command`` agent, a Python one-liner defined by the base branch's
``.flow/base.yaml``) streams Claude-style usage; the comment's run history shows its tokens and
its cost, whatever the cost's size and however its review ended.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gitflow_agents.github.action.comment import MARKER
from tests.conftest import git
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.action_runner import Runner, add_pull, pr_event, runner
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
