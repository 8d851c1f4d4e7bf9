"""``.agents-flow/`` prompt assets (seed 003): scan, validate, and assemble prompts in six layers.

Layout under the project root::

    .agents-flow/
      global-system-prompt.md            repo-wide baseline prompt (no frontmatter)
      agents/*.agent.md                  agent definitions (frontmatter + body)
      instructions/*.instructions.md     instruction fragments, referenced by their ``name``
      skills/<name>/SKILL.md             skills, referenced by their folder name

``load_manifest`` never raises for bad assets: it collects ``ManifestError`` values, and an
agent with errors (its own, or those of what it includes) refuses to run (``require_runnable``).
Every ``source_path`` here is relative to ``.agents-flow/``; messages use the path from the
project root (``.agents-flow/agents/x.agent.md:3: ...``) so they can be clicked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Protocol, get_args

from gitflow_agents.errors import ConfigError, InputError, UsageError, format_location
from gitflow_agents.frontmatter import Frontmatter, split_frontmatter

AGENTS_FLOW_DIR = ".agents-flow"
GLOBAL_SYSTEM_PROMPT_FILE = "global-system-prompt.md"
AGENT_SUFFIX = ".agent.md"
INSTRUCTION_SUFFIX = ".instructions.md"
SKILL_FILE = "SKILL.md"
BUILT_IN_ADAPTER_ID = "built-in"
DEFAULT_ADAPTER_KIND = "pi-mono"
# Layers of the assembled prompt are joined by one blank line.
SEGMENT_SEPARATOR = "\n\n"

OutputKind = Literal["text", "plan", "score"]
TurnMode = Literal["normal", "plan", "evaluate", "summarize"]
ManifestErrorCode = Literal[
    "duplicate_agent_id",
    "duplicate_instruction_name",
    "missing_include",
    "invalid_frontmatter",
    "file_read_error",
]
SegmentScope = Literal[
    "global-system-prompt", "instruction", "skill", "agent-body", "node-config", "run-input"
]
OUTPUT_KINDS: tuple[OutputKind, ...] = get_args(OutputKind)
TURN_MODES: tuple[TurnMode, ...] = get_args(TurnMode)


# --- values -------------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class PromptSegment:
    scope: SegmentScope
    label: str
    source_path: str  # relative to .agents-flow/ ("node.config" / "run.input" for those layers)
    content: str


@dataclass(frozen=True)
class ExpectedOutput:
    schema_ref: str
    schema: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The seed's camelCase shape: ``{"schemaRef": ..., "schema": ...}``."""
        out: dict[str, Any] = {"schemaRef": self.schema_ref}
        if self.schema is not None:
            out["schema"] = json.loads(json.dumps(self.schema))
        return out


@dataclass(frozen=True)
class ProviderPromptPackage:
    prompt: str
    expected_output: ExpectedOutput | None
    turn_mode: TurnMode
    output_kind: OutputKind
    segments: tuple[PromptSegment, ...]


@dataclass(frozen=True)
class NodeConfigOverrides:
    system_prompt: str | None = None
    user_prompt: str | None = None


@dataclass(frozen=True)
class RunInputData:
    user_prompt: str | None = None
    data: Any = None  # a string goes in as is; anything else as a JSON block
    previous_result: Any = None


@dataclass(frozen=True)
class AgentDropdownItem:
    agent_id: str
    name: str
    description: str
    adapter_kind: str
    output_kind: OutputKind
    has_errors: bool


# --- output kinds -------------------------------------------------------------------------------


def output_ports(output_kind: OutputKind) -> tuple[str, ...]:
    """Ports the runtime publishes to: always ``out`` and ``result``, plus ``plan`` / ``score``."""
    extra = {"text": (), "plan": ("plan",), "score": ("score",)}[output_kind]
    return ("out", "result", *extra)


