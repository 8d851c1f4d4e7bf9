"""``gitflow-agents worktrees [--json]``: the work trees gitflow-agents made for this repository,
with the step, branch, state, size on disk, age and whether a live run owns each
(``chain/trees.py``; docs/chains.md, "Work trees that go away")."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from gitflow_agents.base.units import bytes_text, duration_text


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.chain.trees import tool_trees
    from gitflow_agents.config import load_flow_config, repository_project
    from gitflow_agents.git import queries as git

    root = repository_project(Path.cwd())
    config = load_flow_config(root)
    target = config.chain.target or config.default_branch
    trees = tool_trees(root, config.flow_dir, target, config.chain.branch_pattern)
    now = time.time()
    if args.json:
        print(json.dumps([tree.to_json(now) for tree in trees], indent=2))
        return 0
    where = git.tool_worktree_root(root)
    if not trees:
        print(f"no work trees of gitflow-agents for this repository (under {where})")
        return 0
    rows = [("STEP", "BRANCH", "STATE", "SIZE", "AGE", "LIVE", "PATH")]
    for tree in trees:
        step = f"{tree.flow} {tree.step}" if tree.step is not None else tree.flow or "-"
        branch = tree.branch or ("(detached)" if tree.registered else "(unregistered)")
        live = "yes" if tree.live else "no"
        size, age = bytes_text(tree.size), duration_text(tree.age(now)) if tree.last_used else "-"
        rows.append((step, branch, tree.state, size, age, live, str(tree.path)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        print("  ".join([*cells, row[-1]]))
    total = sum(tree.size for tree in trees)
    many = "work tree" if len(trees) == 1 else "work trees"
    print(f"{len(trees)} {many}, {bytes_text(total)} under {where}")
    return 0
