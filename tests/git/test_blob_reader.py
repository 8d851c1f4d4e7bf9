"""git.BlobReader: file contents through one persistent ``git cat-file --batch``."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from gitflow_agents.base.errors import GitError
from gitflow_agents.git import blobs
from gitflow_agents.git import queries as g
from gitflow_agents.reviewer import builtin
from gitflow_agents.reviewer.checks import CheckOptions
from tests.conftest import git
from tests.helpers.files import commit_files, detached_repository
from tests.helpers.old_git import git_refusing


def cat_file_calls(trace: Path) -> list[str]:
    lines = trace.read_text().splitlines() if trace.exists() else []
    return [line for line in lines if "trace: built-in: git cat-file" in line]


def test_many_blobs_in_order_through_one_process(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {f"d{i % 7}/f{i}.txt": f"file {i}\n" * (i % 50) for i in range(400)}
    head = commit_files(repo, files)
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    with g.BlobReader(repo) as reader:
        texts = list(reader.texts([g.object_name(head, name) for name in files]))
        again = reader.text(g.object_name(head, "d3/f10.txt"))
    assert texts == list(files.values())
    assert again == files["d3/f10.txt"]
    assert len(cat_file_calls(trace)) == 1


def test_a_missing_blob_is_none_and_the_answers_stay_in_step(repo: Path) -> None:
    head = commit_files(repo, {"a.txt": "a\n", "b.txt": "b\n", "dir/c.txt": "c\n"})
    names = [
        g.object_name(head, "a.txt"),
        g.object_name(head, "missing.txt"),
        g.object_name(head, "dir"),  # a tree, not a blob
        "0" * 40,
        g.object_name(head, "b.txt"),
        "no-such-rev:a.txt",
        g.object_name(head, "dir/c.txt"),
    ]
    with g.BlobReader(repo) as reader:
        assert list(reader.texts(names)) == ["a\n", None, None, None, "b\n", None, "c\n"]
        assert reader.text(g.object_name(head, "gone")) is None
        assert reader.text(g.object_name(head, "a.txt")) == "a\n"


def test_binary_blobs_keep_later_answers_aligned(repo: Path) -> None:
    binary = b"\x00\x01\xff\xfe\nfake header blob 3\n\x00" * 100
    files: dict[str, str | bytes] = {
        "logo.png": binary,
        "after.txt": "after\n",
        "latin1.txt": "caf\xe9\n".encode("latin-1"),
        "crlf.txt": b"one\r\ntwo\r\n",
        "empty.txt": "",
    }
    head = commit_files(repo, files)
    with g.BlobReader(repo) as reader:
        png, after, latin1, crlf, empty = reader.texts([g.object_name(head, n) for n in files])
    assert png == binary.decode("utf-8", errors="replace")
    assert after == "after\n"
    assert latin1 == "caf\ufffd\n"
    assert crlf == "one\r\ntwo\r\n"  # as written: diffparse.git_lines gives git's lines
    assert empty == ""
    # the one-off read of a name the batch cannot carry gives the same text
    assert crlf == blobs._one_off(repo, g.object_name(head, "crlf.txt"))


def test_unusual_paths_spaces_newlines_and_carriage_returns(repo: Path) -> None:
    files = {
        "with space.txt": "space\n",
        " leading and trailing ": "edges\n",
        "new\nline.txt": "newline\n",
        "carriage\r": "cr\n",
        'tab\tand "quotes".py': "x = 1\n",
        "ünïcødé/名前.txt": "unicode\n",
        "plain.txt": "plain\n",
    }
    head = commit_files(repo, dict(files))
    with g.BlobReader(repo) as reader:
        texts = list(reader.texts([g.object_name(head, name) for name in files]))
    assert texts == list(files.values())


def test_reads_the_index_with_none_as_revision(repo: Path) -> None:
    (repo / "README.md").write_text("# demo\nstaged\n")
    git(repo, "add", "README.md")
    (repo / "README.md").write_text("# demo\nstaged\nnot staged\n")
    with g.BlobReader(repo) as reader:
        assert reader.text(g.object_name(None, "README.md")) == "# demo\nstaged\n"
        assert reader.text(g.object_name(g.head_sha(repo), "README.md")) == "# demo\n"


def test_the_hook_environment_is_scrubbed(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = commit_files(repo, {"mine.txt": "mine\n"})
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "mine.txt").write_text("theirs\n")
    git(other, "add", "mine.txt")
    # what git exports to hooks: relative, or pointing at another repository and index
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(other / ".git" / "objects"))
    with g.BlobReader(repo) as reader:
        assert reader.text(g.object_name(head, "mine.txt")) == "mine\n"
        assert reader.text(g.object_name(None, "mine.txt")) == "mine\n"


def test_an_explicit_repository_is_honoured(tmp_path: Path) -> None:
    """``git --git-dir=X --work-tree=Y agent-review``: the user's GIT_DIR reaches cat-file."""
    detached = detached_repository(tmp_path)
    detached.commit({"a.txt": "in the store\n"}, "first")
    with g.explicit_repository(detached.env), g.BlobReader(detached.tree) as reader:
        assert reader.text("HEAD:a.txt") == "in the store\n"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/status").exists() and "zombie" not in _state(pid)


