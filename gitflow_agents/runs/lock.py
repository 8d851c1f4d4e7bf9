"""Lock files: one run per plan step (``step_lock_path``; ``hold_step`` also takes
``shared_step_lock_path``, which every checkout of the repository sees), one run per card
(cards.card_lock).

Exclusion is the operating system's: the holder keeps an exclusive ``flock`` on the lock file
for as long as it holds it, so the kernel lets exactly one process in, whatever the number of
racing takers, and gives the lock back when the holder dies (``kill -9`` included). The file's
content is the holder's record (run id, pid, process start time, host) for messages and
``status``; it is written before the file is put in place, so a lock is never seen empty.

A taker that gets the ``flock`` and finds the path still naming the file it locked judges the
record: a live holder's record (a lock of an older version of this tool, which took no
``flock``, or another host's) is respected; anything else (a dead holder, a pid now naming a
process started later: gitflow_agents/runs/liveness.py, an unreadable file) is stale, and the taker
renames its own, already locked, file over it. Only the path's ``flock`` holder replaces or
removes the file at the path, so a taker that locked a file since replaced sees the difference
and tries again. Local file systems on Linux and macOS; not NFS (docs/chains.md).
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import os
import re
import secrets
import socket
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitflow_agents.base.camel import camel_json
from gitflow_agents.base.errors import GitflowError, UsageError
from gitflow_agents.base.fsutil import ReadRefused, make_dirs, read_limited
from gitflow_agents.base.jsondata import load_object
from gitflow_agents.plan.model import Plan
from gitflow_agents.runs.liveness import process_alive, start_id, start_time


class StepLockedError(GitflowError):
    """Another live run holds the lock of this plan step (exit code 2)."""


@dataclass(frozen=True)
class LockInfo:
    run_id: str
    pid: int
    host: str
    started: float | None  # psutil create_time of pid
    at: float
    started_id: str | None = None  # liveness.start_id of pid (Linux)

    def to_json(self) -> dict[str, Any]:
        return camel_json(self, started="pidStarted", started_id="pidStartId")


_MAX_LOCK_BYTES = 64 * 1024


def _read(path: Path) -> bytes:
    """The lock file's bytes (for :func:`read_lock`); b"" (an unreadable lock) when it is not a
    regular file or absurdly large: a FIFO planted as a lock must not block the reader."""
    try:
        return read_limited(path, _MAX_LOCK_BYTES)
    except ReadRefused:
        return b""


def read_lock(path: Path) -> LockInfo | None:
    try:
        return _parse(_read(path))
    except OSError:
        return None


def _parse(raw: bytes) -> LockInfo | None:
    try:
        data = load_object(raw)
        return LockInfo(
            run_id=str(data.get("runId", "?")),
            pid=int(data["pid"]),
            host=str(data.get("host", "")),
            started=float(data["pidStarted"]) if data.get("pidStarted") is not None else None,
            at=float(data.get("at", 0.0)),
            started_id=data["pidStartId"] if isinstance(data.get("pidStartId"), str) else None,
        )
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, OverflowError):
        return None


def holder_alive(info: LockInfo) -> bool:
    """True while the process that took the lock still runs (pid reuse is detected)."""
    if info.host and info.host != socket.gethostname():
        return True  # another machine's pid cannot be checked: assume it is alive
    return process_alive(info.pid, info.started, info.started_id)


def _refuse_step(path: Path, holder: LockInfo | None, *, elsewhere: bool = False) -> GitflowError:
    """Why the step's lock at ``path`` is not ours (``elsewhere``: the lock every checkout of
    the repository shares, held by another checkout's run)."""
    if holder is None:
        return StepLockedError(f"{path}: could not take the lock")
    where = (
        " of another checkout of this repository, whose step work tree this one shares"
        if elsewhere
        else ""
    )
    return StepLockedError(
        f"{path}: held by run {holder.run_id} (pid {holder.pid}){where}; "
        f"wait for it to finish, or cancel it{' there' if elsewhere else ''} "
        f"(`gitflow-agents cancel {holder.run_id}`)"
    )


