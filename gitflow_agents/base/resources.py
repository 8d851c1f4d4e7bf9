"""Where the shipped Jinja templates live: inside the wheel, or at the checkout's top level."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


@cache
def templates_dir() -> Path:
    """The ``templates/`` folder: ``gitflow_agents/templates`` in an installed wheel,
    ``<checkout>/templates`` when running from a source tree or an editable install."""
    for candidate in (_PACKAGE_DIR / "templates", _PACKAGE_DIR.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(str(_PACKAGE_DIR / "templates"))
