"""Watching an agent's files: Linux inotify (through ctypes) or, where it is missing, a stat poll.

The watcher wakes the supervisor on a write in the agent dir (the report rename), on the run's
``heartbeat`` and ``cancel`` files, and on any file event under the watched work tree; the
supervisor's own ``wake_fd`` (the agent's exit) wakes it too. docs/supervisor.md, "Completion
detection", states the contract.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import functools
import os
import select
import struct
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from gitflow_agents.base.atomic import real_path

WATCH_ENV = "GITFLOW_AGENTS_WATCH"  # "poll" forces the stat-poll watcher (tests, odd filesystems)
POLL_INTERVAL = 0.02
MAX_WATCHES = 8192
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".tox"})

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_ONLYDIR
)
_EVENT = struct.Struct("iIII")

Flag = Literal["agent", "tree", "heartbeat", "cancel"]


class Watcher(Protocol):
    kind: str

    def wait(self, timeout: float, wake_fd: int) -> set[Flag]: ...

    def close(self) -> None: ...


@functools.cache
def _libc() -> Any:
    # find_library runs `ldconfig -p` (a subprocess): once per process is enough.
    name = ctypes.util.find_library("c") or "libc.so.6"
    return ctypes.CDLL(name, use_errno=True)


class _InotifyWatcher:
    """inotify on the agent dir, the run dir and every directory of the work tree."""

    kind = "inotify"

    def __init__(
        self, agent_dir: Path, run_dir: Path, tree: Sequence[Path], ignore: Sequence[Path]
    ) -> None:
        self._libc = _libc()
        self._libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self.fd: int = fd
        self._roles: dict[int, str] = {}
        self._paths: dict[int, Path] = {}
        self._ignore = tuple(real_path(p) for p in (*ignore, run_dir))
        self._count = 0
        if not self._add(agent_dir, "agent"):
            self.close()
            raise OSError(errno.ENOENT, f"cannot watch {agent_dir}")
        self._add(run_dir, "run")
        for root in tree:
            self._add_tree(root)

    def _add(self, path: Path, role: str) -> bool:
        if self._count >= MAX_WATCHES:
            return False
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), _MASK)
        if wd < 0:
            return False
        self._count += 1
        self._roles.setdefault(wd, role)
        self._paths.setdefault(wd, path)
        return True

    def _add_tree(self, root: Path) -> None:
        stack = [root]
        while stack:
            directory = stack.pop()
            if _within(directory, self._ignore) or not self._add(directory, "tree"):
                continue
            for entry in _children(directory):
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))

    def wait(self, timeout: float, wake_fd: int) -> set[Flag]:
        flags: set[Flag] = set()
        try:
            ready, _, _ = select.select([self.fd, wake_fd], [], [], max(0.0, timeout))
        except InterruptedError:
            return flags
        if self.fd not in ready:
            return flags
        try:
            data = os.read(self.fd, 256 * 1024)
        except BlockingIOError:
            return flags
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            raw = data[offset + _EVENT.size : offset + _EVENT.size + length]
            offset += _EVENT.size + length
            name = raw.rstrip(b"\0").decode("utf-8", "surrogateescape")
            if mask & IN_Q_OVERFLOW:
                flags.update(("agent", "tree"))
                continue
            if mask & IN_IGNORED:
                continue
            role = self._roles.get(wd)
            if role == "run":
                if name == "heartbeat":
                    flags.add("heartbeat")
                elif name == "cancel":
                    flags.add("cancel")
            elif role == "agent":
                flags.add("agent")
            elif role == "tree":
                path = self._paths[wd] / name
                if name in SKIP_DIRS or _within(path, self._ignore):
                    continue
                flags.add("tree")
                if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
                    self._add_tree(path)
        return flags

    def close(self) -> None:
        if self.fd >= 0:
            # Closing an inotify fd tears down every watch (an RCU grace period each: ms on a big
            # work tree); nobody waits for it, so it happens off the supervisor's path.
            threading.Thread(target=_close_quietly, args=(self.fd,), daemon=True).start()
            self.fd = -1


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _within(path: Path, folders: Sequence[Path]) -> bool:
    """Whether ``path`` is one of ``folders`` (resolved paths) or below one."""
    resolved = real_path(path)
    return any(resolved == folder or folder in resolved.parents for folder in folders)


def _children(directory: Path) -> list[os.DirEntry[str]]:
    """The entries of ``directory`` a watcher looks at: all but ``SKIP_DIRS`` (none when the
    folder cannot be read)."""
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        return [entry for entry in entries if entry.name not in SKIP_DIRS]
    return []


def _tree_signature(roots: Sequence[Path], ignore: Sequence[Path], limit: int = 20000) -> int:
    """Sum of mtimes and sizes under ``roots`` (bounded): changes when any file changes."""
    total, seen = 0, 0
    ignored = tuple(real_path(p) for p in ignore)
    stack = list(roots)
    while stack and seen < limit:
        directory = stack.pop()
        if _within(directory, ignored):
            continue
        for entry in _children(directory):
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                total += st.st_mtime_ns + st.st_size
                seen += 1
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
    return total + seen


class _PollWatcher:
    """Stat the agent dir and run dir every 20 ms and the work tree every ``tree_every`` s."""

    kind = "poll"

    def __init__(
        self,
        agent_dir: Path,
        run_dir: Path,
        tree: Sequence[Path],
        ignore: Sequence[Path],
        tree_every: float = 1.0,
    ) -> None:
        self._tree_every = tree_every
        self._agent_dir, self._run_dir = agent_dir, run_dir
        self._tree, self._ignore = tuple(tree), (*ignore, run_dir)
        self._agent = self._agent_signature()
        self._heartbeat = self._mtime(run_dir / "heartbeat")
        self._tree_sig = _tree_signature(self._tree, self._ignore) if self._tree else 0
        self._tree_at = time.monotonic()

    @staticmethod
    def _mtime(path: Path) -> int:
        try:
            return path.stat().st_mtime_ns
        except OSError:
            return 0

    def _agent_signature(self) -> int:
        try:
            st = self._agent_dir.stat()
            total = st.st_mtime_ns
            with os.scandir(self._agent_dir) as entries:
                for entry in entries:
                    info = entry.stat(follow_symlinks=False)
                    total += info.st_mtime_ns + info.st_size
            return total
        except OSError:
            return 0

    def wait(self, timeout: float, wake_fd: int) -> set[Flag]:
        with contextlib.suppress(InterruptedError):
            select.select([wake_fd], [], [], max(0.0, min(timeout, POLL_INTERVAL)))
        flags: set[Flag] = set()
        agent = self._agent_signature()
        if agent != self._agent:
            self._agent = agent
            flags.add("agent")
        heartbeat = self._mtime(self._run_dir / "heartbeat")
        if heartbeat != self._heartbeat:
            self._heartbeat = heartbeat
            flags.add("heartbeat")
        if (self._run_dir / "cancel").exists():
            flags.add("cancel")
        now = time.monotonic()
        if self._tree and now - self._tree_at >= self._tree_every:
            self._tree_at = now
            signature = _tree_signature(self._tree, self._ignore)
            if signature != self._tree_sig:
                self._tree_sig = signature
                flags.add("tree")
        return flags

    def close(self) -> None:
        pass


def open_watcher(
    agent_dir: Path,
    run_dir: Path,
    tree: Sequence[Path],
    ignore: Sequence[Path] = (),
    *,
    tree_every: float = 1.0,
) -> Watcher:
    """inotify when the platform has it (and GITFLOW_AGENTS_WATCH is not "poll"), else polling."""
    if os.environ.get(WATCH_ENV) != "poll":
        try:
            return _InotifyWatcher(agent_dir, run_dir, tree, ignore)
        except (OSError, AttributeError):
            pass
    return _PollWatcher(agent_dir, run_dir, tree, ignore, tree_every)