def _state(pid: int) -> str:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return "gone"
    return next((line for line in lines if line.startswith("State:")), "").lower()


def test_no_process_is_left_behind(repo: Path) -> None:
    head = commit_files(repo, {f"f{i}.txt": f"{i}\n" * 2000 for i in range(50)})
    names = [g.object_name(head, f"f{i}.txt") for i in range(50)]
    reader = g.BlobReader(repo)
    with reader:
        assert reader.text(names[0]) == "0\n" * 2000
        pid = reader._child.pid if reader._child else 0
        assert pid and _alive(pid)
    assert reader._child is None and not _alive(pid)

    # a consumer that stops midway: the unread answers would put every later read out of
    # step, so the process is ended and the next read starts a fresh one
    with g.BlobReader(repo) as reader:
        texts = reader.texts(names)
        assert next(texts) == "0\n" * 2000
        first = reader._child.pid if reader._child else 0
        texts.close()
        assert reader._child is None and not _alive(first)
        assert reader.text(names[7]) == "7\n" * 2000
    assert reader._child is None


def test_stopping_while_both_pipes_are_full_does_not_hang(repo: Path) -> None:
    """When the consumer stops, git may be blocked on its full stdout: ending it frees it;
    the requests not yet written are never written."""
    head = commit_files(repo, {"big.txt": "x" * 100_000 + "\n"})
    names = [g.object_name(head, "big.txt")] * 3000  # ~150 kB of requests
    with g.BlobReader(repo) as reader:
        texts = reader.texts(names)
        assert next(texts) == "x" * 100_000 + "\n"
        child = reader._child
        texts.close()
        assert child is not None and child.returncode is not None
        assert reader.text(names[0]) == "x" * 100_000 + "\n"


def test_a_long_request_list_is_written_as_it_is_answered(repo: Path) -> None:
    """~150 kB of requests for answers of ~6 MB: written all at once, both pipes would fill
    with each side waiting for the other; written as answers come back (never more than the
    window unanswered) every answer arrives, without a writer thread."""
    head = commit_files(repo, {"mid.txt": "m" * 2000 + "\n"})
    names = [g.object_name(head, "mid.txt")] * 3000
    with g.BlobReader(repo) as reader:
        assert reader.sizes(names) == [2001] * 3000
        assert set(reader.texts(names)) == {"m" * 2000 + "\n"}


class _Stdin:
    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def flush(self) -> None:
        pass


def test_the_feed_keeps_at_most_its_window_unanswered() -> None:
    stdin = _Stdin()
    requests = [b"r" * 99 + b"\n"] * 200 + [b"L" * 9000 + b"\n"] + [b"s\n"]
    feed = blobs._Feed(SimpleNamespace(stdin=stdin), requests)  # type: ignore[arg-type]
    for answered in range(len(requests)):
        unanswered = len(stdin.data) - sum(map(len, requests[:answered]))
        # a request longer than the window goes out alone, once all before it are answered
        assert 0 < unanswered <= max(blobs._Feed.WINDOW, len(requests[answered]))
        feed.answered()
    assert stdin.data == b"".join(requests)


def test_git_dying_midway_is_a_git_error_not_a_short_text(repo: Path) -> None:
    head = commit_files(repo, {"big.txt": "y" * 100_000 + "\n"})
    names = [g.object_name(head, "big.txt")] * 50
    with g.BlobReader(repo) as reader:
        texts = reader.texts(names)
        assert next(texts) == "y" * 100_000 + "\n"
        assert reader._child is not None
        os.kill(reader._child.pid, signal.SIGKILL)  # git's pipe holds at most part of one more
        with pytest.raises(GitError, match="git cat-file --batch stopped"):
            list(texts)
        assert reader._child is None  # the dead process was closed, nothing left behind


def test_a_reader_that_never_reads_starts_nothing(repo: Path) -> None:
    with g.BlobReader(repo) as reader:
        assert list(reader.texts([])) == []
    assert reader._child is None


def test_git_failing_is_a_git_error_naming_why(tmp_path: Path) -> None:
    with g.BlobReader(tmp_path) as reader, pytest.raises(GitError, match="not a git repository"):
        reader.text("HEAD:x")


