"""The Flow protocol system prompt (seed 000): every section an agent needs, assembled inline.

``assemble_prompt`` gathers plain values (identity, shared files, previous reports, completion
workflow, agent definition, assignment), resolves seed 000's ``{variables}`` in the texts that are
templates, and renders ``templates/system_prompt.md.j2``. Each top-level block of that template is
one section; rendering the blocks one by one gives the segments that ``prompt --segments`` shows,
refined further where one section holds several sources (shared files, `.agents-flow/` layers,
preamble / plan / task).
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitflow_agents.config import TEMPLATE_VARIABLES
from gitflow_agents.errors import ConfigError, TemplateError, UsageError
from gitflow_agents.resources import templates_dir

if TYPE_CHECKING:
    import jinja2

    from gitflow_agents.assets import PromptAssetManifest
    from gitflow_agents.config import CompletionWorkflow, FlowConfig, SharedFile
    from gitflow_agents.plan import Plan

SYSTEM_PROMPT_TEMPLATE = "system_prompt.md.j2"
BUILT_IN = "built-in"
NOT_APPLICABLE = "N/A"

#: The system-resolved variables of seed 000, in the order of its table (one list, in config).
SEED_VARIABLES = TEMPLATE_VARIABLES

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_BACKTICK_RUN = re.compile(r"`+")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


# --------------------------------------------------------------------------- values


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


class _File(NamedTuple):
    name: str
    path: str
    info: str
    template: str | None
    source: str


class _Report(NamedTuple):
    agent_id: str
    path: str


class _Part(NamedTuple):
    """A piece expected inside a rendered block, used to split the block into segments."""

    text: str
    scope: str
    label: str
    source: str


class _Agent(NamedTuple):
    type: str
    role: str | None
    frontmatter: str | None
    definition: str
    source: str
    layers: tuple[_Part, ...]  # `.agents-flow/` layers inside the definition (empty for .flow)
    workflow: CompletionWorkflow


# --------------------------------------------------------------------------- text helpers


def resolve_placeholders(text: str, variables: Mapping[str, str]) -> str:
    """Replace ``{name}`` for the names in ``variables`` only, in one pass.

    Unknown ``{x}``, ``{{ jinja }}``-looking text, ``[agent-filled]`` placeholders and braces in
    values are left exactly as they are (no ``str.format``).
    """

    def replace(match: re.Match[str]) -> str:
        return variables.get(match.group(1), match.group(0))

    return _PLACEHOLDER.sub(replace, text)


def fence(text: str, info: str = "") -> str:
    """Wrap ``text`` in a backtick fence longer than any backtick run inside it (at least 3),
    so fences in the content can never close the wrapper."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    marker = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{marker}{info}\n{body}{marker}"


def _clean(text: str) -> str:
    """Normalise line endings and drop blank lines around a text inserted into a section."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(line.rstrip() if not line.strip() else line for line in lines)


def default_agent_id(agent: str, step: int | None) -> str:
    """``step-NN-<agent>`` (NN zero-padded to two digits) with a step, else the agent name."""
    return agent if step is None else f"step-{step:02d}-{agent}"


def default_flow_name(request: PromptRequest) -> str:
    """The given flow name, else the plan's name, else the agent's."""
    if request.flow_name is not None:
        return request.flow_name
    return request.plan.name if request.plan is not None else request.agent


def _check_name(value: str, what: str) -> str:
    if not _SAFE_NAME.match(value) or value in {".", ".."}:
        raise UsageError(
            f"invalid {what} {value!r}: use letters, digits, '.', '_' or '-' "
            "(it becomes a directory name)"
        )
    return value


def _display_path(root: Path, path: Path) -> str:
    """``path`` relative to the project root (posix) when inside it, else as given."""
    if not path.is_absolute():
        return path.as_posix()
    for candidate in (path, path.resolve()):
        for base in (root, root.resolve()):
            if candidate.is_relative_to(base):
                return candidate.relative_to(base).as_posix()
    return path.as_posix()


def agent_dir(root: Path, flow_dir: str, flow_name: str, agent_id: str) -> Path:
    """``<root>/<flow_dir>/<flow>/agents/<agent-id>``: the agent's run folder (seed 000)."""
    return root / flow_dir / flow_name / "agents" / agent_id


def _agent_rel_dir(flow_dir: str, flow_name: str, agent_id: str) -> str:
    return (Path(flow_dir) / flow_name / "agents" / agent_id).as_posix()


