"""An ``.agents-flow/`` agent's prompt, assembled from its layers, each part attributed to its file.

The layers, in order: the global system prompt, the included instructions, the included skills,
the agent's body (docs/agents-flow-assets.md, "Assembly order"). ``gitflow-agents prompt``
places the result in the "Agent Definition" section of the system prompt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from gitflow_agents.assets.manifest import require_runnable
from gitflow_agents.assets.model import (
    GLOBAL_SYSTEM_PROMPT_FILE,
    PromptAssetManifest,
    ResolvedAgentAsset,
)

# Layers of the assembled prompt are joined by one blank line.
SEGMENT_SEPARATOR = "\n\n"

SegmentScope = Literal["global-system-prompt", "instruction", "skill", "agent-body"]


@dataclass(frozen=True)
class PromptSegment:
    scope: SegmentScope
    label: str
    source_path: str  # relative to .agents-flow/
    content: str


@dataclass(frozen=True)
class PromptPackage:
    prompt: str  # the segments' contents joined by SEGMENT_SEPARATOR
    segments: tuple[PromptSegment, ...]


def assemble_segments(
    agent: ResolvedAgentAsset, manifest: PromptAssetManifest
) -> tuple[PromptSegment, ...]:
    """The layers in order: global system prompt, instructions, skills, agent body. Each
    instruction and skill appears once (first occurrence); a layer with no text adds no
    segment."""
    segments: list[PromptSegment] = []

    def add(scope: SegmentScope, label: str, source_path: str, content: str | None) -> None:
        if content is not None and content.strip():
            segments.append(PromptSegment(scope, label, source_path, content))

    if agent.includes.global_system_prompt:
        add(
            "global-system-prompt",
            "Global system prompt",
            GLOBAL_SYSTEM_PROMPT_FILE,
            manifest.global_system_prompt,
        )
    for name in dict.fromkeys(agent.includes.instructions):
        instruction = manifest.instructions.get(name)
        if instruction is not None:
            add("instruction", instruction.name, instruction.source_path, instruction.content)
    for folder in dict.fromkeys(agent.includes.skills):
        skill = manifest.skills.get(folder)
        if skill is not None:
            add("skill", skill.name, skill.source_path, skill.content)
    add("agent-body", agent.name, agent.source_path, agent.body)
    return tuple(segments)


def join_segments(segments: Iterable[PromptSegment]) -> str:
    """The prompt text: segment contents joined by one blank line."""
    return SEGMENT_SEPARATOR.join(segment.content for segment in segments)


def package_agent_prompt(agent_id: str, manifest: PromptAssetManifest) -> PromptPackage:
    """The assembled prompt of ``agent_id``; ConfigError listing the errors when the agent is
    missing or has manifest errors (``require_runnable``)."""
    agent = require_runnable(agent_id, manifest)
    segments = assemble_segments(agent, manifest)
    return PromptPackage(prompt=join_segments(segments), segments=segments)
