"""Run one agent CLI as a supervised process tree and turn whatever it does into an Outcome.

The agent starts in its own session (so its process group is ours to kill) with stdin closed
(Codex and opencode wait on an open stdin), in the directory its LaunchSpec names. stdout and
stderr stream to ``worker.log`` as they arrive.

Completion is the rename of ``report.md`` to ``report.complete.md`` / ``report.failed.md`` (seed
000), seen through Linux inotify (woken by the rename itself, no fixed poll) or, where inotify is
not available, a 20 ms stat poll; process exit triggers one more check. Exit codes are not trusted
as success: an agent that exits without renaming its report has failed, whatever its code.

Activity (any one resets the stuck timer): output on stdout/stderr, any write in the agent dir,
any file event under the watched work tree, the run's heartbeat file, or CPU burnt by the tools
the agent CLI runs (compilers and test runners can be silent for minutes; the seed system killed
such agents as "stuck"), not by the CLI itself unless LaunchSpec.cpu_activity is "tree" (a CLI
can spin while it waits on a stalled model: opencode 1.18 does). Stuck = alive and no activity
for ``stuck_timeout``. On stuck, hard timeout, cancel or Ctrl-C the whole tree dies: SIGTERM to
the group and to every descendant (including grandchildren that left the group with setsid, found
by walking the tree, by the run id in their environment, and by the pids seen while they ran), a
grace period, then SIGKILL, then a check that none is left. The tree is also swept after a
normal finish, so no stale child outlives its run.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import functools
import os
import secrets
import select
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from gitflow_agents.runs import (
    AGENT_DIR_ENV,
    RUN_DIR_ENV,
    RUN_ID_ENV,
    read_json,
    write_json_atomic,
)

if TYPE_CHECKING:
    import psutil

    from gitflow_agents.agents.base import LaunchSpec
    from gitflow_agents.events import EventHub

Status = Literal["succeeded", "failed", "stuck", "timeout", "canceled", "crashed"]

# Inherited by every process the agent starts, even ones that leave its process group: the
# supervisor (or `cancel`) finds stragglers by it.
TREE_ENV = "GITFLOW_AGENTS_TREE"
WATCH_ENV = "GITFLOW_AGENTS_WATCH"  # "poll" forces the stat-poll watcher (tests, odd filesystems)
POLL_INTERVAL = 0.02
TICK = 0.1  # longest sleep of the main loop: bounds cancel latency when nothing else wakes it
OUTPUT_EVENT_EVERY = 0.5
CAPTURE_LIMIT = 8 * 1024 * 1024  # bytes of stdout / stderr kept in memory for parse_output
MAX_WATCHES = 8192
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".tox"})


class ParsedOutput(Protocol):
    """What the supervisor reads from an adapter's parse_output (agents.base.AgentOutput)."""

    @property
    def is_error(self) -> bool: ...

    @property
    def error(self) -> str | None: ...


@dataclass(frozen=True)
class Outcome:
    status: Status
    reason: str
    report_path: Path | None
    exit_code: int | None
    started: float  # epoch seconds
    ended: float
    duration: float  # seconds
    last_activity: float  # epoch seconds of the last activity seen
    pid: int | None
    last_activity_kind: str = "start"
    signal_at: float | None = None  # epoch seconds when the rename was seen
    stdout: str = ""
    stderr: str = ""
    output: ParsedOutput | None = None
    leftover_pids: tuple[int, ...] = ()
    watcher: str = "inotify"

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "outcome": self.status,
            "reason": self.reason,
            "report": str(self.report_path) if self.report_path else None,
            "exitCode": self.exit_code,
            "pid": self.pid,
            "startedAt": self.started,
            "endedAt": self.ended,
            "durationMs": round(self.duration * 1000),
            "lastActivityAt": self.last_activity,
            "lastActivityKind": self.last_activity_kind,
            "watcher": self.watcher,
        }
        if self.leftover_pids:
            data["leftoverPids"] = list(self.leftover_pids)
        return data