@contextlib.contextmanager
def hold(
    path: Path,
    run_id: str,
    *,
    refuse: Callable[[Path, LockInfo | None], GitflowError] = _refuse_step,
) -> Iterator[LockInfo]:
    """Hold the lock file ``path`` for the duration of the block; a stale lock (dead holder,
    unreadable file) is taken over. When a live run holds it, raises ``refuse(path, holder)``
    (StepLockedError by default); ``refuse(path, None)`` when it stayed locked without a live
    run's record in it. UsageError when what is at ``path`` cannot be a lock (a folder, a
    dangling symlink). The lock is released when the block ends, or with the process.
    """
    make_dirs(path.parent)
    pid = os.getpid()
    me = LockInfo(run_id, pid, socket.gethostname(), start_time(pid), time.time(), start_id(pid))
    fd = _take(path, me, refuse)
    try:
        yield me
    finally:
        _release(path, fd)


# A taker that finds the lock busy but no live run's record in it has met another taker in the
# middle of a takeover (microseconds; longer on a loaded machine): it looks again, a while.
_BUSY_TRIES = 500
_BUSY_PAUSE = 0.01


class _Verdict(enum.Enum):
    TAKEN = "ours now: renamed over a stale lock while holding its flock"
    GONE = "released or replaced meanwhile: try again"
    BUSY = "locked by another taker in the middle of a takeover: look again shortly"


def _take(path: Path, me: LockInfo, refuse: Callable[[Path, LockInfo | None], GitflowError]) -> int:
    """Put a locked file holding ``me`` at ``path`` and return its descriptor (the flock).
    Raises ``refuse(...)`` when a live run holds the lock or it stays out of reach."""
    aside, fd = _prepare(path, me)
    try:
        for _try in range(_BUSY_TRIES):
            if _link(aside, path):
                return fd
            verdict = _judge(path, aside)
            if isinstance(verdict, LockInfo):
                raise refuse(path, verdict)
            if verdict is _Verdict.TAKEN:
                return fd
            if verdict is _Verdict.BUSY:
                time.sleep(_BUSY_PAUSE)
        raise refuse(path, None)
    except BaseException:
        os.close(fd)
        raise
    finally:
        aside.unlink(missing_ok=True)  # after a link, the second name; after a rename, gone


def _prepare(path: Path, me: LockInfo) -> tuple[Path, int]:
    """Our lock file beside ``path``, its record written and its flock taken (nobody else
    knows the file, so the flock is ours at once)."""
    aside = path.with_name(f"{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(aside, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, json.dumps(me.to_json()).encode("utf-8"))
    except OSError as exc:
        os.close(fd)
        aside.unlink(missing_ok=True)
        raise UsageError(
            f"{path}: cannot lock a file in {path.parent} ({exc.strerror}); "
            "locks need a local file system (not NFS)"
        ) from None
    return aside, fd


def _link(aside: Path, path: Path) -> bool:
    """Put our file at ``path`` when nothing is there; False when something is. Where hard
    links are not supported, an empty file is put there instead (False): an unreadable lock
    that nobody holds, which :func:`_judge` then takes over like any stale lock."""
    try:
        os.link(aside, path)
        return True
    except FileExistsError:
        return False
    except OSError:
        pass
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o644))
    return False


def _judge(path: Path, aside: Path) -> LockInfo | _Verdict:
    """Look at the lock at ``path``: the live holder's record, or what became of it. A stale
    lock is replaced by ``aside`` (our locked file) while holding the stale file's flock."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        if path.is_symlink():
            raise _not_a_lock(path, "a symlink to a missing file") from None
        return _Verdict.GONE
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _parse(_read_fd(fd))
            return holder if holder is not None and holder_alive(holder) else _Verdict.BUSY
        except OSError as exc:
            raise _not_a_lock(path, exc.strerror or "it cannot be locked") from None
        if not _names(path, fd):
            return _Verdict.GONE
        holder = _parse(_read_fd(fd))
        if holder is not None and holder_alive(holder):
            return holder  # an older version's lock (no flock) or another host's: respected
        try:
            aside.rename(path)
        except OSError as exc:  # a folder, say
            raise _not_a_lock(path, exc.strerror or "it cannot be replaced") from None
        return _Verdict.TAKEN
    finally:
        os.close(fd)


def _not_a_lock(path: Path, why: str) -> UsageError:
    return UsageError(f"{path}: not a lock file ({why}); remove it and try again")


def _read_fd(fd: int) -> bytes:
    """The lock file's bytes; b"" (an unreadable, hence stale, lock) when it is not a regular
    file or absurdly large: a FIFO planted as a lock must not block the taker."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        return b""
    data = os.pread(fd, _MAX_LOCK_BYTES + 1, 0)
    return data if len(data) <= _MAX_LOCK_BYTES else b""


