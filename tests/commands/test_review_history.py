"""Every commit a review approves is reviewed: a range's history is scanned whatever the user's
git settings are, and the re-run and the gate after it agree with the first review."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.git import queries as g
from tests.conftest import Cli, git
from tests.helpers.files import commit_files
from tests.helpers.review import run

__all__ = ["run"]  # a fixture

AWS_KEY = "AKIA" + "Z7Q2XK4M9PLR3VBN"
KEY_FILE = f'KEY = "{AWS_KEY}"\n'


def refused_twice(run: Cli, repo: Path, *review: str) -> None:
    """``git agent-review REVIEW…`` is REVISE (exit 1), again on a re-run, and the gate then
    refuses the reviewed head (the REVISE note)."""
    for _ in range(2):
        result = run.review(*review, cwd=repo)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "aws-access-key" in result.stdout
    gate = run.main("hook", "gate", cwd=repo)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "says revise" in gate.stderr


def test_a_root_commit_of_the_range_is_scanned_whatever_log_show_root_says(
    repo: Path, run: Cli
) -> None:
    """``log.showRoot=false`` (a user preference) hid what the root commit of an unrelated
    history merged into the range adds: the key it added and a later commit removed."""
    git(repo, "checkout", "-q", "--orphan", "imported")
    git(repo, "rm", "-q", "-rf", ".")
    commit_files(repo, {"s.py": KEY_FILE}, "imported root")
    git(repo, "rm", "-q", "s.py")
    commit_files(repo, {"b.txt": "b\n"}, "drop the key")
    git(repo, "checkout", "-q", "-b", "feat", "main")
    git(repo, "merge", "-q", "--allow-unrelated-histories", "-m", "merge", "imported")
    git(repo, "config", "log.showRoot", "false")
    git(repo, "config", "i18n.logOutputEncoding", "UTF-16")
    refused_twice(run, repo, "main..feat")
    assert g.head_sha(repo) == g.rev_parse(repo, "feat")


def test_a_key_in_a_file_a_later_commit_of_the_range_makes_large_is_refused(
    repo: Path, run: Cli
) -> None:
    """The key an earlier commit adds stays in the file that a later commit pushes over the
    size limit: the range was approved with a `large-file` warning, and its note passed the
    gate."""
    git(repo, "checkout", "-q", "-b", "feat")
    commit_files(repo, {"settings.txt": f"aws_key = '{AWS_KEY}'\n"}, "add key")
    grown = f"aws_key = '{AWS_KEY}'\n" + "".join(f"{i}\n" for i in range(40))
    commit_files(repo, {"settings.txt": grown}, "append data")
    refused_twice(run, repo, "main..feat", "--max-file-size", "100")
    result = run.review("main..feat", "--max-file-size", "100", "--no-note", cwd=repo)
    assert "  1  error  AWS access key" in result.stdout and "[large-file]" in result.stdout
