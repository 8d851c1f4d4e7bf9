"""``git agent-review --agent X`` runs the reviewer in the user's own checkout: a reviewer that
commits moved the user's branch, and its review still approved (exit 0, a note on the old
head). Now its commit is undone (the branch, HEAD and the index as they were; the files it
changed stay in the work tree) and the review is not approved, as a chain's round is not
(docs/review.md, "Reviewing with a configured agent")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FAKES, Cli, git
from tests.helpers.files import commit_files
from tests.helpers.flow_config import command_agents


@pytest.mark.parametrize("target", ["HEAD", "--staged"])
def test_a_reviewer_that_commits_is_undone_and_not_approved(
    repo: Path, cli: Cli, target: str
) -> None:
    agent = [sys.executable, str(FAKES / "fake_flow_agent"), "reviewer", "commit"]
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(command_agents({"sneaky": agent}))
    (repo / ".git" / "info" / "exclude").write_text("/.flow/\n/flows/\n")
    commit_files(repo, {"calc.py": "x = 1\n"}, "calc")
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / "staged.py").write_text("y = 2\n")
    git(repo, "add", "staged.py")
    (repo / "README.md").write_text("# demo\nmy own edit, not staged\n")
    index = git(repo, "write-tree").strip()

    result = cli.review(target, "--agent", "sneaky", "--format", "json", cwd=repo)

    assert result.returncode == 1, result.stdout + result.stderr
    data = json.loads(result.stdout)
    assert data["gate"]["approved"] is False
    (reason,) = [r for r in data["gate"]["reasons"] if "the reviewer committed" in r]
    assert reason.startswith("the reviewer committed (main moved to ")
    assert f"undone: main is back at {head[:12]}, the index as it was" in reason
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert git(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(repo, "write-tree").strip() == index  # staged.py staged, REVIEWER.txt not
    assert (repo / "REVIEWER.txt").read_text() == "a reviewer was here\n"  # left, not lost
    assert "my own edit" in (repo / "README.md").read_text()
    if target == "HEAD":  # the note on the reviewed commit says so too
        note = json.loads(git(repo, "notes", "--ref=gitflow-agents", "show", head))
        assert note["verdict"] == "revise"


@pytest.mark.parametrize("target", ["HEAD", "--staged"])
def test_a_reviewer_that_stages_changes_has_the_index_put_back_and_is_not_approved(
    repo: Path, cli: Cli, target: str
) -> None:
    """Its commit refused (here by a hook of the repository; inside an agent's run by
    ``review --hook``), a reviewer left REVIEWER.txt staged: a commit hook's review would have
    let git commit it (git reads the index again after the hook), and the review approved."""
    agent = [sys.executable, str(FAKES / "fake_flow_agent"), "reviewer", "try-commit"]
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(command_agents({"sneaky": agent}))
    (repo / ".git" / "info" / "exclude").write_text("/.flow/\n/flows/\n")
    commit_files(repo, {"calc.py": "x = 1\n"}, "calc")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'no commits here' >&2\nexit 1\n")
    hook.chmod(0o755)
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / "staged.py").write_text("y = 2\n")
    git(repo, "add", "staged.py")
    index = git(repo, "write-tree").strip()

    result = cli.review(target, "--agent", "sneaky", "--format", "json", cwd=repo)

    assert result.returncode == 1, result.stdout + result.stderr
    said = (repo / "flows" / "review" / "agents" / "review-sneaky" / "commit.out").read_text()
    assert said.startswith("exit 1\n") and "no commits here" in said  # the commit was refused
    data = json.loads(result.stdout)
    assert data["gate"]["approved"] is False
    assert "the reviewer staged changes during the review; undone: the index as it was" in " ".join(
        data["gate"]["reasons"]
    )
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert git(repo, "write-tree").strip() == index  # staged.py staged, REVIEWER.txt not
    assert (repo / "REVIEWER.txt").read_text() == "a reviewer was here\n"  # left, not lost


def test_a_reviewer_that_changes_nothing_of_git_s_is_approved(repo: Path, cli: Cli) -> None:
    """A reviewer that only reads (``git status`` refreshes the index's stat data, not its
    content) leaves the index as it was: nothing is undone."""
    agent = [sys.executable, str(FAKES / "fake_flow_agent"), "reviewer", "approve"]
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(command_agents({"reader": agent}))
    (repo / ".git" / "info" / "exclude").write_text("/.flow/\n/flows/\n")
    commit_files(repo, {"calc.py": "x = 1\n"}, "calc")
    (repo / "staged.py").write_text("y = 2\n")
    git(repo, "add", "staged.py")

    result = cli.review("--staged", "--agent", "reader", "--format", "json", cwd=repo)

    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["gate"]["approved"] is True


def _sneaky_reviewer(repo: Path, mode: str) -> None:
    agent = [sys.executable, str(FAKES / "fake_flow_agent"), "reviewer", mode]
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(command_agents({"sneaky": agent}))
    (repo / ".git" / "info" / "exclude").write_text("/.flow/\n/flows/\n")
    commit_files(repo, {"calc.py": "x = 1\n"}, "calc")
    (repo / "staged.py").write_text("y = 2\n")
    git(repo, "add", "staged.py")


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("--hook",), {}),
        (("--staged",), {"PRE_COMMIT": "1"}),  # a hook of one's own, run by pre-commit
    ],
)
def test_a_hook_inside_an_agent_s_run_starts_no_agent_reviewer(
    repo: Path, cli: Cli, args: tuple[str, ...], env: dict[str, str]
) -> None:
    """The hook an agent's own commit runs would start another agent, whose commit runs it
    again, without end: inside an agent's run (``GITFLOW_AGENTS_RUN_ID``) it refuses, exit 2."""
    _sneaky_reviewer(repo, "approve")
    inside = {"GITFLOW_AGENTS_RUN_ID": "0190a4b2-0000-7000-8000-000000000001", **env}

    result = cli.review(*args, "--agent", "sneaky", cwd=repo, env=inside)

    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("git agent-review: error: not starting the agent reviewer 'sneaky': ")
    assert "inside the agent run 0190a4b2-0000-7000-8000-000000000001" in line
    assert not (repo / "flows" / "review").exists()  # no reviewer started


