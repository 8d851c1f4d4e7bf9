"""File contents from git: the persistent ``git cat-file`` reader (``BlobReader``) every review
reads blobs and their sizes through. Apart from ``cmd.py`` because the gate hook imports that
alone. It imports no ``tempfile``, ``shutil`` or ``threading``: a small review needs none of
them, and they cost its start-up milliseconds (benchmarks/small_commit.py).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence

from gitflow_agents.base import spawn
from gitflow_agents.base.errors import GitError
from gitflow_agents.base.records import TYPE_CHECKING
from gitflow_agents.git.cmd import git_env, run_git

if TYPE_CHECKING:
    from typing import IO

    from _typeshed import StrPath


class _Feed:
    """Requests to a ``git cat-file`` process, written as their answers are read: never more
    than ``WINDOW`` bytes of them unanswered. git answers while it reads, and an answer can be
    large; written all at once, a long request list and the answers could fill both pipes,
    each side waiting for the other. Those requests are consumed by git once answered, so its
    input pipe holds at most the window, which fits in any pipe: no write ever blocks (without
    a writer thread: ``threading`` is a small review's start-up, issue 20)."""

    WINDOW = 4096

    def __init__(self, child: spawn.Helper, requests: Sequence[bytes]) -> None:
        self._stdin = child.stdin
        self._requests = requests
        self._written = self._done = self._pending = 0
        self._top_up()

    def answered(self) -> None:
        """One more answer was read: the next requests go out once half the window is free."""
        self._pending -= len(self._requests[self._done])
        self._done += 1
        if self._pending <= self.WINDOW // 2:
            self._top_up()

    def _top_up(self) -> None:
        chunk = []
        while self._written < len(self._requests):
            size = len(self._requests[self._written])
            if self._pending and self._pending + size > self.WINDOW:
                break  # (a request alone goes out whatever its length: the pipe is empty)
            chunk.append(self._requests[self._written])
            self._written += 1
            self._pending += size
        if chunk:
            # git died, or _abandon killed it: the reading side reports or already knows it
            with contextlib.suppress(OSError, ValueError):
                self._stdin.write(b"".join(chunk))
                self._stdin.flush()


class BlobReader:
    """File contents (and sizes) from ONE persistent ``git cat-file`` process, however many are
    read: ``--batch-command`` (git 2.36+) when the first question is the sizes (``sizes``), so
    one process answers both; plain ``--batch`` otherwise, or when git does not know
    ``--batch-command`` (then the sizes come from a ``--batch-check`` of their own).

    Object names are ``REV:PATH`` (``:PATH``: the index), as ``object_name`` builds them; a
    content is text (``texts``: UTF-8, undecodable bytes replaced, line ends as written) or the
    blob's bytes (``contents``), or None when the object does not exist or is not a
    blob. The process starts on the first read,
    with the same scrubbed environment as every other git call, and ends with ``close`` (or the
    ``with`` block). A name git's line-based batch input cannot carry (a line feed, or a
    carriage return) is read with a one-off ``git cat-file blob``.
    """

    def __init__(self, root: StrPath) -> None:
        self.root = os.fspath(root)
        self._child: spawn.Helper | None = None
        self._errors: IO[bytes] | None = None
        self._commands = False  # the running process is ``--batch-command``
        self._fresh = False  # the running process has been asked nothing yet
        self._old_git = False  # git refused ``--batch-command``

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the ``git cat-file`` process (if one was started); a later read starts anew."""
        child, errors = self._child, self._errors
        self._child = self._errors = None
        if child is not None:
            spawn.finish(child)
        if errors is not None:
            errors.close()

    def start(self) -> None:
        """Start the ``git cat-file --batch-command`` process now, before the first question:
        it starts while the caller works (``git agent-review`` imports the review meanwhile,
        issue 20)."""
        if self._child is None and not self._old_git:
            self._process(commands=True)

    def text(self, name: str) -> str | None:
        return next(self.texts((name,)))

    def sizes(self, names: Sequence[str]) -> list[int | None]:
        """Size in bytes of each blob in ``names`` (None: missing, or not a blob)."""
        fresh = self._child is None or self._fresh
        if not names:
            return []
        if self._old_git or not (fresh or self._commands) or not all(map(_batchable, names)):
            return object_sizes(self.root, names)  # a ``--batch`` process cannot say sizes
        feed = _Feed(self._process(commands=True), [b"info " + n.encode() + b"\n" for n in names])
        sizes: list[int | None] = []
        try:
            for i in range(len(names)):
                sizes.append(_size(self._header(refused_ok=fresh and i == 0)))
                feed.answered()
        except _OldGit:
            return object_sizes(self.root, names)
        except GitError:
            self._abandon()  # unread answers may be in the pipe
            raise
        return sizes

    def texts(self, names: Sequence[str]) -> Iterator[str | None]:
        """The content of every object in ``names``, in order, as text (``spawn.text``: UTF-8,
        undecodable bytes replaced, line ends as written: ``diffparse.git_lines`` gives the
        lines git numbers), as the answers arrive."""
        for data in self.contents(names):
            yield None if data is None else spawn.text(data, as_written=True)

    def contents(self, names: Sequence[str], limit: int | None = None) -> Iterator[bytes | None]:
        """The bytes of every object in ``names``, in order, as the answers arrive (the requests
        written as they are answered: ``_Feed``); ``limit``: only the first ``limit`` bytes of
        each (the rest is read and dropped). A name the batch input cannot carry is read with
        ``_one_off``, through text (its undecodable bytes replaced)."""
        verb = b""
        if any(map(_batchable, names)):
            if self._fresh and self._commands:  # from ``start``: git may not know the mode
                self._confirm_commands()
            self._process()
            verb = b"contents " if self._commands else b""
        batched = [verb + n.encode() + b"\n" for n in names if _batchable(n)]
        feed = _Feed(self._process(), batched) if batched else None
        answered = 0
        try:
            for name in names:
                if _batchable(name):
                    data = self._answer(limit)
                    answered += 1
                    assert feed is not None
                    feed.answered()
                    yield data
                else:
                    text = _one_off(self.root, name)
                    yield None if text is None else text.encode()[:limit]
        finally:
            if answered < len(batched):  # stopped midway: unread answers are in the pipe
                self._abandon()

    def _confirm_commands(self) -> None:
        """Ask the process ``start`` began a question whose answer is one line (a header, or
        ``missing``): a git older than 2.36 refuses ``--batch-command`` and exits, and the
        reader goes on with ``--batch``."""
        _Feed(self._process(), [b"info HEAD\n"])
        with contextlib.suppress(_OldGit):
            self._header(refused_ok=True)

    def _abandon(self) -> None:
        """Kill the process, then close."""
        if self._child is not None:
            spawn.kill_group(self._child.pid)
        self.close()

    def _process(self, *, commands: bool = False) -> spawn.Helper:
        """The running process, else a new one: ``--batch-command`` when ``commands``."""
        if self._child is None:
            self._errors = spawn.scratch_file()
            self._commands = commands and not self._old_git
            self._fresh = True
            mode = "--batch-command" if self._commands else "--batch"
            argv = ("git", "--no-pager", "-C", str(self.root), "cat-file", mode)
            self._child = spawn.start(argv, env=git_env(), stderr=self._errors)
        return self._child

    def _header(self, *, refused_ok: bool = False) -> bytes:
        """One answer's first line, without its line feed. ``refused_ok``: the first answer of a
        new ``--batch-command`` process, which an older git refuses (``_OldGit``)."""
        assert self._child is not None and self._child.stdout is not None
        self._fresh = False
        header = self._child.stdout.readline()
        if not header.endswith(b"\n"):
            if refused_ok and self._child.wait() != 0:
                self._old_git = True
                self.close()
                raise _OldGit
            raise GitError(f"git cat-file --batch stopped: {self._stderr() or 'no answer'}")
        return header[:-1]

    def _answer(self, limit: int | None = None) -> bytes | None:
        """Read one answer: ``<oid> <type> <size>`` then the content (its first ``limit`` bytes
        kept), or ``<name> missing``."""
        assert self._child is not None and self._child.stdout is not None
        out = self._child.stdout
        kind_and_size = self._header().split(b" ")[-2:]
        if len(kind_and_size) != 2 or not kind_and_size[1].isdigit():
            return None  # "<name> missing" / "<name> ambiguous"
        size = int(kind_and_size[1])
        kept = size if limit is None else min(size, limit)
        data = out.read(kept)
        left = size - len(data) if len(data) == kept else 0
        while left:  # the rest of a head: read in pieces and dropped
            piece = out.read(min(left, 1 << 16))
            if not piece:
                break
            left -= len(piece)
        if len(data) != kept or left or out.read(1) != b"\n":  # the content, then a line feed
            raise GitError(f"git cat-file --batch stopped: {self._stderr() or 'answer cut short'}")
        return data if kind_and_size[0] == b"blob" else None

    def _stderr(self) -> str:
        if self._errors is None:
            return ""
        self._errors.seek(0)
        return self._errors.read().decode("utf-8", errors="replace").strip()


BINARY_PROBE = 8000
"""How much of a file git looks at to call it binary: a NUL byte in its first 8,000 bytes
(``buffer_is_binary``, git's ``FIRST_FEW_BYTES``), when no attribute says otherwise."""


def looks_binary(head: bytes) -> bool:
    """Whether content starting with ``head`` is binary by git's own test (``BINARY_PROBE``)."""
    return b"\0" in head[:BINARY_PROBE]


class _OldGit(Exception):
    """git before 2.36 refused ``cat-file --batch-command``."""


def object_sizes(root: StrPath, names: Sequence[str]) -> list[int | None]:
    """Size in bytes of each blob in ``names`` (None: missing, or not a blob), in one call."""
    if not names:
        return []
    request = "".join(name + "\n" for name in names)
    format = "--batch-check=%(objecttype) %(objectsize)"
    lines = run_git(root, "cat-file", format, input=request).stdout.splitlines()
    sizes: list[int | None] = [None] * len(names)
    for i, line in enumerate(lines[: len(names)]):
        kind, _, size = line.partition(" ")
        sizes[i] = int(size) if kind == "blob" else None
    return sizes


def _size(header: bytes) -> int | None:
    """The size in an ``info`` answer (``<oid> <type> <size>``); None unless a blob."""
    kind_and_size = header.split(b" ")[-2:]
    if len(kind_and_size) != 2 or kind_and_size[0] != b"blob" or not kind_and_size[1].isdigit():
        return None
    return int(kind_and_size[1])


def object_name(rev: str | None, path: str) -> str:
    """``REV:PATH``, or ``:PATH`` (the index) when ``rev`` is None."""
    return f":{path}" if rev is None else f"{rev}:{path}"


def _batchable(name: str) -> bool:
    return "\n" not in name and "\r" not in name


def _one_off(root: StrPath, name: str) -> str | None:
    result = run_git(root, "cat-file", "blob", name, check=False, as_written=True)
    return result.stdout if result.returncode == 0 else None
