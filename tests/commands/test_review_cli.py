"""`git agent-review` end to end: real git, real subprocesses, the real parse → gate → render path."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitflow_agents import git_agent_review
from gitflow_agents.base.errors import UsageError
from gitflow_agents.findings import Finding, Review, Severity
from gitflow_agents.git import queries as g
from gitflow_agents.reviewer import approval_status, read_review_note
from gitflow_agents.reviewer.locate import Target, hook_target, resolve_target
from gitflow_agents.reviewer.target import exit_code
from tests.conftest import ROOT, Cli, CliResult, git
from tests.helpers.files import commit_files, detached_repository, write_executable
from tests.helpers.review import configure_reviewers, run

__all__ = ["run"]  # a fixture

AWS_KEY = "AKIA" + "Z7Q2XK4M9PLR3VBN"


def review_proc(*args: str, cwd: Path, env: dict[str, str] | None = None) -> CliResult:
    """``python -m gitflow_agents.git_agent_review`` as a real subprocess (the console script)."""
    proc = subprocess.run(
        [sys.executable, "-m", "gitflow_agents.git_agent_review", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def agent_review_on_path(bin_dir: Path) -> Path:
    """``bin_dir`` holding a ``git-agent-review`` shim, so ``git agent-review`` finds it on PATH."""
    bin_dir.mkdir()
    shim = f'#!/bin/sh\nexec "{sys.executable}" -m gitflow_agents.git_agent_review "$@"\n'
    write_executable(bin_dir / "git-agent-review", shim)
    return bin_dir


@pytest.fixture
def feature(repo: Path) -> Path:
    """``repo`` on branch ``feature`` with a leaked key and a syntax error (one commit)."""
    git(repo, "checkout", "-q", "-b", "feature")
    commit_files(
        repo,
        {
            "src/app.py": "def run(:\n    return 1\n",
            "deploy/env.sh": f"export AWS_ACCESS_KEY_ID={AWS_KEY}\n",
        },
        "feature with defects",
    )
    return repo


def test_defects_are_reported_with_file_line_and_exit_1(feature: Path) -> None:
    result = review_proc(cwd=feature / "src")  # from a subdirectory, default range
    assert result.returncode == 1, result.stderr
    assert "src/app.py" in result.stdout and "python-syntax" in result.stdout
    assert "deploy/env.sh" in result.stdout and "aws-access-key" in result.stdout
    assert AWS_KEY not in result.stdout
    assert "merge-base with the default branch main" in result.stderr
    assert "REVISE" in result.stdout.splitlines()[-1]

    as_json = json.loads(review_proc("--format", "json", cwd=feature).stdout)
    where = {(f["rule"], f["file"], f["line"]) for f in as_json["findings"]}
    assert where == {("python-syntax", "src/app.py", 1), ("aws-access-key", "deploy/env.sh", 1)}


def test_fixed_commit_is_approved_and_the_gate_lets_it_through(feature: Path, run: Cli) -> None:
    gate = run.main("hook", "gate", cwd=feature)
    assert gate.returncode == 1
    assert "no recorded review" in gate.stderr

    run.review(cwd=feature)  # REVISE recorded on the broken commit
    assert run.main("hook", "gate", cwd=feature).returncode == 1

    # a leaked key is fixed by rewriting the commit: a fix on top would leave it in the history
    (feature / "src/app.py").write_text("def run() -> int:\n    return 1\n")
    (feature / "deploy/env.sh").write_text('export AWS_ACCESS_KEY_ID="$KEY"\n')
    git(feature, "commit", "-q", "-a", "-m", "fix")
    on_top = run.review(cwd=feature)
    assert on_top.returncode == 1 and "in commit" in on_top.stdout, on_top.stdout
    git(feature, "reset", "-q", "--soft", "HEAD~2")
    git(feature, "commit", "-q", "-m", "feature, fixed")
    fixed = g.head_sha(feature)
    result = run.review(cwd=feature)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith("APPROVED")
    note = read_review_note(feature, fixed)
    assert note is not None and note.verdict == "approved" and note.reviewed_sha == fixed

    gate = run.main("hook", "gate", cwd=feature / "src", env={"PRE_COMMIT_TO_REF": fixed})
    assert gate.returncode == 0, gate.stderr
    assert "approved by builtin" in gate.stdout


def test_gate_refuses_a_note_copied_to_another_commit(repo: Path, run: Cli) -> None:
    approved = g.head_sha(repo)
    result = run.review(approved, cwd=repo)
    assert result.returncode == 0
    git(repo, "commit", "-q", "--amend", "-m", "reworded")
    amended = g.head_sha(repo)
    # what notes.rewriteRef would do on amend/rebase
    git(repo, "notes", f"--ref={g.NOTES_REF}", "copy", approved, amended)
    ok, reason = approval_status(repo, amended)
    assert not ok and "copied by a rewrite" in reason
    assert run.main("hook", "gate", cwd=repo).returncode == 1


def test_gate_refuses_a_note_whose_base_is_the_reviewed_commit(repo: Path, run: Cli) -> None:
    """One rule for the chain and `git agent-review`: an approval of a commit against itself
    reviewed no change. Such a note is never written, and the gate refuses one that exists."""
    from gitflow_agents.reviewer import ApprovalNote, record_review

    head = g.head_sha(repo)
    with pytest.raises(UsageError, match="nothing was reviewed"):
        record_review(
            repo, reviewed_sha=head, base_sha=head, approved=True, agent="x", threshold="error"
        )
    assert read_review_note(repo, head) is None
    (repo / "later.txt").write_text("later\n")
    git(repo, "add", "later.txt")
    git(repo, "commit", "-q", "-m", "later")
    with pytest.raises(UsageError, match="already contained in"):  # a reverse range: base later
        record_review(
            repo,
            reviewed_sha=head,
            base_sha=g.head_sha(repo),
            approved=True,
            agent="x",
            threshold="error",
        )
    assert read_review_note(repo, head) is None
    forged = ApprovalNote("approved", head, g.tree_sha(repo, head), head, "someone", "error")
    g.write_note(repo, head, forged.to_json())
    ok, reason = approval_status(repo, head)
    assert not ok and "compared" in reason and "reviewed no change" in reason
    gate = run.main("hook", "gate", head, cwd=repo)
    assert gate.returncode == 1 and "reviewed no change" in gate.stdout + gate.stderr


def test_ranges_two_dot_three_dot_and_single_commit(repo: Path, run: Cli) -> None:
    base = g.head_sha(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    first = commit_files(repo, {"a.py": "breakpoint()\n"}, "a")
    second = commit_files(repo, {"b.py": "def f(:\n"}, "b")
    git(repo, "checkout", "-q", "main")
    commit_files(repo, {"main.txt": "x\n"}, "main moves")

    def rules(*args: str) -> list[str]:
        out = run.review(*args, "--format", "json", "--no-note", cwd=repo).stdout
        return sorted(f["rule"] for f in json.loads(out)["findings"])

    assert rules(f"{base}..{first}") == ["debugger"]
    assert rules("main...feature") == ["debugger", "python-syntax"]
    assert rules("main..feature") == ["debugger", "python-syntax"]  # main.txt is a removal here
    assert rules(second) == ["python-syntax"]
    assert rules(first) == ["debugger"]
    assert rules(base) == []  # root commit against the empty tree


GITHUB_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
PRIVATE_KEY = "-----BEGIN " + "RSA PRIVATE KEY-----"


def test_an_empty_range_records_no_approval_and_the_gate_refuses(repo: Path, run: Cli) -> None:
    """On the default branch the merge-base is HEAD: nothing is reviewed, so nothing is approved."""
    head = commit_files(
        repo,
        {"leak.txt": f"{GITHUB_TOKEN}\n{PRIVATE_KEY}\n<<<<<<< HEAD\nours\n>>>>>>> theirs\n"},
        "defects straight on main",
    )
    for args in ((), ("HEAD..HEAD",), ("main..",)):
        result = run.review(*args, cwd=repo)
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"nothing to review between {head[:12]} and {head[:12]}" in result.stdout
        assert "APPROVED" not in result.stdout
    assert git(repo, "for-each-ref", "refs/notes/") == ""  # no note, approved or otherwise
    gate = run.main("hook", "gate", cwd=repo)
    assert gate.returncode == 1
    assert "has no recorded review" in gate.stderr
    assert f"git agent-review {head[:12]}" in gate.stderr  # how to get a real review
    # the commit itself, reviewed for real, is refused
    assert run.review(head, cwd=repo).returncode == 1
    assert run.main("hook", "gate", cwd=repo).returncode == 1


def test_an_empty_range_in_a_machine_format_is_valid_and_not_approved(repo: Path, run: Cli) -> None:
    head = g.head_sha(repo)
    result = run.review("HEAD..HEAD", "--format", "json", cwd=repo)
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert data["gate"]["approved"] is False
    assert data["reviewedSha"] == head and data["findings"] == []
    assert "nothing to review" in data["reason"]
    assert "nothing to review" in result.stderr
    # a commit already contained in the base is nothing to review either
    commit_files(repo, {"x.txt": "x\n"})
    result = run.review("HEAD..HEAD~1", cwd=repo)
    assert result.returncode == 0
    assert "is already contained in" in result.stdout
    assert git(repo, "for-each-ref", "refs/notes/") == ""


def pair(target: Target) -> tuple[str, str | None]:
    return target.base, target.head


def test_target_resolution(repo: Path) -> None:
    base = g.head_sha(repo)
    head = commit_files(repo, {"x.txt": "x\n"})
    assert pair(resolve_target(repo, "HEAD~1..", staged=False)) == (base, head)
    assert pair(resolve_target(repo, "..HEAD", staged=False)) == (head, head)
    assert pair(resolve_target(repo, "HEAD", staged=False)) == (base, head)
    assert pair(resolve_target(repo, None, staged=True)) == (head, None)
    with pytest.raises(UsageError, match="not both"):
        resolve_target(repo, "HEAD", staged=True)
    with pytest.raises(UsageError, match="unknown revision: nope"):
        resolve_target(repo, "nope..HEAD", staged=False)
    env = {"PRE_COMMIT_FROM_REF": base, "PRE_COMMIT_TO_REF": head}
    assert pair(hook_target(repo, env)) == (base, head)
    assert pair(hook_target(repo, {})) == (head, None)


def test_staged_review_records_no_note(repo: Path, run: Cli) -> None:
    (repo / "conf.json").write_text('{"a": }\n')
    git(repo, "add", "conf.json")
    (repo / "conf.json").write_text('{"a": 1}\n')  # unstaged fix: not what would be committed
    result = run.review("--staged", cwd=repo)
    assert result.returncode == 1
    assert "json-syntax" in result.stdout
    assert git(repo, "for-each-ref", "refs/notes/") == ""


def test_hook_mode_reviews_the_pushed_range(repo: Path, run: Cli) -> None:
    base = g.head_sha(repo)
    head = commit_files(repo, {"x.py": "import pdb\n"})
    env = {"PRE_COMMIT_FROM_REF": base, "PRE_COMMIT_TO_REF": head}
    result = run.review("--hook", "--fail-on", "warn", cwd=repo, env=env)
    assert result.returncode == 1
    assert "debugger" in result.stdout
    # approved at the default threshold, so the note on the pushed commit says approved
    assert read_review_note(repo, head) is not None
    result = run.review("--hook", cwd=repo, env=env)
    assert result.returncode == 0
    assert run.main("hook", "gate", cwd=repo, env=env).returncode == 0


def test_pre_push_finds_a_secret_committed_and_removed_within_the_push(
    repo: Path, run: Cli
) -> None:
    base = g.head_sha(repo)
    commit_files(repo, {"t.py": f'TOKEN = "{GITHUB_TOKEN}"\n'}, "add token")
    git(repo, "rm", "-q", "t.py")
    git(repo, "commit", "-q", "-m", "remove token")
    head = g.head_sha(repo)
    env = {"PRE_COMMIT_FROM_REF": base, "PRE_COMMIT_TO_REF": head}
    result = run.review("--hook", cwd=repo, env=env)
    assert result.returncode == 1, result.stdout
    assert "github-token" in result.stdout and "t.py:1 in commit" in result.stdout
    assert GITHUB_TOKEN not in result.stdout
    assert run.main("hook", "gate", cwd=repo, env=env).returncode == 1


def test_severity_threshold_and_fail_on(repo: Path, run: Cli) -> None:
    commit_files(repo, {"x.py": "breakpoint()\n"})
    assert run.review("HEAD", cwd=repo).returncode == 0
    assert run.review("HEAD", "--severity-threshold", "warn", cwd=repo).returncode == 1
    assert (
        run.review(
            "HEAD", "--severity-threshold", "warn", "--fail-on", "never", cwd=repo
        ).returncode
        == 0
    )
    assert run.review("HEAD", "--fail-on", "info", cwd=repo).returncode == 1


@pytest.mark.parametrize(
    ("threshold", "fail_on", "code"),
    [
        ("error", "warn", 1),  # approved, but a warning is at --fail-on: exits 1
        ("warn", "never", 0),  # not approved, but --fail-on never: exits 0
        ("warn", "revise", 1),
        ("error", "revise", 0),
    ],
)
def test_the_json_gate_exit_code_is_the_commands_exit_code(
    repo: Path, tmp_path: Path, threshold: str, fail_on: str, code: int
) -> None:
    """``gate.exitCode`` in the JSON (on stdout and in ``--output``) is the code the command
    exits with, ``--fail-on`` applied; the verdict (``gate.approved``) stays the gate's."""
    commit_files(repo, {"x.py": "breakpoint()\n"})  # one warning
    out = tmp_path / "review.json"
    args = ("HEAD", "--no-note", "--format", "json", "--output", str(out))
    result = review_proc(*args, "--severity-threshold", threshold, "--fail-on", fail_on, cwd=repo)
    assert result.returncode == code, result.stderr
    for document in (json.loads(result.stdout), json.loads(out.read_text())):
        assert document["gate"]["exitCode"] == code
        assert document["gate"]["approved"] is (threshold == "error")


