"""What gc decides for each work tree (``chain/gc.py`` ``decide``): the age and size limits,
oldest first, and what is never removed whatever the limits say; and a work tree that a run
removes while ``worktrees`` or ``gc`` reads it (``chain/trees.py``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gitflow_agents.chain import trees as tree_list
from gitflow_agents.chain.gc import GcOptions, collect, decide
from gitflow_agents.chain.trees import ToolTree, tool_trees
from gitflow_agents.git import queries as g
from tests.conftest import git

DAY = 86400.0


def tree(
    step: int, *, days: float, size: int, live: bool = False, unpublished: int = 0
) -> ToolTree:
    return ToolTree(
        path=Path(f"/cache/repo/plan/step-{step:02d}"),
        flow="plan",
        step=step,
        branch=f"agents/plan/step-{step}",
        registered=True,
        state="failed",
        live=live,
        size=size,
        last_used=time.time() - days * DAY,
        run_id=None,
        unpublished=unpublished,
        dirty=False,
        recorded_branch=True,
    )


def removed(trees: list[ToolTree], options: GcOptions) -> list[int | None]:
    return [v.tree.step for v in decide(trees, options, "main") if v.removed]


def test_older_than_keeps_recent_trees_and_max_size_takes_the_oldest_of_them() -> None:
    trees = [tree(1, days=20, size=100), tree(2, days=5, size=300), tree(3, days=1, size=300)]
    assert removed(trees, GcOptions(older_than=14 * DAY)) == [1]
    assert removed(trees, GcOptions(older_than=14 * DAY, max_size=350)) == [1, 2]
    assert removed(trees, GcOptions(older_than=14 * DAY, max_size=700)) == [1]
    assert removed(trees, GcOptions(older_than=float("inf"), max_size=300)) == [1, 2]
    assert removed(trees, GcOptions()) == [1, 2, 3]  # no limit given: any age


def test_live_and_unmerged_trees_stay_whatever_the_limits() -> None:
    trees = [tree(1, days=30, size=900, live=True), tree(2, days=30, size=900, unpublished=2)]
    assert removed(trees, GcOptions(max_size=0)) == []
    verdicts = decide(trees, GcOptions(force=True), "main")
    assert [(v.tree.step, v.removed) for v in verdicts] == [(1, False), (2, True)]
    assert (
        "2 commits of agents/plan/step-2 on neither main nor a remote"
        in decide(trees, GcOptions(), "main")[1].why
    )


def test_a_tree_a_run_removes_between_the_listing_and_its_status_is_skipped(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``worktrees`` polled while ``run --all --jobs N`` lands steps exited 2 with git's raw
    ``fatal: cannot change to '…/step-03'``: the landed step's tree went between the listing
    and ``git status`` in it. It is left out (gc: nothing to do for it); the others stay."""
    base = g.tool_worktree_root(repo)
    for step in (2, 3):
        git(repo, "branch", f"agents/plan/step-{step}")
        g.add_worktree(repo, base / "plan" / f"step-{step:02d}", f"agents/plan/step-{step}")
    (base / "plan" / "step-02" / "left.txt").write_text("uncommitted\n")
    dirty_paths = g.dirty_paths

    def landed_meanwhile(path: Path) -> tuple[str, ...]:  # listed, then removed by a run
        if path.name == "step-03" and path.exists():
            git(repo, "worktree", "remove", "--force", str(path))
        return dirty_paths(path)

    monkeypatch.setattr(tree_list.git, "dirty_paths", landed_meanwhile)
    (listed,) = tool_trees(repo, "flows", "main")
    assert listed.step == 2 and listed.dirty and listed.registered
    g.add_worktree(repo, base / "plan" / "step-03", "agents/plan/step-3")
    verdicts = collect(repo, "flows", "main", GcOptions(force=True))
    assert [(v.tree.step, v.removed) for v in verdicts] == [(2, True)]
    assert not (base / "plan").exists() and g.branch_sha(repo, "agents/plan/step-3") is not None
