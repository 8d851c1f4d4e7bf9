"""Every commit a review approves is reviewed: a range's history is scanned whatever the user's
git settings are, and the re-run and the gate after it agree with the first review."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.git import queries as g
from gitflow_agents.reviewer import read_review_note
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


def test_a_key_a_later_commit_of_the_range_marks_is_accepted(repo: Path, run: Cli) -> None:
    """A test key committed, then marked with `gitleaks:allow` in a follow-up commit (as the
    hook's finding asks): the range is approved; its first commit's line was a history error
    saying "the final change no longer adds it", so such a range could never pass."""
    git(repo, "checkout", "-q", "-b", "feat")
    commit_files(repo, {"fixture.py": KEY_FILE}, "add fixture")
    commit_files(repo, {"fixture.py": KEY_FILE.replace("\n", "  # gitleaks:allow\n")}, "accept")
    result = run.review("main..feat", "--no-note", cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no longer adds" not in result.stdout
    assert "accepted: fixture.py:1 [aws-access-key]: gitleaks:allow" in result.stdout


# --- a history all new to the remote: reviewed from the empty tree ------------------------------

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def new_history(repo: Path) -> dict[str, str]:
    """What pre-commit exports for the first push of ``repo``'s main to an empty remote (no
    from/to refs: its whole history is new)."""
    return {
        "PRE_COMMIT": "1",
        "PRE_COMMIT_REMOTE_NAME": "origin",
        "PRE_COMMIT_REMOTE_URL": str(repo.parent / "remote.git"),
        "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/main",
        "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/main",
    }


def test_a_first_push_reviews_every_commit_from_the_empty_tree(repo: Path, run: Cli) -> None:
    """The root commit added a key and a later one untracked it: the hook reviewed main..main
    (the merge-base with the default branch is the pushed commit itself), nothing, and passed;
    the gate's `git agent-review SHA` reviewed the last commit alone. No range from a commit
    can hold the root commit: the empty tree can, as a hook's base and as a RANGE's."""
    commit_files(repo, {"secrets.py": KEY_FILE}, "initial import")
    git(repo, "rm", "-q", "--cached", "secrets.py")
    commit_files(repo, {".gitignore": "secrets.py\n"}, "untrack secrets")
    env = new_history(repo)
    for _ in range(2):
        result = run.main("review", "--hook", ".gitignore", "README.md", cwd=repo, env=env)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "secrets.py:1 in commit" in result.stdout
        assert "from the empty tree" in result.stderr
    gate = run.main("hook", "gate", cwd=repo, env=env)
    assert gate.returncode == 1 and "says revise" in gate.stderr
    assert run.review(f"{EMPTY_TREE}..HEAD", "--no-note", cwd=repo).returncode == 1
    assert run.review(f"{EMPTY_TREE}..", "--no-note", cwd=repo).returncode == 1


def test_a_clean_first_push_is_approved_and_passes_the_gate(repo: Path, run: Cli) -> None:
    commit_files(repo, {"app.py": "x = 1\n"}, "app")
    env = new_history(repo)
    for _ in range(2):
        result = run.main("review", "--hook", cwd=repo, env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "APPROVED" in result.stdout
    gate = run.main("hook", "gate", cwd=repo, env=env)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    note = read_review_note(repo, g.head_sha(repo))
    assert note is not None and note.base_sha == EMPTY_TREE
    approved = run.review(f"{EMPTY_TREE}..HEAD", cwd=repo)
    assert approved.returncode == 0, approved.stdout + approved.stderr


def test_an_orphan_branch_is_pushed_reviewed_from_the_empty_tree(repo: Path, run: Cli) -> None:
    """A branch with no common ancestor with the default branch: the hook failed on every push
    of it ("no common ancestor", exit 2); its whole history is new, so all of it is reviewed."""
    git(repo, "checkout", "-q", "--orphan", "pages")
    git(repo, "rm", "-q", "-rf", ".")
    commit_files(repo, {"index.html": "<p>hi</p>\n"}, "pages")
    git(repo, "checkout", "-q", "main")
    env = {**new_history(repo), "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/pages"}
    result = run.main("review", "--hook", cwd=repo, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 file(s) checked" in result.stdout
    assert run.main("hook", "gate", cwd=repo, env=env).returncode == 0


def test_only_the_repository_s_own_empty_tree_is_a_range_base(repo: Path, run: Cli) -> None:
    sha256_empty_tree = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
    result = run.review(f"{sha256_empty_tree}..HEAD", cwd=repo)
    assert result.returncode == 2
    assert "unknown revision" in result.stderr


def test_the_gate_names_the_empty_tree_for_a_new_history(repo: Path, run: Cli) -> None:
    gate = run.main("hook", "gate", cwd=repo)
    assert gate.returncode == 1
    assert f"{EMPTY_TREE} for a history all new to the remote" in gate.stderr


# --- a shallow clone: never an approval of commits that are not there ---------------------------


def shallow_clone(repo: Path, tmp_path: Path, depth: int) -> Path:
    """A ``--depth`` clone of ``repo``'s ``feat`` with ``main`` fetched beside it (as
    actions/checkout and a base fetched separately leave a CI checkout)."""
    clone = tmp_path / "shallow"
    url = repo.as_uri()
    git(tmp_path, "clone", "-q", "--depth", str(depth), "--branch", "feat", url, str(clone))
    git(clone, "fetch", "-q", "origin", "main:refs/remotes/origin/main")
    return clone


@pytest.fixture
def key_in_history(repo: Path) -> Path:
    """``repo`` with ``feat``: a key added, removed, then a clean commit."""
    git(repo, "checkout", "-q", "-b", "feat")
    commit_files(repo, {"s.py": KEY_FILE}, "add key")
    git(repo, "rm", "-q", "s.py")
    commit_files(repo, {"f.txt": "ok\n"}, "remove key, then clean")
    commit_files(repo, {"g.txt": "ok\n"}, "clean")
    return repo


def test_a_range_past_a_shallow_clone_s_boundary_is_refused_not_approved(
    key_in_history: Path, tmp_path: Path, run: Cli
) -> None:
    """The commits before the boundary (the key's) are not in the clone: the history scan
    skipped them and the range was approved, its note passing the gate."""
    clone = shallow_clone(key_in_history, tmp_path, 1)
    for _ in range(2):
        result = run.review("origin/main..HEAD", cwd=clone)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "shallow boundary" in result.stderr and "git fetch --unshallow" in result.stderr
        assert "fetch-depth: 0" in result.stderr
    assert run.review("HEAD", cwd=clone).returncode == 2  # its parent is not here either
    assert git(clone, "for-each-ref", "refs/notes/") == ""
    assert run.main("hook", "gate", cwd=clone).returncode == 1
    git(clone, "fetch", "-q", "--unshallow", "origin")
    assert run.review("origin/main..HEAD", cwd=clone).returncode == 1  # now it is all here


def test_a_range_within_a_shallow_clone_s_history_is_reviewed(
    key_in_history: Path, tmp_path: Path, run: Cli
) -> None:
    clone = shallow_clone(key_in_history, tmp_path, 2)
    for _ in range(2):
        result = run.review("HEAD~1..HEAD", cwd=clone)
        assert result.returncode == 0, result.stdout + result.stderr
        assert run.review("HEAD", cwd=clone).returncode == 0
    assert run.main("hook", "gate", cwd=clone).returncode == 0


def test_a_root_commit_at_the_boundary_misses_nothing(repo: Path, tmp_path: Path, run: Cli) -> None:
    """A depth-1 clone of a one-commit history lists that commit as shallow; it has no parent
    to miss."""
    clone = tmp_path / "one"
    git(tmp_path, "clone", "-q", "--depth", "1", repo.as_uri(), str(clone))
    assert git(clone, "rev-parse", "--is-shallow-repository") == "true\n"
    result = run.review("HEAD", cwd=clone)
    assert result.returncode == 0, result.stdout + result.stderr
