"""Agent CLI adapters and their registry.

Adding an agent CLI: write ``agents/<name>.py`` with a class satisfying ``base.Adapter`` and add one
line to ``ADAPTERS`` below (CONTRIBUTING.md).
"""

from __future__ import annotations

from gitflow_agents.agents.aider import AiderAdapter
from gitflow_agents.agents.auggie import AuggieAdapter
from gitflow_agents.agents.base import Adapter
from gitflow_agents.agents.claude import ClaudeAdapter
from gitflow_agents.agents.codex import CodexAdapter
from gitflow_agents.agents.command import CommandAdapter
from gitflow_agents.agents.gemini import GeminiAdapter
from gitflow_agents.agents.opencode import OpencodeAdapter
from gitflow_agents.errors import UsageError

ADAPTERS: dict[str, Adapter] = {
    "claude": ClaudeAdapter(),
    "codex": CodexAdapter(),
    "gemini": GeminiAdapter(),
    "aider": AiderAdapter(),
    "auggie": AuggieAdapter(),
    "opencode": OpencodeAdapter(),
    "command": CommandAdapter(),
}


def get_adapter(name: str) -> Adapter:
    """The adapter registered as ``name``; UsageError listing the known ones otherwise."""
    try:
        return ADAPTERS[name]
    except KeyError:
        known = ", ".join(sorted(ADAPTERS)) or "(none)"
        raise UsageError(f"unknown agent adapter {name!r}; known adapters: {known}") from None