def write_system_prompt(
    root: Path, config: FlowConfig, agent_id: str, flow_name: str, text: str
) -> Path:
    """Write ``<flow_dir>/<flow>/agents/<id>/system_prompt.md`` atomically; return its path."""
    folder = agent_dir(
        root,
        config.flow_dir,
        _check_name(flow_name, "flow name"),
        _check_name(agent_id, "agent id"),
    )
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "system_prompt.md"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".system_prompt.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


# --------------------------------------------------------------------------- Jinja


def _environment(directory: Path) -> jinja2.Environment:
    """The Jinja environment of ``directory``, built once per process and directory.

    Jinja keeps the compiled templates in the environment and recompiles one only when its file
    changed (``auto_reload``), so every agent after the first renders without compiling; the
    parallel reviewers of a chain round no longer compile the same template side by side."""
    key = str(directory)
    env = _ENVIRONMENTS.get(key)
    if env is None:
        with _ENVIRONMENTS_LOCK:
            env = _ENVIRONMENTS.get(key)
            if env is None:
                env = _ENVIRONMENTS[key] = _new_environment(directory)
    return env


def _new_environment(directory: Path) -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        auto_reload=True,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters["fenced"] = fence
    return env


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between processes (Jinja's per-user folder in the temp dir,
    written atomically, checked against the template's source): compiling the system prompt
    template took ~20 ms of every ``spawn``. None when that folder cannot be used."""
    import jinja2

    try:
        return jinja2.FileSystemBytecodeCache()
    except (OSError, RuntimeError):
        return None


_ENVIRONMENTS: dict[str, jinja2.Environment] = {}
_ENVIRONMENTS_LOCK = threading.Lock()


def _template_error(exc: Exception, directory: Path, name: str) -> TemplateError:
    """A Jinja failure as one line naming the template file and line."""
    import jinja2

    path = directory / name
    line: int | None = None
    if isinstance(exc, jinja2.TemplateSyntaxError):
        line = exc.lineno
        if exc.filename:
            path = Path(exc.filename)
    elif isinstance(exc, jinja2.TemplateNotFound):
        return TemplateError(f"template {exc.name!r} not found", path=directory)
    else:
        # Jinja rewrites tracebacks so template frames carry the template's file and line.
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename and Path(frame.filename).is_relative_to(directory):
                path, line = Path(frame.filename), frame.lineno
    message = getattr(exc, "message", None) or str(exc)
    return TemplateError(message, path=path, line=line)


def _render(directory: Path, variables: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """The whole prompt and each top-level block's text, in template order."""
    import jinja2

    env = _environment(directory)
    try:
        template = env.get_template(SYSTEM_PROMPT_TEMPLATE)
        # One context for the whole render and then each block, so blocks see the macros the
        # root render defined; handle_exception() maps Python frames back to template lines.
        context = template.new_context(dict(variables))
        try:
            text = "".join(template.root_render_func(context))
            blocks = [(name, "".join(block(context))) for name, block in template.blocks.items()]
        except Exception:
            env.handle_exception()
    except (jinja2.TemplateError, TypeError, ValueError) as exc:
        raise _template_error(exc, directory, SYSTEM_PROMPT_TEMPLATE) from None
    return text, blocks


# --------------------------------------------------------------------------- assembly


def assemble_prompt(request: PromptRequest) -> AssembledPrompt:
    """Build the full seed-000 system prompt for one agent, with per-section attribution."""
    agent = _resolve_agent(request)
    plan_context: str | None = None
    if request.plan is not None and request.step is not None:
        plan_context = request.plan.assignment_context(request.step)
    elif request.task is None:
        raise UsageError("nothing to assign: give a task, or a plan with a step")
    flow_name = _check_name(default_flow_name(request), "flow name")
    agent_id = _check_name(
        default_agent_id(request.agent, request.step)
        if request.agent_id is None
        else request.agent_id,
        "agent id",
    )
    variables = _variables(request, agent, flow_name, agent_id)
    writable, readable = _shared_files(request, agent.type, variables)
    reports = [
        _Report(
            name,
            _agent_rel_dir(request.config.flow_dir, flow_name, _check_name(name, "agent id"))
            + f"/{agent.workflow.success_filename}",
        )
        for name in request.after
    ]
    assignment = _assignment(request, plan_context)
    directory = request.template_dir or templates_dir()
    text, blocks = _render(
        directory,
        {
            "frontmatter": agent.frontmatter,
            "flow_name": flow_name,
            "agent_name": agent_id,
            "agent_type": agent.type,
            "role": agent.role,
            "step": request.step,
            "writable_files": writable,
            "readable_files": readable,
            "previous_reports": reports,
            "output_requirements": _clean(resolve_placeholders(agent.workflow.template, variables)),
            "reply_format": _reply_format(request, agent.type),
            "agent_definition": _clean(resolve_placeholders(agent.definition, variables)),
            "assignment": [part.text for part in assignment],
        },
    )
    template_source = (
        BUILT_IN
        if request.template_dir is None
        else _display_path(request.root, directory / SYSTEM_PROMPT_TEMPLATE)
    )
    layers = [
        part._replace(text=_clean(resolve_placeholders(part.text, variables)))
        for part in agent.layers
    ]
    parts = _block_parts(template_source, agent, writable, readable, layers, assignment)
    segments: list[Segment] = []
    for name, content in blocks:
        head, inner = parts.get(name, (_Part("", "template", name, template_source), []))
        segments.extend(_split(content, head, inner))
    return AssembledPrompt(text=text, segments=tuple(segments))


def _variables(
    request: PromptRequest, agent: _Agent, flow_name: str, agent_id: str
) -> dict[str, str]:
    """Seed 000's variables; those without a value in this run are ``N/A``."""
    config = request.config
    own_dir = _agent_rel_dir(config.flow_dir, flow_name, agent_id)
    step_title = NOT_APPLICABLE
    if request.plan is not None and request.step is not None:
        step_title = request.plan.step(request.step).title
    timestamp = request.timestamp or datetime.now().astimezone()
    return {
        "flow_name": flow_name,
        "flow_dir": config.flow_dir,
        "agent_name": agent_id,
        "agent_type": agent.type,
        "step": str(request.step) if request.step is not None else NOT_APPLICABLE,
        "step_title": step_title,
        "plan_name": request.plan.name if request.plan is not None else NOT_APPLICABLE,
        "specs_folder": config.specs_folder,
        "timestamp": timestamp.isoformat(timespec="seconds"),
        "report_file": f"{own_dir}/{agent.workflow.report_filename}",
        "success_file": f"{own_dir}/{agent.workflow.success_filename}",
        "failed_file": f"{own_dir}/{agent.workflow.failed_filename}",
    }


def _reply_format(request: PromptRequest, agent_type: str) -> str | None:
    """Seed 004's reply instructions for this agent (its CLI from ``.flow`` config, its role
    from the type); None when the agent's config says ``structured_reply: false``."""
    from gitflow_agents.protocol import reply_instructions

    config = request.config.agents.get(request.agent)
    if config is not None and not config.structured_reply:
        return None
    return reply_instructions(config.adapter if config else None, agent_type, request.agent)


def _assignment(request: PromptRequest, plan_context: str | None) -> list[_Part]:
    """Preamble, fenced plan context, raw task: each present one, in that order."""
    parts: list[_Part] = []
    preamble = _clean(request.preamble or "")
    if preamble:
        parts.append(_Part(preamble, "preamble", "assignment preamble", "cli:--preamble"))
    if plan_context is not None and request.plan is not None:
        source = _display_path(request.root, request.plan.path.absolute())
        label = f"{request.plan.name} step {request.step}"
        parts.append(_Part(fence(_clean(plan_context), "md"), "plan", label, source))
    task = _clean(request.task or "")
    if task:
        parts.append(_Part(task, "task", "task", "cli:--task"))
    if not parts:
        raise UsageError("nothing to assign: the task is empty")
    return parts


def _block_parts(
    template_source: str,
    agent: _Agent,
    writable: Sequence[_File],
    readable: Sequence[_File],
    layers: Sequence[_Part],
    assignment: Sequence[_Part],
) -> dict[str, tuple[_Part, list[_Part]]]:
    """Per template block: how its text is attributed (head) and the parts it is cut into."""

    def head(scope: str, label: str, source: str = template_source) -> _Part:
        return _Part("", scope, label, source)

    def files(items: Sequence[_File], kind: str) -> list[_Part]:
        return [
            _Part(_file_marker(f), "shared-file", f"{f.name} ({kind})", f.source) for f in items
        ]

    return {
        "frontmatter": (head("frontmatter", "agent frontmatter (hoisted)", agent.source), []),
        "protocol": (head("protocol", "Multi-Agent Flow Protocol"), []),
        "identity": (head("identity", "Your Identity"), []),
        "shared_files": (head("shared-files", "Shared Context Files"), []),
        "writable_files": (
            head("shared-files", "Writable Shared Files"),
            files(writable, "writable"),
        ),
        "readable_files": (
            head("shared-files", "Readable Shared Files"),
            files(readable, "readable"),
        ),
        "previous_reports": (head("previous-reports", "Previous Agent Reports", "cli:--after"), []),
        "output_requirements": (
            head("completion-workflow", "Output Requirements", agent.workflow.template_source),
            [],
        ),
        "reply_format": (head("reply-format", "Reply Format (seed 004)"), []),
        "agent_definition": (
            head("agent-definition", "Agent Definition", agent.source),
            list(layers),
        ),
        "assignment": (head("assignment", "Your Assignment"), list(assignment)),
    }


def _file_marker(file: _File) -> str:
    return f"#### {file.name}\n\n**Path**: {file.path}\n"


def _split(content: str, head: _Part, inner: Sequence[_Part]) -> list[Segment]:
    """Cut a rendered block into the head (text before the first part) and one segment per part,
    each running up to the next part. Falls back to one segment when a part is not found
    (e.g. a customised template that words it differently)."""
    if not content:
        return []
    starts: list[int] = []
    position = 0
    for part in inner:
        found = content.find(part.text, position) if part.text else -1
        if found < 0:
            return [Segment(head.scope, head.label, head.source, content)]
        starts.append(found)
        position = found + len(part.text)
    segments = []
    if not starts or starts[0] > 0:
        segments.append(
            Segment(head.scope, head.label, head.source, content[: starts[0] if starts else None])
        )
    for index, (part, start) in enumerate(zip(inner, starts, strict=True)):
        end = starts[index + 1] if index + 1 < len(starts) else len(content)
        segments.append(Segment(part.scope, part.label, part.source, content[start:end]))
    return segments


# --------------------------------------------------------------------------- inputs


def _shared_files(
    request: PromptRequest, agent_type: str, variables: Mapping[str, str]
) -> tuple[list[_File], list[_File]]:
    """Writable files (always shown) and readable files that exist after ``{var}`` resolution,
    limited to the files whose ``agents`` list is empty or names this agent."""
    writable: list[_File] = []
    readable: list[_File] = []
    names = {request.agent, agent_type}
    for key, shared in request.config.shared_files.items():
        if shared.agents and not names.intersection(shared.agents):
            continue
        path = resolve_placeholders(shared.path, variables)
        file = _File(
            name=key,
            path=path,
            info=_clean(resolve_placeholders(shared.info, variables)),
            template=(
                _clean(resolve_placeholders(shared.write_template, variables))
                if shared.write_template is not None
                else None
            ),
            source=_shared_file_source(key, shared),
        )
        if shared.writable:
            writable.append(file)
        elif (request.root / path).exists():
            readable.append(file)
    return writable, readable


def _shared_file_source(key: str, shared: SharedFile) -> str:
    """``config:<file>:<line>:shared_files.<key>`` (the layer that last defined the entry)."""
    where = f"{shared.source}:" if shared.source else ""
    return f"config:{where}shared_files.{key}"


def _resolve_agent(request: PromptRequest) -> _Agent:
    """The agent's type, role, frontmatter and definition: from `.agents-flow/` when the
    manifest has that agentId (seed 003: the asset reference wins), else from `.flow/`."""
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


def _flow_agent(request: PromptRequest) -> _Agent:
    from gitflow_agents.frontmatter import split_frontmatter

    config = request.config.agent(request.agent)
    source = _agent_source(request.root, request.agent, config.system_prompt_source)
    parsed = split_frontmatter(config.system_prompt, path=source)
    frontmatter = None
    if parsed.raw is not None:
        frontmatter = parsed.raw.replace("\r\n", "\n").rstrip("\n")
    return _Agent(
        type=config.type,
        role=_clean(config.description) if config.description else None,
        frontmatter=frontmatter,
        definition=parsed.body,
        source=source,
        layers=(),
        workflow=request.config.completion_workflow_for(request.agent),
    )


def _manifest_agent(
    agent_id: str, manifest: PromptAssetManifest, workflow: CompletionWorkflow
) -> _Agent:
    """Agent Definition from `.agents-flow/`: the provider package (global system prompt,
    instructions, skills, agent body); refuses an agent with manifest errors."""
    from gitflow_agents.assets import AGENTS_FLOW_DIR, package_agent_prompt, require_runnable

    asset = require_runnable(agent_id, manifest)
    package = package_agent_prompt(agent_id, manifest)
    layers = tuple(
        _Part(
            segment.content,
            segment.scope,
            segment.label,
            f"{AGENTS_FLOW_DIR}/{segment.source_path}",
        )
        for segment in package.segments
    )
    return _Agent(
        type=agent_id,
        role=_clean(asset.description) if asset.description else None,
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
    return _display_path(root, Path(source))
