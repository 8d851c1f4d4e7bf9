"""``.agents-flow/`` prompt assets: scan and check them (``manifest``), assemble an agent's
prompt from them (``assemble``). The user-facing rules are in docs/agents-flow-assets.md."""

from __future__ import annotations

from gitflow_agents.assets.assemble import (
    PromptPackage,
    PromptSegment,
    assemble_segments,
    join_segments,
    package_agent_prompt,
)
from gitflow_agents.assets.manifest import errors_for_agent, load_manifest, require_runnable
from gitflow_agents.assets.model import (
    AGENTS_FLOW_DIR,
    AgentIncludes,
    ManifestError,
    PromptAssetManifest,
    ResolvedAgentAsset,
    ResolvedInstructionAsset,
    ResolvedSkillAsset,
)

__all__ = [
    "AGENTS_FLOW_DIR",
    "AgentIncludes",
    "ManifestError",
    "PromptAssetManifest",
    "PromptPackage",
    "PromptSegment",
    "ResolvedAgentAsset",
    "ResolvedInstructionAsset",
    "ResolvedSkillAsset",
    "assemble_segments",
    "errors_for_agent",
    "join_segments",
    "load_manifest",
    "package_agent_prompt",
    "require_runnable",
]
