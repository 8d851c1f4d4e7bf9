"""Files on disk: atomic writes that stay inside the repository, and bounded reads.

Writes go to a temp file in the same folder, then ``os.replace``: never half-written. Every
write (and every folder the tool creates for runs and agents) is checked by :func:`safe_target`
first: a symlink on the way that leads out of the repository is refused (docs/security.md,
"Writes"). Reads of user and agent files go through :func:`read_limited`, which refuses what
is not a regular file (a FIFO would block forever) and what is larger than its cap.
"""

from __future__ import annotations

import os
import stat
from functools import cache
from pathlib import Path
from typing import Any

from gitflow_agents.base.errors import UnsafeWriteError


@cache
def _default_mode() -> int:
    """``0o666`` less the umask: the mode a plain ``open(..., "w")`` would give a new file.

    Read once: reading the umask means setting it, which is process-wide.
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


# --- where a write may land ------------------------------------------------------------------


def _repository_of(path: Path) -> Path | None:
    """The work tree a write to ``path`` belongs to: the innermost folder above it holding
    ``.git``, looking from the top down and stopping at the first symlink below a repository
    (a link inside a repository may lead anywhere, even into another repository). None when
    ``path`` is in no repository."""
    root: Path | None = None
    for folder in reversed(path.parents):
        if root is not None and folder.is_symlink():
            break
        if os.path.lexists(folder / ".git"):
            root = folder
    return root


def _main_work_tree(root: Path) -> Path | None:
    """For a linked work tree (``.git`` is a file: ``gitdir: …/.git/worktrees/<name>``), the
    main work tree of its repository; None otherwise."""
    try:
        pointer = (root / ".git").read_text(encoding="utf-8", errors="replace")
    except OSError:  # a folder (a main work tree), or unreadable
        return None
    if not pointer.startswith("gitdir:"):
        return None
    gitdir = root / pointer[len("gitdir:") :].strip()
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None  # a submodule: its own repository
    common_dir = Path(os.path.realpath(gitdir / common))
    return common_dir.parent if common_dir.name == ".git" else None


def write_bounds(path: Path) -> tuple[Path, ...]:
    """Real folders a write to ``path`` must land in: its repository's work tree (and, for a
    linked work tree such as the tool's own, the main one: the tool links their run folders).
    Empty when ``path`` is in no repository (a file the user named anywhere)."""
    root = _repository_of(Path(os.path.normpath(path.absolute())))
    if root is None:
        return ()
    bounds = [Path(os.path.realpath(root))]
    main = _main_work_tree(root)
    if main is not None:
        bounds.append(Path(os.path.realpath(main)))
    return tuple(bounds)


def safe_target(path: Path) -> Path:
    """The real path a write to ``path`` lands on (symlinks followed); UnsafeWriteError when a
    symlink on the way leads out of the repository ``path`` lies in."""
    target = Path(os.path.realpath(path))
    bounds = write_bounds(path)
    if bounds and not any(target.is_relative_to(bound) for bound in bounds):
        raise UnsafeWriteError(
            f"{path}: refusing to write: a symlink leads it out of the repository "
            f"{bounds[0]} (to {target})"
        )
    return target


def make_dirs(path: Path) -> Path:
    """``mkdir -p`` of ``path`` after :func:`safe_target`; the real folder."""
    target = safe_target(path)
    target.mkdir(parents=True, exist_ok=True)
    return target


def refuse_symlinks(*paths: Path) -> None:
    """UnsafeWriteError if any of ``paths`` is a symlink: files the tool creates for an agent
    (its report, its config folder) must not follow one planted there before the run."""
    for path in paths:
        if path.is_symlink():
            raise UnsafeWriteError(
                f"{path}: is a symlink (to {path.readlink()}); the tool creates this path "
                "for the agent and does not follow a symlink placed there: remove it"
            )


# --- atomic writes ----------------------------------------------------------------------------


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically.

    Follows a symlink to its target (the link stays a link) as long as the target is inside
    the repository (:func:`safe_target`), creates missing parent folders, keeps an existing
    file's mode (a new file gets the umask's usual mode, not mkstemp's 0600), and with
    ``durable`` fsyncs the data before the rename. On any failure the original file is
    untouched and no temp file is left behind.
    """
    target = safe_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = _default_mode()
    import tempfile  # noqa: PLC0415 - it imports shutil, random and the compressors (start-up, issue 20)

    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, target)  # noqa: PTH105 - the one atomic step; tests patch os.replace
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """UTF-8, newlines written exactly as given (no translation)."""
    write_bytes_atomic(path, text.encode("utf-8"), durable=durable)


