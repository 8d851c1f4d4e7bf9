"""Agent CLI adapters and their registry.

``ADAPTERS`` is the one list of agent CLIs: config validation and the JSON Schema ``init`` writes
read their names from it (``adapter_names``). Adding an agent CLI: write ``agents/<name>.py``
with a class satisfying ``base.Adapter``, import it here and add its line to ``ADAPTERS``
(CONTRIBUTING.md).
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
from gitflow_agents.agents.patch import PatchAdapter
from gitflow_agents.base.errors import UsageError

ADAPTERS: dict[str, Adapter] = {
    "claude": ClaudeAdapter(),
    "codex": CodexAdapter(),
    "gemini": GeminiAdapter(),
    "aider": AiderAdapter(),
    "auggie": AuggieAdapter(),
    "opencode": OpencodeAdapter(),
    "command": CommandAdapter(),
    "patch": PatchAdapter(),
}

BUILTIN = "builtin"
"""``adapter: builtin``: the offline reviewer, which runs in process (no CLI, no ``Adapter``)."""


def adapter_names() -> tuple[str, ...]:
    """Every value ``agents.<name>.adapter`` accepts: the registered CLIs, then ``builtin``."""
    return (*ADAPTERS, BUILTIN)


def get_adapter(name: str) -> Adapter:
    """The adapter registered as ``name``; UsageError listing the known ones otherwise."""
    try:
        return ADAPTERS[name]
    except KeyError:
        known = ", ".join(sorted(ADAPTERS)) or "(none)"
        raise UsageError(f"unknown agent adapter {name!r}; known adapters: {known}") from None