def test_exit_code_policy() -> None:
    review = Review(overall=None, findings=(Finding(Severity.INFO, "note"),))
    assert exit_code(review, approved=True, gate_code=0, fail_on="revise") == 0
    assert exit_code(review, approved=True, gate_code=0, fail_on="info") == 1
    assert exit_code(review, approved=True, gate_code=0, fail_on="warn") == 0
    assert exit_code(review, approved=False, gate_code=1, fail_on="never") == 0
    assert exit_code(review, approved=False, gate_code=1, fail_on="error") == 1


def test_output_file_in_another_format(feature: Path, run: Cli) -> None:
    out = feature / "review.sarif"
    result = run.review("--output", str(out), cwd=feature)
    assert result.returncode == 1
    assert "python-syntax" in result.stdout  # terminal on screen
    sarif = json.loads(out.read_text())
    assert sarif["version"] == "2.1.0"
    rules = {r["ruleId"] for r in sarif["runs"][0]["results"]}
    assert rules == {"python-syntax", "aws-access-key"}
    md = feature / "review.txt"
    run.review("--output", str(md), "--output-format", "markdown", "--format", "json", cwd=feature)
    assert "python-syntax" in md.read_text()
    assert not list(feature.glob(".review.*.tmp"))


def test_sarif_locations_read_back_as_the_files_reviewed(repo: Path) -> None:
    """Files whose names a URI cannot hold as they are (a space, '#', '%', non-ASCII): each
    result's ``artifactLocation.uri`` is percent-encoded, and decodes to the file's path."""
    from urllib.parse import unquote, urlsplit

    paths = ["src dir/my file.py", "a#b.py", "pct%20x.py", "café.py"]
    commit_files(repo, dict.fromkeys(paths, "def f(:\n"), "awkward names")
    result = review_proc("HEAD", "--no-note", "--format", "sarif", cwd=repo)
    assert result.returncode == 1, result.stderr
    results = json.loads(result.stdout)["runs"][0]["results"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert sorted(unquote(urlsplit(uri).path) for uri in uris) == sorted(paths)
    assert all(" " not in uri and "#" not in uri and uri.isascii() for uri in uris), uris


def test_a_committed_escape_sequence_cannot_hide_the_verdict(repo: Path, run: Cli) -> None:
    """A TODO ending in ``\\x1b[8m`` (conceal) printed raw hid every later line of the report on
    a terminal, the key's finding and the REVISE verdict with them: it is shown escaped."""
    commit_files(repo, {"a.py": "# TODO: tidy \x1b[8m\n", "b.py": f'K = "{AWS_KEY}"\n'}, "x")
    result = run.review("HEAD", "--no-note", "--color", "never", cwd=repo)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "\x1b" not in result.stdout
    assert "new TODO: tidy \\x1b[8m" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("REVISE: ")


def test_every_format_prints(feature: Path, run: Cli) -> None:
    for fmt in ("terminal", "json", "sarif", "rdjsonl", "annotations", "markdown"):
        result = run.review("--format", fmt, "--no-note", cwd=feature)
        assert result.returncode == 1, (fmt, result.stderr)
        assert "src/app.py" in result.stdout, fmt


def _under_encoding(encoding: str, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m ARGV`` whose output encoding is ``encoding`` (as a locale that is not UTF-8
    makes it), its output read back in it."""
    return subprocess.run(
        [sys.executable, "-m", *argv],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": encoding},
        capture_output=True,
        text=True,
        encoding=encoding,
        timeout=60,
    )


@pytest.mark.parametrize(
    "command",
    [
        ("gitflow_agents.git_agent_review",),
        ("gitflow_agents", "review"),
        ("gitflow_agents.cli", "review"),
    ],
)
def test_a_locale_that_lacks_a_character_gets_it_escaped(
    repo: Path, command: tuple[str, ...]
) -> None:
    """Under a locale that is not UTF-8 the markdown header's ``✅`` and a path holding
    characters the locale lacks were an internal error (exit 70, UnicodeEncodeError): they are
    printed as backslash escapes, the exit code is the review's, ``--output`` stays UTF-8."""
    commit_files(repo, {"日本.py": "# TODO: tidy\n"}, "x")
    for encoding in ("latin-1", "cp1252"):
        for fmt in ("terminal", "markdown"):
            done = _under_encoding(
                encoding, *command, "HEAD", "--no-note", "--format", fmt, cwd=repo
            )
            assert done.returncode == 0, (encoding, fmt, done.stderr)
            assert "\\u65e5\\u672c.py" in done.stdout, (encoding, fmt)
    assert "### \\u2705 gitflow-agents review: APPROVED" in done.stdout
    out = repo / "review.md"
    done = _under_encoding("latin-1", *command, "HEAD", "--no-note", "--output", str(out), cwd=repo)
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8").startswith("### ✅ gitflow-agents review: APPROVED")


def test_usage_errors_exit_2(repo: Path, tmp_path: Path, run: Cli) -> None:
    """The first as the console script (its exit status and line), the others in-process."""
    result = review_proc("no-such-rev", cwd=repo)
    assert (result.returncode, result.stderr.strip()) == (
        2,
        "git agent-review: error: unknown revision: no-such-rev",
    )
    outside = tmp_path / "plain"
    outside.mkdir()
    result = run.review(cwd=outside)
    assert result.returncode == 2
    assert "not a git repository" in result.stderr
    assert "Traceback" not in result.stderr
    assert run.review("--format", "xml", cwd=repo).returncode == 2
    result = run.review("HEAD", "--agent", "nobody", cwd=repo)
    assert result.returncode == 2
    assert "nobody" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [("HEAD~1..HEAD",), ("HEAD",), (), ("--staged",)])
def test_a_bare_repository_is_named_as_one_with_what_works_instead(
    feature: Path, tmp_path: Path, run: Cli, args: tuple[str, ...]
) -> None:
    """A bare repository (a server's, a CI mirror) was "not a git repository". It has no work
    tree, where the review reads its settings (.flow/) and baseline: a usage error that says
    so and names what works (a clone; ``git --git-dir=… --work-tree=DIR agent-review``)."""
    bare = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--bare", str(feature), str(bare))
    result = run.review(*args, "--no-note", cwd=bare)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "not a git repository" not in result.stderr and "Traceback" not in result.stderr
    assert f"{bare} is a bare repository: it has no work tree" in result.stderr
    inside_bare = run.review(*args, "--no-note", cwd=bare / "refs")
    assert f"{bare / 'refs'} is in the bare repository {bare}: it has" in inside_bare.stderr
    assert f"git --git-dir={bare} --work-tree=DIR agent-review" in result.stderr
    gate = run.main("hook", "gate", "HEAD", cwd=bare)  # the gate reads a note: it works there
    assert gate.returncode == 1 and "has no recorded review" in gate.stderr, gate.stderr
    inside = run.review(*args, "--no-note", cwd=feature / ".git")
    assert inside.returncode == 2, inside.stdout + inside.stderr
    git_dir = feature / ".git"
    assert f"{git_dir} is inside {git_dir}, the git folder of a repository: run it in its" in (
        inside.stderr
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("review", "HEAD~1..HEAD"),
        ("review", "--hook"),
        ("hook", "gate"),
        ("hook", "gate", "HEAD"),
        ("hook", "gate", "--pre-push", "origin", "url"),
        ("run", "plan.md", "--step", "1"),
        ("history",),
        ("flow", "review"),
    ],
)
def test_a_repository_git_refuses_is_named_with_gits_reason_and_fix(
    feature: Path, run: Cli, monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]
) -> None:
    """A repository owned by another user (a mounted volume, a CI cache), which git refuses
    for "dubious ownership" until ``safe.directory`` allows it, was "not a git repository":
    git's reason and its fix are said instead (exit 2). git's test switch stands in for
    another owner (git 2.35.2 and later)."""
    head = git(feature, "rev-parse", "HEAD").strip()
    monkeypatch.setattr(
        "sys.stdin", io.StringIO(f"refs/heads/feature {head} refs/heads/x {'0' * 40}\n")
    )
    env = {"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"}
    result = run.main(*argv, cwd=feature, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "not a git repository" not in result.stderr and "Traceback" not in result.stderr
    assert f"detected dubious ownership in repository at '{feature}'" in result.stderr
    assert f"git config --global --add safe.directory {feature}" in result.stderr
    if argv[0] == "review":  # and git agent-review, the same
        assert run.review(*argv[1:], cwd=feature, env=env).stderr == result.stderr.replace(
            "gitflow-agents", "git agent-review"
        )


def test_a_stale_notes_lock_is_named_when_the_note_cannot_be_written(
    feature: Path, run: Cli
) -> None:
    lock = feature / ".git" / "refs" / "notes" / "gitflow-agents.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.touch()
    result = run.review("HEAD", cwd=feature)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{lock} exists" in result.stderr and "Traceback" not in result.stderr


def test_no_default_branch_is_a_clear_usage_error(repo: Path, run: Cli) -> None:
    git(repo, "branch", "-m", "main", "trunk")
    result = run.review(cwd=repo)
    assert result.returncode == 2
    assert "cannot find the default branch" in result.stderr


def test_default_branch_from_origin_head(repo: Path, tmp_path: Path, run: Cli) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "checkout", "-q", "-b", "topic")
    commit_files(clone, {"t.py": "x = 1\n"})
    result = run.review(cwd=clone)
    assert result.returncode == 0, result.stderr
    assert "origin/main (from refs/remotes/origin/HEAD)" in result.stderr


