"""``gitflow-agents gc [--older-than DURATION] [--dry-run] [--force] [--json]``: remove the work
trees (and step branches) gitflow-agents made that nobody needs: never one a live run owns,
never one whose branch has commits found nowhere else unless ``--force`` (``chain/gc.py``;
docs/chains.md, "Work trees that go away")."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.units import DURATION_FORMS, bytes_text, parse_duration


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.chain.gc import GcOptions, collect
    from gitflow_agents.config import load_flow_config, repository_project

    older_than = None
    if args.older_than is not None:
        older_than = parse_duration(args.older_than)
        if older_than is None:
            text = args.older_than  # cut as argparse's values are (cli.Parser)
            shown = text if len(text) <= 20 else f"{text[:20]}…"
            raise UsageError(f"--older-than {shown!r}: expected {DURATION_FORMS}")
    root = repository_project(Path.cwd())
    config = load_flow_config(root)
    target = config.chain.target or config.default_branch
    options = GcOptions(older_than=older_than, force=args.force, dry_run=args.dry_run)
    verdicts = collect(root, config.flow_dir, target, options, config.chain.branch_pattern)
    freed = sum(v.tree.size for v in verdicts if v.removed)
    if args.json:
        trees = [
            {
                **v.tree.to_json(),
                "removed": v.removed,
                "branchDeleted": v.branch_deleted,
                "why": v.why,
            }
            for v in verdicts
        ]
        print(json.dumps({"dryRun": args.dry_run, "freedBytes": freed, "trees": trees}, indent=2))
        return 0
    going = "would remove" if args.dry_run else "removed"
    for v in verdicts:
        tree = v.tree
        what = f"{tree.flow} step {tree.step}" if tree.step is not None else tree.path.name
        size = bytes_text(tree.size)
        if v.removed:
            branch = f", with its branch {tree.branch}" if v.branch_deleted else ""
            limit = " (size limit)" if v.why.endswith("(size limit)") else ""
            print(f"{going}: {what} ({size}{branch}){limit} {tree.path}")
        else:
            print(f"kept: {what} ({size}) {tree.path}: {v.why}")
    removed = sum(1 for v in verdicts if v.removed)
    kept = len(verdicts) - removed
    many = "work tree" if removed == 1 else "work trees"
    print(f"{going} {removed} {many} ({bytes_text(freed)}), kept {kept}")
    return 0
