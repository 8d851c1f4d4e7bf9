"""Flow configuration: `.flow/` YAML layers, merged, validated and resolved into frozen values.

Layers, later wins: ``.flow/base.yaml`` -> ``.flow/<flow_type>/base.yaml`` ->
``.flow/<flow_type>/<variant>.yaml``. Scalars are replaced, mappings merge key by key, lists are
concatenated (duplicates dropped); ``agents.<name>.command`` is one argv and is replaced whole.
Each file is validated on its own, so every error names the file, the line and the key path:
``.flow/base.yaml:12: agents.builder.model: expected a string, got a list``.

``@path`` values (completion templates, system prompts, write templates) are read from files
relative to the project root; ``@@text`` is the literal ``@text``. When no config file is read at
all, the shipped ``templates/flow/`` files stand in for the project's `.flow/` (the same files
``gitflow-agents init`` copies), so every command works before ``init``.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

from gitflow_agents.errors import ConfigError
from gitflow_agents.plan import SpecPlanConfig, compile_step_pattern
from gitflow_agents.resources import templates_dir

FLOW_DIR_NAME = ".flow"
BASE_FILE = "base.yaml"
SCHEMA_FILE = "flow-config.schema.json"
BUILT_IN = "built-in"
INLINE = "inline"

# Seed 000's system-resolved {variables}; shared file paths may use only these.
TEMPLATE_VARIABLES: tuple[str, ...] = (
    "flow_name",
    "flow_dir",
    "agent_name",
    "agent_type",
    "step",
    "step_title",
    "plan_name",
    "specs_folder",
    "timestamp",
    "report_file",
    "success_file",
    "failed_file",
)

# The line the implementation report carries under "## Modified files"; after the agent
# finishes, the tool replaces it with the git statistics it computed (never the agent).
GIT_STATS_MARKER = "<!-- gitflow-agents:git-stats -->"

ADAPTER_NAMES: tuple[str, ...] = (
    "claude",
    "codex",
    "gemini",
    "aider",
    "auggie",
    "opencode",
    "command",
    "builtin",
)
DEFAULT_ADAPTER = "claude"

DEFAULT_FLOW_DIR = "flows"
DEFAULT_BRANCH = "main"
DEFAULT_SPECS_FOLDER = "specs"
DEFAULT_STUCK_TIMEOUT_SECS = 1200
DEFAULT_MAX_WAIT_SECS = 3600
DEFAULT_STUCK_RETRY_GRACE_SECS = 30
DEFAULT_REPORT_FILENAME = "report.md"
DEFAULT_SUCCESS_SUFFIX = ".complete.md"
DEFAULT_FAILURE_SUFFIX = ".failed.md"
DEFAULT_BRANCH_PATTERN = "agents/{plan_name}/step-{step}"
# The placeholders a chain's step branch name may use ({plan} is short for {plan_name}; {step2}
# is the step number zero-padded to two digits).
BRANCH_PLACEHOLDERS: tuple[str, ...] = ("plan_name", "plan", "step", "step2")
MERGE_MODES: tuple[str, ...] = ("ff", "merge")
SEVERITIES: tuple[str, ...] = ("error", "warn", "info")

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


# --------------------------------------------------------------------------------------------
# The values other modules use


@dataclass(frozen=True)
class CompletionWorkflow:
    """How agents report progress and signal completion (seed 000 "Completion Workflow")."""

    template: str  # resolved text, {variables} still in it
    template_source: str  # root-relative path, "built-in:flow/<file>" (shipped), or "inline"
    report_filename: str = DEFAULT_REPORT_FILENAME
    success_suffix: str = DEFAULT_SUCCESS_SUFFIX
    failure_suffix: str = DEFAULT_FAILURE_SUFFIX

    @property
    def success_filename(self) -> str:
        """``report.md`` + ``.complete.md`` -> ``report.complete.md``."""
        return _stem(self.report_filename) + self.success_suffix

    @property
    def failed_filename(self) -> str:
        """``report.md`` + ``.failed.md`` -> ``report.failed.md``."""
        return _stem(self.report_filename) + self.failure_suffix


@dataclass(frozen=True)
class AgentConfig:
    """One ``agents.<name>`` entry."""

    name: str  # the key under agents:
    type: str  # defaults to the name
    adapter: str = DEFAULT_ADAPTER
    command: tuple[str, ...] | None = None  # argv for the `command` adapter only
    model: str | None = None
    system_prompt: str = ""  # resolved text; may START with a YAML frontmatter block
    system_prompt_source: str = ""  # like template_source; "" when unset
    description: str | None = None  # shown as "Role" in the prompt
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    allow_env: tuple[str, ...] = ()  # also present in options["allow_env"] for the adapters
    completion_template: str | None = None  # per-agent override of completion_workflow.template
    completion_template_source: str | None = None
    structured_reply: bool = True  # seed 004 reply instructions in the prompt (docs/prompt.md)


@dataclass(frozen=True)
class SharedFile:
    """One ``shared_files.<key>`` entry."""

    key: str
    path: str  # unresolved; may contain {variables}
    info: str = ""
    writable: bool = False
    write_template: str | None = None  # resolved text; may contain {variables}
    agents: tuple[str, ...] = ()  # agent names or types it is shown to; empty = every agent
    source: str = ""  # "<config file>:<line>" where the entry was (last) defined


@dataclass(frozen=True)
class ChainConfig:
    """The ``chain:`` section: defaults of ``run`` and ``flow`` (command-line options win)."""

    implementer: str = "builder"
    reviewers: tuple[str, ...] = ("reviewer",)
    fixer: str = "fixer"
    max_iterations: int = 3
    target: str | None = None  # None: default_branch
    branch_pattern: str = DEFAULT_BRANCH_PATTERN
    merge: str = "ff"  # one of MERGE_MODES
    severity_threshold: str = "error"  # one of SEVERITIES


def branch_pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a usable step branch pattern, or None when it is.

    It may use only :data:`BRANCH_PLACEHOLDERS` (``{{``/``}}`` for literal braces) and must use
    ``{step}`` or ``{step2}``, so every step gets a branch of its own."""
    import string

    try:
        fields = [
            name for _, name, spec, conv in string.Formatter().parse(pattern) if name is not None
        ]
        bad = [f for f in fields if f not in BRANCH_PLACEHOLDERS]
        if bad:
            return f"unknown placeholder {{{bad[0]}}}; known: " + ", ".join(
                f"{{{name}}}" for name in BRANCH_PLACEHOLDERS
            )
        if not {"step", "step2"} & set(fields):
            return "must contain {step} or {step2} (every step gets a branch of its own)"
        format_branch(pattern, "plan", 1)
    except (ValueError, IndexError, KeyError) as exc:
        return f"not a valid pattern: {exc}"
    return None


