"""The values of a scanned ``.agents-flow/`` folder: assets, manifest errors, the manifest.

Every ``source_path`` here is relative to ``.agents-flow/``. The folder layout and every
frontmatter key are described in docs/agents-flow-assets.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

AGENTS_FLOW_DIR = ".agents-flow"
GLOBAL_SYSTEM_PROMPT_FILE = "global-system-prompt.md"
AGENT_SUFFIX = ".agent.md"
INSTRUCTION_SUFFIX = ".instructions.md"
SKILL_FILE = "SKILL.md"
DEFAULT_ADAPTER_KIND = "pi-mono"

OutputKind = Literal["text", "plan", "score"]
TurnMode = Literal["normal", "plan", "evaluate", "summarize"]
ManifestErrorCode = Literal[
    "duplicate_agent_id",
    "duplicate_instruction_name",
    "missing_include",
    "invalid_frontmatter",
    "file_read_error",
]
OUTPUT_KINDS: tuple[OutputKind, ...] = get_args(OutputKind)
TURN_MODES: tuple[TurnMode, ...] = get_args(TurnMode)


@dataclass(frozen=True)
class AgentIncludes:
    instructions: tuple[str, ...] = ()  # instruction names (frontmatter ``name``)
    skills: tuple[str, ...] = ()  # skill folder names
    global_system_prompt: bool = True


@dataclass(frozen=True)
class ResolvedAgentAsset:
    agent_id: str
    name: str
    description: str
    output_kind: OutputKind
    adapter_kind: str = DEFAULT_ADAPTER_KIND
    model: str | None = None
    temperature: float | None = None
    turn_mode: TurnMode = "normal"
    tools: tuple[str, ...] = ()
    user_invocable: bool = False
    argument_hint: str | None = None
    includes: AgentIncludes = AgentIncludes()
    body: str = ""
    source_path: str = ""


@dataclass(frozen=True)
class ResolvedInstructionAsset:
    filename: str
    name: str
    description: str
    apply_to: str | None  # parsed, not wired (MVP)
    content: str
    source_path: str


@dataclass(frozen=True)
class ResolvedSkillAsset:
    folder_name: str
    name: str
    description: str
    argument_hint: str | None
    content: str
    source_path: str


@dataclass(frozen=True)
class ManifestError:
    code: ManifestErrorCode
    message: str  # located: ".agents-flow/<source_path>:<line>: <key>: <what is wrong>"
    source_path: str | None = None  # relative to .agents-flow/
    agent_id: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.message} [{self.code}]"


@dataclass(frozen=True)
class PromptAssetManifest:
    global_system_prompt: str | None = None
    agents: Mapping[str, ResolvedAgentAsset] = field(default_factory=dict)  # by agent_id
    instructions: Mapping[str, ResolvedInstructionAsset] = field(default_factory=dict)  # by name
    skills: Mapping[str, ResolvedSkillAsset] = field(default_factory=dict)  # by folder name
    errors: tuple[ManifestError, ...] = ()
    # Errors that block each agent: its own and those of the assets it includes.
    agent_errors: Mapping[str, tuple[ManifestError, ...]] = field(default_factory=dict)
