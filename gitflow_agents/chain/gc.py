"""Removing the tool's own work trees nobody needs: ``gitflow-agents gc``, and ``run`` at its end
with the ``chain.gc`` policy (docs/chains.md, "Work trees that go away").

A work tree goes only when all of these hold: gitflow-agents made it (``chain/trees.py`` lists
nothing else); no live run owns it (the step's lock, taken here for the removal, so no run
starts in it meanwhile; a lost run's leftover processes are killed first, as a new run of the
step would); and, unless ``--force``, nothing in it exists nowhere else: no commit of its branch
that is on neither the target nor a remote, no uncommitted change. Its branch goes with it when
a step run record names that branch (the tool made it); a branch of the user's
(``flow --branch``) stays. ``older_than`` keeps what was used more recently; ``max_size`` then
removes what is left, oldest first, until the cache fits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gitflow_agents.base.errors import GitflowError
from gitflow_agents.chain.trees import ToolTree, tool_trees
from gitflow_agents.config import load_flow_config
from gitflow_agents.config.values import FlowConfig, GcPolicy
from gitflow_agents.git import queries as git
from gitflow_agents.runs import lock as locks
from gitflow_agents.runs import new_run_id, runs_root
from gitflow_agents.runs.lost import kill_recorded_tree, lost_in, mark_ended


@dataclass(frozen=True)
class GcOptions:
    older_than: float | None = None  # seconds unused; None: any age
    max_size: int | None = None  # bytes the cache may keep; None: any
    force: bool = False  # also trees whose branch has commits found nowhere else
    dry_run: bool = False
    kill_grace: float = 3.0


@dataclass(frozen=True)
class Verdict:
    """What gc does (or would do) with one work tree, and why."""

    tree: ToolTree
    removed: bool
    branch_deleted: bool
    why: str


def collect(
    root: Path,
    flow_dir: str,
    target: str,
    options: GcOptions,
    branch_pattern: str | None = None,
    *,
    measure: bool = True,
) -> list[Verdict]:
    """Decide for every work tree of the tool's own, then (unless ``dry_run``) remove those that
    go; the verdicts, oldest tree first (``measure``: as for ``tool_trees``; a size limit
    always measures)."""
    measure = measure or options.max_size is not None
    trees = tool_trees(root, flow_dir, target, branch_pattern, measure=measure)
    verdicts = decide(trees, options, target)
    if options.dry_run:
        return verdicts
    return [
        _apply(root, flow_dir, verdict, options) if verdict.removed else verdict
        for verdict in verdicts
    ]


def decide(trees: list[ToolTree], options: GcOptions, target: str) -> list[Verdict]:
    """The verdict for each of ``trees`` (oldest first) under ``options``, nothing touched."""
    verdicts: list[Verdict] = []
    young: list[int] = []  # kept only for their age: the size limit may still take them
    for tree in trees:
        kept = _kept_because(tree, options, target)
        if kept is None and options.older_than is not None and tree.age() < options.older_than:
            kept = "used recently"
            young.append(len(verdicts))
        branch = kept is None and _deletes_branch(tree, options)
        verdicts.append(Verdict(tree, kept is None, branch, kept or _going(tree, branch)))
    if options.max_size is not None:
        left = sum(v.tree.size for v in verdicts if not v.removed)
        for index in young:
            if left <= options.max_size:
                break
            tree = verdicts[index].tree
            branch = _deletes_branch(tree, options)
            verdicts[index] = Verdict(tree, True, branch, _going(tree, branch) + " (size limit)")
            left -= tree.size
    return verdicts


def _kept_because(tree: ToolTree, options: GcOptions, target: str) -> str | None:
    if tree.live:
        return "a live run owns it"
    if options.force:
        return None
    if tree.unpublished:
        many = "commit" if tree.unpublished == 1 else "commits"
        return (
            f"{tree.unpublished} {many} of {tree.branch} on neither {target} nor a remote "
            "(--force removes them)"
        )
    if tree.dirty:
        return "uncommitted changes (--force removes them)"
    return None


def _deletes_branch(tree: ToolTree, options: GcOptions) -> bool:
    return tree.recorded_branch and (options.force or not tree.unpublished)


def _going(tree: ToolTree, branch: bool) -> str:
    return f"removed with its branch {tree.branch}" if branch else "removed"


def _apply(root: Path, flow_dir: str, verdict: Verdict, options: GcOptions) -> Verdict:
    """Remove the tree (and its branch) under the step's lock; a kept verdict when a run took
    the step meanwhile or a lost run's processes could not be killed."""
    tree = verdict.tree
    try:
        with _step_lock(root, flow_dir, tree):
            left = _kill_lost(root, flow_dir, tree, options.kill_grace)
            if left:
                pids = ", ".join(map(str, left))
                return Verdict(tree, False, False, f"a lost run's processes survive ({pids})")
            git.remove_tool_worktree(root, tree.path)
            if verdict.branch_deleted and tree.branch is not None:
                git.delete_branch(root, tree.branch)
            with contextlib.suppress(OSError):
                tree.path.parent.rmdir()  # the flow's folder of the cache, once empty
    except GitflowError as exc:  # the step's lock: a run started in the meantime
        return Verdict(tree, False, False, f"kept: {exc}")
    return verdict


@contextlib.contextmanager
def _step_lock(root: Path, flow_dir: str, tree: ToolTree) -> Iterator[None]:
    if tree.step is None or not tree.flow:
        yield
        return
    common = git.git_common_dir(root)
    with locks.hold_step(root, common, flow_dir, tree.flow, tree.step, f"gc-{new_run_id()}"):
        yield


def _kill_lost(root: Path, flow_dir: str, tree: ToolTree, grace: float) -> tuple[int, ...]:
    """Kill every lost run (its supervisor died) still recorded as working in ``tree``; the
    pids that survived. The record of one ended says what it spent, priced as the project's
    config prices it (read once one is found: most work trees have none)."""
    if not tree.flow:
        return ()
    survivors: list[int] = []
    config: FlowConfig | None = None
    for paths, status in lost_in(runs_root(root, flow_dir, tree.flow), tree.path):
        left = kill_recorded_tree(status, grace=grace)
        survivors.extend(left)
        if not left:
            config = config or load_flow_config(root)
            reason = "lost (its supervisor died); killed by gitflow-agents gc"
            mark_ended(paths, status, reason, config)
    return tuple(survivors)


def apply_policy(
    root: Path,
    flow_dir: str,
    target: str,
    policy: GcPolicy,
    kill_grace: float = 3.0,
    branch_pattern: str | None = None,
) -> list[Verdict]:
    """``run``'s end: remove what ``chain.gc`` says may go (``older_than`` None: no age is
    old enough, only ``max_size`` removes); the removals."""
    if policy.older_than is None and policy.max_size is None:
        return []
    older = policy.older_than if policy.older_than is not None else float("inf")
    options = GcOptions(older_than=older, max_size=policy.max_size, kill_grace=kill_grace)
    verdicts = collect(root, flow_dir, target, options, branch_pattern, measure=False)
    return [verdict for verdict in verdicts if verdict.removed]