def test_default_branch_message_names_the_ref_used_and_why(
    repo: Path, tmp_path: Path, run: Cli
) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "remote", "set-head", "origin", "--delete")
    git(clone, "checkout", "-q", "-b", "topic")
    commit_files(clone, {"t.py": "x = 1\n"})
    result = run.review(cwd=clone)
    assert result.returncode == 0, result.stderr
    assert (
        "merge-base with the default branch origin/main (refs/remotes/origin/HEAD is not set; "
        "origin/main is the first of origin/main, main, origin/master, master that exists)"
    ) in result.stderr
    assert "fell back" not in result.stderr


def test_a_dangling_origin_head_falls_back_and_says_how_to_set_it(
    repo: Path, tmp_path: Path, run: Cli
) -> None:
    """The remote renamed master to main and ``git fetch --prune`` removed origin/master:
    refs/remotes/origin/HEAD still names it. The review fell over it ("no common ancestor
    between origin/master and …", exit 2); it falls back as when origin/HEAD is not set."""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/master")
    git(clone, "checkout", "-q", "-b", "topic")
    commit_files(clone, {"t.py": "x = 1\n"})
    result = run.review("--no-note", cwd=clone)
    assert result.returncode == 0, result.stderr
    assert "merge-base with the default branch origin/main (refs/remotes/origin/HEAD" in (
        result.stderr
    )
    assert "origin/master, which does not exist" in result.stderr
    assert "git remote set-head origin --auto" in result.stderr
    # no branch to fall back to: one message that says why and how to fix it
    git(clone, "update-ref", "-d", "refs/remotes/origin/main")
    git(clone, "branch", "-q", "-D", "main")
    result = run.review("--no-note", cwd=clone)
    assert result.returncode == 2, result.stderr
    assert "no common ancestor" not in result.stderr
    assert "refs/remotes/origin/HEAD points at origin/master, which does not exist" in (
        result.stderr
    )
    assert "git remote set-head origin --auto" in result.stderr


