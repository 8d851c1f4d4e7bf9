"""Running git: the environment every git call gets, the runner, the persistent ``git cat-file
--batch`` reader (``BlobReader``), and the one query the pre-push gate makes.

Kept import-light on purpose (no dataclasses, no regular expressions): ``gitflow-agents hook
gate`` imports only this module and ``proc``. ``gitflow_agents.git.queries`` re-exports ``git_env``,
``run_git``, ``NOTES_REF`` and ``BlobReader``, and holds (with ``worktree``) every other git
query.

The environment: inherited ``GIT_DIR`` / ``GIT_WORK_TREE`` / ``GIT_INDEX_FILE`` and friends are
removed from every call, because git exports them to hooks (often as paths relative to a
directory we are not in, or naming a temporary index). Only a command run by the user, not as a
hook, may keep an explicit ``GIT_DIR`` (and ``GIT_WORK_TREE``), as ``git --git-dir=X
--work-tree=Y agent-review`` sets them: see ``explicit_repository``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from gitflow_agents.base import proc
from gitflow_agents.base.errors import GitError, UsageError

if TYPE_CHECKING:
    from subprocess import Popen
    from threading import Thread

NOTES_REF = "refs/notes/gitflow-agents"

# Variables git sets for hooks and aliases; inherited, they point our calls at the wrong
# repository or a temporary index (pre-commit drops them for the same reason).
_SCRUBBED = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
)
# Set while a hook runs: by the pre-commit framework, or by git for commit hooks (the index
# being committed). With any of them present an inherited GIT_DIR is never trusted.
_HOOK_MARKERS = ("PRE_COMMIT", "PRE_COMMIT_FROM_REF", "PRE_COMMIT_TO_REF", "GIT_INDEX_FILE")

# The repository variables kept for every git call while ``explicit_repository`` is active.
_kept: dict[str, str] = {}


def git_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for git calls: ``environ`` (default os.environ) minus repo-pointing vars
    (plus the user's explicit repository while ``explicit_repository`` is active)."""
    source = os.environ if environ is None else environ
    env = {k: v for k, v in source.items() if k not in _SCRUBBED}
    env.update(_kept)
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def failure(result: proc.Result, what: str) -> GitError:
    """The GitError for a git call that failed: ``what``, then the last line git printed."""
    detail = result.stderr.strip().splitlines()
    return GitError(f"{what}: {detail[-1] if detail else f'git exited {result.returncode}'}")


@contextlib.contextmanager
def temporary_index(index: Path) -> Iterator[dict[str, str]]:
    """A copy of ``index`` in a temporary file; yields the git environment pointing at it."""
    import shutil
    import tempfile

    fd, name = tempfile.mkstemp(prefix="gitflow-agents-index.")
    os.close(fd)
    path = Path(name)
    try:
        if index.exists():
            shutil.copyfile(index, path)
        else:
            path.unlink()
        yield {**git_env(), "GIT_INDEX_FILE": str(path)}
    finally:
        path.unlink(missing_ok=True)


def run_git(
    root: Path | str,
    *args: str,
    input: str | None = None,
    check: bool = True,
    extra_env: Mapping[str, str] | None = None,
) -> proc.Result:
    """``git -C root <args>`` with a scrubbed environment and no pager or colour;
    ``extra_env`` (e.g. a commit identity) is added to that environment for this call only."""
    argv = ("git", "--no-pager", "-c", "color.ui=never", "-C", str(root), *args)
    env = git_env() if not extra_env else {**git_env(), **extra_env}
    return proc.run(argv, env=env, input=input, check=check)


def repository_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """``GIT_DIR`` and ``GIT_WORK_TREE`` from ``environ``, made absolute against the current
    directory, when the user gave a ``GIT_DIR`` and nothing says a hook is running; else {}."""
    if not environ.get("GIT_DIR") or any(environ.get(k) for k in _HOOK_MARKERS):
        return {}
    return {
        key: str(Path(environ[key]).absolute())
        for key in ("GIT_DIR", "GIT_WORK_TREE")
        if environ.get(key)
    }


@contextlib.contextmanager
def explicit_repository(environ: Mapping[str, str]) -> Iterator[bool]:
    """While active, every git call of this process keeps the ``GIT_DIR`` / ``GIT_WORK_TREE``
    of ``environ`` (see ``repository_from_env``); yields whether there was one.

    Only for commands that read the repository and write notes (``git agent-review``): a
    command that works in other work trees (the chain) must never follow an inherited
    ``GIT_DIR`` back into the user's work tree, so it does not use this."""
    global _kept
    previous = _kept
    _kept = repository_from_env(environ)
    try:
        yield bool(_kept)
    finally:
        _kept = previous


def commit_note(root: Path, rev: str, ref: str = NOTES_REF) -> tuple[str, str | None]:
    """(full sha of the commit ``rev`` names, its note under ``ref`` or None) in one git call.

    UsageError ``unknown revision: REV`` when ``rev`` names no commit (ranges included), or
    ``not a git repository …`` when ``root`` is in none (a second call, on that path only)."""
    if not rev or rev.startswith(("-", "^")) or ".." in rev:
        raise UsageError(f"unknown revision: {rev!r}")
    result = run_git(
        root,
        "log",
        "-1",
        "--no-show-signature",
        "--no-notes",
        f"--notes={ref}",
        "--format=%H%x00%N",
        "--end-of-options",
        rev + "^{commit}",
        "--",
        check=False,
    )
    sha, found, note = result.stdout.partition("\0")
    if result.returncode != 0 or not found:
        if run_git(root, "rev-parse", "--git-dir", check=False).returncode != 0:
            raise UsageError(f"not a git repository (or any parent up to /): {root}")
        raise UsageError(f"unknown revision: {rev}")
    note = note.removesuffix("\n")  # the line end --format adds; the note keeps its own
    return sha.strip(), note or None