class SupervisorInterrupted(KeyboardInterrupt):
    """Ctrl-C while supervising: the tree is already dead; ``outcome`` says so."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__("interrupted")
        self.outcome = outcome


# --- watching files: inotify (ctypes) or a short stat poll --------------------------------

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


class _Watcher(Protocol):
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
        self._ignore = tuple(p.resolve() for p in (*ignore, run_dir))
        self._count = 0
        self.truncated = False
        if not self._add(agent_dir, "agent"):
            self.close()
            raise OSError(errno.ENOENT, f"cannot watch {agent_dir}")
        self._add(run_dir, "run")
        for root in tree:
            self._add_tree(root)

    def _add(self, path: Path, role: str) -> bool:
        if self._count >= MAX_WATCHES:
            self.truncated = True
            return False
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), _MASK)
        if wd < 0:
            return False
        self._count += 1
        self._roles.setdefault(wd, role)
        self._paths.setdefault(wd, path)
        return True

    def _ignored(self, path: Path) -> bool:
        resolved = path.resolve()
        return any(resolved == i or i in resolved.parents for i in self._ignore)

    def _add_tree(self, root: Path) -> None:
        stack = [root]
        while stack:
            directory = stack.pop()
            if self._ignored(directory) or not self._add(directory, "tree"):
                continue
            with contextlib.suppress(OSError), os.scandir(directory) as entries:
                for entry in entries:
                    if entry.name in SKIP_DIRS:
                        continue
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
                if name in SKIP_DIRS or self._ignored(path):
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


def _tree_signature(roots: Sequence[Path], ignore: Sequence[Path], limit: int = 20000) -> int:
    """Sum of mtimes and sizes under ``roots`` (bounded): changes when any file changes."""
    total, seen = 0, 0
    ignored = tuple(p.resolve() for p in ignore)
    stack = list(roots)
    while stack and seen < limit:
        directory = stack.pop()
        resolved = directory.resolve()
        if any(resolved == i or i in resolved.parents for i in ignored):
            continue
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            for entry in entries:
                if entry.name in SKIP_DIRS:
                    continue
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
) -> _Watcher:
    """inotify when the platform has it (and GITFLOW_AGENTS_WATCH is not "poll"), else polling."""
    if os.environ.get(WATCH_ENV) != "poll":
        try:
            return _InotifyWatcher(agent_dir, run_dir, tree, ignore)
        except (OSError, AttributeError):
            pass
    return _PollWatcher(agent_dir, run_dir, tree, ignore, tree_every)


# --- killing a process tree ---------------------------------------------------------------


def _proc(pid: int) -> psutil.Process | None:
    import psutil

    try:
        return psutil.Process(pid)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def _collect(
    pid: int | None,
    pgid: int | None,
    token: str | None,
    known: Mapping[int, float],
    since: float | None = None,
) -> dict[int, psutil.Process]:
    """Every live process of the tree: descendants, group members, run-id carriers, known pids.

    ``since`` (epoch seconds the tree's first process started): older processes cannot belong
    to the tree, so the group / environment scan skips them without reading their environment.
    """
    import psutil

    found: dict[int, psutil.Process] = {}

    def add(proc: psutil.Process) -> None:
        with contextlib.suppress(psutil.Error):
            if proc.pid != os.getpid() and proc.status() != psutil.STATUS_ZOMBIE:
                found[proc.pid] = proc

    root = _proc(pid) if pid else None
    if root is not None:
        add(root)
        with contextlib.suppress(psutil.Error):
            for child in root.children(recursive=True):
                add(child)
    for known_pid, created in known.items():
        proc = _proc(known_pid)
        if proc is not None:
            with contextlib.suppress(psutil.Error):
                if abs(proc.create_time() - created) < 0.01:
                    add(proc)
    me = os.getuid()
    oldest = since - 1.0 if since is not None else None  # create_time is jiffy-precise
    for proc in psutil.process_iter(["pid"] if oldest is None else ["pid", "create_time"]):
        # OSError: os.getpgid of a process that exited since process_iter listed it.
        with contextlib.suppress(psutil.Error, OSError):
            if proc.pid in found:
                continue
            if oldest is not None and (proc.info["create_time"] or 0.0) < oldest:
                continue
            if proc.uids().real != me:
                continue
            in_group = pgid is not None and os.getpgid(proc.pid) == pgid
            if in_group or (token is not None and proc.environ().get(TREE_ENV) == token):
                add(proc)
    # Descendants of what was found (a setsid'd grandchild's own children).
    for proc in list(found.values()):
        with contextlib.suppress(psutil.Error):
            for child in proc.children(recursive=True):
                add(child)
    return found


def _signal_all(procs: Iterable[psutil.Process], pgid: int | None, sig: int) -> None:
    import psutil

    if pgid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
    for proc in procs:
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            proc.send_signal(sig)  # psutil checks create_time: no signal to a reused pid


def _alive(procs: Iterable[psutil.Process], exclude: int | None) -> list[psutil.Process]:
    import psutil

    alive = []
    for proc in procs:
        if proc.pid == exclude:
            continue
        with contextlib.suppress(psutil.Error):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
    return alive


def kill_tree(
    pid: int | None,
    *,
    pgid: int | None = None,
    token: str | None = None,
    known: Mapping[int, float] | None = None,
    grace: float = 3.0,
    child: subprocess.Popen[bytes] | None = None,
    since: float | None = None,
) -> tuple[int, ...]:
    """SIGTERM the tree, wait ``grace`` seconds, SIGKILL what is left; return pids still alive.

    The tree is: ``pid`` and its descendants, the members of process group ``pgid``, every
    process of ours whose environment carries ``GITFLOW_AGENTS_TREE=token``, and ``known``
    pids (pid -> create_time) seen earlier, plus the descendants of all of those.

    ``child`` is our own Popen of ``pid`` (waited through Popen, never reaped behind its back).
    ``since``: when the tree's first process started, if known (see ``_collect``).
    """
    known = known or {}
    victims = _collect(pid, pgid, token, known, since)
    own = child.pid if child is not None else None

    def child_done() -> bool:
        return child is None or child.poll() is not None

    if not victims and child_done():
        return ()
    _signal_all(victims.values(), pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    pause = 0.001  # most processes die within a few ms of SIGTERM: poll fast, then back off
    while time.monotonic() < deadline:
        if child_done() and not _alive(victims.values(), own):
            break
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
    # Whatever is left, plus anything spawned meanwhile, gets SIGKILL.
    again = {**victims, **_collect(pid, pgid, token, known, since)}
    survivors = {p.pid: p for p in _alive(again.values(), own)}
    if survivors or not child_done():
        _signal_all(survivors.values(), pgid, signal.SIGKILL)
        if child is not None and not child_done():
            with contextlib.suppress(ProcessLookupError):
                child.kill()
    deadline = time.monotonic() + 2.0
    left: list[psutil.Process] = list(survivors.values())
    pause = 0.001
    while time.monotonic() < deadline:
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=pause)
        left = _alive(left, own)
        if not left and child_done():
            break
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
    leftover = [p.pid for p in left]
    if child is not None and not child_done():
        leftover.append(child.pid)
    return tuple(sorted(leftover))


class _CpuSampler:
    """CPU seconds the agent's tree used since the previous sample, counted per process.

    ``cli_stdout`` is the (st_dev, st_ino) of the run's stdout pipe for LaunchSpec cpu_activity
    "tools": a process whose fd 1 is that pipe is the agent CLI itself (the root, a relaunched
    copy, a launcher's real binary), and only the CPU of the children it has reaped (finished
    tools) counts, not its own. Tools write to the CLI's pipes, sockets or files, never to the
    CLI's stdout (that would corrupt its JSON). ``None`` ("tree") counts every process.
    Descendants seen are recorded in ``known`` (pid -> create_time) for the tree kill.
    """

    def __init__(
        self, root: int, known: dict[int, float], cli_stdout: tuple[int, int] | None
    ) -> None:
        self._root, self._known, self._cli_stdout = root, known, cli_stdout
        self._last: dict[tuple[int, float], tuple[float, float]] = {}

    def _is_cli(self, pid: int) -> bool:
        if self._cli_stdout is None:
            return False
        try:
            st = Path(f"/proc/{pid}/fd/1").stat()
        except OSError:  # no /proc here, or fd 1 closed: only the root counts as the CLI
            return pid == self._root
        return (st.st_dev, st.st_ino) == self._cli_stdout

    def sample(self) -> float:
        import psutil

        root = _proc(self._root)
        if root is None:
            return 0.0
        procs = [root]
        with contextlib.suppress(psutil.Error):
            procs += root.children(recursive=True)
        used = 0.0
        last: dict[tuple[int, float], tuple[float, float]] = {}
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                created = proc.create_time()
                times = proc.cpu_times()
                own = times.user + times.system
                reaped = times.children_user + times.children_system
                # A process first seen started after the previous sample: all its CPU is new.
                own_before, reaped_before = self._last.get((proc.pid, created), (0.0, 0.0))
                last[(proc.pid, created)] = (own, reaped)
                used += reaped - reaped_before
                if not self._is_cli(proc.pid):
                    used += own - own_before
                if proc.pid != self._root:
                    self._known.setdefault(proc.pid, created)
        self._last = last
        return used


# --- the supervisor -----------------------------------------------------------------------


@dataclass
class _Activity:
    """Last activity (monotonic and wall clock), shared with the output reader threads."""

    at: float = field(default_factory=time.monotonic)
    wall: float = field(default_factory=time.time)
    kind: str = "start"
    lock: threading.Lock = field(default_factory=threading.Lock)

    def touch(self, kind: str) -> None:
        with self.lock:
            self.at, self.wall, self.kind = time.monotonic(), time.time(), kind


class _Output:
    """Reads stdout and stderr into worker.log and memory; emits rate-limited agent:output."""

    def __init__(
        self,
        log_path: Path,
        activity: _Activity,
        emit: Callable[[dict[str, Any]], None],
    ) -> None:
        self._log = log_path.open("ab")
        self._lock = threading.Lock()
        self._activity = activity
        self._emit = emit
        self.captured: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
        self._pending = 0
        self._tail = ""
        self._stream = "stdout"
        self._emitted_at = 0.0
        self.stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self, fds: Mapping[str, int]) -> None:
        """Read every stream (name -> fd) in one thread until each reaches EOF."""
        thread = threading.Thread(target=self._read, args=(dict(fds),), daemon=True)
        thread.start()
        self._threads.append(thread)

    def _read(self, fds: dict[str, int]) -> None:
        names = {fd: name for name, fd in fds.items()}
        while names:
            try:
                ready, _, _ = select.select(list(names), [], [], 0.2)
            except (OSError, ValueError):
                return
            if not ready:
                if self.stop.is_set():
                    return
                continue
            for fd in ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b""
                if chunk:
                    self._on_chunk(names[fd], chunk)
                else:
                    del names[fd]

    def _on_chunk(self, name: str, chunk: bytes) -> None:
        self._activity.touch("output")
        with self._lock:
            self._log.write(chunk)
            self._log.flush()
            buffer = self.captured[name]
            buffer += chunk
            if len(buffer) > CAPTURE_LIMIT:
                del buffer[: len(buffer) - CAPTURE_LIMIT]
            self._pending += len(chunk)
            self._stream = name
            lines = [ln for ln in _printable(chunk).splitlines() if ln.strip()]
            if lines:
                self._tail = lines[-1][-200:]
            now = time.monotonic()
            if now - self._emitted_at < OUTPUT_EVENT_EVERY:
                return
            data = self._take(now)
        self._emit(data)

    def _take(self, now: float) -> dict[str, Any]:
        data = {"stream": self._stream, "bytes": self._pending, "tail": self._tail}
        self._pending, self._emitted_at = 0, now
        return data

    def finish(self, wait: float) -> None:
        """Wait for EOF up to ``wait`` seconds, stop the readers, flush the last output event."""
        deadline = time.monotonic() + wait
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self.stop.set()
        for thread in self._threads:
            thread.join(1.0)
        with self._lock:
            data = self._take(time.monotonic()) if self._pending else None
            self._log.close()
        if data is not None:
            self._emit(data)

    def done(self) -> bool:
        return not any(thread.is_alive() for thread in self._threads)

    def text(self, name: str) -> str:
        with self._lock:
            return bytes(self.captured[name]).decode("utf-8", "replace")


def _printable(chunk: bytes) -> str:
    text = chunk.decode("utf-8", "replace")
    return "".join(ch for ch in text if ch in "\n\t" or ch.isprintable())


def _reply_status(text: str) -> str | None:
    """The <STATUS> of a structured seed-004 reply; None without protocol tags."""
    from gitflow_agents.protocol import parse_reply

    reply = parse_reply(text)
    return reply.status.value if reply.structured and reply.status is not None else None


def _exit_notifier(proc: subprocess.Popen[bytes]) -> tuple[int, int | None]:
    """An fd that becomes readable when ``proc`` exits, for the supervisor's select: a pidfd
    (Linux >= 5.3; no thread), else the read end of a pipe that a waiter thread writes to.
    Returns (fd, write end of the pipe or None)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        # The child is not reaped before we poll it, so this works even if it already exited.
        with contextlib.suppress(OSError):
            return int(pidfd_open(proc.pid)), None
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def wait_exit() -> None:
        proc.wait()
        with contextlib.suppress(OSError):
            os.write(wake_w, b"x")

    threading.Thread(target=wait_exit, daemon=True).start()
    return wake_r, wake_w


def signal_paths(
    agent_dir: Path, report_name: str, success_suffix: str, failure_suffix: str
) -> tuple[Path, Path, Path]:
    """(report.md, report.complete.md, report.failed.md) inside ``agent_dir``."""
    stem = report_name[: -len(".md")] if report_name.endswith(".md") else Path(report_name).stem
    return (
        agent_dir / report_name,
        agent_dir / f"{stem}{success_suffix}",
        agent_dir / f"{stem}{failure_suffix}",
    )


def _renamed(success: Path, failure: Path) -> Path | None:
    ok, failed = success.exists(), failure.exists()
    if ok and failed:  # both: the later one is the agent's last word
        return success if success.stat().st_ctime_ns >= failure.stat().st_ctime_ns else failure
    return success if ok else failure if failed else None


def _update_status(run_dir: Path, **fields: Any) -> None:
    path = run_dir / "status.json"
    data = read_json(path) or {}
    data.update(fields)
    with contextlib.suppress(OSError):
        # Live state, rewritten often: atomic but not fsync'd (result.json is the durable record).
        write_json_atomic(path, data, durable=False)


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def supervise(
    spec: LaunchSpec,
    *,
    agent_dir: Path,
    run_dir: Path,
    report_name: str = "report.md",
    success_suffix: str = ".complete.md",
    failure_suffix: str = ".failed.md",
    stuck_timeout: float,
    timeout: float | None,
    watch_paths: Sequence[Path] = (),
    hub: EventHub,
    run_id: str,
    cancel: threading.Event | None = None,
    ignore_paths: Sequence[Path] = (),
    parse_output: Callable[[str, str], ParsedOutput] | None = None,
    kill_grace: float = 3.0,
    exit_grace: float = 10.0,
    cpu_busy_fraction: float = 0.1,
) -> Outcome:
    """Run ``spec`` to an Outcome; never hangs past ``timeout`` (+ kill grace), never leaks a process.

    ``completes_by_exit`` specs (CLIs that cannot rename a file): a rename still decides when it
    happens; otherwise exit 0 is success unless ``parse_output`` reports ``is_error``.
    ``parse_output`` (the adapter's) also runs for rename-completed agents, for tokens and cost.
    After the rename the agent gets ``exit_grace`` seconds to exit on its own before it is killed.
    Work on ``status.json`` in ``run_dir``: pid, pgid, state and last activity are merged in.
    """
    if stuck_timeout <= 0:
        raise ValueError("stuck_timeout must be positive")
    agent = agent_dir.name
    report, success, failure = signal_paths(agent_dir, report_name, success_suffix, failure_suffix)
    stale = [p for p in (success, failure) if p.exists()]
    if stale:
        raise ValueError(f"{stale[0]} exists before the run started; move it away first")
    agent_dir.mkdir(parents=True, exist_ok=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    cancel = cancel or threading.Event()
    activity = _Activity()
    started_wall, started = time.time(), time.monotonic()

    def emit(kind: str, data: Mapping[str, Any]) -> None:
        hub.emit(kind, {"agent": agent, **data}, run_id=run_id)

    watcher = open_watcher(
        agent_dir,
        run_dir,
        watch_paths,
        ignore_paths,
        tree_every=min(max(stuck_timeout / 4, 0.05), 1.0),
    )
    output = _Output(run_dir / "worker.log", activity, lambda data: emit("agent:output", data))
    token = f"{run_id}:{secrets.token_hex(8)}"  # marks every process of this tree
    env = {
        **spec.env,
        RUN_ID_ENV: run_id,
        TREE_ENV: token,
        RUN_DIR_ENV: str(run_dir),
        AGENT_DIR_ENV: str(agent_dir),
    }

    def finish(
        status: Status,
        reason: str,
        *,
        proc: subprocess.Popen[bytes] | None = None,
        exit_code: int | None = None,
        signal_at: float | None = None,
        leftover: tuple[int, ...] = (),
    ) -> Outcome:
        stdout, stderr = output.text("stdout"), output.text("stderr")
        parsed = None
        if parse_output is not None and proc is not None:
            try:
                parsed = parse_output(stdout, stderr)
            except Exception as exc:  # a parser bug must not lose the outcome
                reason += f" (output not parsed: {exc!r})"
        by_exit = status == "succeeded" and spec.completes_by_exit and signal_at is None
        if by_exit and parsed is not None and parsed.is_error:
            status, reason = "failed", f"agent reported an error: {parsed.error or 'unknown'}"
        elif by_exit:
            # No rename to go by: a structured reply (seed 004) saying it did not finish counts.
            said = _reply_status(getattr(parsed, "reply", None) or stdout)
            if said in ("failed", "needs_input"):
                status, reason = "failed", f"agent exited 0 but its reply's <STATUS> is {said}"
        ended = time.time()
        path = success if status == "succeeded" and success.exists() else None
        if path is None and failure.exists():
            path = failure
        if path is None and report.exists():
            path = report
        outcome = Outcome(
            status=status,
            reason=reason + (f"; processes left behind: {list(leftover)}" if leftover else ""),
            report_path=path,
            exit_code=exit_code,
            started=started_wall,
            ended=ended,
            duration=time.monotonic() - started,
            last_activity=activity.wall,
            last_activity_kind=activity.kind,
            pid=proc.pid if proc is not None else None,
            signal_at=signal_at,
            stdout=stdout,
            stderr=stderr,
            output=parsed,
            leftover_pids=leftover,
            watcher=watcher.kind,
        )
        data: dict[str, Any] = {
            "status": status,
            "reason": outcome.reason,
            "exit_code": exit_code,
            "duration_ms": round(outcome.duration * 1000),
            "report": str(path) if path else None,
        }
        for key in ("session_id", "input_tokens", "output_tokens", "cost_usd"):
            value = getattr(parsed, key, None)
            if value is not None:
                data[key] = value
        emit("agent:complete" if status == "succeeded" else "agent:failed", data)
        _update_status(
            run_dir,
            state=status,
            reason=outcome.reason,
            ended=ended,
            last_activity=activity.wall,
            last_activity_kind=activity.kind,
        )
        return outcome

    # The marker is on record before the first process exists: if this supervisor dies at any
    # moment after Popen (even before the pid below is written), `cancel` still finds the whole
    # tree by it, including grandchildren that left the process group.
    _update_status(
        run_dir,
        run_id=run_id,
        tree_token=token,
        agent=agent,
        agent_dir=str(agent_dir),
        state="running",
        started=started_wall,
        supervisor_pid=os.getpid(),
    )
    spawned_wall = time.time()
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv list from the adapter, never a shell
            list(spec.argv),
            cwd=spec.cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        output.finish(0)
        watcher.close()
        emit("agent:start", {"pid": None, "command": spec.argv[0] if spec.argv else ""})
        return finish("crashed", f"could not start {spec.argv[0] if spec.argv else '?'}: {exc}")

    assert proc.stdout is not None and proc.stderr is not None
    # agent:start before the output reader exists, so no agent:output can precede it
    emit("agent:start", {"pid": proc.pid, "command": spec.argv[0], "cwd": str(spec.cwd)})
    output.start({"stdout": proc.stdout.fileno(), "stderr": proc.stderr.fileno()})
    wake_r, wake_w = _exit_notifier(proc)
    known: dict[int, float] = {}
    pgid = proc.pid
    create_time = None
    root = _proc(proc.pid)
    if root is not None:
        with contextlib.suppress(Exception):
            create_time = root.create_time()
    _update_status(
        run_dir,
        pid=proc.pid,
        pgid=pgid,
        create_time=create_time,
        last_activity=activity.wall,
        last_activity_kind=activity.kind,
    )

    sample_every = min(max(stuck_timeout / 4, 0.05), 30.0)
    cli_stdout = None
    if spec.cpu_activity == "tools":
        stdout_pipe = os.fstat(proc.stdout.fileno())
        cli_stdout = (stdout_pipe.st_dev, stdout_pipe.st_ino)
    cpu = _CpuSampler(proc.pid, known, cli_stdout)
    cpu_at = time.monotonic()
    status_at = 0.0
    signal_at: float | None = None
    verdict: tuple[Status, str] | None = None

    def kill(why: str) -> tuple[int, ...]:
        if proc.poll() is None:  # a sweep after a normal exit is not worth a status write
            _update_status(run_dir, state="killing", reason=why)
        return kill_tree(
            proc.pid,
            pgid=pgid,
            token=token,
            known=known,
            grace=kill_grace,
            child=proc,
            since=spawned_wall,
        )

    try:
        while True:
            now = time.monotonic()
            deadlines = [TICK, activity.at + stuck_timeout - now, cpu_at + sample_every - now]
            if timeout is not None:
                deadlines.append(started + timeout - now)
            flags = watcher.wait(max(0.0, min(deadlines)), wake_r)
            if wake_w is not None:  # the waiter thread's pipe (a pidfd stays readable)
                with contextlib.suppress(OSError):
                    os.read(wake_r, 64)
            for flag in flags & {"agent", "tree", "heartbeat"}:
                activity.touch({"agent": "report", "tree": "worktree"}.get(flag, flag))
            if _renamed(success, failure) is not None:
                signal_at = time.time()
                break
            now = time.monotonic()
            if "cancel" in flags or (run_dir / "cancel").exists():
                verdict = ("canceled", "canceled by gitflow-agents cancel")
                break
            if cancel.is_set() or hub.aborted.is_set():
                why = "session aborted" if hub.aborted.is_set() else "canceled by request"
                verdict = ("canceled", why)
                break
            if proc.poll() is not None:
                break
            if timeout is not None and now - started >= timeout:
                verdict = ("timeout", f"hard timeout after {timeout:g}s")
                break
            if now - cpu_at >= sample_every:
                if cpu.sample() >= cpu_busy_fraction * (now - cpu_at):
                    activity.touch("cpu")
                cpu_at = now
            idle = now - activity.at
            if idle >= stuck_timeout:
                verdict = (
                    "stuck",
                    f"no activity for {idle:.1f}s (stuck_timeout {stuck_timeout:g}s);"
                    f" last activity: {activity.kind}",
                )
                break
            if now - status_at >= 1.0:
                status_at = now
                _update_status(
                    run_dir, last_activity=activity.wall, last_activity_kind=activity.kind
                )

        if signal_at is not None:
            # The report is renamed: give the CLI a moment to exit (its final JSON has the cost).
            grace_end = time.monotonic() + exit_grace
            while proc.poll() is None and time.monotonic() < grace_end:
                if cancel.is_set() or hub.aborted.is_set():
                    break
                if timeout is not None and time.monotonic() - started >= timeout:
                    break
                watcher.wait(TICK, wake_r)
            leftover = kill("report renamed; sweeping the process tree")
            output.finish(2.0)
            renamed = _renamed(success, failure)
            code = proc.returncode
            if renamed == success:
                return finish(
                    "succeeded",
                    f"{report.name} renamed to {success.name}",
                    proc=proc,
                    exit_code=code,
                    signal_at=signal_at,
                    leftover=leftover,
                )
            return finish(
                "failed",
                f"agent signalled failure: {report.name} renamed to {failure.name}",
                proc=proc,
                exit_code=code,
                signal_at=signal_at,
                leftover=leftover,
            )

        if verdict is not None:
            leftover = kill(verdict[1])
            output.finish(2.0)
            return finish(
                verdict[0], verdict[1], proc=proc, exit_code=proc.returncode, leftover=leftover
            )

        # The process exited by itself: one more look for the rename, then judge.
        code = proc.returncode
        leftover = kill("agent exited; sweeping the process tree")
        output.finish(2.0)
        renamed = _renamed(success, failure)
        if renamed is not None:
            signal_at = time.time()
            ok = renamed == success
            return finish(
                "succeeded" if ok else "failed",
                f"{report.name} renamed to {renamed.name}"
                if ok
                else f"agent signalled failure: {report.name} renamed to {failure.name}",
                proc=proc,
                exit_code=code,
                signal_at=signal_at,
                leftover=leftover,
            )
        if spec.completes_by_exit:
            if code == 0:
                return finish(
                    "succeeded", "agent exited 0 (completes by exit)", proc=proc, exit_code=code
                )
            return finish("failed", f"agent exited (code {code})", proc=proc, exit_code=code)
        if code is not None and code < 0:
            return finish(
                "crashed",
                f"agent killed by {_signal_name(code)} without renaming {report.name}",
                proc=proc,
                exit_code=code,
                leftover=leftover,
            )
        return finish(
            "failed",
            f"agent exited (code {code}) without renaming {report.name}",
            proc=proc,
            exit_code=code,
            leftover=leftover,
        )
    except KeyboardInterrupt:
        leftover = kill("interrupted (Ctrl-C)")
        output.finish(1.0)
        outcome = finish(
            "canceled",
            "interrupted (Ctrl-C)",
            proc=proc,
            exit_code=proc.returncode,
            leftover=leftover,
        )
        raise SupervisorInterrupted(outcome) from None
    finally:
        if proc.poll() is None:  # an unexpected error above: never leave the tree running
            kill("supervisor error")
        output.stop.set()
        watcher.close()
        if output.done():
            for pipe in (proc.stdout, proc.stderr):
                with contextlib.suppress(OSError):
                    pipe.close()
        for fd in (wake_r, wake_w):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