def test_git_runs_git_agent_review_from_path(feature: Path, tmp_path: Path, run: Cli) -> None:
    bin_dir = agent_review_on_path(tmp_path / "bin")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
    }
    help_run = subprocess.run(
        ["git", "agent-review", "-h"], cwd=feature / "src", env=env, capture_output=True, text=True
    )
    assert help_run.returncode == 0
    assert "usage: git agent-review" in help_run.stdout
    assert "--severity-threshold" in help_run.stdout
    run = subprocess.run(
        ["git", "agent-review", "--format", "json"],
        cwd=feature / "src",
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert {f["rule"] for f in json.loads(run.stdout)["findings"]} == {
        "python-syntax",
        "aws-access-key",
    }


def test_explicit_git_dir_and_work_tree_are_honoured(tmp_path: Path) -> None:
    """``git --git-dir=X --work-tree=Y agent-review``: a repository git cannot discover from
    the work tree (the bare-repository-plus-work-tree layout of dotfiles managers)."""
    detached = detached_repository(tmp_path)
    store = detached.store
    detached.commit({"ok.py": "x = 1\n"}, "first")
    detached.commit({"bad.py": "def f(:\n"}, "second")
    head = git(store, "rev-parse", "HEAD").strip()

    bin_dir = agent_review_on_path(tmp_path / "bin")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [
            "git",
            "--git-dir=store.git",
            "--work-tree=tree",
            "agent-review",
            "HEAD",
            "--format",
            "json",
        ],
        cwd=tmp_path,  # relative paths, as a user types them
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert [(f["rule"], f["file"]) for f in data["findings"]] == [("python-syntax", "bad.py")]
    assert data["reviewedSha"] == head
    assert head[:12] in git(store, "notes", f"--ref={g.NOTES_REF}", "list")  # note in the store


def test_a_git_dir_that_names_its_work_tree_is_followed_from_its_folder(
    tmp_path: Path, run: Cli
) -> None:
    """A git directory whose ``core.worktree`` names a work tree elsewhere, used from the git
    directory's folder (a dotfiles layout): git works there, and the review ran every git call
    in the work tree, where git finds no repository: "unknown revision: main", "there is no
    main or master branch". It follows the layout as git does; a command that runs git in
    work trees of its own says why it cannot."""
    store, tree = tmp_path / "store", tmp_path / "tree"
    git(tmp_path, "init", "-q", "-b", "main", str(store))
    git(store, "config", "core.worktree", str(tree))
    tree.mkdir()
    commit_files(store, {str(tree / "ok.py"): "x = 1\n"}, "first")
    git(store, "checkout", "-q", "-b", "feat")
    commit_files(store, {str(tree / "bad.py"): "def f(:\n"}, "second")
    for args in (("main..feat",), (), ("HEAD",)):
        result = run.review(*args, "--format", "json", cwd=store)
        assert result.returncode == 1, (args, result.stderr)
        findings = json.loads(result.stdout)["findings"]
        assert [(f["rule"], f["file"]) for f in findings] == [("python-syntax", "bad.py")]
    (tree / "bad.py").write_text("x = 2\n")
    git(store, "commit", "-qam", "fixed")
    assert run.review(cwd=store).returncode == 0
    assert run.main("hook", "gate", cwd=store).returncode == 0  # the note is in the store
    history = run.main("history", cwd=store)
    assert history.returncode == 2 and "Traceback" not in history.stderr
    assert f"{tree}, the work tree of the repository {store / '.git'} (its core.worktree), " in (
        history.stderr
    )


def test_hook_mode_ignores_an_inherited_git_dir(repo: Path, tmp_path: Path, run: Cli) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    base = g.head_sha(repo)
    head = commit_files(repo, {"x.py": "def f(:\n"})
    env = {
        "PRE_COMMIT_FROM_REF": base,
        "PRE_COMMIT_TO_REF": head,
        "GIT_DIR": str(other / ".git"),  # what a hook may inherit: another repository
        "GIT_WORK_TREE": str(other),
        "GIT_INDEX_FILE": "../index.lock",
    }
    result = run.review("--hook", cwd=repo, env=env)
    assert result.returncode == 1, result.stderr
    assert "python-syntax" in result.stdout
    assert run.main("hook", "gate", cwd=repo, env=env).returncode == 1
    assert "push refused" in run.main("hook", "gate", cwd=repo, env=env).stderr


def test_gate_is_one_git_call_and_imports_nothing_heavy(repo: Path, tmp_path: Path) -> None:
    head = g.head_sha(repo)
    git(repo, "notes", f"--ref={g.NOTES_REF}", "add", "-m", '{"kind": "x"}', head)
    trace = tmp_path / "trace"
    probe = (
        "import sys\n"
        "from gitflow_agents import cli\n"
        "code = cli.main(['hook', 'gate'])\n"
        "heavy = ('dataclasses', 'datetime', 'gitflow_agents.git.queries', 'gitflow_agents.findings',\n"
        "         'yaml', 'rich', 'markdown_it', 'jinja2', 'git', 'github', 'psutil')\n"
        "print(code, sorted(m for m in heavy if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GIT_TRACE": str(trace)},
        capture_output=True,
        text=True,
    )
    assert result.stdout.strip() == "1 []", result.stdout + result.stderr
    assert "not ours" in result.stderr or "no recorded review" in result.stderr
    calls = [line for line in trace.read_text().splitlines() if "trace: built-in: git" in line]
    assert len(calls) == 1, calls


