"""What the pre-commit hooks review and gate: the pushed commit on pre-push (never HEAD when
pre-commit names another, and no guess when it names none), every ref git's own pre-push hook
is given, and the files pre-commit hands over (``--all-files``, ``--files``)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gitflow_agents.git import queries as g
from gitflow_agents.git_agent_review import build_parser, gitflow_agents_main, plain_args
from gitflow_agents.reviewer import read_review_note
from tests.conftest import Cli, git
from tests.helpers.files import commit_files
from tests.helpers.review import run

__all__ = ["run"]  # a fixture

AWS_KEY = "AKIA" + "Z7Q2XK4M9PLR3VBN"
KEY_FILE = f'KEY = "{AWS_KEY}"\n'
Z40 = "0" * 40

# what pre-commit exports for a push whose whole history is new to the remote (no from/to)
WHOLE_HISTORY = {
    "PRE_COMMIT": "1",
    "PRE_COMMIT_REMOTE_NAME": "origin",
    "PRE_COMMIT_REMOTE_URL": "/nowhere/remote.git",
    "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/leaky",
    "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/leaky",
}


@pytest.fixture
def leaky(repo: Path, run: Cli) -> Path:
    """``repo`` on main (approved) with branch ``leaky`` adding a key, not reviewed."""
    assert run.review("HEAD", cwd=repo).returncode == 0
    git(repo, "checkout", "-q", "-b", "leaky")
    commit_files(repo, {"t.py": KEY_FILE}, "add a key")
    git(repo, "checkout", "-q", "main")
    return repo


# --- pre-push: the pushed commit ----------------------------------------------------------------


def test_whole_history_push_gates_the_pushed_branch_not_head(leaky: Path, run: Cli) -> None:
    refused = run.main("hook", "gate", cwd=leaky, env=WHOLE_HISTORY)
    assert refused.returncode == 1
    assert f"push refused: {g.rev_parse(leaky, 'leaky')[:12]}" in refused.stderr
    main_pushed = {**WHOLE_HISTORY, "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/main"}
    assert run.main("hook", "gate", cwd=leaky, env=main_pushed).returncode == 0


def test_whole_history_push_reviews_the_pushed_branch_not_head(leaky: Path, run: Cli) -> None:
    result = run.main("review", "--hook", cwd=leaky, env=WHOLE_HISTORY)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "aws-access-key" in result.stdout and "t.py" in result.stdout
    assert "from the empty tree" in result.stderr  # its whole history, root commit included
    note = read_review_note(leaky, g.rev_parse(leaky, "leaky"))
    assert note is not None and note.verdict == "revise"
    assert note.base_sha == g.empty_tree(leaky)


@pytest.mark.parametrize("command", [("hook", "gate"), ("review", "--hook")])
def test_a_push_that_names_no_pushed_commit_is_refused_not_taken_for_head(
    leaky: Path, run: Cli, command: tuple[str, ...]
) -> None:
    env = {k: v for k, v in WHOLE_HISTORY.items() if k != "PRE_COMMIT_LOCAL_BRANCH"}
    result = run.main(*command, cwd=leaky, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "cannot tell which commit is pushed" in result.stderr
    assert "HEAD" in result.stderr  # says why it does not fall back to HEAD


# --- git's own pre-push hook: every pushed ref --------------------------------------------------


def pre_push(run: Cli, repo: Path, lines: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """``gitflow-agents hook gate --pre-push origin URL`` with git's ref lines on stdin."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(lines.encode())))
    result = run.main("hook", "gate", "--pre-push", "origin", "/nowhere/remote.git", cwd=repo)
    return result.returncode, result.stdout + result.stderr


