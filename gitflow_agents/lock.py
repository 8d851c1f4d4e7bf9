"""Lock files: one run per plan step (``step_lock_path``), one run per card (cards.card_lock).

The lock records the holder's run id, pid, process start time and host, and is created with its
content in one step. A lock whose process is gone (or whose pid now belongs to a different
process, started later: gitflow_agents/liveness.py) is stale and is taken over; a lock held by a
live process is refused with the run that holds it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitflow_agents.errors import GitflowError
from gitflow_agents.liveness import process_alive, start_time


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


_MAX_LOCK_BYTES = 64 * 1024


def _read(path: Path) -> bytes:
    """The lock file's bytes; b"" (an unreadable, hence stale, lock) when it is not a regular
    file or absurdly large: a FIFO planted as a lock must not block the taker."""
    from gitflow_agents.fsutil import ReadRefused, read_limited

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
    from gitflow_agents.jsondata import load_object

    try:
        data = load_object(raw)
        return LockInfo(
            run_id=str(data.get("runId", "?")),
            pid=int(data["pid"]),
            host=str(data.get("host", "")),
            started=float(data["pidStarted"]) if data.get("pidStarted") is not None else None,
            at=float(data.get("at", 0.0)),
        )
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, OverflowError):
        return None


def holder_alive(info: LockInfo) -> bool:
    """True while the process that took the lock still runs (pid reuse is detected)."""
    if info.host and info.host != socket.gethostname():
        return True  # another machine's pid cannot be checked: assume it is alive
    return process_alive(info.pid, info.started)


def _refuse_step(path: Path, holder: LockInfo | None) -> GitflowError:
    if holder is None:
        return StepLockedError(f"{path}: could not take the lock")
    return StepLockedError(
        f"{path}: held by run {holder.run_id} (pid {holder.pid}); "
        "wait for it to finish, or cancel it"
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
    (StepLockedError by default); ``refuse(path, None)`` when racing takers kept it out of reach.
    """
    from gitflow_agents.fsutil import make_dirs

    make_dirs(path.parent)
    me = LockInfo(run_id, os.getpid(), socket.gethostname(), start_time(os.getpid()), time.time())
    for _attempt in range(3):
        if _create(path, me):
            break
        try:
            raw = _read(path)
        except FileNotFoundError:  # released meanwhile: try again
            continue
        holder = _parse(raw)
        if holder is not None and holder_alive(holder):
            raise refuse(path, holder) from None
        _take_over(path, raw)
    else:
        raise refuse(path, None)
    try:
        yield me
    finally:
        current = read_lock(path)
        if current is not None and current.run_id == me.run_id and current.pid == me.pid:
            path.unlink(missing_ok=True)


def _create(path: Path, me: LockInfo) -> bool:
    """Create the lock file, content included, in one step; False when it exists already.

    Written aside and hard-linked into place, so no other taker ever reads it empty (and takes
    it for a stale, unreadable lock). Where hard links are not supported: O_EXCL, then write.
    """
    content = json.dumps(me.to_json())
    aside = path.with_name(f"{path.name}.{secrets.token_hex(6)}.tmp")
    aside.write_text(content, encoding="utf-8")
    try:
        os.link(aside, path)
        return True
    except FileExistsError:
        return False
    except OSError:
        pass
    finally:
        aside.unlink(missing_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(content)
    return True


def _take_over(stale: Path, seen: bytes) -> None:
    """Remove the stale lock whose content was ``seen``. Renaming it first means only one of
    two racing takers removes it; a lock that changed since it was judged stale (another
    taker's fresh one) is put back."""
    grave = stale.with_name(f"{stale.name}.stale.{secrets.token_hex(6)}")
    try:
        stale.rename(grave)
    except FileNotFoundError:
        return
    try:
        if _read(grave) != seen:
            with contextlib.suppress(OSError):
                os.link(grave, stale)
    finally:
        grave.unlink(missing_ok=True)


def step_lock_path(root: Path, flow_dir: str, flow: str, step: int | None) -> Path:
    """``<flow_dir>/<flow>/locks/step-NN.lock`` (``flow.lock`` without a step)."""
    name = f"step-{step:02d}.lock" if step is not None else "flow.lock"
    return root / flow_dir / flow / "locks" / name