def test_gitflow_agents_review_is_the_same_command(feature: Path, run: Cli) -> None:
    result = run.main("review", "--format", "json", "--no-note", cwd=feature)
    assert result.returncode == 1
    assert len(json.loads(result.stdout)["findings"]) == 2


def test_configured_agent_reviews_through_the_same_gate(repo: Path, run: Cli) -> None:
    configure_reviewers(repo)
    head = g.head_sha(repo)
    approved = run.review("HEAD", "--agent", "approver", cwd=repo)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    note = read_review_note(repo, head)
    assert note is not None and (note.verdict, note.agent) == ("approved", "approver")

    revised = run.review("HEAD", "--agent", "reviser", "--format", "json", cwd=repo)
    assert revised.returncode == 1
    data = json.loads(revised.stdout)
    assert [(f["file"], f["line"], f["rule"]) for f in data["findings"]] == [("calc.py", 2, "zero")]
    assert data["findings"][0]["fingerprint"]
    assert read_review_note(repo, head).verdict == "revise"  # type: ignore[union-attr]
    assert "flows/" not in git(repo, "status", "--porcelain")  # run artifacts stay out of git

    failed = run.review("HEAD", "--agent", "failr", cwd=repo)
    assert failed.returncode == 3
    assert "did not complete the review" in failed.stderr


