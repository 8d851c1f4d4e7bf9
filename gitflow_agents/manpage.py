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
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

PAGE = "git-agent-review.1"


def shipped_page() -> Path | None:
    """The page this installation ships: the wheel's ``share/man/man1`` (its data folder), else
    ``docs/man/`` of a checkout."""
    import sysconfig

    for root in (sysconfig.get_path("data"), sys.prefix):
        candidate = Path(root) / "share" / "man" / "man1" / PAGE
        if candidate.is_file():
            return candidate
    checkout = Path(__file__).resolve().parent.parent / "docs" / "man" / PAGE
    return checkout if checkout.is_file() else None


def ensure_reachable(environ: Mapping[str, str] | None = None) -> Path | None:
    """Link the shipped page where man looks for the ``git-agent-review`` on PATH, unless a page
    is there already or ``<dir>/../share`` does not exist. Returns the link made, else None.
    Never raises: a place we may not read or write just stays as it is."""
    env = os.environ if environ is None else environ
    if os.name != "posix":
        return None
    try:
        return _link(shutil.which("git-agent-review", path=env.get("PATH")))
    except OSError:
        return None


def _link(script: str | None) -> Path | None:
    if script is None:
        return None
    share = Path(script).parent.parent / "share"
    target = share / "man" / "man1" / PAGE
    if target.exists() or not share.is_dir():
        # a page is there (pipx's link, the user's own): it stays; a dangling link (its tool
        # uninstalled) is replaced
        return None
    page = shipped_page()
    if page is None:
        return None
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