def format_branch(pattern: str, plan_name: str, step: int) -> str:
    """The step branch ``pattern`` names for step ``step`` of plan ``plan_name``."""
    return pattern.format(plan_name=plan_name, plan=plan_name, step=step, step2=f"{step:02d}")


@dataclass(frozen=True)
class FlowConfig:
    """The merged, validated configuration of one project (and flow type / variant)."""

    root: Path
    sources: tuple[Path, ...]  # the YAML files read, in layer order (shipped ones if built_in)
    completion_workflow: CompletionWorkflow
    flow_type: str | None = None
    variant: str | None = None
    built_in: bool = False  # True when no project config file was read
    flow_dir: str = DEFAULT_FLOW_DIR
    default_branch: str = DEFAULT_BRANCH
    specs_folder: str = DEFAULT_SPECS_FOLDER
    spec_plan: SpecPlanConfig = field(default_factory=SpecPlanConfig)
    agents: Mapping[str, AgentConfig] = field(default_factory=lambda: MappingProxyType({}))
    shared_files: Mapping[str, SharedFile] = field(default_factory=lambda: MappingProxyType({}))
    stuck_timeout_secs: int = DEFAULT_STUCK_TIMEOUT_SECS
    max_wait_secs: int = DEFAULT_MAX_WAIT_SECS
    stuck_retry_grace_secs: int = DEFAULT_STUCK_RETRY_GRACE_SECS
    chain: ChainConfig = field(default_factory=ChainConfig)

    def agent(self, name: str) -> AgentConfig:
        """The agent configured as ``name``; ConfigError listing the known agents otherwise."""
        try:
            return self.agents[name]
        except KeyError:
            known = ", ".join(sorted(self.agents)) or "none"
            where = BUILT_IN + " defaults" if self.built_in else _sources_text(self)
            raise ConfigError(
                f"no agent {name!r} in {where}; known agents: {known}", key="agents"
            ) from None

    def completion_workflow_for(self, name: str) -> CompletionWorkflow:
        """The completion workflow agent ``name`` gets: its ``completion_template`` if set."""
        agent = self.agent(name)
        if agent.completion_template is None:
            return self.completion_workflow
        return replace(
            self.completion_workflow,
            template=agent.completion_template,
            template_source=agent.completion_template_source or INLINE,
        )


def _stem(filename: str) -> str:
    return filename[: -len(PurePosixPath(filename).suffix) or None]


def _sources_text(config: FlowConfig) -> str:
    return ", ".join(_display(config.root, path) for path in config.sources) or "the config"


# --------------------------------------------------------------------------------------------
# Finding the project and the layer files


