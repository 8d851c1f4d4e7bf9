"""Whether output gets colour: ``--color``, then ``NO_COLOR``, then ``FORCE_COLOR``, then the
terminal (README, "Colour").

``--color always|never`` decides outright. With ``auto`` (the default) a non-empty ``NO_COLOR``
turns colour off (no-color.org), else a non-empty ``FORCE_COLOR`` turns it on even when the output
is not a terminal (force-color.org: CI logs), else colour goes to a terminal whose ``TERM`` is not
``dumb``. An empty variable counts as unset. rich reads both variables itself, with a different
rule for an empty ``FORCE_COLOR`` (rich: no terminal at all), so every rich console we make gets
explicit settings (``rich_settings``) and rich reads neither.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import IO, Any

CHOICES = ("auto", "always", "never")

_choice = "auto"


def choose(choice: str) -> None:
    """Set the ``--color`` choice for this process (``cli.dispatch`` does, once)."""
    global _choice
    if choice not in CHOICES:
        raise ValueError(f"--color takes one of {', '.join(CHOICES)}, not {choice!r}")
    _choice = choice


def use_color(
    stream: IO[str], environ: Mapping[str, str] | None = None, choice: str | None = None
) -> bool:
    """Whether text written to ``stream`` gets colour (the rule in the module docstring)."""
    choice = _choice if choice is None else choice
    if choice != "auto":
        return choice == "always"
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    try:
        tty = stream.isatty()
    except ValueError:  # closed
        return False
    return tty and env.get("TERM", "") != "dumb"


def rich_settings(color: bool) -> dict[str, Any]:
    """Keyword arguments for ``rich.console.Console`` that settle colour our way, so rich's own
    reading of ``NO_COLOR`` / ``FORCE_COLOR`` / ``TTY_COMPATIBLE`` never overrides it."""
    return {"no_color": not color, "color_system": "standard" if color else None}
