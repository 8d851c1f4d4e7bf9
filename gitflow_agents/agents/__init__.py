"""Agent CLI adapters and their registry.

Adding an agent CLI: write ``agents/<name>.py`` with a class satisfying ``base.Adapter`` and add one
line to ``ADAPTERS`` below (CONTRIBUTING.md).
"""

from __future__ import annotations

from gitflow_agents.agents.base import Adapter
from gitflow_agents.errors import UsageError

ADAPTERS: dict[str, Adapter] = {}


def get_adapter(name: str) -> Adapter:
    """The adapter registered as ``name``; UsageError listing the known ones otherwise."""
    try:
        return ADAPTERS[name]
    except KeyError:
        known = ", ".join(sorted(ADAPTERS)) or "(none)"
        raise UsageError(f"unknown agent adapter {name!r}; known adapters: {known}") from None