def find_project_root(start: Path | None = None) -> Path:
    """The nearest ancestor (or ``start`` itself) holding ``.flow/`` or ``.git``, else ``start``."""
    here = (start if start is not None else Path.cwd()).absolute()
    for candidate in (here, *here.parents):
        if (candidate / FLOW_DIR_NAME).is_dir() or (candidate / ".git").exists():
            return candidate
    return here


def builtin_flow_dir() -> Path:
    """The shipped ``templates/flow/`` folder that ``init`` copies and the defaults read."""
    return templates_dir() / "flow"


def schema_path() -> Path:
    """The JSON Schema of one `.flow/` YAML file (draft 2020-12)."""
    return Path(__file__).resolve().parent / "schema" / SCHEMA_FILE


def scaffold_files() -> tuple[tuple[Path, str], ...]:
    """(shipped file, project-relative destination) for everything ``init`` writes.

    ``templates/flow/*.md`` -> ``.flow/templates/``, ``agents/`` -> ``.flow/agents/``,
    ``*.yaml`` -> ``.flow/`` (same sub-folder), ``specs/`` -> ``specs/``, plus the JSON Schema
    next to ``.flow/base.yaml`` for editors.
    """
    shipped = builtin_flow_dir()
    pairs: list[tuple[Path, str]] = []
    for path in sorted(p for p in shipped.rglob("*") if p.is_file()):
        rel = path.relative_to(shipped).as_posix()
        if rel.startswith(("specs/",)):
            dest = rel
        elif rel.startswith("agents/") or rel.endswith(".yaml"):
            dest = f"{FLOW_DIR_NAME}/{rel}"
        elif "/" not in rel:
            dest = f"{FLOW_DIR_NAME}/templates/{rel}"
        else:
            continue
        pairs.append((path, dest))
    pairs.append((schema_path(), f"{FLOW_DIR_NAME}/{SCHEMA_FILE}"))
    return tuple(pairs)


@dataclass(frozen=True)
class _Layout:
    """Where layer files are read from, and how ``@path`` values map to files."""

    root: Path
    flow_dir: Path
    built_in: bool

    def at_file(self, rel: str) -> Path | None:
        """The file an ``@rel`` value names, or None when it is outside what may be read."""
        if self.built_in:
            shipped = {dest: src for src, dest in scaffold_files()}.get(_normalise(rel))
            return shipped
        target = (self.root / rel).resolve()
        root = self.root.resolve()
        if target != root and root not in target.parents:
            return None
        return target


def _normalise(rel: str) -> str:
    return PurePosixPath(rel.replace("\\", "/")).as_posix().removeprefix("./")


def _layer_paths(flow_dir: Path, flow_type: str | None, variant: str | None) -> list[Path]:
    paths = [flow_dir / BASE_FILE]
    if flow_type is not None:
        paths.append(flow_dir / flow_type / BASE_FILE)
        if variant is not None:
            paths.append(flow_dir / flow_type / f"{variant}.yaml")
    return paths


def load_flow_config(
    root: Path, flow_type: str | None = None, variant: str | None = None
) -> FlowConfig:
    """Read, merge and validate the `.flow/` layers of ``root`` (see the module docstring).

    Every layer is optional except an explicitly named variant. With no config file at all the
    shipped ``templates/flow/`` layers are used instead (``FlowConfig.built_in`` is then True).
    """
    root = root.absolute()
    for label, value in (("flow type", flow_type), ("variant", variant)):
        if value is not None and not _NAME.match(value):
            raise ConfigError(
                f"invalid {label} {value!r}: use letters, digits, '.', '_' and '-' only"
            )
    if variant is not None and flow_type is None:
        raise ConfigError(
            f"variant {variant!r} needs a flow type (.flow/<flow-type>/{variant}.yaml)"
        )

    layout = _Layout(root, root / FLOW_DIR_NAME, built_in=False)
    # exists(), not is_file(): a folder named like a layer is reported, not silently skipped
    paths = [p for p in _layer_paths(layout.flow_dir, flow_type, variant) if p.exists()]
    if not paths:
        layout = _Layout(root, builtin_flow_dir(), built_in=True)
        paths = [p for p in _layer_paths(layout.flow_dir, flow_type, variant) if p.is_file()]
    if variant is not None:
        wanted = layout.flow_dir / str(flow_type) / f"{variant}.yaml"
        if wanted not in paths:
            raise ConfigError(_missing_variant(layout, wanted, str(flow_type)))

    merged: _Node | None = None
    for path in paths:
        node = _read_layer(path, _layer_display(layout, path))
        _check(node, _TOP, "")
        merged = node if merged is None else _merge(merged, node, _TOP)
    assert merged is not None  # the shipped base.yaml always exists
    return _build(merged, layout, tuple(paths), flow_type, variant)