MAN_PAGE = ROOT / "docs" / "man" / "git-agent-review.1"


def test_man_page_lists_every_option() -> None:
    text = MAN_PAGE.read_text().replace("\\-", "-")
    for action in git_agent_review.build_parser()._actions:
        for flag in action.option_strings:
            if flag.startswith("--") and flag != "--help":
                assert flag in text, flag


# The man(7) macros the page may use; any other line starting with "." or "'" is a request
# troff does not know, and its text is dropped from the rendered page.
FONT_MACROS = {"B", "I", "BI", "IB", "BR", "RB", "IR", "RI"}
MAN_MACROS = {"TH", "SH", "SS", "TP", "PP", "nf", "fi", *FONT_MACROS}


def test_man_page_text_lines_are_not_read_as_requests() -> None:
    for number, line in enumerate(MAN_PAGE.read_text().splitlines(), 1):
        if line.startswith((".", "'")) and not line.startswith('.\\"'):
            macro = line[1:].split(" ", 1)[0]
            assert macro in MAN_MACROS, f"{MAN_PAGE.name}:{number}: {line}"


@pytest.mark.skipif(shutil.which("groff") is None, reason="no groff on this machine")
def test_man_page_renders_without_troff_warnings() -> None:
    result = subprocess.run(
        ["groff", "-man", "-ww", "-z", str(MAN_PAGE)], capture_output=True, text=True
    )
    assert result.returncode == 0
    assert result.stderr == ""


