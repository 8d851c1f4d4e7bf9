"""Bounded reads of user and agent files: :func:`read_limited` refuses what is not a regular file
(a FIFO would block forever) and what is larger than its cap; :func:`read_agent_text` reads an
agent's report without following a symlink. Apart from ``fsutil.py`` (the writes, which
re-exports these names) because a review reads ``.flow/`` through this module alone: no JSON,
no temporary files (start-up, issue 20).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:  # a small review reads .flow/base.yaml by its name, without pathlib
    from pathlib import Path

    from _typeshed import StrPath

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

    def __init__(self, reason: str, path: StrPath | None = None, line: int | None = None) -> None:
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


def read_limited(path: StrPath, limit: int) -> bytes:
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
        size = len(data)
        with contextlib.suppress(OSError):  # the size it has now, when it still has one
            size = max(size, os.stat(path).st_size)  # noqa: PTH116
        raise ReadRefused(over_limit(size, limit), path)
    return data


def inside_root(root: StrPath, path: StrPath) -> str | None:
    """The real path of ``path`` (symlinks followed) when it lies below the real ``root``;
    None when it is ``root`` itself or ``..`` or a symlink on the way leads it out. What the
    tool reads from a project and hands to an agent (``@file`` texts, ``.flow/`` layers,
    ``.agents-flow/`` files) must be the project's own: a cloned repository must not get
    ``~/.aws/credentials`` into a prompt through a committed symlink (docs/security.md)."""
    real = os.path.realpath(path)
    top = os.path.realpath(root)
    if real == top or os.path.commonpath([real, top]) != top:
        return None
    return real


def outside_root(path: StrPath) -> str:
    """The reason a file :func:`inside_root` refused is not read, naming where it leads."""
    return (
        f"leads outside the project root (to {os.path.realpath(path)}); "
        "the file must be inside the project root"
    )


def broken_link(path: StrPath, exc: OSError) -> str | None:
    """Why ``path``, a symlink that could not be followed (``exc``), leads nowhere: a loop or
    a target that does not exist; None when it is no symlink or failed for another reason."""
    if not os.path.islink(path):  # noqa: PTH114 - no pathlib on a small review's path
        return None
    if exc.errno == errno.ELOOP:
        return "is a symlink loop"
    if exc.errno == errno.ENOENT:
        target = os.readlink(path)  # noqa: PTH115
        return f"is a dangling symlink (to {target}, which does not exist)"
    return None


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
    return decode_text(read_limited(path, limit), path)


def decode_text(data: bytes, path: Path | None = None) -> str:
    """``data`` decoded as :func:`read_text_limited` decodes a file's bytes (``path`` in the
    ReadRefused for a byte that is not UTF-8)."""
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