def _missing_variant(layout: _Layout, wanted: Path, flow_type: str) -> str:
    folder = wanted.parent
    known = (
        sorted(p.stem for p in folder.glob("*.yaml") if p.is_file() and p.name != BASE_FILE)
        if folder.is_dir()
        else []
    )
    where = (
        _display(layout.root, wanted) if not layout.built_in else f".flow/{flow_type}/{wanted.name}"
    )
    return (
        f"variant file {where} not found; variants of {flow_type!r}: {', '.join(known) or 'none'}"
    )


def _layer_display(layout: _Layout, path: Path) -> str:
    if layout.built_in:
        return f"{BUILT_IN}:{path.relative_to(templates_dir()).as_posix()}"
    return _display(layout.root, path)


def _display(root: Path, path: Path) -> str:
    """``path`` relative to the project root when inside it (posix slashes), else absolute."""
    try:
        return path.absolute().relative_to(root).as_posix()
    except ValueError:
        return str(path)


# --------------------------------------------------------------------------------------------
# YAML with line numbers


@dataclass(frozen=True)
class _Node:
    """A YAML value with where it was written: mappings hold ``dict[str, _Node]``, sequences
    ``list[_Node]``, scalars their Python value. ``line`` is the line of the key (1-based)."""

    value: Any
    file: str
    line: int

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(message, path=self.file, line=self.line, key=key or None)


def _read_layer(path: Path, display: str) -> _Node:
    import yaml

    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid UTF-8 (byte {exc.start})", path=display) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", path=display) from None
    loader = yaml.SafeLoader(text)
    try:
        document = loader.get_single_node()
        if document is None:  # empty, or only comments: an empty layer
            return _Node({}, display, 1)
        if not isinstance(document, yaml.MappingNode):
            raise ConfigError(
                f"expected a mapping of settings at the top level, got {_kind(_plain(loader, document))}",
                path=display,
                line=document.start_mark.line + 1,
            )
        return _convert(loader, document, display, 1, "")
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        raise ConfigError(
            f"invalid YAML: {problem or exc}",
            path=display,
            line=mark.line + 1 if mark is not None else None,
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", path=display) from None
    finally:
        loader.dispose()


def _plain(loader: Any, node: Any) -> Any:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return {}
    if isinstance(node, yaml.SequenceNode):
        return []
    return loader.construct_object(node, deep=True)


def _convert(
    loader: Any, node: Any, file: str, line: int, keypath: str, inside: frozenset[int] = frozenset()
) -> _Node:
    import yaml

    if id(node) in inside:  # an alias to an anchor that contains it: `a: &x [*x]`
        raise ConfigError(
            "recursive YAML alias (an anchor that contains itself)",
            path=file,
            line=node.start_mark.line + 1,
            key=keypath or None,
        )
    inside = inside | {id(node)}
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = _plain(loader, key_node)
            key_line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                raise ConfigError(
                    f"keys must be strings, got {_kind(key)} {key!r}",
                    path=file,
                    line=key_line,
                    key=keypath or None,
                )
            if key in seen:
                raise ConfigError(
                    f"duplicate key (first defined on line {seen[key]})",
                    path=file,
                    line=key_line,
                    key=_join(keypath, key),
                )
            seen[key] = key_line
        loader.flatten_mapping(node)  # YAML merge keys (<<: *anchor)
        items: dict[str, _Node] = {}
        for key_node, value_node in node.value:
            key = _plain(loader, key_node)
            if not isinstance(key, str):
                raise ConfigError(
                    f"keys must be strings, got {_kind(key)} {key!r}",
                    path=file,
                    line=key_node.start_mark.line + 1,
                    key=keypath or None,
                )
            items[key] = _convert(
                loader, value_node, file, key_node.start_mark.line + 1, _join(keypath, key), inside
            )
        return _Node(items, file, line)
    if isinstance(node, yaml.SequenceNode):
        return _Node(
            [
                _convert(
                    loader, item, file, item.start_mark.line + 1, f"{keypath}[{index}]", inside
                )
                for index, item in enumerate(node.value)
            ],
            file,
            line,
        )
    return _Node(loader.construct_object(node, deep=True), file, line)


def _join(keypath: str, key: str) -> str:
    return f"{keypath}.{key}" if keypath else key


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (dict, _Node)):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def _unwrap(node: _Node) -> Any:
    """Plain Python value of a node tree (for ``options``)."""
    if isinstance(node.value, dict):
        return {key: _unwrap(child) for key, child in node.value.items()}
    if isinstance(node.value, list):
        return [_unwrap(child) for child in node.value]
    return node.value


# --------------------------------------------------------------------------------------------
# The shape of a config file, checked per file with its own line numbers


@dataclass(frozen=True)
class _Str:
    nullable: bool = False
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Int:
    minimum: int
    what: str = "a whole number of seconds"


@dataclass(frozen=True)
class _Bool:
    pass


