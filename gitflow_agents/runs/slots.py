"""Slots: at most ``max_parallel`` agents of one adapter run at once, across processes.

A slot is a lock file, ``<flow_dir>/slots/<adapter>-<n>.lock`` for n < the limit, held with an
exclusive ``flock`` while the agent's process runs (docs/supervisor.md, "Rate limits"). The
kernel lets one holder in per file, whatever the number of takers, in any process of the
project (parallel reviewers, steps of a wave, other ``spawn``s), and drops the lock with its
holder, ``kill -9`` included: no slot stays taken by a dead run. A supervisor killed that way
leaves its agent running, though: the slot file names the holder's run folder, and a slot whose
last holder is such a lost run with its agent's processes still alive counts as taken until
they end (``gitflow-agents cancel`` ends them), so ``max_parallel`` holds. The files are never
removed (removing a lock file while another process opens it would let two in); the holder's
run id, run folder and pid are written into it for whoever looks.

An agent whose limit is N takes any free slot among the first N; agents of one adapter with
different limits share the same files, so the larger limit is the most that run together.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.fsutil import make_dirs
from gitflow_agents.runs import read_json
from gitflow_agents.runs.lost import is_lost, tree_pids

POLL = 0.1  # seconds between looks while every slot is taken


class SlotWaitCanceled(Exception):
    """The run was canceled while it waited for a slot."""


def slots_folder(root: Path, flow_dir: str) -> Path:
    """``<flow_dir>/slots/`` of the project at ``root``."""
    return root / flow_dir / "slots"


@contextlib.contextmanager
def hold_slot(
    folder: Path,
    adapter: str,
    limit: int,
    *,
    run_id: str,
    run_dir: Path | None = None,
    waiting: Callable[[], None] = lambda: None,
    canceled: Callable[[], bool] = lambda: False,
) -> Iterator[int]:
    """Hold one of ``adapter``'s first ``limit`` slots for the block; the slot's number.
    ``run_dir``: the holder's run folder, written into the slot (see the module doc).

    While every one is taken, ``waiting()`` is called once and the slots are looked at again
    every :data:`POLL` seconds; ``canceled()`` true then raises :class:`SlotWaitCanceled`."""
    make_dirs(folder)
    told = False
    while True:
        for number in range(limit):
            fd = _try_slot(folder / f"{adapter}-{number}.lock")
            if fd is None:
                continue
            if _orphan_holds(fd, run_id):
                os.close(fd)
                continue
            try:
                _write_holder(fd, run_id, run_dir)
                yield number
            finally:
                os.close(fd)  # the flock goes with the descriptor
            return
        if canceled():
            raise SlotWaitCanceled(run_id)
        if not told:
            waiting()
            told = True
        time.sleep(POLL)


def _try_slot(path: Path) -> int | None:
    """The slot file, opened and flocked; None while another process holds it."""
    flags = os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:  # a symlink or FIFO planted there, a folder
        raise UsageError(f"{path}: not a slot file ({exc.strerror}); remove it") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError as exc:
        os.close(fd)
        raise UsageError(
            f"{path}: cannot lock it ({exc.strerror}); slots need a local file system"
        ) from None
    return fd


def _orphan_holds(fd: int, run_id: str) -> bool:
    """Whether the slot's last holder (its record, read from ``fd``) is another run that is
    lost with its agent's processes alive: its supervisor was killed, its agent was not."""
    try:
        record = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return False
    folder = record.get("runDir") if isinstance(record, dict) else None
    if not isinstance(folder, str) or not folder or record.get("runId") == run_id:
        return False
    status = read_json(Path(folder) / "status.json")
    return status is not None and is_lost(status) and bool(tree_pids(status))


def _write_holder(fd: int, run_id: str, run_dir: Path | None = None) -> None:
    """Who holds the slot, for a person looking and for the next taker (``_orphan_holds``);
    the flock, not this text, is the slot."""
    holder = {"runId": run_id, "pid": os.getpid(), "at": time.time()}
    if run_dir is not None:
        holder["runDir"] = str(run_dir)
    record = json.dumps(holder)
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, record.encode("utf-8"), 0)


def holders(folder: Path, adapter: str, limit: int) -> int:
    """How many of ``adapter``'s first ``limit`` slots are held now (a test's and a status
    look; taking and letting go of a free one on the way)."""
    held = 0
    for number in range(limit):
        path = folder / f"{adapter}-{number}.lock"
        if not path.is_file():
            continue
        fd = _try_slot(path)
        if fd is None:
            held += 1
        else:
            os.close(fd)
    return held
