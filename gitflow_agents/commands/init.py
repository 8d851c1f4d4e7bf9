"""``gitflow-agents init``: scaffold `.flow/` (config, templates, agents) and an example plan.

Copies the shipped ``templates/flow/`` files into the project root (the nearest folder with
``.flow/`` or ``.git``). An existing file is never overwritten unless ``--force`` is given, so
running ``init`` twice is safe. Every write is atomic (temp file + ``os.replace``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from gitflow_agents.config import find_project_root, scaffold_files


def run(args: argparse.Namespace) -> int:
    root = find_project_root()
    force = bool(getattr(args, "force", False))
    for source, dest in scaffold_files():
        target = root / dest
        if target.exists() and not force:
            print(f"skip {dest} (exists)")
            continue
        _write_atomic(target, source.read_bytes())
        print(f"write {dest}")
    return 0


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` through a temp file in the same folder, then ``os.replace`` it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        tmp.chmod(0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