def _names(path: Path, fd: int) -> bool:
    """True while ``path`` names the file open as ``fd``."""
    try:
        now = path.stat()
    except OSError:
        return False
    held = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _release(path: Path, fd: int) -> None:
    """Remove our lock file, then let its flock go: removed first, so a taker that opened it
    meanwhile finds the path no longer naming it and tries again."""
    try:
        if _names(path, fd):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    finally:
        os.close(fd)


def step_lock_path(root: Path, flow_dir: str, flow: str, step: int | None) -> Path:
    """``<flow_dir>/<flow>/locks/step-NN.lock`` (``flow.lock`` without a step)."""
    name = f"step-{step:02d}.lock" if step is not None else "flow.lock"
    return root / flow_dir / flow / "locks" / name


def shared_step_lock_path(common_dir: Path, flow: str, step: int | None) -> Path:
    """``<git common dir>/gitflow-agents/locks/<flow>/step-NN.lock``: the lock of the step's
    work tree, which every checkout of the repository (the main one and each ``git worktree
    add``) shares, since the work-tree cache is keyed by the common dir
    (``git.tool_worktree_root``); ``step_lock_path`` is one checkout's own."""
    name = f"step-{step:02d}.lock" if step is not None else "flow.lock"
    return common_dir / "gitflow-agents" / "locks" / flow / name


def _refuse_shared(path: Path, holder: LockInfo | None) -> GitflowError:
    return _refuse_step(path, holder, elsewhere=True)


@contextlib.contextmanager
def hold_step(
    root: Path, common_dir: Path, flow_dir: str, flow: str, step: int | None, run_id: str
) -> Iterator[LockInfo]:
    """Hold the step's lock for the block: this checkout's (``step_lock_path``, what ``status``
    and ``serve`` read) and then the one every checkout of the repository sees
    (``shared_step_lock_path``): one run per step and work tree, whichever checkout starts it.
    StepLockedError when a live run holds either; a dead holder's lock is taken over."""
    shared = shared_step_lock_path(common_dir, flow, step)
    with (
        hold(step_lock_path(root, flow_dir, flow, step), run_id) as me,
        hold(shared, run_id, refuse=_refuse_shared),
    ):
        yield me


def step_holder(
    root: Path, common_dir: Path, flow_dir: str, flow: str, step: int | None
) -> LockInfo | None:
    """The live holder of the step's lock, this checkout's or the shared one (a run of another
    checkout of the repository); None when no live process holds either."""
    for path in (
        step_lock_path(root, flow_dir, flow, step),
        shared_step_lock_path(common_dir, flow, step),
    ):
        info = read_lock(path) if path.is_file() else None
        if info is not None and holder_alive(info):
            return info
    return None


@dataclass(frozen=True)
class LiveStep:
    """A step run in progress in this checkout: the live holder of a step's lock."""

    flow: str
    step: int
    holder: LockInfo

    def names(self, run_id: str) -> bool:
        """Whether ``run_id`` names this step run: its id, or a prefix of 8+ characters (as
        ``cancel`` and ``send`` take an agent run's)."""
        own = self.holder.run_id
        return run_id == own or (len(run_id) >= 8 and own.startswith(run_id))


_STEP_LOCK = re.compile(r"step-(\d+)\.lock")


def live_steps(root: Path, flow_dir: str) -> list[LiveStep]:
    """The step runs this checkout's live processes hold a step lock for (``run``), by flow
    and step: a step run's folder is written when it ends, so while it runs its lock is what
    names it (``status`` lists it, ``cancel`` takes its id)."""
    found = []
    for path in sorted((root / flow_dir).glob("*/locks/step-*.lock")):
        match = _STEP_LOCK.fullmatch(path.name)
        holder = read_lock(path) if match and path.is_file() else None
        if match and holder is not None and holder_alive(holder):
            found.append(LiveStep(path.parent.parent.name, int(match[1]), holder))
    return found


def steps_running(root: Path, flow_dir: str, plan: Plan) -> set[int]:
    """The steps of ``plan`` a live run of this checkout works on: it holds the step's lock
    (``run``) or claim lock (``run --pr``) under the plan's flow folder (``plan show --format
    mermaid`` and ``serve`` colour them running)."""
    running: set[int] = set()
    for step in plan.steps:
        lock = step_lock_path(root, flow_dir, plan.name, step.number)
        for path in (lock, lock.with_name(f"step-{step.number:02d}.claim.lock")):
            holder = read_lock(path) if path.is_file() else None
            if holder is not None and holder_alive(holder):
                running.add(step.number)
    return running