def test_pre_push_gates_every_pushed_ref(
    leaky: Path, run: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    main, key = g.rev_parse(leaky, "main"), g.rev_parse(leaky, "leaky")
    git(leaky, "checkout", "-q", "-b", "docs")
    docs = commit_files(leaky, {"docs.md": "docs\n"})
    assert run.review("HEAD", cwd=leaky).returncode == 0
    lines = (
        f"refs/heads/docs {docs} refs/heads/docs {Z40}\n"
        f"refs/heads/leaky {key} refs/heads/leaky {Z40}\n"
    )
    code, output = pre_push(run, leaky, lines, monkeypatch)
    assert code == 1, output
    assert f"push refused: refs/heads/leaky: {key[:12]}" in output
    assert f"refs/heads/docs: {docs[:12]} approved" in output
    code, output = pre_push(
        run, leaky, f"refs/heads/docs {docs} refs/heads/docs {main}\n", monkeypatch
    )
    assert code == 0, output


def test_pre_push_skips_deletions_and_refs_the_remote_has(
    leaky: Path, run: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = g.rev_parse(leaky, "leaky")
    git(leaky, "update-ref", "refs/remotes/origin/leaky", key)  # already on the remote
    lines = (
        f"(delete) {Z40} refs/heads/gone {key}\n"
        f"refs/heads/leaky {key} refs/heads/copy {Z40}\n"  # no commit the remote lacks
    )
    code, output = pre_push(run, leaky, lines, monkeypatch)
    assert code == 0, output
    assert "nothing new" in output
    code, output = pre_push(run, leaky, "", monkeypatch)
    assert code == 0, output


@pytest.mark.parametrize("kind", ["blob", "tree", "tag of a blob"])
def test_pre_push_refuses_a_ref_to_what_is_not_a_commit(
    leaky: Path, run: Cli, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A tag of a blob (or a tree) holding a key brings the remote no commit, so it passed as
    "nothing new for origin", and git pushed the blob no review had seen: refused. A tag of a
    commit the remote has still passes."""
    (leaky / "key.txt").write_text(KEY_FILE)
    blob = git(leaky, "hash-object", "-w", "key.txt").strip()
    pushed = {"blob": blob, "tree": git(leaky, "rev-parse", "leaky^{tree}").strip()}.get(kind)
    if pushed is None:
        git(leaky, "tag", "-a", "-m", "data", "keyblob", blob)
        pushed = git(leaky, "rev-parse", "refs/tags/keyblob").strip()
    code, output = pre_push(run, leaky, f"refs/tags/x {pushed} refs/tags/x {Z40}\n", monkeypatch)
    assert code == 1, output
    assert f"push refused: refs/tags/x points at a {kind.split()[-1]}, not a commit" in output
    assert "nothing new" not in output
    main = g.rev_parse(leaky, "main")
    git(leaky, "update-ref", "refs/remotes/origin/main", main)
    git(leaky, "tag", "-a", "-m", "release", "v1", main)
    tag = git(leaky, "rev-parse", "refs/tags/v1").strip()
    code, output = pre_push(run, leaky, f"refs/tags/v1 {tag} refs/tags/v1 {Z40}\n", monkeypatch)
    assert code == 0 and "refs/tags/v1: nothing new for origin" in output, output


def test_pre_push_refuses_what_it_cannot_read(
    leaky: Path, run: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output = pre_push(run, leaky, "refs/heads/main\n", monkeypatch)
    assert code == 2, output
    assert "cannot read" in output
    missing = "1" * 40
    code, output = pre_push(run, leaky, f"refs/heads/x {missing} refs/heads/x {Z40}\n", monkeypatch)
    assert code == 2, output


# --- the files pre-commit hands over ------------------------------------------------------------


@pytest.fixture
def committed_key(repo: Path) -> Path:
    """``repo`` whose committed settings.py holds a key; nothing staged."""
    commit_files(repo, {"settings.py": KEY_FILE, "ok.py": "x = 1\n"}, "settings")
    return repo


def test_files_not_staged_are_reviewed_whole(committed_key: Path, run: Cli) -> None:
    """``pre-commit run --all-files`` / ``--files``: the files, not the empty staged diff."""
    env = {"PRE_COMMIT": "1"}
    result = run.main("review", "--hook", "ok.py", "settings.py", cwd=committed_key, env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "aws-access-key" in result.stdout and "settings.py" in result.stdout
    assert "2 file(s) checked" in result.stdout
    assert "the whole content of 2 file(s)" in result.stderr
    assert git(committed_key, "for-each-ref", "refs/notes/") == ""  # no commit: no note
    result = run.main("review", "--hook", "ok.py", cwd=committed_key, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 file(s) checked" in result.stdout


def test_files_that_are_all_staged_are_the_commit_s_staged_changes(
    committed_key: Path, run: Cli
) -> None:
    """A commit: pre-commit hands over the staged files; their staged change is reviewed, not
    their whole content (settings.py's key was committed earlier and is not in this change)."""
    (committed_key / "settings.py").write_text(KEY_FILE + "DEBUG = False\n")
    git(committed_key, "add", "settings.py")
    result = run.main("review", "--hook", "settings.py", cwd=committed_key)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "whole content" not in result.stderr


def test_a_commit_reviews_only_the_staged_files_pre_commit_hands_over(
    committed_key: Path, run: Cli
) -> None:
    """``exclude: ^tests/``: pre-commit hands a commit's hook only the staged files its filters
    keep (app.py, not tests/fixture.py); the hook reviews their staged change, not the whole
    one (it did when every file handed over was in it: the excluded fixture failed the commit,
    though ``pre-commit run --all-files`` passed it)."""
    (committed_key / "tests").mkdir()
    (committed_key / "tests" / "fixture.py").write_text(KEY_FILE)
    (committed_key / "app.py").write_text("x = 1\n")
    git(committed_key, "add", "-A")
    env = {"PRE_COMMIT": "1"}
    result = run.main("review", "--hook", "app.py", cwd=committed_key, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 file(s) checked" in result.stdout and "fixture" not in result.stdout
    assert "whole content" not in result.stderr  # the staged change of app.py, not its content
    result = run.main("review", "--hook", "app.py", "tests/fixture.py", cwd=committed_key, env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "aws-access-key" in result.stdout and "2 file(s) checked" in result.stdout


def test_a_commit_whose_staged_files_pre_commit_all_leaves_out_has_nothing_to_review(
    committed_key: Path, run: Cli
) -> None:
    """Every staged file excluded: pre-commit runs the hook (``always_run``) with no file. The
    hook passes and records nothing; run by hand (no PRE_COMMIT) it reviews the staged change."""
    (committed_key / "tests").mkdir()
    (committed_key / "tests" / "fixture.py").write_text(KEY_FILE)
    git(committed_key, "add", "-A")
    result = run.main("review", "--hook", cwd=committed_key, env={"PRE_COMMIT": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nothing to review" in result.stdout and "fixture" not in result.stdout
    assert git(committed_key, "for-each-ref", "refs/notes/") == ""
    json_out = run.main(
        "review", "--hook", "--format", "json", cwd=committed_key, env={"PRE_COMMIT": "1"}
    )
    assert json_out.returncode == 0 and '"approved": false' in json_out.stdout
    by_hand = run.main("review", "--hook", cwd=committed_key)
    assert by_hand.returncode == 1, by_hand.stdout + by_hand.stderr
    assert "aws-access-key" in by_hand.stdout


def test_a_renamed_file_handed_over_is_reviewed_as_a_move(committed_key: Path, run: Cli) -> None:
    """A rename's new path is what pre-commit hands over: its change is the move (no line
    added), not the whole file as new, so the key settings.py already held is not found
    again; the excluded file beside it stays out."""
    git(committed_key, "mv", "settings.py", "config.py")
    (committed_key / "tests").mkdir()
    (committed_key / "tests" / "fixture.py").write_text(KEY_FILE)
    git(committed_key, "add", "-A")
    env = {"PRE_COMMIT": "1"}
    result = run.main("review", "--hook", "config.py", cwd=committed_key, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "aws-access-key" not in result.stdout and "1 file(s) checked" in result.stdout


def test_a_commit_that_moves_a_submodule_is_still_a_commit(committed_key: Path, run: Cli) -> None:
    """pre-commit hands over a submodule whose new commit is staged; no reviewed diff shows it
    (gitlinks are not reviewed), so the files did not all look staged and the hook took the
    commit for ``--all-files``: the whole content of settings.py, its old key with it."""
    first = g.head_sha(committed_key)
    git(committed_key, "update-index", "--add", "--cacheinfo", f"160000,{first},sub")
    git(committed_key, "commit", "-q", "-m", "a submodule")
    (committed_key / "settings.py").write_text(KEY_FILE + "DEBUG = False\n")
    second = g.head_sha(committed_key)
    git(committed_key, "update-index", "--cacheinfo", f"160000,{second},sub")
    git(committed_key, "add", "settings.py")
    env = {"PRE_COMMIT": "1"}
    result = run.main("review", "--hook", "settings.py", "sub", cwd=committed_key, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "whole content" not in result.stderr
    only = run.main("review", "--hook", "sub", cwd=committed_key, env=env)
    assert only.returncode == 0, only.stdout + only.stderr
    assert "nothing to review" in only.stdout and "submodules" in only.stdout


def test_files_git_does_not_track_are_not_reviewed_and_fail(committed_key: Path, run: Cli) -> None:
    (committed_key / "new.py").write_text("x = 1\n")
    result = run.main("review", "--hook", "new.py", cwd=committed_key)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "new.py: not tracked by git" in result.stderr
    assert "APPROVED" not in result.stdout
    result = run.main("review", "--hook", "new.py", "ok.py", cwd=committed_key)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "new.py: not tracked by git" in result.stderr


def test_unstaged_changes_of_the_files_are_named(committed_key: Path, run: Cli) -> None:
    (committed_key / "ok.py").write_text("x = 2\n")
    result = run.main("review", "--hook", "ok.py", "settings.py", cwd=committed_key)
    assert result.returncode == 1
    assert "unstaged changes of ok.py are not reviewed" in result.stderr


def test_files_from_a_subdirectory_are_relative_to_it(committed_key: Path, run: Cli) -> None:
    sub = committed_key / "sub"
    sub.mkdir()
    result = run.main("review", "--hook", "../settings.py", cwd=sub)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "aws-access-key" in result.stdout


def test_files_are_ignored_on_pre_push(leaky: Path, run: Cli) -> None:
    """pre-commit also hands the pushed range's files to the hook: the range is reviewed."""
    env = {
        "PRE_COMMIT_FROM_REF": g.rev_parse(leaky, "main"),
        "PRE_COMMIT_TO_REF": g.rev_parse(leaky, "leaky"),
    }
    result = run.main("review", "--hook", "README.md", cwd=leaky, env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "aws-access-key" in result.stdout


def test_a_range_with_file_names_is_a_usage_error(committed_key: Path, run: Cli) -> None:
    result = run.review("HEAD", "HEAD~1", cwd=committed_key)
    assert result.returncode == 2
    assert "one RANGE" in result.stderr


def test_a_file_named_like_an_option_is_refused_in_the_hook(
    committed_key: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pre-commit puts file names after the hook's options: a file called ``--fail-on=never``
    would switch the gate off; the hook refuses instead of reading it as an option."""
    (committed_key / "--fail-on=never").write_text("x\n")
    git(committed_key, "add", "--", "--fail-on=never")
    git(committed_key, "commit", "-q", "-m", "odd name")
    monkeypatch.chdir(committed_key)
    assert gitflow_agents_main(["review", "--hook", "--fail-on=never", "settings.py"]) == 2
    assert "--fail-on=never" in capsys.readouterr().err
    from gitflow_agents.git_agent_review import main

    assert main(["--hook", "--fail-on=never", "settings.py"]) == 2


@pytest.mark.parametrize(
    "argv", [["--hook", "a.py", "b.py"], ["--hook", "--no-note", "a.py"], ["A..B", "c"]]
)
def test_file_names_read_as_the_parser_reads_them(argv: list[str]) -> None:
    quick = plain_args(argv)
    assert quick is not None
    assert vars(quick) == vars(build_parser().parse_args(argv))


def test_a_name_after_an_option_after_names_goes_to_the_parser() -> None:
    assert plain_args(["--hook", "a.py", "--no-note", "b.py"]) is None