def test_inside_an_agent_s_run_the_builtin_hook_and_an_asked_review_still_run(
    repo: Path, cli: Cli
) -> None:
    """Only a hook's agent reviewer is refused: the builtin reviewer starts no agent, and a
    review the agent asks for itself (not a hook) is one level, whose reviewer's own commits
    the hook then refuses."""
    _sneaky_reviewer(repo, "approve")
    inside = {"GITFLOW_AGENTS_RUN_ID": "0190a4b2-0000-7000-8000-000000000001"}

    assert cli.review("--hook", cwd=repo, env=inside).returncode == 0
    asked = cli.review("--staged", "--agent", "sneaky", cwd=repo, env=inside)
    assert asked.returncode == 0, asked.stdout + asked.stderr


def test_a_reviewer_s_commit_in_a_commit_hook_starts_no_reviewer_of_its_own(repo: Path) -> None:
    """``git agent-review --hook --agent NAME`` as git's pre-commit hook, and a reviewer that
    commits: its commit ran the hook again, which started another reviewer, and so on (a
    thousand nested reviews). Now the nested hook refuses (the reviewer sees why), the reviewer's
    staged file is put back out of the index, and the commit is refused: not approved. The hook
    counts its runs and stops at the third, so that the old code ends too."""
    _sneaky_reviewer(repo, "try-commit")
    count = repo.parent / "hook-runs"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(
        f"#!/bin/sh\necho run >> '{count}'\n"
        f"[ $(wc -l < '{count}') -gt 2 ] && exit 99\n"
        f'exec "{sys.executable}" -m gitflow_agents review --hook --agent sneaky\n'
    )
    hook.chmod(0o755)
    head = git(repo, "rev-parse", "HEAD").strip()
    index = git(repo, "write-tree").strip()

    commit = subprocess.run(
        ["git", "commit", "-qm", "mine"],
        cwd=repo,
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert count.read_text() == "run\nrun\n"  # the user's commit's hook, and the reviewer's
    said = (repo / "flows" / "review" / "agents" / "review-sneaky" / "commit.out").read_text()
    assert said.startswith("exit 1\n"), said  # the reviewer's commit was refused, and why:
    assert "error: not starting the agent reviewer 'sneaky': this hook runs inside" in said
    assert commit.returncode == 1, commit.stdout + commit.stderr
    assert "the reviewer staged changes during the review" in commit.stdout + commit.stderr
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert git(repo, "write-tree").strip() == index  # staged.py staged, REVIEWER.txt not