def write_json_atomic(path: Path, data: Any, *, durable: bool = True) -> None:
    """Pretty JSON (UTF-8, not ASCII-escaped) with a final newline."""
    import json  # noqa: PLC0415 — a review reads .flow/ through this module, and needs no json

    text = json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    write_text_atomic(path, text, durable=durable)


# --- bounded reads ----------------------------------------------------------------------------

MiB = 1024 * 1024

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class ReadRefused(OSError):
    """A file that is not read: not a regular file, over its size cap, or not UTF-8 text.
    ``reason`` is the part after ``path: `` of a one-line message; ``line`` (1-based) where
    known. An OSError, so that one no caller catches still ends as ``path: reason``, exit 2
    (``cli.dispatch``)."""

    def __init__(self, reason: str, path: Path | None = None, line: int | None = None) -> None:
        super().__init__(None, reason, None if path is None else str(path))
        self.reason = reason
        self.line = line


def not_regular(mode: int) -> str:
    """Why a file of ``mode`` is not read: ``is a FIFO (named pipe), not a regular file``…"""
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    return f"is {kind}, not a regular file"


def size_text(size: int) -> str:
    return f"{size / MiB:.1f} MiB" if size >= MiB else f"{size:,} bytes"


def read_limited(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), at most ``limit`` of them.

    ReadRefused when it is a FIFO, device, socket or directory (checked on the open file
    descriptor, opened non-blocking, so a FIFO never blocks) or larger than ``limit``; OSError
    (FileNotFoundError…) when it cannot be opened.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ReadRefused(not_regular(mode), path)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        size = max(len(data), path.stat().st_size if path.exists() else 0)
        raise ReadRefused(over_limit(size, limit), path)
    return data


def over_limit(size: int, limit: int) -> str:
    """``is 4.2 MiB, over the 4.0 MiB limit``; in bytes when both round to the same text
    (a file just over the limit must not read "4.0 MiB, over the 4.0 MiB limit")."""
    shown, cap = size_text(size), size_text(limit)
    if shown == cap:
        shown, cap = f"{size:,} bytes", f"{limit:,} bytes ({cap})"
    return f"is {shown}, over the {cap} limit"


def read_text_limited(path: Path, limit: int) -> str:
    """:func:`read_limited`, decoded as UTF-8 (a leading byte order mark dropped, line endings
    kept as they are); ReadRefused naming the line of the first byte that is not UTF-8."""
    data = read_limited(path, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ReadRefused(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})", path, line
        ) from None


def irregular(path: Path) -> str | None:
    """Why ``path`` is not a plain file the tool may read as an agent's output (``is a
    symlink``, ``is a FIFO (named pipe), not a regular file``…), None when it is one or is
    missing. Symlinks are not followed: an agent's link could point at any file."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return "is a symlink"
    return None if stat.S_ISREG(mode) else not_regular(mode)


MAX_REPORT_CHARS = 1024 * 1024
"""An agent's report longer than this is not read: no verdict, the reason says why (docs/findings.md,
"Findings in a report"). Reading one that long would cost seconds for nothing a reviewer needs."""


def read_agent_text(path: Path, max_chars: int) -> str:
    """An agent-written text file (a report), decoded with invalid UTF-8 replaced; memory stays
    bounded: at most ``4 * (max_chars + 1)`` bytes are read, so a file over the cap gives a text
    over ``max_chars`` characters, which its parser refuses whole (never a silently cut text).
    "" when it is missing, unreadable, a symlink or not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:  # missing, or a symlink (ELOOP)
        return ""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return ""
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(4 * (max_chars + 1))
    return data.decode("utf-8", "replace")
