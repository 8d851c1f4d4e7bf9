"""``gitflow-agents init``: scaffold `.flow/` (config, templates, agents) and an example plan.

Copies the shipped ``templates/flow/`` files into the project root (the nearest folder with
``.flow/`` or ``.git``), plus the JSON Schema generated from the config shape. An existing file is never overwritten unless ``--force`` is given, so
running ``init`` twice is safe. Every write is atomic (temp file + ``os.replace``).
"""

from __future__ import annotations

import argparse

from gitflow_agents.base.fsutil import write_bytes_atomic
from gitflow_agents.config import find_project_root, scaffold_files


def run(args: argparse.Namespace) -> int:
    root = find_project_root()
    force = bool(getattr(args, "force", False))
    for file in scaffold_files():
        target = root / file.dest
        if target.exists() and not force:
            print(f"skip {file.dest} (exists)")
            continue
        write_bytes_atomic(target, file.content())
        print(f"write {file.dest}")
    return 0
