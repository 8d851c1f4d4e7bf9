"""An agent's process tree: finding every member, killing them all, and sampling their CPU.

The tree is the agent, its descendants, its process group, every process of ours that carries
the run's marker ``GITFLOW_AGENTS_TREE`` in its environment (grandchildren that left the group
with setsid keep it), and the pids seen while it ran. docs/supervisor.md, "Killing a process
tree", states the contract.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import psutil

# Inherited by every process the agent starts, even ones that leave its process group: the
# supervisor (or `cancel`) finds stragglers by it.
TREE_ENV = "GITFLOW_AGENTS_TREE"


def find_process(pid: int) -> psutil.Process | None:
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
    found: dict[int, psutil.Process] = {}

    def add(proc: psutil.Process) -> None:
        with contextlib.suppress(psutil.Error):
            if proc.pid != os.getpid() and proc.status() != psutil.STATUS_ZOMBIE:
                found[proc.pid] = proc

    root = find_process(pid) if pid else None
    if root is not None:
        add(root)
        with contextlib.suppress(psutil.Error):
            for child in root.children(recursive=True):
                add(child)
    for known_pid, created in known.items():
        proc = find_process(known_pid)
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


def _signal_group(pgid: int, sig: int) -> bool:
    """``sig`` to process group ``pgid``; whether it was sent (the group may be gone)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_all(procs: Iterable[psutil.Process], pgid: int | None, sig: int) -> None:
    if pgid is not None:
        _signal_group(pgid, sig)
    for proc in procs:
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            proc.send_signal(sig)  # psutil checks create_time: no signal to a reused pid


def _alive(procs: Iterable[psutil.Process], exclude: int | None) -> list[psutil.Process]:
    alive = []
    for proc in procs:
        if proc.pid == exclude:
            continue
        with contextlib.suppress(psutil.Error):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
    return alive


KILL_GRACE = 3.0
"""Seconds from SIGTERM to SIGKILL when a tree is killed: the one default of every
``kill_grace`` (the supervisor's limits, the chain's settings, ``--kill-grace``)."""


def kill_tree(
    pid: int | None,
    *,
    pgid: int | None = None,
    token: str | None = None,
    known: Mapping[int, float] | None = None,
    grace: float = KILL_GRACE,
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
    own = child.pid if child is not None else None

    def child_done() -> bool:
        return child is None or child.poll() is not None

    # the group at once, while our unreaped child keeps its id from reuse: an agent that goes on
    # working (and spending) while the scan below reads every process's environment is stopped
    # tens of milliseconds sooner; the rest of the tree is signalled once found
    termed = pgid is not None and not child_done() and _signal_group(pgid, signal.SIGTERM)
    victims = _collect(pid, pgid, token, known, since)
    if not victims and child_done():
        return ()
    _signal_all(victims.values(), None if termed else pgid, signal.SIGTERM)
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


class CpuSampler:
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
        root = find_process(self._root)
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


def tree_pids(
    pid: int | None, *, token: str | None = None, since: float | None = None
) -> tuple[int, ...]:
    """The live processes of a tree (``pid`` and its descendants, every process of ours
    carrying the marker ``token``, and theirs), without killing any (``since``: as for
    ``_collect``)."""
    return tuple(sorted(_collect(pid, None, token, {}, since)))


def marker_alive(token: str, since: float | None = None) -> bool:
    """Whether any process of ours carrying the tree marker ``token`` still runs (``since``: when
    the tree's first process started, as for ``_collect``)."""
    return bool(_collect(None, None, token, {}, since))
