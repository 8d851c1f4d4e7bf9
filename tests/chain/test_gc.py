"""What gc decides for each work tree (``chain/gc.py`` ``decide``): the age and size limits,
oldest first, and what is never removed whatever the limits say."""

from __future__ import annotations

import time
from pathlib import Path

from gitflow_agents.chain.gc import GcOptions, decide
from gitflow_agents.chain.trees import ToolTree

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
