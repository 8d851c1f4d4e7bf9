"""What decides one agent's system prompt (``PromptRequest``), and what comes out of it:
the text and its attributed segments (``AssembledPrompt``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from gitflow_agents.assets import PromptAssetManifest
    from gitflow_agents.config import FlowConfig
    from gitflow_agents.plan import Plan


@dataclass(frozen=True)
class Segment:
    """One attributed part of the prompt: which layer (scope) and file (source) it came from.

    ``source`` is a path relative to the project root, ``config:<file>:<key>``, ``cli:--<option>``
    or ``built-in`` (text of the shipped template).
    """

    scope: str
    label: str
    source: str
    content: str

    @property
    def line_count(self) -> int:
        # Only "\n" ends a line here (str.splitlines would also split on \u2028 and friends).
        return self.content.count("\n") + (not self.content.endswith("\n") and bool(self.content))


@dataclass(frozen=True)
class AssembledPrompt:
    text: str
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class PromptRequest:
    """Everything that decides one agent's system prompt.

    ``agent`` is a `.flow/` agent key or an `.agents-flow/` agentId. ``agent_id`` is the agent's
    unique name in the flow (default ``step-NN-<agent>``, or ``<agent>`` without a step);
    ``flow_name`` defaults to the plan's name, else the agent. ``timestamp`` defaults to now.
    ``changed``: the paths the change under review touches (an agent reviewer), which decide
    the ``applyTo`` instructions attached (``prompt/apply_to.py``); None: not known.
    """

    root: Path
    config: FlowConfig
    agent: str
    agent_id: str | None = None
    flow_name: str | None = None
    step: int | None = None
    plan: Plan | None = None
    task: str | None = None
    after: tuple[str, ...] = ()
    preamble: str | None = None
    timestamp: datetime | None = None
    manifest: PromptAssetManifest | None = None
    template_dir: Path | None = None
    changed: tuple[str, ...] | None = None


class Part(NamedTuple):
    """A piece expected inside a rendered section, used to cut the section into segments."""

    text: str
    scope: str
    label: str
    source: str
