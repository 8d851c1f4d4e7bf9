"""One run per plan step at a time: a lock file created with O_EXCL.

The lock records the holder's pid, its process start time (psutil) and host. A lock whose
process is gone (or whose pid now belongs to a different process, started later) is stale and is
taken over; a lock held by a live process is refused with the run that holds it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitflow_agents.errors import GitflowError


class StepLockedError(GitflowError):
    """Another live run holds the lock of this plan step (exit code 2)."""


@dataclass(frozen=True)
class LockInfo:
    run_id: str
    pid: int
    host: str
    started: float | None  # psutil create_time of pid
    at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "pid": self.pid,
            "host": self.host,
            "pidStarted": self.started,
            "at": self.at,
        }


def _create_time(pid: int) -> float | None:
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def read_lock(path: Path) -> LockInfo | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return LockInfo(
            run_id=str(data.get("runId", "?")),
            pid=int(data["pid"]),
            host=str(data.get("host", "")),
            started=float(data["pidStarted"]) if data.get("pidStarted") is not None else None,
            at=float(data.get("at", 0.0)),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def holder_alive(info: LockInfo) -> bool:
    """True while the process that took the lock still runs (pid reuse is detected)."""
    import psutil

    if info.host and info.host != socket.gethostname():
        return True  # another machine's pid cannot be checked: assume it is alive
    if not psutil.pid_exists(info.pid):
        return False
    started = _create_time(info.pid)
    if started is None:
        return psutil.pid_exists(info.pid)
    return info.started is None or abs(started - info.started) < 1.0


@contextlib.contextmanager
def hold(path: Path, run_id: str) -> Iterator[LockInfo]:
    """Hold the lock file ``path`` for the duration of the block; StepLockedError when a live
    run holds it; a stale lock (dead holder, unreadable file) is taken over."""
    path.parent.mkdir(parents=True, exist_ok=True)
    me = LockInfo(run_id, os.getpid(), socket.gethostname(), _create_time(os.getpid()), time.time())
    for _attempt in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = read_lock(path)
            if holder is not None and holder_alive(holder):
                raise StepLockedError(
                    f"{path}: held by run {holder.run_id} (pid {holder.pid}); "
                    "wait for it to finish, or cancel it"
                ) from None
            _take_over(path)
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(me.to_json(), handle)
        break
    else:
        raise StepLockedError(f"{path}: could not take the lock")
    try:
        yield me
    finally:
        current = read_lock(path)
        if current is not None and current.run_id == me.run_id and current.pid == me.pid:
            path.unlink(missing_ok=True)


def _take_over(stale: Path) -> None:
    """Remove a stale lock; renaming first means only one of two racing takers removes it."""
    grave = stale.with_name(f"{stale.name}.stale.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        stale.rename(grave)
        grave.unlink()


def step_lock_path(root: Path, flow_dir: str, flow: str, step: int | None) -> Path:
    """``<flow_dir>/<flow>/locks/step-NN.lock`` (``flow.lock`` without a step)."""
    name = f"step-{step:02d}.lock" if step is not None else "flow.lock"
    return root / flow_dir / flow / "locks" / name