@dataclass(frozen=True)
class _StrList:
    pattern: re.Pattern[str] | None = None
    what: str = ""


@dataclass(frozen=True)
class _Command:
    """An argv: a list of strings, or one string split like a shell would (no shell runs)."""


@dataclass(frozen=True)
class _AnyMap:
    pass


@dataclass(frozen=True)
class _Obj:
    fields: Mapping[str, _Spec]


@dataclass(frozen=True)
class _MapOf:
    item: _Obj


_Spec = _Str | _Int | _Bool | _StrList | _Command | _AnyMap | _Obj | _MapOf

_AGENT = _Obj(
    {
        "type": _Str(),
        "adapter": _Str(choices=ADAPTER_NAMES),
        "command": _Command(),
        "model": _Str(nullable=True),
        "system_prompt": _Str(),
        "description": _Str(nullable=True),
        "options": _AnyMap(),
        "allow_env": _StrList(_ENV_NAME, "an environment variable name"),
        "completion_template": _Str(nullable=True),
        "structured_reply": _Bool(),
    }
)
_SHARED_FILE = _Obj(
    {
        "path": _Str(),
        "info": _Str(),
        "writable": _Bool(),
        "write_template": _Str(nullable=True),
        "agents": _StrList(_NAME, "an agent name or type"),
    }
)
_TOP = _Obj(
    {
        "flow_dir": _Str(),
        "default_branch": _Str(),
        "specs_folder": _Str(),
        "defaults": _Obj(
            {
                "stuck_timeout_secs": _Int(1),
                "max_wait_secs": _Int(1),
                "stuck_retry_grace_secs": _Int(0),
            }
        ),
        "spec_plan": _Obj({"top_level_end_marker": _Str(), "step_header_pattern": _Str()}),
        "completion_workflow": _Obj(
            {
                "template": _Str(),
                "report": _Obj(
                    {"filename": _Str(), "success_suffix": _Str(), "failure_suffix": _Str()}
                ),
            }
        ),
        "agents": _MapOf(_AGENT),
        "shared_files": _MapOf(_SHARED_FILE),
        "chain": _Obj(
            {
                "implementer": _Str(),
                "reviewers": _StrList(_NAME, "an agent name"),
                "fixer": _Str(),
                "max_iterations": _Int(1, "a whole number"),
                "target": _Str(),
                "branch_pattern": _Str(),
                "merge": _Str(choices=MERGE_MODES),
                "severity_threshold": _Str(choices=SEVERITIES),
            }
        ),
    }
)

# Keys of the original Flow CLI that mean something else here: say so instead of "unknown".
_HINTS = {
    "agent_interface": "choose the agent CLI per agent with agents.<name>.adapter",
    "base_config": "layers are fixed: .flow/base.yaml, .flow/<flow-type>/base.yaml, "
    ".flow/<flow-type>/<variant>.yaml",
    "flow_type": "the flow type is the folder name: .flow/<flow-type>/base.yaml",
    "stuck_timeout_secs": "put it under defaults:",
    "max_wait_secs": "put it under defaults:",
    "stuck_retry_grace_secs": "put it under defaults:",
    "mcp_config": "pass adapter settings under agents.<name>.options",
}


def _check(node: _Node, spec: _Spec, keypath: str) -> None:
    """Raise ConfigError (file:line: key: message) unless ``node`` fits ``spec``."""
    value = node.value
    if isinstance(spec, _Obj):
        if not isinstance(value, dict):
            raise node.error(keypath, f"expected a mapping, got {_kind(value)}")
        for key, child in value.items():
            sub = spec.fields.get(key)
            if sub is None:
                raise child.error(_join(keypath, key), _unknown_key(key, spec.fields))
            _check(child, sub, _join(keypath, key))
    elif isinstance(spec, _MapOf):
        if not isinstance(value, dict):
            raise node.error(keypath, f"expected a mapping of names, got {_kind(value)}")
        for key, child in value.items():
            if not _NAME.match(key):
                raise child.error(
                    _join(keypath, key),
                    "invalid name: use letters, digits, '.', '_' and '-' (starting with a "
                    "letter or digit)",
                )
            _check(child, spec.item, _join(keypath, key))
    elif isinstance(spec, _Str):
        if value is None and spec.nullable:
            return
        if not isinstance(value, str):
            raise node.error(keypath, f"expected a string, got {_kind(value)}")
        if not value.strip():
            raise node.error(keypath, "must not be empty")
        if spec.choices and value not in spec.choices:
            raise node.error(keypath, f"expected one of {', '.join(spec.choices)}, got {value!r}")
    elif isinstance(spec, _Int):
        if not isinstance(value, int) or isinstance(value, bool):
            raise node.error(keypath, f"expected {spec.what}, got {_kind(value)}")
        if value < spec.minimum:
            raise node.error(keypath, f"must be at least {spec.minimum}, got {value}")
    elif isinstance(spec, _Bool):
        if not isinstance(value, bool):
            raise node.error(keypath, f"expected true or false, got {_kind(value)}")
    elif isinstance(spec, _StrList):
        if not isinstance(value, list):
            raise node.error(keypath, f"expected a list of strings, got {_kind(value)}")
        for index, item in enumerate(value):
            where = f"{keypath}[{index}]"
            if not isinstance(item.value, str):
                raise item.error(where, f"expected a string, got {_kind(item.value)}")
            if spec.pattern is not None and not spec.pattern.match(item.value):
                raise item.error(where, f"{item.value!r} is not {spec.what}")
    elif isinstance(spec, _Command):
        _check_command(node, keypath)
    elif isinstance(spec, _AnyMap) and not isinstance(value, dict):
        raise node.error(keypath, f"expected a mapping, got {_kind(value)}")