def expected_output(output_kind: OutputKind) -> ExpectedOutput | None:
    """Seed table: plan -> schemaRef "plan"; score -> schemaRef "score" + schema; text -> None."""
    if output_kind == "plan":
        return ExpectedOutput(schema_ref="plan")
    if output_kind == "score":
        return ExpectedOutput(
            schema_ref="score",
            schema={
                "type": "object",
                "properties": {
                    "score": {"type": "number"},
                    "canComplete": {"type": "boolean"},
                    "reason": {"type": "string"},
                },
            },
        )
    return None


# --- scanning -----------------------------------------------------------------------------------


def load_manifest(root: Path) -> PromptAssetManifest:
    """Scan ``root/.agents-flow``; an absent folder gives an empty manifest. Never raises for
    bad assets: problems become ``ManifestError`` values in ``errors``."""
    base = root / AGENTS_FLOW_DIR
    if not base.exists():
        return PromptAssetManifest()
    scan = _Scan(base)
    if not base.is_dir():
        scan.error("file_read_error", "", None, "is not a directory")
        return scan.manifest()
    scan.global_prompt()
    for path in _entries(scan, base / "instructions", "instructions"):
        if path.name.endswith(INSTRUCTION_SUFFIX):
            scan.instruction(path)
    for path in _entries(scan, base / "skills", "skills"):
        if path.is_dir() and not path.name.startswith("."):
            scan.skill(path)
    for path in _entries(scan, base / "agents", "agents"):
        if path.name.endswith(AGENT_SUFFIX):
            scan.agent(path)
    scan.check_includes()
    return scan.manifest()


def _entries(scan: _Scan, folder: Path, rel: str) -> list[Path]:
    if not folder.exists():
        return []
    try:
        return sorted(folder.iterdir())
    except OSError as exc:
        scan.error("file_read_error", rel, None, f"cannot list folder: {exc.strerror or exc}")
        return []


_AGENT_ID_LINE = re.compile(r"^agentId:[ \t]*[\"']?([\w.:-]+)[\"']?[ \t]*$", re.MULTILINE)