def test_a_builtin_review_reads_every_file_through_one_process(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = g.head_sha(repo)
    files: dict[str, str | bytes] = {f"pkg/m{i}.py": f"x = {i}\n" for i in range(40)}
    files.update({f"conf/c{i}.json": f'{{"a": {i}}}\n' for i in range(20)})
    files["pkg/broken.py"] = "def f(:\n"
    head = commit_files(repo, files)
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    result = builtin.review_diff(repo, g.DiffSpec(base, head))
    assert [(f.rule, f.file) for f in result.findings] == [("python-syntax", "pkg/broken.py")]
    calls = cat_file_calls(trace)
    # the sizes and the contents from one --batch-command (git 2.36+; the fallback: below)
    assert len(calls) == 1, calls
    assert calls[0].rstrip().endswith("cat-file --batch-command"), calls


def test_a_git_without_batch_command_gets_the_same_review(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git before 2.36 refuses ``cat-file --batch-command``: the sizes then come from a
    ``--batch-check`` and the contents from a ``--batch``, and the review is the same."""
    base = g.head_sha(repo)
    files: dict[str, str | bytes] = {f"pkg/m{i}.py": f"x = {i}\n" for i in range(5)}
    files.update({"pkg/broken.py": "def f(:\n", "big.txt": "y\n" * 50, "bin.dat": b"\0\1"})
    head = commit_files(repo, files)
    options = CheckOptions(max_file_bytes=60)
    expected = builtin.review_diff(repo, g.DiffSpec(base, head), options=options)
    old = git_refusing("--batch-command", tmp_path, monkeypatch)
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    assert builtin.review_diff(repo, g.DiffSpec(base, head), options=options) == expected
    assert {f.rule for f in expected.findings} >= {"python-syntax", "large-file"}
    calls = [c.split("git cat-file ")[-1].strip().strip("'") for c in cat_file_calls(trace)]
    assert calls == ["--batch-check=%(objecttype) %(objectsize)", "--batch"], calls
    assert (old / "git.log").read_text() == "refused\n"
    with g.BlobReader(repo) as reader:  # the reader remembers: no second --batch-command
        assert reader.sizes([g.object_name(head, "pkg/m1.py"), "nope"]) == [6, None]
        assert reader.sizes([g.object_name(head, "pkg/m2.py")]) == [6]
        assert reader.text(g.object_name(head, "pkg/m1.py")) == "x = 1\n"
    assert (old / "git.log").read_text() == "refused\n" * 2


@pytest.mark.parametrize("first", ["sizes", "texts"])
def test_a_reader_started_early_answers_as_one_started_on_demand(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: str
) -> None:
    """``start`` begins the ``--batch-command`` process before any question (``git agent-review``
    does while it imports the review); the answers are the same, with a git that knows the mode
    and with one before 2.36 that refuses it, whichever question comes first."""
    head = commit_files(repo, {"a.txt": "alpha\n", "b.txt": "beta\n"})
    names = [
        g.object_name(head, "a.txt"),
        g.object_name(head, "nope"),
        g.object_name(head, "b.txt"),
    ]

    def ask(reader: g.BlobReader) -> tuple[object, object]:
        if first == "sizes":
            return reader.sizes(names), list(reader.texts(names))
        return list(reader.texts(names)), reader.sizes(names)

    with g.BlobReader(repo) as reader:
        expected = ask(reader)
    with g.BlobReader(repo) as reader:
        reader.start()
        assert ask(reader) == expected
    old = git_refusing("--batch-command", tmp_path, monkeypatch)
    with g.BlobReader(repo) as reader:
        reader.start()
        assert ask(reader) == expected
    assert (old / "git.log").read_text() == "refused\n"


def test_contents_are_the_bytes_and_a_limit_keeps_the_answers_aligned(repo: Path) -> None:
    """``contents``: the blob's bytes as git stores them; with a limit only the first bytes of
    each (what the binary test reads), the rest read and dropped, however large the blob."""
    large = b"\x00" + b"x" * 300_000 + b"\n"
    files: dict[str, str | bytes] = {
        "large.bin": large,
        "latin1.txt": "caf\xe9\r\n".encode("latin-1"),
        "small.txt": b"small\n",
        "new\nline.txt": b"a\x00b",
    }
    head = commit_files(repo, files)
    names = [g.object_name(head, n) for n in files]
    with g.BlobReader(repo) as reader:
        assert list(reader.contents(names)) == list(files.values())
        heads = list(reader.contents([*names, g.object_name(head, "gone")], blobs.BINARY_PROBE))
        assert list(reader.texts(names[2:3])) == ["small\n"]
    assert heads == [large[:8000], b"caf\xe9\r\n", b"small\n", b"a\x00b", None]
    assert [blobs.looks_binary(h) for h in heads[:4]] == [True, False, False, True]