def _check_command(node: _Node, keypath: str) -> None:
    value = node.value
    if value is None:
        return
    if isinstance(value, str):
        try:
            if not shlex.split(value):
                raise node.error(keypath, "must not be empty")
        except ValueError as exc:
            raise node.error(keypath, f"cannot split {value!r}: {exc}") from None
        return
    if not isinstance(value, list) or not value:
        raise node.error(
            keypath, f"expected a non-empty list of strings (or one string), got {_kind(value)}"
        )
    for index, item in enumerate(value):
        if not isinstance(item.value, str):
            raise item.error(f"{keypath}[{index}]", f"expected a string, got {_kind(item.value)}")
    if not value[0].value.strip():
        raise value[0].error(f"{keypath}[0]", "the program name must not be empty")


def _unknown_key(key: str, known: Mapping[str, object]) -> str:
    hint = _HINTS.get(key)
    if hint is None:
        close = difflib.get_close_matches(key, list(known), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
    return f"unknown key ({hint})"


# --------------------------------------------------------------------------------------------
# Merging layers


def _merge(base: _Node, over: _Node, spec: _Spec | None) -> _Node:
    """``over`` on top of ``base``: mappings merge, lists concatenate, the rest is replaced."""
    if isinstance(spec, _Command):
        return over
    if isinstance(base.value, dict) and isinstance(over.value, dict):
        merged = dict(base.value)
        for key, child in over.value.items():
            if key in merged:
                merged[key] = _merge(merged[key], child, _child_spec(spec, key))
            else:
                merged[key] = child
        return _Node(merged, over.file, over.line)
    if isinstance(base.value, list) and isinstance(over.value, list):
        items = list(base.value)
        known = {item.value for item in items if isinstance(item.value, str)}
        for item in over.value:
            if isinstance(item.value, str) and item.value in known:
                continue
            items.append(item)
        return _Node(items, over.file, over.line)
    return over


def _child_spec(spec: _Spec | None, key: str) -> _Spec | None:
    if isinstance(spec, _Obj):
        return spec.fields.get(key)
    if isinstance(spec, _MapOf):
        return spec.item
    return None


# --------------------------------------------------------------------------------------------
# Building the values


def _build(
    top: _Node,
    layout: _Layout,
    sources: tuple[Path, ...],
    flow_type: str | None,
    variant: str | None,
) -> FlowConfig:
    values: dict[str, _Node] = top.value

    def text(key: str, default: str) -> str:
        node = values.get(key)
        return str(node.value) if node is not None else default

    defaults = _section(values, "defaults")
    spec_plan = _section(values, "spec_plan")
    pattern = spec_plan.get("step_header_pattern")
    if pattern is not None:
        compile_step_pattern(str(pattern.value), path=pattern.file, line=pattern.line)
    end_marker = spec_plan.get("top_level_end_marker")
    plan_defaults = SpecPlanConfig()

    agents = {
        name: _build_agent(name, node, layout) for name, node in _section(values, "agents").items()
    }
    shared = {
        key: _build_shared_file(key, node, layout)
        for key, node in _section(values, "shared_files").items()
    }
    return FlowConfig(
        root=layout.root,
        sources=sources,
        completion_workflow=_build_workflow(values, layout, sources),
        flow_type=flow_type,
        variant=variant,
        built_in=layout.built_in,
        flow_dir=text("flow_dir", DEFAULT_FLOW_DIR),
        default_branch=text("default_branch", DEFAULT_BRANCH),
        specs_folder=text("specs_folder", DEFAULT_SPECS_FOLDER),
        spec_plan=SpecPlanConfig(
            top_level_end_marker=(
                str(end_marker.value) if end_marker else plan_defaults.top_level_end_marker
            ),
            step_header_pattern=(
                str(pattern.value) if pattern else plan_defaults.step_header_pattern
            ),
        ),
        agents=MappingProxyType(agents),
        shared_files=MappingProxyType(shared),
        stuck_timeout_secs=_int(defaults, "stuck_timeout_secs", DEFAULT_STUCK_TIMEOUT_SECS),
        max_wait_secs=_int(defaults, "max_wait_secs", DEFAULT_MAX_WAIT_SECS),
        stuck_retry_grace_secs=_int(
            defaults, "stuck_retry_grace_secs", DEFAULT_STUCK_RETRY_GRACE_SECS
        ),
        chain=_build_chain(_section(values, "chain"), agents),
    )


def _section(values: Mapping[str, _Node], key: str) -> dict[str, _Node]:
    node = values.get(key)
    return dict(node.value) if node is not None else {}


def _int(values: Mapping[str, _Node], key: str, default: int) -> int:
    node = values.get(key)
    return int(node.value) if node is not None else default


def _build_chain(values: Mapping[str, _Node], agents: Mapping[str, AgentConfig]) -> ChainConfig:
    """The ``chain:`` section; the agents it names must be configured under ``agents:``."""
    chain = ChainConfig()

    def agent(node: _Node, keypath: str) -> str:
        name = str(node.value)
        if name not in agents:
            known = ", ".join(sorted(agents)) or "none"
            raise node.error(keypath, f"no agent {name!r} under agents:; known agents: {known}")
        return name

    implementer = values.get("implementer")
    fixer = values.get("fixer")
    reviewers_node = values.get("reviewers")
    reviewers = chain.reviewers
    if reviewers_node is not None:
        items: list[_Node] = reviewers_node.value
        if not items:
            raise reviewers_node.error("chain.reviewers", "name at least one reviewer")
        seen: set[str] = set()
        for index, item in enumerate(items):
            if item.value in seen:
                raise item.error(f"chain.reviewers[{index}]", f"{item.value!r} is listed twice")
            seen.add(agent(item, f"chain.reviewers[{index}]"))
        reviewers = tuple(str(item.value) for item in items)
    pattern = values.get("branch_pattern")
    if pattern is not None:
        problem = branch_pattern_problem(str(pattern.value))
        if problem is not None:
            raise pattern.error("chain.branch_pattern", problem)
    target = values.get("target")
    merge = values.get("merge")
    threshold = values.get("severity_threshold")
    return ChainConfig(
        implementer=(
            agent(implementer, "chain.implementer")
            if implementer is not None
            else chain.implementer
        ),
        reviewers=reviewers,
        fixer=agent(fixer, "chain.fixer") if fixer is not None else chain.fixer,
        max_iterations=_int(values, "max_iterations", chain.max_iterations),
        target=str(target.value) if target is not None else None,
        branch_pattern=str(pattern.value) if pattern is not None else chain.branch_pattern,
        merge=str(merge.value) if merge is not None else chain.merge,
        severity_threshold=(
            str(threshold.value) if threshold is not None else chain.severity_threshold
        ),
    )


def _build_workflow(
    values: Mapping[str, _Node], layout: _Layout, sources: tuple[Path, ...]
) -> CompletionWorkflow:
    section = _section(values, "completion_workflow")
    template = section.get("template")
    if template is None:
        first = _display(layout.root, sources[0])
        raise ConfigError(
            "required: the text agents get to report and signal completion, e.g. "
            '"@.flow/templates/completion-workflow-template.md" (gitflow-agents init writes it)',
            path=first,
            key="completion_workflow.template",
        )
    text, source = _resolve_text(template, layout, "completion_workflow.template")
    report = _section(section, "report")
    filename = report.get("filename")
    success = report.get("success_suffix")
    failure = report.get("failure_suffix")
    workflow = CompletionWorkflow(
        template=text,
        template_source=source,
        report_filename=str(filename.value) if filename else DEFAULT_REPORT_FILENAME,
        success_suffix=str(success.value) if success else DEFAULT_SUCCESS_SUFFIX,
        failure_suffix=str(failure.value) if failure else DEFAULT_FAILURE_SUFFIX,
    )
    if filename is not None and (
        "/" in workflow.report_filename or "\\" in workflow.report_filename
    ):
        raise filename.error(
            "completion_workflow.report.filename", "must be a file name, not a path"
        )
    for node, key in ((success, "success_suffix"), (failure, "failure_suffix")):
        value = str(node.value) if node is not None else ""
        if node is not None and ("/" in value or "\\" in value):
            raise node.error(
                f"completion_workflow.report.{key}", "must not contain a path separator"
            )
    names = {workflow.report_filename, workflow.success_filename, workflow.failed_filename}
    if len(names) != 3:
        blame = failure or success or filename
        assert blame is not None  # the defaults are distinct
        raise blame.error(
            "completion_workflow.report",
            f"report, success and failure files must differ, got {workflow.report_filename!r}, "
            f"{workflow.success_filename!r}, {workflow.failed_filename!r}",
        )
    return workflow


def _build_agent(name: str, node: _Node, layout: _Layout) -> AgentConfig:
    keypath = f"agents.{name}"
    values: dict[str, _Node] = node.value

    def get(key: str) -> Any:
        child = values.get(key)
        return child.value if child is not None else None

    adapter = str(get("adapter") or DEFAULT_ADAPTER)
    command_node = values.get("command")
    command: tuple[str, ...] | None = None
    if command_node is not None and command_node.value is not None:
        raw = command_node.value
        command = (
            tuple(shlex.split(raw))
            if isinstance(raw, str)
            else tuple(str(item.value) for item in raw)
        )
        if adapter != "command":
            raise command_node.error(
                f"{keypath}.command",
                f"only the 'command' adapter runs a command (this agent uses {adapter!r}); "
                "to change that CLI's executable use options.executable",
            )
    elif adapter == "command":
        raise node.error(f"{keypath}.command", "required when adapter is 'command'")

    prompt_node = values.get("system_prompt")
    prompt, prompt_source = (
        _resolve_text(prompt_node, layout, f"{keypath}.system_prompt") if prompt_node else ("", "")
    )
    completion_node = values.get("completion_template")
    completion: str | None = None
    completion_source: str | None = None
    if completion_node is not None and completion_node.value is not None:
        completion, completion_source = _resolve_text(
            completion_node, layout, f"{keypath}.completion_template"
        )

    options = _unwrap(values["options"]) if "options" in values else {}
    allow_env = (
        [str(item.value) for item in values["allow_env"].value] if "allow_env" in values else []
    )
    from_options = options.get("allow_env")
    if isinstance(from_options, list):
        allow_env += [str(item) for item in from_options if str(item) not in allow_env]
    if allow_env:
        options["allow_env"] = list(dict.fromkeys(allow_env))

    return AgentConfig(
        name=name,
        type=str(get("type") or name),
        adapter=adapter,
        command=command,
        model=get("model"),
        system_prompt=prompt,
        system_prompt_source=prompt_source,
        description=get("description"),
        options=MappingProxyType(options),
        allow_env=tuple(dict.fromkeys(allow_env)),
        completion_template=completion,
        completion_template_source=completion_source,
        structured_reply=get("structured_reply") is not False,
    )


def _build_shared_file(key: str, node: _Node, layout: _Layout) -> SharedFile:
    keypath = f"shared_files.{key}"
    values: dict[str, _Node] = node.value
    path_node = values.get("path")
    if path_node is None:
        raise node.error(f"{keypath}.path", "required")
    path = str(path_node.value)
    for name in _VARIABLE.findall(path):
        if name not in TEMPLATE_VARIABLES:
            raise path_node.error(
                f"{keypath}.path",
                f"unknown variable {{{name}}}; known: "
                + ", ".join(f"{{{v}}}" for v in TEMPLATE_VARIABLES),
            )
    info = values.get("info")
    writable = values.get("writable")
    template_node = values.get("write_template")
    template: str | None = None
    if template_node is not None and template_node.value is not None:
        template, _ = _resolve_text(template_node, layout, f"{keypath}.write_template")
    agents = values.get("agents")
    return SharedFile(
        key=key,
        path=path,
        info=str(info.value) if info is not None else "",
        writable=bool(writable.value) if writable is not None else False,
        write_template=template,
        agents=tuple(str(item.value) for item in agents.value) if agents is not None else (),
        source=f"{node.file}:{node.line}",
    )


def _resolve_text(node: _Node, layout: _Layout, keypath: str) -> tuple[str, str]:
    """(text, source) of an ``@path`` or inline value; ``@@`` escapes a literal ``@``."""
    value = str(node.value)
    if value.startswith("@@"):
        return value[1:], INLINE
    if not value.startswith("@"):
        return value, INLINE
    rel = value[1:].strip()
    if not rel:
        raise node.error(keypath, "'@' must be followed by a file path")
    target = layout.at_file(rel)
    if target is None:
        where = "a shipped file" if layout.built_in else "inside the project root"
        raise node.error(keypath, f"@{rel}: the file must be {where}")
    try:
        text = target.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise node.error(
            keypath, f"file not found: {rel} (paths after '@' are relative to the project root)"
        ) from None
    except IsADirectoryError:
        raise node.error(keypath, f"{rel} is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise node.error(keypath, f"{rel}: not valid UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise node.error(keypath, f"cannot read {rel}: {exc.strerror or exc}") from None
    if layout.built_in:
        source = f"{BUILT_IN}:{target.relative_to(templates_dir()).as_posix()}"
    else:
        source = _normalise(rel)
    return text, source