class _Scan:
    """Mutable state of one scan; ``manifest()`` freezes it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.global_system_prompt: str | None = None
        self.agents: dict[str, ResolvedAgentAsset] = {}
        self.agent_lines: dict[str, dict[str, int]] = {}
        self.instructions: dict[str, ResolvedInstructionAsset] = {}
        self.instruction_paths: dict[str, list[str]] = {}  # name -> every file declaring it
        self.instruction_stems: dict[str, str] = {}  # filename stem -> source path
        self.skills: dict[str, ResolvedSkillAsset] = {}
        self.errors: list[ManifestError] = []

    # errors

    def error(
        self,
        code: ManifestErrorCode,
        source_path: str,
        line: int | None,
        detail: str,
        *,
        agent_id: str | None = None,
        key: str | None = None,
    ) -> None:
        where = f"{AGENTS_FLOW_DIR}/{source_path}" if source_path else AGENTS_FLOW_DIR
        message = format_location(where, line, key) + detail
        self.errors.append(ManifestError(code, message, source_path or None, agent_id, line))

    def read(self, path: Path) -> str | None:
        rel = self.rel(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            self.error("file_read_error", rel, None, f"cannot read file: {exc.strerror or exc}")
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            self.error(
                "file_read_error",
                rel,
                line,
                f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            )
            return None
        return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")

    def rel(self, path: Path) -> str:
        return path.relative_to(self.base).as_posix()

    def frontmatter(self, path: Path, *, agent_file: bool = False) -> Frontmatter | None:
        text = self.read(path)
        if text is None:
            return None
        rel = self.rel(path)
        try:
            front = split_frontmatter(text, path=f"{AGENTS_FLOW_DIR}/{rel}")
        except InputError as exc:
            # Attribute the error to the agent when its agentId line is still readable, so
            # asking for that agent lists this error instead of "unknown agent".
            agent_id = _AGENT_ID_LINE.search(text) if agent_file else None
            self.error(
                "invalid_frontmatter",
                rel,
                exc.line,
                exc.detail,
                agent_id=agent_id.group(1) if agent_id else None,
            )
            return None
        if front.raw is None:
            self.error(
                "invalid_frontmatter",
                rel,
                1,
                "missing frontmatter: the file must start with a '---' line, YAML "
                "(name, description, ...), and a closing '---' line",
            )
            return None
        return front

    # the four kinds of asset

    def global_prompt(self) -> None:
        path = self.base / GLOBAL_SYSTEM_PROMPT_FILE
        if path.exists():
            text = self.read(path)
            if text is not None:
                self.global_system_prompt = _trim(text)

    def instruction(self, path: Path) -> None:
        rel = self.rel(path)
        self.instruction_stems[path.name.removesuffix(INSTRUCTION_SUFFIX)] = rel
        front = self.frontmatter(path)
        if front is None:
            return
        fields = _Fields(self, front, rel, None)
        name = fields.text("name", required=True)
        description = fields.text("description", required=True)
        apply_to = fields.text("applyTo")
        if name is None:
            return
        self.instruction_paths.setdefault(name, []).append(rel)
        kept = self.instructions.get(name)
        if kept is not None:
            self.error(
                "duplicate_instruction_name",
                rel,
                fields.line("name"),
                f"instruction name {name!r} is already used by "
                f"{AGENTS_FLOW_DIR}/{kept.source_path}; instruction names must be unique",
                key="name",
            )
            return
        self.instructions[name] = ResolvedInstructionAsset(
            filename=path.name,
            name=name,
            description=description or "",
            apply_to=apply_to,
            content=_trim(front.body),
            source_path=rel,
        )

    def skill(self, folder: Path) -> None:
        path = folder / SKILL_FILE
        rel = self.rel(path)
        if not path.exists():
            self.error("file_read_error", rel, None, f"skill folder has no {SKILL_FILE}")
            return
        front = self.frontmatter(path)
        if front is None:
            return
        fields = _Fields(self, front, rel, None)
        name = fields.text("name", required=True)
        description = fields.text("description", required=True)
        argument_hint = fields.text("argumentHint")
        self.skills[folder.name] = ResolvedSkillAsset(
            folder_name=folder.name,
            name=name or folder.name,
            description=description or "",
            argument_hint=argument_hint,
            content=_trim(front.body),
            source_path=rel,
        )

    def agent(self, path: Path) -> None:
        rel = self.rel(path)
        front = self.frontmatter(path, agent_file=True)
        if front is None:
            return
        # The agentId first, so every later error is attributed to the agent.
        agent_id = front.data.get("agentId")
        known_id = agent_id.strip() if isinstance(agent_id, str) and agent_id.strip() else None
        fields = _Fields(self, front, rel, known_id)
        fields.text("agentId", required=True)
        kept = self.agents.get(known_id) if known_id else None
        if known_id and kept is not None:
            fields.error(
                "agentId",
                f"agentId {known_id!r} is already defined in "
                f"{AGENTS_FLOW_DIR}/{kept.source_path}; agentIds must be unique",
                code="duplicate_agent_id",
            )
        asset = ResolvedAgentAsset(
            agent_id=known_id or "",
            name=fields.text("name", required=True) or known_id or "",
            description=fields.text("description", required=True) or "",
            output_kind=_output_kind(fields),
            adapter_kind=fields.text("adapterKind") or DEFAULT_ADAPTER_KIND,
            model=fields.text("model"),
            temperature=_temperature(fields),
            turn_mode=fields.choice("turnMode", TURN_MODES) or "normal",
            tools=fields.strings("tools"),
            user_invocable=fields.flag("userInvocable", default=False),
            argument_hint=fields.text("argumentHint"),
            includes=_includes(fields),
            body=_trim(front.body),
            source_path=rel,
        )
        if known_id and kept is None:
            self.agents[known_id] = asset
            self.agent_lines[known_id] = fields.lines

    # cross-file checks

    def check_includes(self) -> None:
        for agent in self.agents.values():
            lines = self.agent_lines[agent.agent_id]
            for index, name in enumerate(agent.includes.instructions):
                if name not in self.instructions:
                    self.error(
                        "missing_include",
                        agent.source_path,
                        lines.get(f"includes.instructions.{index}"),
                        f"includes.instructions: no instruction named {name!r}"
                        + self._instruction_hint(name),
                        agent_id=agent.agent_id,
                    )
            for index, folder in enumerate(agent.includes.skills):
                if folder not in self.skills:
                    known = ", ".join(sorted(self.skills)) or "none"
                    self.error(
                        "missing_include",
                        agent.source_path,
                        lines.get(f"includes.skills.{index}"),
                        f"includes.skills: no skill folder {folder!r} "
                        f"(expected {AGENTS_FLOW_DIR}/skills/{folder}/{SKILL_FILE}; "
                        f"known: {known})",
                        agent_id=agent.agent_id,
                    )

    def _instruction_hint(self, name: str) -> str:
        stem_path = self.instruction_stems.get(name)
        if stem_path is not None:
            declared = [n for n, a in self.instructions.items() if a.source_path == stem_path]
            if declared:
                return (
                    f" (instructions are referenced by their frontmatter name, not the file "
                    f"name: {AGENTS_FLOW_DIR}/{stem_path} is named {declared[0]!r})"
                )
            return f" ({AGENTS_FLOW_DIR}/{stem_path} has errors and was not loaded)"
        known = ", ".join(sorted(self.instructions)) or "none"
        return f" (known: {known})"

    def manifest(self) -> PromptAssetManifest:
        errors = tuple(self.errors)
        per_agent: dict[str, tuple[ManifestError, ...]] = {}
        for agent in self.agents.values():
            paths = {agent.source_path}
            for name in agent.includes.instructions:
                paths.update(self.instruction_paths.get(name, ()))
            for folder in agent.includes.skills:
                skill = self.skills.get(folder)
                paths.add(skill.source_path if skill else f"skills/{folder}/{SKILL_FILE}")
            per_agent[agent.agent_id] = tuple(
                e for e in errors if e.agent_id == agent.agent_id or e.source_path in paths
            )
        return PromptAssetManifest(
            global_system_prompt=self.global_system_prompt,
            agents=MappingProxyType(dict(self.agents)),
            instructions=MappingProxyType(dict(self.instructions)),
            skills=MappingProxyType(dict(self.skills)),
            errors=errors,
            agent_errors=MappingProxyType(per_agent),
        )


class _Fields:
    """Typed reads of frontmatter keys; a wrong value becomes an ``invalid_frontmatter`` error
    at the key's line and the read returns None (the caller uses the default)."""

    def __init__(self, scan: _Scan, front: Frontmatter, rel: str, agent_id: str | None) -> None:
        self.scan = scan
        self.data = front.data
        self.lines = front.key_lines()
        self.rel = rel
        self.agent_id = agent_id

    def line(self, key: str) -> int:
        return self.lines.get(key, 1)

    def error(
        self, key: str, detail: str, *, code: ManifestErrorCode = "invalid_frontmatter"
    ) -> None:
        self.scan.error(code, self.rel, self.line(key), detail, agent_id=self.agent_id, key=key)

    def get(self, key: str) -> Any:
        return _lookup(self.data, key)

    def text(self, key: str, *, required: bool = False) -> str | None:
        value = self.get(key)
        if value is None:
            if required:
                self.scan.error(
                    "invalid_frontmatter",
                    self.rel,
                    1,
                    f"required key {key!r} is missing",
                    agent_id=self.agent_id,
                )
            return None
        if not isinstance(value, str) or (required and not value.strip()):
            self.error(key, f"must be a non-empty string, got {_describe(value)}")
            return None
        return value.strip() if required else value

    def choice(self, key: str, allowed: tuple[str, ...]) -> Any:
        value = self.get(key)
        if value is None:
            return None
        if value not in allowed:
            self.error(key, f"must be one of {', '.join(allowed)}; got {_describe(value)}")
            return None
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.error(key, f"must be a list of strings, got {_describe(value)}")
            return ()
        return tuple(value)

    def flag(self, key: str, *, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.error(key, f"must be true or false, got {_describe(value)}")
            return default
        return value


def _lookup(data: Mapping[str, Any], key: str) -> Any:
    """``a.b`` reads the nested ``{a: {b: ...}}`` or, failing that, a literal ``a.b:`` key."""
    if "." in key:
        head, _, rest = key.partition(".")
        nested = data.get(head)
        if isinstance(nested, Mapping) and rest in nested:
            return nested[rest]
    return data.get(key)


def _output_kind(fields: _Fields) -> OutputKind:
    nested = fields.data.get("output")
    dotted = fields.data.get("output.kind")
    if nested is not None and not isinstance(nested, Mapping):
        fields.error("output", f"must be a mapping with a 'kind' key, got {_describe(nested)}")
        nested = None
    if isinstance(nested, Mapping):
        for key in nested:
            if key != "kind":
                fields.error(f"output.{key}", "unknown key (output takes only 'kind')")
    nested_kind = nested.get("kind") if isinstance(nested, Mapping) else None
    if nested_kind is not None and dotted is not None and nested_kind != dotted:
        fields.error(
            "output.kind", f"given twice with different values: {nested_kind!r} and {dotted!r}"
        )
        return "text"
    value = nested_kind if nested_kind is not None else dotted
    if value is None:
        fields.scan.error(
            "invalid_frontmatter",
            fields.rel,
            1,
            "required key 'output.kind' is missing (one of text, plan, score)",
            agent_id=fields.agent_id,
        )
        return "text"
    if value not in OUTPUT_KINDS:
        fields.error("output.kind", f"must be one of text, plan, score; got {_describe(value)}")
        return "text"
    kind: OutputKind = value
    return kind


def _temperature(fields: _Fields) -> float | None:
    value = fields.get("temperature")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 2:
        fields.error("temperature", f"must be a number from 0 to 2, got {_describe(value)}")
        return None
    return float(value)


_INCLUDE_KEYS = ("instructions", "skills", "globalSystemPrompt")


def _includes(fields: _Fields) -> AgentIncludes:
    value = fields.get("includes")
    if value is None:
        return AgentIncludes()
    if not isinstance(value, Mapping):
        fields.error("includes", f"must be a mapping, got {_describe(value)}")
        return AgentIncludes()
    for key in value:
        if key not in _INCLUDE_KEYS:
            fields.error(
                f"includes.{key}", f"unknown key (expected one of {', '.join(_INCLUDE_KEYS)})"
            )
    return AgentIncludes(
        instructions=fields.strings("includes.instructions"),
        skills=fields.strings("includes.skills"),
        global_system_prompt=fields.flag("includes.globalSystemPrompt", default=True),
    )


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return f"a list ({value!r})"
    if isinstance(value, Mapping):
        return "a mapping"
    return repr(value)


_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


def _trim(text: str) -> str:
    """Drop leading blank lines and trailing whitespace (keeps a first line's indentation)."""
    return _LEADING_BLANK_LINES.sub("", text).rstrip()


# --- errors per agent, and the run gate ---------------------------------------------------------


def errors_for_agent(manifest: PromptAssetManifest, agent_id: str) -> tuple[ManifestError, ...]:
    """The manifest errors that block ``agent_id``: those of its file, of files declaring its
    agentId, and of the instructions and skills it includes (missing ones included)."""
    stored = manifest.agent_errors.get(agent_id, ())
    extra = tuple(e for e in manifest.errors if e.agent_id == agent_id and e not in stored)
    return stored + extra


def require_runnable(agent_id: str, manifest: PromptAssetManifest) -> ResolvedAgentAsset:
    """The agent, if it can run; else ConfigError naming it and listing every error, one a line."""
    agent = manifest.agents.get(agent_id)
    if agent is None:
        # An agent whose file failed to load can still be named by its errors.
        unloaded = tuple(e for e in manifest.errors if e.agent_id == agent_id)
        if unloaded:
            raise ConfigError(
                _refusal(agent_id, unloaded), path=f"{AGENTS_FLOW_DIR}/{unloaded[0].source_path}"
            )
        known = ", ".join(sorted(manifest.agents)) or "none"
        raise ConfigError(
            f"no agent with agentId {agent_id!r} in {AGENTS_FLOW_DIR}/agents/ (known: {known})",
            path=f"{AGENTS_FLOW_DIR}/agents",
            key="agentRef",
        )
    errors = errors_for_agent(manifest, agent_id)
    if errors:
        raise ConfigError(_refusal(agent_id, errors), path=f"{AGENTS_FLOW_DIR}/{agent.source_path}")
    return agent


def _refusal(agent_id: str, errors: tuple[ManifestError, ...]) -> str:
    count = f"{len(errors)} manifest error{'s' if len(errors) != 1 else ''}"
    return f"agent {agent_id!r} has {count} and refuses to run:" + "".join(
        f"\n  - {error}" for error in errors
    )


# --- node binding -------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeRef:
    agent_ref: str | None = None  # an agentId from .agents-flow/agents/*.agent.md
    agent_id: str | None = None  # a key of the flow's agent definitions


@dataclass(frozen=True)
class NodeAgentBinding:
    via: Literal["agentRef", "agentId"]
    agent_id: str
    adapter_kind: str
    output_kind: OutputKind | None  # None: use the turnMode-based ports (backward compatible)
    asset: ResolvedAgentAsset | None = None  # set when bound through agentRef
    agent_def: Any = None  # set when bound through agentId


def resolve_node_agent(
    node: NodeRef, manifest: PromptAssetManifest, agent_defs: Mapping[str, Any]
) -> NodeAgentBinding:
    """Bind a flow node to its agent: ``agentRef`` (manifest) wins over ``agentId`` (agent defs).

    ConfigError when the agentRef names no manifest agent or that agent has manifest errors,
    when the agentId names no agent definition, or when the node names neither.
    """
    if node.agent_ref is not None:
        asset = require_runnable(node.agent_ref, manifest)
        return NodeAgentBinding(
            via="agentRef",
            agent_id=asset.agent_id,
            adapter_kind=asset.adapter_kind,
            output_kind=asset.output_kind,
            asset=asset,
        )
    if node.agent_id is None:
        raise ConfigError("node names no agent: set agentRef or agentId", key="agentId")
    if node.agent_id not in agent_defs:
        known = ", ".join(sorted(agent_defs)) or "none"
        raise ConfigError(f"no agent definition {node.agent_id!r} (known: {known})", key="agentId")
    agent_def = agent_defs[node.agent_id]
    adapter_kind = _def_field(agent_def, ("adapterKind", "adapter_kind", "adapter"))
    output_kind = _def_field(agent_def, ("outputKind", "output_kind"))
    if output_kind is not None and output_kind not in OUTPUT_KINDS:
        raise ConfigError(
            f"outputKind must be one of text, plan, score; got {output_kind!r}",
            key=f"agents.{node.agent_id}.outputKind",
        )
    return NodeAgentBinding(
        via="agentId",
        agent_id=node.agent_id,
        adapter_kind=adapter_kind if isinstance(adapter_kind, str) else DEFAULT_ADAPTER_KIND,
        output_kind=output_kind,
        agent_def=agent_def,
    )


def _def_field(agent_def: Any, names: Iterable[str]) -> Any:
    for name in names:
        if isinstance(agent_def, Mapping):
            if agent_def.get(name) is not None:
                return agent_def[name]
        elif getattr(agent_def, name, None) is not None:
            return getattr(agent_def, name)
    return None


# --- provider adapters --------------------------------------------------------------------------


class ProviderAdapter(Protocol):
    adapter_id: str

    def package_prompt(
        self,
        agent_id: str,
        manifest: PromptAssetManifest,
        node_config: NodeConfigOverrides | None = None,
        run_input: RunInputData | None = None,
    ) -> ProviderPromptPackage | None: ...

    def is_resolvable(self, agent_id: str, manifest: PromptAssetManifest) -> bool: ...

    def get_dropdown_items(
        self, manifest: PromptAssetManifest
    ) -> tuple[AgentDropdownItem, ...]: ...


class BuiltInProviderAdapter:
    """The six-layer assembly of seed 003; the default adapter, always registered."""

    adapter_id = BUILT_IN_ADAPTER_ID

    def package_prompt(
        self,
        agent_id: str,
        manifest: PromptAssetManifest,
        node_config: NodeConfigOverrides | None = None,
        run_input: RunInputData | None = None,
    ) -> ProviderPromptPackage | None:
        """None when the agent is missing or has manifest errors (see ``require_runnable``)."""
        if not self.is_resolvable(agent_id, manifest):
            return None
        agent = manifest.agents[agent_id]
        segments = assemble_segments(agent, manifest, node_config, run_input)
        return ProviderPromptPackage(
            prompt=join_segments(segments),
            expected_output=expected_output(agent.output_kind),
            turn_mode=agent.turn_mode,
            output_kind=agent.output_kind,
            segments=segments,
        )

    def is_resolvable(self, agent_id: str, manifest: PromptAssetManifest) -> bool:
        return agent_id in manifest.agents and not errors_for_agent(manifest, agent_id)

    def get_dropdown_items(self, manifest: PromptAssetManifest) -> tuple[AgentDropdownItem, ...]:
        return tuple(
            AgentDropdownItem(
                agent_id=agent.agent_id,
                name=agent.name,
                description=agent.description,
                adapter_kind=agent.adapter_kind,
                output_kind=agent.output_kind,
                has_errors=bool(errors_for_agent(manifest, agent.agent_id)),
            )
            for agent in manifest.agents.values()
        )


def assemble_segments(
    agent: ResolvedAgentAsset,
    manifest: PromptAssetManifest,
    node_config: NodeConfigOverrides | None = None,
    run_input: RunInputData | None = None,
) -> tuple[PromptSegment, ...]:
    """The six layers in order: global system prompt, instructions, skills, agent body,
    node config, run input. Each instruction and skill appears once (first occurrence);
    a layer with no text adds no segment."""
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
    if node_config is not None:
        add("node-config", "systemPrompt", "node.config", node_config.system_prompt)
        add("node-config", "userPrompt", "node.config", node_config.user_prompt)
    if run_input is not None:
        add("run-input", "userPrompt", "run.input", run_input.user_prompt)
        add("run-input", "data", "run.input", _render_value("Input Data", run_input.data))
        add(
            "run-input",
            "previousResult",
            "run.input",
            _render_value("Previous Result", run_input.previous_result),
        )
    return tuple(segments)


def join_segments(segments: Iterable[PromptSegment]) -> str:
    """The prompt text: segment contents joined by one blank line."""
    return SEGMENT_SEPARATOR.join(segment.content for segment in segments)


def _render_value(heading: str, value: Any) -> str | None:
    """A string as is under a heading; anything else as a JSON block."""
    if value is None:
        return None
    if isinstance(value, str):
        return f"## {heading}\n\n{value}" if value.strip() else None
    rendered = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return f"## {heading}\n\n```json\n{rendered}\n```"


class ProviderAdapterRegistry:
    """Adapters by id. The built-in adapter is pre-registered, cannot be unregistered, and is
    what ``resolve`` returns for an unknown adapter kind (e.g. the default "pi-mono")."""

    def __init__(self) -> None:
        self._adapters: dict[str, ProviderAdapter] = {BUILT_IN_ADAPTER_ID: BuiltInProviderAdapter()}

    def register(self, adapter: ProviderAdapter) -> None:
        if adapter.adapter_id in self._adapters:
            raise UsageError(f"provider adapter {adapter.adapter_id!r} is already registered")
        self._adapters[adapter.adapter_id] = adapter

    def unregister(self, adapter_id: str) -> None:
        if adapter_id == BUILT_IN_ADAPTER_ID:
            raise UsageError("the built-in provider adapter cannot be unregistered")
        if adapter_id not in self._adapters:
            raise UsageError(f"no provider adapter {adapter_id!r} is registered")
        del self._adapters[adapter_id]

    def has(self, adapter_id: str) -> bool:
        return adapter_id in self._adapters

    def get(self, adapter_id: str) -> ProviderAdapter | None:
        return self._adapters.get(adapter_id)

    def resolve(self, adapter_kind: str) -> ProviderAdapter:
        return self._adapters.get(adapter_kind) or self._adapters[BUILT_IN_ADAPTER_ID]

    def list_adapter_ids(self) -> list[str]:
        return list(self._adapters)

    def package_prompt(
        self,
        adapter_kind: str,
        agent_id: str,
        manifest: PromptAssetManifest,
        node_config: NodeConfigOverrides | None = None,
        run_input: RunInputData | None = None,
    ) -> ProviderPromptPackage | None:
        return self.resolve(adapter_kind).package_prompt(agent_id, manifest, node_config, run_input)


# The application-wide registry (custom adapters register here at start-up).
PROVIDER_ADAPTERS = ProviderAdapterRegistry()


def package_agent_prompt(
    agent_id: str,
    manifest: PromptAssetManifest,
    node_config: NodeConfigOverrides | None = None,
    run_input: RunInputData | None = None,
    *,
    registry: ProviderAdapterRegistry = PROVIDER_ADAPTERS,
) -> ProviderPromptPackage:
    """Package ``agent_id`` with the adapter its ``adapterKind`` names; ConfigError listing the
    errors when the agent is missing or has manifest errors (never returns None)."""
    agent = require_runnable(agent_id, manifest)
    package = registry.package_prompt(
        agent.adapter_kind, agent_id, manifest, node_config, run_input
    )
    if package is None:
        raise ConfigError(
            f"provider adapter {registry.resolve(agent.adapter_kind).adapter_id!r} "
            f"could not package agent {agent_id!r}",
            path=f"{AGENTS_FLOW_DIR}/{agent.source_path}",
        )
    return package


__all__ = [
    "AGENTS_FLOW_DIR",
    "PROVIDER_ADAPTERS",
    "AgentDropdownItem",
    "AgentIncludes",
    "BuiltInProviderAdapter",
    "ExpectedOutput",
    "ManifestError",
    "NodeAgentBinding",
    "NodeConfigOverrides",
    "NodeRef",
    "PromptAssetManifest",
    "PromptSegment",
    "ProviderAdapter",
    "ProviderAdapterRegistry",
    "ProviderPromptPackage",
    "ResolvedAgentAsset",
    "ResolvedInstructionAsset",
    "ResolvedSkillAsset",
    "RunInputData",
    "assemble_segments",
    "errors_for_agent",
    "expected_output",
    "join_segments",
    "load_manifest",
    "output_ports",
    "package_agent_prompt",
    "require_runnable",
    "resolve_node_agent",
]
