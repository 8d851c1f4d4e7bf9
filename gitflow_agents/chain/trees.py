"""The work trees gitflow-agents made for this repository, as a cache: what each holds, for which
step, in what state, how big and how old, and whether a live run owns it (``gitflow-agents
worktrees``, ``gc``, the cache line of ``status``; docs/chains.md, "Work trees that go away").

Only work trees under ``git.tool_worktree_root`` are listed: ``<cache>/<flow>/<folder>``, the
folder ``step-NN`` for a plan step's, ``scratch-…`` for a read-only flow's, the branch name for
``flow --branch``. A folder there that git no longer knows (its run was killed while making it)
is listed too, unregistered. The state comes from the step's newest run record (result.json
``chain``) in any checkout of the repository (they share the cache); a live run is the step's
lock held by a live process (this checkout's, or the one in the common git dir every checkout
takes), or an agent run recorded in the work tree whose supervisor lives (runs/lock.py, runs/liveness.py, runs/lost.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitflow_agents.base.atomic import real_path
from gitflow_agents.base.errors import GitflowError
from gitflow_agents.git import queries as git
from gitflow_agents.git.worktree import admin_dir, unpublished_commits
from gitflow_agents.plan.model import format_branch
from gitflow_agents.runs import RunPaths, iter_runs, read_json
from gitflow_agents.runs.lock import step_holder
from gitflow_agents.runs.lost import is_lost
from gitflow_agents.runs.schema import step_chain
from gitflow_agents.runs.status import LIVE_STATES

_STEP = re.compile(r"step-(\d+)\Z")
STATE_OF_OUTCOME: Mapping[str, str] = {  # keys: every StepOutcome
    "approved": "landed",
    "skipped": "landed",
    "rejected": "rejected",
    "failed": "failed",  # also rate limited (exit 6)
    "empty": "failed",
    "canceled": "failed",  # also interrupted (Ctrl-C, SIGTERM)
    "budget": "failed",  # as result.json's status: its work is kept on the branch
}
"""A step run's outcome (result.json ``chain.outcome``) as a work tree's state; approved but not
merged (``run --pr``: a pull request waits) is ``approved``. Only an outcome no version wrote
(a record edited by hand) is ``unknown``."""


@dataclass(frozen=True)
class ToolTree:
    """One work tree of the tool's own, as ``worktrees`` lists it."""

    path: Path
    flow: str
    step: int | None
    branch: str | None  # None: detached (a scratch work tree) or unregistered
    registered: bool  # git knows it as a work tree
    state: str  # running, failed, rejected, landed, approved, unknown
    live: bool  # a live run owns it
    size: int  # bytes on disk (links not followed)
    last_used: float  # epoch seconds: its last commit, reset or checkout
    run_id: str | None  # the step run whose record gives the state
    unpublished: int  # commits of its branch on neither the target nor a remote
    dirty: bool  # uncommitted changes or untracked files
    recorded_branch: bool  # a step run record names its branch: the tool made it

    def age(self, now: float | None = None) -> float:
        return max(0.0, (now or time.time()) - self.last_used)

    def to_json(self, now: float | None = None) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "flow": self.flow,
            "step": self.step,
            "branch": self.branch,
            "registered": self.registered,
            "state": self.state,
            "live": self.live,
            "sizeBytes": self.size,
            "ageSeconds": round(self.age(now)),
            "lastUsedAt": self.last_used,
            "runId": self.run_id,
            "unpublishedCommits": self.unpublished,
            "dirty": self.dirty,
        }


@dataclass(frozen=True)
class _Records:
    """What the run records of the repository say, read once for every work tree."""

    live_dirs: frozenset[Path]  # work dirs of agent runs whose supervisor lives
    steps: dict[tuple[str, int], tuple[str, str, str | None]]  # (flow, step) → newest record
    branches: dict[str, set[str]]  # flow → branches step run records name


def tool_trees(
    root: Path,
    flow_dir: str,
    target: str,
    branch_pattern: str | None = None,
    *,
    measure: bool = True,
) -> list[ToolTree]:
    """Every work tree under the repository's tool work-tree root, oldest use first. A step
    work tree's branch is the tool's when a step run record names it or it is the step's
    branch under ``branch_pattern`` (a run killed before it wrote its record). ``measure``
    False: sizes are not read (0), for a caller that needs none (``run``'s end without a size
    limit: a big ``node_modules`` takes a while to walk)."""
    common = git.git_common_dir(root)
    base = git.tool_worktree_root(root, common=common)
    every = git.worktrees(root)
    known = {real_path(p): b for p, b in every.items() if git.is_under_tool_root(base, p)}
    folders = set(known) | set(_cache_folders(base))
    if not folders:
        return []
    checkouts = [root, *(p for p in every if not git.is_under_tool_root(base, p))]
    records = _read_records(checkouts, flow_dir)
    trees = []
    for path in sorted(folders):
        tree = _tree(
            root, flow_dir, target, (base, common, path), known, records, branch_pattern, measure
        )
        if tree is not None:  # None: removed meanwhile (a run landed its step)
            trees.append(tree)
    return sorted(trees, key=lambda tree: tree.last_used)


def _cache_folders(base: Path) -> Iterator[Path]:
    """``<base>/<flow>/<folder>`` folders, registered or not."""
    if not base.is_dir():
        return
    for flow in base.iterdir():
        if flow.is_dir() and not flow.is_symlink():
            for folder in flow.iterdir():
                if not folder.is_symlink():
                    yield real_path(folder)


