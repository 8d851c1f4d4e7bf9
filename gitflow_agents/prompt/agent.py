"""Which definition an agent's prompt is built from: an ``.agents-flow/`` agent when the
manifest has that agentId (the asset wins over a ``.flow/`` agent of the same name), else the
``.flow/`` config's agent (docs/prompt.md, "`.agents-flow/` agents")."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gitflow_agents.assets import AGENTS_FLOW_DIR, package_agent_prompt, require_runnable
from gitflow_agents.base.errors import ConfigError
from gitflow_agents.base.frontmatter import split_frontmatter
from gitflow_agents.prompt.paths import display_path
from gitflow_agents.prompt.request import Part
from gitflow_agents.prompt.text import clean

if TYPE_CHECKING:
    from gitflow_agents.assets import PromptAssetManifest
    from gitflow_agents.config import CompletionWorkflow
    from gitflow_agents.prompt.request import PromptRequest

BUILT_IN = "built-in"


class AgentDefinition(NamedTuple):
    type: str
    role: str | None
    frontmatter: str | None
    definition: str
    source: str
    layers: tuple[Part, ...]  # `.agents-flow/` layers inside the definition (empty for .flow)
    workflow: CompletionWorkflow


def resolve_agent(request: PromptRequest) -> AgentDefinition:
    """The agent's type, role, frontmatter and definition: from `.agents-flow/` when the
    manifest has that agentId (the asset reference wins), else from `.flow/`."""
    manifest = request.manifest
    if manifest is not None and (
        request.agent in manifest.agents
        or any(error.agent_id == request.agent for error in manifest.errors)
    ):
        return _manifest_agent(request.agent, manifest, request.config.completion_workflow)
    if request.agent not in request.config.agents:
        raise ConfigError(_unknown_agent(request.agent, request.config.agents, manifest))
    return _flow_agent(request)


def _unknown_agent(
    name: str, flow_agents: Iterable[str], manifest: PromptAssetManifest | None
) -> str:
    known = [f"{agent} (.flow)" for agent in sorted(flow_agents)]
    if manifest is not None:
        known += [f"{agent} (.agents-flow)" for agent in sorted(manifest.agents)]
    return f"unknown agent {name!r}; known agents: {', '.join(known) or 'none'}"


def _flow_agent(request: PromptRequest) -> AgentDefinition:
    config = request.config.agent(request.agent)
    source = _agent_source(request.root, request.agent, config.system_prompt_source)
    parsed = split_frontmatter(config.system_prompt, path=source)
    frontmatter = None
    if parsed.raw is not None:
        frontmatter = parsed.raw.replace("\r\n", "\n").rstrip("\n")
    return AgentDefinition(
        type=config.type,
        role=clean(config.description) if config.description else None,
        frontmatter=frontmatter,
        definition=parsed.body,
        source=source,
        layers=(),
        workflow=request.config.completion_workflow_for(request.agent),
    )


def _manifest_agent(
    agent_id: str, manifest: PromptAssetManifest, workflow: CompletionWorkflow
) -> AgentDefinition:
    """Agent Definition from `.agents-flow/`: the assembled package (global system prompt,
    instructions, skills, agent body); refuses an agent with manifest errors."""
    asset = require_runnable(agent_id, manifest)
    package = package_agent_prompt(agent_id, manifest)
    layers = tuple(
        Part(
            segment.content,
            segment.scope,
            segment.label,
            f"{AGENTS_FLOW_DIR}/{segment.source_path}",
        )
        for segment in package.segments
    )
    return AgentDefinition(
        type=agent_id,
        role=clean(asset.description) if asset.description else None,
        frontmatter=None,
        definition=package.prompt,
        source=f"{AGENTS_FLOW_DIR}/{asset.source_path}",
        layers=layers,
        workflow=workflow,
    )


def _agent_source(root: Path, name: str, source: str) -> str:
    """Where a `.flow/` agent's system prompt came from: a file (root-relative), a shipped
    file (``built-in:flow/...``), or the config key when it is inline or unset."""
    if source in ("", "inline"):
        return f"config:agents.{name}.system_prompt"
    if source.startswith(BUILT_IN):
        return source
    return display_path(root, Path(source))
