"""Where the tool keeps what it may throw away: ``$XDG_CACHE_HOME/gitflow-agents``, the one
reader of the XDG variables (the step work trees of ``git/worktree.py``, the crash log of
``base/crash.py``).

The XDG Base Directory specification: "All paths set in these environment variables must be
absolute. If an implementation encounters a relative path in any of these variables it should
consider the path invalid and ignore it." So a relative value (``XDG_CACHE_HOME: .cache`` in a
CI job) counts as unset, never as a folder under the current directory: the step work trees
would land inside the repository, and the tool would refuse to remove them as not its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

TOOL = "gitflow-agents"


def cache_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME`` when it is an absolute path, else ``~/.cache``."""
    value = (os.environ if environ is None else environ).get("XDG_CACHE_HOME", "")
    return Path(value) if os.path.isabs(value) else Path.home() / ".cache"  # noqa: PTH117


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The tool's cache folder: ``<cache_home>/gitflow-agents``."""
    return cache_home(environ) / TOOL