def _tree(
    root: Path,
    flow_dir: str,
    target: str,
    where: tuple[Path, Path, Path],
    known: dict[Path, str | None],
    records: _Records,
    branch_pattern: str | None,
    measure: bool,
) -> ToolTree | None:
    """The work tree at ``path``; None when it went away while it was read (a run landed its
    step and removed it between the listing and its ``git status``): nothing to list or do."""
    base, common, path = where
    parts = path.relative_to(real_path(base)).parts
    flow = parts[0] if len(parts) > 1 else ""
    match = _STEP.fullmatch(path.name)
    step = int(match.group(1)) if match else None
    branch = known.get(path)
    registered = path in known and (path / ".git").exists()  # not a folder removed by hand
    live = path in records.live_dirs or _lock_held(root, common, flow_dir, flow, step)
    state, run_id = "unknown", None
    found = records.steps.get((flow, step)) if step is not None else None
    if found is not None and (branch is None or found[2] in (None, branch)):
        state, run_id = found[0], found[1]
    try:
        dirty = bool(registered and git.dirty_paths(path))
    except GitflowError:  # git status failed (a CalledProcessError)
        if (path / ".git").exists():
            raise  # still there: git's error is the user's to see
        return None
    return ToolTree(
        path=path,
        flow=flow,
        step=step,
        branch=branch,
        registered=registered,
        state="running" if live else state,
        live=live,
        size=disk_usage(path) if measure else 0,
        last_used=_last_used(path, registered),
        run_id=run_id,
        unpublished=unpublished_commits(root, branch, target) if branch else 0,
        dirty=dirty,
        recorded_branch=branch is not None
        and (
            branch in records.branches.get(flow, set())
            or (step is not None and _step_branch(branch_pattern, flow, step) == branch)
        ),
    )


def _step_branch(pattern: str | None, flow: str, step: int) -> str | None:
    """The branch ``run`` makes for step ``step`` of the plan named ``flow`` under ``pattern``."""
    if pattern is None:
        return None
    try:
        return format_branch(pattern, flow, step)
    except (ValueError, KeyError, IndexError):
        return None


def _lock_held(root: Path, common: Path, flow_dir: str, flow: str, step: int | None) -> bool:
    """Whether a live process holds the step's lock (a step run in progress), this checkout's
    or the one every checkout of the repository sees (a run started in another checkout)."""
    if step is None or not flow:
        return False
    return step_holder(root, common, flow_dir, flow, step) is not None


def _read_records(checkouts: list[Path], flow_dir: str) -> _Records:
    """The run records of every checkout of the repository (this one first, then the others
    git knows: the main one, each ``git worktree add``), which share the cache's work trees;
    newest run last, whichever checkout ran it."""
    live: set[Path] = set()
    steps: dict[tuple[str, int], tuple[str, str, str | None]] = {}
    branches: dict[str, set[str]] = {}
    seen: set[Path] = set()
    found: list[RunPaths] = []
    for checkout in checkouts:
        if real_path(checkout) not in seen:
            seen.add(real_path(checkout))
            found.extend(iter_runs(checkout, flow_dir))
    for paths in sorted(found, key=lambda paths: paths.run_dir.name):  # run ids sort by time
        flow = paths.run_dir.parent.parent.name
        _live_dir(paths, live)
        result = read_json(paths.result) if paths.result.is_file() else None
        chain = step_chain(result) if result else None
        if chain is None or chain.step is None:
            continue
        if chain.branch:
            branches.setdefault(flow, set()).add(chain.branch)
        state = STATE_OF_OUTCOME.get(chain.outcome, "unknown")
        if chain.outcome == "approved" and chain.merged is None:
            state = "approved"
        steps[(flow, chain.step)] = (state, paths.run_dir.name, chain.branch)  # newest wins
    return _Records(frozenset(live), steps, branches)


def _live_dir(paths: RunPaths, live: set[Path]) -> None:
    """Add the work dir of the agent run at ``paths`` to ``live`` while a process runs it."""
    status = read_json(paths.status) if paths.status.is_file() else None
    if not status or status.get("state") not in LIVE_STATES or is_lost(status):
        return
    extra = status.get("extra")
    workdir = extra.get("workdir") if isinstance(extra, dict) else None
    if isinstance(workdir, str):
        live.add(real_path(Path(workdir)))


def disk_usage(path: Path) -> int:
    """Bytes ``path`` takes on disk (allocated blocks), symlinks not followed; 0 when gone."""
    total, stack = 0, [path]
    while stack:
        folder = stack.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    total += info.st_blocks * 512
                    if stat.S_ISDIR(info.st_mode):
                        stack.append(Path(entry.path))
    return total


def _last_used(path: Path, registered: bool) -> float:
    """When the work tree was last moved by git (its HEAD and HEAD's log: every commit, reset
    and checkout writes them; not the index, which a mere ``git status`` may rewrite), else the
    folder's own time."""
    times = []
    folder = admin_dir(path) if registered else None
    for candidate in (folder / "HEAD", folder / "logs" / "HEAD") if folder else ():
        with contextlib.suppress(OSError):
            times.append(candidate.stat().st_mtime)
    with contextlib.suppress(OSError):
        times.append(path.lstat().st_mtime)
    return max(times, default=0.0)


def cache_usage(root: Path) -> tuple[int, int]:
    """(work trees, bytes) of the repository's tool work-tree cache: ``status``'s line, without
    reading run records."""
    base = git.tool_worktree_root(root)
    folders = list(_cache_folders(base))
    return len(folders), sum(disk_usage(folder) for folder in folders)
