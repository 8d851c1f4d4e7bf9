"""Letting ``git agent-review --help`` find its man page (docs/review.md, "Help").

git answers ``git agent-review --help`` itself, without running our script: it runs
``git help agent-review``, which runs ``man git-agent-review``. man looks in ``<dir>/../share/man``
for each ``<dir>`` on PATH. pip (in a virtualenv or ``--user``) and pipx put the page the wheel
ships there; ``uv tool install`` leaves it inside the tool's own environment (astral-sh/uv#4731),
so man finds nothing. Each run of either command links the shipped page next to the
``git-agent-review`` that PATH finds, when no page is there and ``<dir>/../share`` exists (as
pipx links it at install time), so from then on ``--help`` shows it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping

from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:  # pathlib costs milliseconds at start-up; the fast path is string operations
    from pathlib import Path

PAGE = "git-agent-review.1"


def shipped_page() -> Path | None:
    """The page this installation ships: the wheel's ``share/man/man1`` (its data folder), else
    ``docs/man/`` of a checkout."""
    import sysconfig
    from pathlib import Path

    for root in (sysconfig.get_path("data"), sys.prefix):
        candidate = Path(root) / "share" / "man" / "man1" / PAGE
        if candidate.is_file():
            return candidate
    checkout = Path(__file__).resolve().parents[2] / "docs" / "man" / PAGE
    return checkout if checkout.is_file() else None


def ensure_reachable(environ: Mapping[str, str] | None = None) -> Path | None:
    """Link the shipped page where man looks for the ``git-agent-review`` on PATH, unless a page
    is there already or ``<dir>/../share`` does not exist. Returns the link made, else None.
    Never raises: a place we may not read or write just stays as it is. Runs at every start-up,
    so the usual case (nothing to do) is a few ``access`` calls."""
    env = os.environ if environ is None else environ
    if os.name != "posix":
        return None
    try:
        prefix = _prefix_on_path(env.get("PATH") or "")
        share = f"{prefix}/share"
        if prefix is None or not os.access(share, os.F_OK):
            return None
        if os.access(f"{share}/man/man1/{PAGE}", os.F_OK):
            # a page is there (pipx's link, the user's own): it stays; a dangling link (its
            # tool uninstalled) does not count, and is replaced
            return None
        return _link(share)
    except OSError:
        return None


def _prefix_on_path(path: str) -> str | None:
    """The folder above the first PATH folder with an executable ``git-agent-review`` (the one
    git runs); absolute PATH folders only, as man derives its search path from those."""
    for folder in path.split(os.pathsep):
        folder = folder.rstrip("/")
        if folder.startswith("/") and os.access(f"{folder}/git-agent-review", os.X_OK):
            return folder.rpartition("/")[0]
    return None


def _link(share: str) -> Path | None:
    from pathlib import Path

    page = shipped_page()
    if page is None:
        return None
    target = Path(share) / "man" / "man1" / PAGE
    temp = target.with_name(f".{PAGE}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temp.unlink(missing_ok=True)
        temp.symlink_to(page)
        temp.replace(target)  # atomic: man never sees a half-made link
    finally:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
    return target