@pytest.mark.skipif(shutil.which("man") is None, reason="no man command on this machine")
def test_git_help_finds_the_installed_man_page(repo: Path, tmp_path: Path) -> None:
    """Installed as <prefix>/share/man/man1 (the wheel's shared-data), man finds it from PATH."""
    prefix = tmp_path / "venv"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "share" / "man" / "man1").mkdir(parents=True)
    shutil.copy(MAN_PAGE, prefix / "share" / "man" / "man1" / MAN_PAGE.name)
    shim = prefix / "bin" / "git-agent-review"
    shim.write_text("#!/bin/sh\nexit 0\n")
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "MANPATH"}
    env.update(PATH=f"{prefix / 'bin'}{os.pathsep}{env['PATH']}", MANPAGER="cat", PAGER="cat")
    result = subprocess.run(
        ["git", "agent-review", "--help"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "GIT-AGENT-REVIEW(1)" in result.stdout


def shipped_page() -> Path | None:
    from gitflow_agents.commands import manpage

    page = manpage.shipped_page()
    return page.resolve() if page else None


def uv_tool_layout(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """``uv tool install``'s layout: the console script linked into ``~/.local/bin``, the wheel's
    man page left inside the tool's environment (here: this test's Python environment). The
    environment for git: that bin folder first, then only system folders, no MANPATH."""
    home = tmp_path / "home"
    bin_dir = home / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    (home / ".local" / "share").mkdir()
    script = shutil.which("git-agent-review")
    if script is None:
        pytest.skip("git-agent-review is not installed (pip install -e .)")
    (bin_dir / "git-agent-review").symlink_to(script)
    system = [d for d in ("/usr/local/bin", "/usr/bin", "/bin") if Path(d).is_dir()]
    env = {k: v for k, v in os.environ.items() if k != "MANPATH"}
    env.update(HOME=str(home), PATH=os.pathsep.join([str(bin_dir), *system]))
    env.update(MANPAGER="cat", PAGER="cat", GIT_PAGER="cat")
    return home, env


@pytest.mark.skipif(shutil.which("man") is None, reason="no man command on this machine")
def test_git_help_finds_the_page_after_any_run_in_a_uv_tool_layout(
    repo: Path, tmp_path: Path
) -> None:
    """With real git and man: no page where man looks, so ``--help`` fails; any run of the
    command links the shipped page next to it; then ``--help`` shows it, and later runs leave
    the link as it is."""
    home, env = uv_tool_layout(tmp_path)

    def git_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60
        )

    before = git_run("agent-review", "--help")
    assert before.returncode != 0 and "GIT-AGENT-REVIEW(1)" not in before.stdout
    assert git_run("agent-review", "-h").returncode == 0
    link = home / ".local" / "share" / "man" / "man1" / "git-agent-review.1"
    assert link.is_symlink() and link.resolve() == shipped_page()
    after = git_run("agent-review", "--help")
    assert after.returncode == 0, after.stderr
    assert "GIT-AGENT-REVIEW(1)" in after.stdout
    target = link.readlink()
    assert git_run("agent-review", "-V").returncode == 0
    assert link.readlink() == target and len(list(link.parent.iterdir())) == 1


def test_the_page_is_linked_only_where_it_is_missing(tmp_path: Path) -> None:
    from gitflow_agents.commands.manpage import ensure_reachable

    home, env = uv_tool_layout(tmp_path)
    man1 = home / ".local" / "share" / "man" / "man1"
    assert ensure_reachable(env) == man1 / "git-agent-review.1"
    assert ensure_reachable(env) is None  # a second run: already there
    (man1 / "git-agent-review.1").unlink()
    (man1 / "git-agent-review.1").write_text("the user's own page\n")
    assert ensure_reachable(env) is None
    assert (man1 / "git-agent-review.1").read_text() == "the user's own page\n"
    (man1 / "git-agent-review.1").unlink()
    (man1 / "git-agent-review.1").symlink_to(tmp_path / "uninstalled-tool" / "page.1")
    assert ensure_reachable(env) == man1 / "git-agent-review.1"  # a dangling link is replaced
    assert (man1 / "git-agent-review.1").resolve() == shipped_page()


def test_no_page_is_linked_without_a_share_folder(tmp_path: Path) -> None:
    from gitflow_agents.commands.manpage import ensure_reachable

    home, env = uv_tool_layout(tmp_path)
    (home / ".local" / "share").rmdir()
    assert ensure_reachable(env) is None
    assert not (home / ".local" / "share").exists()  # never creates ~/.local/share itself
    assert ensure_reachable({"PATH": str(tmp_path / "nowhere")}) is None


def test_a_folder_it_cannot_write_is_left_alone(tmp_path: Path) -> None:
    from gitflow_agents.commands.manpage import ensure_reachable

    home, env = uv_tool_layout(tmp_path)
    share = home / ".local" / "share"
    share.chmod(0o500)
    try:
        if os.access(share, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        assert ensure_reachable(env) is None  # no error, nothing written
        assert list(share.iterdir()) == []
    finally:
        share.chmod(0o700)


@pytest.mark.parametrize("fmt", ["terminal", "json"])
def test_a_reader_that_stops_early_does_not_turn_changes_asked_into_exit_0(
    feature: Path, fmt: str
) -> None:
    """``git agent-review | head -1`` under ``set -o pipefail``: the reader has gone before the
    review writes (its pipe's read end is closed before the review starts), and the review
    still exits 1 (changes asked), not 0 — a gate read through a pipe stays closed — and
    says nothing of the pipe."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "gitflow_agents.git_agent_review", "--format", fmt],
            cwd=feature,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Broken pipe" not in proc.stderr