def _scratch_file() -> IO[bytes]:
    """An unnamed file for a child's stderr: a memfd where there is one (importing tempfile
    costs a small review's start-up milliseconds: shutil, random, the compressors)."""
    with contextlib.suppress(AttributeError, OSError):  # no memfd: not Linux, or a sandbox
        return os.fdopen(os.memfd_create("git-stderr"), "w+b")
    import tempfile

    return tempfile.TemporaryFile()


class BlobReader:
    """File contents from ONE persistent ``git cat-file --batch`` process, however many are read.

    Object names are ``REV:PATH`` (``:PATH``: the index), as ``object_name`` builds them; a
    content is text (UTF-8, undecodable bytes replaced, line ends as ``run_git`` gives them), or
    None when the object does not exist or is not a blob. The process starts on the first read,
    with the same scrubbed environment as every other git call, and ends with ``close`` (or the
    ``with`` block). A name git's line-based batch input cannot carry (a line feed, or a
    carriage return) is read with a one-off ``git cat-file blob``.
    """

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self._child: Popen[bytes] | None = None
        self._errors: IO[bytes] | None = None

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the ``git cat-file`` process (if one was started); a later read starts anew."""
        child, errors = self._child, self._errors
        self._child = self._errors = None
        if child is not None:
            proc.finish(child)
        if errors is not None:
            errors.close()

    def text(self, name: str) -> str | None:
        return next(self.texts((name,)))

    def texts(self, names: Sequence[str]) -> Iterator[str | None]:
        """The content of every object in ``names``, in order, as the answers arrive: all
        requests are written at once (by a thread when they could fill the pipe, so neither
        side waits for the other)."""
        batched = [n.encode() + b"\n" for n in names if _batchable(n)]
        writer = self._send(b"".join(batched)) if batched else None
        answered = 0
        try:
            for name in names:
                if _batchable(name):
                    text = self._answer()
                    answered += 1
                    yield text
                else:
                    yield _one_off(self.root, name)
        finally:
            if answered < len(batched):  # stopped midway: unread answers are in the pipe
                self._abandon()
            if writer is not None:
                writer.join()

    def _send(self, requests: bytes) -> Thread | None:
        child = self._process()
        stdin = child.stdin
        assert stdin is not None

        def write() -> None:
            # git died, or _abandon killed it: the reading side reports or already knows it
            with contextlib.suppress(OSError, ValueError):
                stdin.write(requests)
                stdin.flush()

        if len(requests) <= 4096:  # fits in any pipe: the write cannot block
            write()
            return None
        import threading

        thread = threading.Thread(target=write, name="cat-file requests", daemon=True)
        thread.start()
        return thread

    def _abandon(self) -> None:
        """Kill the process (a writer blocked on its full pipe is released), then close."""
        if self._child is not None:
            proc.kill_group(self._child.pid)
        self.close()

    def _process(self) -> Popen[bytes]:
        if self._child is None:
            self._errors = _scratch_file()
            argv = ("git", "--no-pager", "-C", str(self.root), "cat-file", "--batch")
            self._child = proc.start(argv, env=git_env(), stderr=self._errors)
        return self._child

    def _answer(self) -> str | None:
        """Read one answer: ``<oid> <type> <size>`` then the content, or ``<name> missing``."""
        assert self._child is not None and self._child.stdout is not None
        out = self._child.stdout
        header = out.readline()
        if not header.endswith(b"\n"):
            raise GitError(f"git cat-file --batch stopped: {self._stderr() or 'no answer'}")
        kind_and_size = header[:-1].split(b" ")[-2:]
        if len(kind_and_size) != 2 or not kind_and_size[1].isdigit():
            return None  # "<name> missing" / "<name> ambiguous"
        size = int(kind_and_size[1])
        data = out.read(size + 1)[:-1]  # the content, then a line feed
        if len(data) != size:
            raise GitError(f"git cat-file --batch stopped: {self._stderr() or 'answer cut short'}")
        if kind_and_size[0] != b"blob":
            return None
        text = data.decode("utf-8", errors="replace")
        # what text-mode pipes (run_git) make of line ends: the same line numbers everywhere
        return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text

    def _stderr(self) -> str:
        if self._errors is None:
            return ""
        self._errors.seek(0)
        return self._errors.read().decode("utf-8", errors="replace").strip()


def object_name(rev: str | None, path: str) -> str:
    """``REV:PATH``, or ``:PATH`` (the index) when ``rev`` is None."""
    return f":{path}" if rev is None else f"{rev}:{path}"


def _batchable(name: str) -> bool:
    return "\n" not in name and "\r" not in name


def _one_off(root: Path, name: str) -> str | None:
    result = run_git(root, "cat-file", "blob", name, check=False)
    return result.stdout if result.returncode == 0 else None
