"""Building the frozen ``FlowConfig`` values from the merged, checked Node tree: defaults filled
in, ``@path`` values read, and the rules that need more than one key (a chain's agents must be
configured, report file names must differ, ``command`` only with the command adapter).

``@path`` values (completion templates, system prompts, write templates) are read from files
relative to the project root; ``@@text`` is the literal ``@text``.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

from gitflow_agents.agents.check import agent_problems
from gitflow_agents.agents.prices import Price, price_from, shipped_prices
from gitflow_agents.base.errors import ConfigError, InputError
from gitflow_agents.base.frontmatter import split_frontmatter
from gitflow_agents.base.fsutil import ReadRefused, read_text_limited
from gitflow_agents.base.resources import templates_dir
from gitflow_agents.base.units import DURATION_FORMS, SIZE_FORMS, parse_duration, parse_size
from gitflow_agents.config.budget import build_budgets
from gitflow_agents.config.files import Layout, normalise
from gitflow_agents.config.review import build_review
from gitflow_agents.config.values import (
    BUILT_IN,
    DEFAULT_ADAPTER,
    DEFAULT_BRANCH,
    DEFAULT_FAILURE_SUFFIX,
    DEFAULT_FLOW_DIR,
    DEFAULT_MAX_WAIT_SECS,
    DEFAULT_RATE_LIMIT_WAIT_SECS,
    DEFAULT_REPORT_FILENAME,
    DEFAULT_SPECS_FOLDER,
    DEFAULT_STUCK_RETRY_GRACE_SECS,
    DEFAULT_STUCK_TIMEOUT_SECS,
    DEFAULT_SUCCESS_SUFFIX,
    INLINE,
    TEMPLATE_VARIABLES,
    AgentConfig,
    ChainConfig,
    CompletionWorkflow,
    FlowConfig,
    GcPolicy,
    SharedFile,
    branch_pattern_problem,
    display,
)
from gitflow_agents.config.yaml_nodes import Node, unwrap
from gitflow_agents.plan import SpecPlanConfig, compile_step_pattern

MAX_AT_FILE_BYTES = 4 * 1024 * 1024
"""A file named by an ``@path`` value larger than this is refused (docs/security.md, "Bounds")."""
_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def build(
    top: Node,
    layout: Layout,
    sources: tuple[Path, ...],
    flow_type: str | None,
    variant: str | None,
) -> FlowConfig:
    values: dict[str, Node] = top.value

    def text(key: str, default: str) -> str:
        node = values.get(key)
        return str(node.value) if node is not None else default

    defaults = _section(values, "defaults")
    spec_plan = _section(values, "spec_plan")
    pattern = spec_plan.get("step_header_pattern")
    if pattern is not None:
        _check_pattern(pattern)
    if "flow_dir" in values:
        _check_flow_dir(values["flow_dir"])
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
        rate_limit_wait_secs=_int(defaults, "rate_limit_wait_secs", DEFAULT_RATE_LIMIT_WAIT_SECS),
        chain=_build_chain(_section(values, "chain"), agents),
        review=build_review(values.get("review")),
        prices=build_prices(_section(values, "prices")),
        budget=build_budgets(unwrap(values["budget"]) if "budget" in values else None),
    )


def build_problems(top: Node, layout: Layout, sources: tuple[Path, ...]) -> list[ConfigError]:
    """Every rule across keys that ``build`` would raise for (``top`` fits the shape): the
    step pattern, each agent, each shared file, the completion workflow and the chain, each
    checked on its own."""
    values: dict[str, Node] = top.value
    found: list[ConfigError] = []

    def attempt(work: Callable[..., object], *args: Any) -> None:
        try:
            work(*args)
        except ConfigError as exc:
            found.append(exc)

    if "flow_dir" in values:
        attempt(_check_flow_dir, values["flow_dir"])
    pattern = _section(values, "spec_plan").get("step_header_pattern")
    if pattern is not None:
        attempt(_check_pattern, pattern)
    agents = _section(values, "agents")
    for name, node in agents.items():
        try:
            agent = _agent_values(name, node, layout)
        except ConfigError as exc:
            found.append(exc)
        else:
            found += _adapter_problems(agent, node)
    for key, node in _section(values, "shared_files").items():
        attempt(_build_shared_file, key, node, layout)
    attempt(_build_workflow, values, layout, sources)
    attempt(_build_chain, _section(values, "chain"), agents)
    attempt(build_review, values.get("review"))
    attempt(build_prices, _section(values, "prices"))
    return found


def build_prices(values: Mapping[str, Node]) -> Mapping[str, Price]:
    """The shipped price table with ``prices:`` laid over it, key by key: a model the shipped
    table does not have needs both ``input`` and ``output``."""
    table = dict(shipped_prices())
    for model, node in values.items():
        given = {key: child.value for key, child in dict(node.value).items()}
        shipped = table.get(model)
        if shipped is not None:
            given = {**vars(shipped), **given}
        missing = [key for key in ("input", "output") if given.get(key) is None]
        if missing:
            raise node.error(
                f"prices.{model}", f"needs {' and '.join(missing)} (USD per million tokens)"
            )
        table[model] = price_from(given)
    return MappingProxyType(table)


def _check_pattern(node: Node) -> None:
    compile_step_pattern(str(node.value), path=node.file, line=node.line)


def _check_flow_dir(node: Node) -> None:
    """``flow_dir`` names a folder inside the project, outside ``.git``: run records are written
    there, it is linked into each step work tree and left out of every commit (``../escape``
    wrote them outside the repository, and git refused the path after the implementer ran)."""
    value = str(node.value)
    rooted = value.startswith(("/", "~"))
    parts = [part for part in PurePosixPath(value).parts if part != "."]
    if rooted or not parts or ".." in parts or parts[0] == ".git":
        # a path with `..` that stays inside (`build/../flows`) is named as it is meant
        meant = PurePosixPath(posixpath.normpath(value)).parts
        inside = not rooted and meant and meant[0] not in ("..", ".git")
        example = "/".join(meant) if inside and ".." in parts else "flows"
        raise node.error(
            "flow_dir",
            f"{value!r}: give a folder inside the project, relative to its root, outside .git, "
            f"without '..' (e.g. {example})",
        )


def _section(values: Mapping[str, Node], key: str) -> dict[str, Node]:
    node = values.get(key)
    return dict(node.value) if node is not None else {}


def _int(values: Mapping[str, Node], key: str, default: int) -> int:
    node = values.get(key)
    return int(node.value) if node is not None else default


def _build_chain(values: Mapping[str, Node], agents: Collection[str]) -> ChainConfig:
    """The ``chain:`` section; the agents it names must be configured under ``agents:``."""
    chain = ChainConfig()

    def agent(node: Node, keypath: str) -> str:
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
        items: list[Node] = reviewers_node.value
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
        jobs=_int(values, "jobs", chain.jobs),
        target=str(target.value) if target is not None else None,
        branch_pattern=str(pattern.value) if pattern is not None else chain.branch_pattern,
        merge=str(merge.value) if merge is not None else chain.merge,
        severity_threshold=(
            str(threshold.value) if threshold is not None else chain.severity_threshold
        ),
        **_work_tree_keys(values),
    )


def _work_tree_keys(values: Mapping[str, Node]) -> dict[str, Any]:
    """``chain.setup``, ``chain.copy_ignored`` and ``chain.gc``: the step work trees' keys."""
    found: dict[str, Any] = {}
    setup = values.get("setup")
    if setup is not None and setup.value is not None:
        raw = setup.value
        found["setup"] = raw if isinstance(raw, str) else tuple(str(i.value) for i in raw)
    copy = values.get("copy_ignored")
    if copy is not None:
        for index, item in enumerate(copy.value):
            problem = copy_pattern_problem(str(item.value))
            if problem is not None:
                raise item.error(f"chain.copy_ignored[{index}]", problem)
        listed = (str(item.value).strip("/") for item in copy.value)
        found["copy_ignored"] = tuple(dict.fromkeys(listed))
    gc = _section(values, "gc")
    older, size = gc.get("older_than"), gc.get("max_size")
    policy = GcPolicy()
    if older is not None:
        seconds = None if older.value is None else parse_duration(str(older.value))
        if older.value is not None and seconds is None:
            raise older.error("chain.gc.older_than", f"expected {DURATION_FORMS}")
        policy = replace(policy, older_than=seconds)
    if size is not None and size.value is not None:
        limit = parse_size(str(size.value))
        if limit is None:
            raise size.error("chain.gc.max_size", f"expected {SIZE_FORMS}")
        policy = replace(policy, max_size=limit)
    found["gc"] = policy
    return found


def copy_pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot name files inside the repository (absolute, ``..``, ``.git``), or
    None when it can."""
    parts = pattern.strip("/").split("/")
    if pattern.startswith("/") or pattern.startswith("~") or ":" in parts[0]:
        return f"{pattern!r}: give a path relative to the repository root"
    if ".." in parts or ".git" in parts or not pattern.strip("/"):
        return f"{pattern!r}: must name files inside the repository, outside .git"
    return None


def _build_workflow(
    values: Mapping[str, Node], layout: Layout, sources: tuple[Path, ...]
) -> CompletionWorkflow:
    section = _section(values, "completion_workflow")
    template = section.get("template")
    if template is None:
        first = display(layout.root, sources[0])
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
    _check_report_names(text, source, template, "completion_workflow.template")
    return workflow


def _build_agent(name: str, node: Node, layout: Layout) -> AgentConfig:
    """The ``agents.<name>`` entry, checked as its adapter would check it at launch."""
    agent = _agent_values(name, node, layout)
    for problem in _adapter_problems(agent, node):
        raise problem
    return agent


def _adapter_problems(agent: AgentConfig, node: Node) -> list[ConfigError]:
    """What the agent's adapter refuses of its options (``agents/check.py``), each at the line
    of the key it names in ``node``, the agent's entry."""
    return [
        _at_key(node, agent.name, problem)
        for problem in agent_problems(
            agent.name, agent.adapter, agent.options, model=agent.model, command=agent.command
        )
    ]


def _at_key(node: Node, name: str, problem: ConfigError) -> ConfigError:
    """``problem`` (keyed ``agents.<name>.options.<key>`` or ``agents.<name>.<key>``) at the
    line where that key was written in ``node``, else at the agent's own line."""
    key = problem.key or f"agents.{name}"
    head, _, rest = key.removeprefix(f"agents.{name}.").partition(".")
    where: Node = node
    child = node.value.get(head)
    if child is not None:
        where = child
        if rest and isinstance(child.value, dict) and rest in child.value:
            where = child.value[rest]
    elif head == "options" and rest == "allow_env" and "allow_env" in node.value:
        where = node.value["allow_env"]  # agents.<name>.allow_env is merged into the options
    return where.error(key, problem.detail)


def _agent_values(name: str, node: Node, layout: Layout) -> AgentConfig:
    keypath = f"agents.{name}"
    values: dict[str, Node] = node.value

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
    prompt, prompt_source = "", ""
    if prompt_node is not None:
        prompt, prompt_source = _resolve_text(prompt_node, layout, f"{keypath}.system_prompt")
        _check_frontmatter(prompt, prompt_source, prompt_node, f"{keypath}.system_prompt")
    completion_node = values.get("completion_template")
    completion: str | None = None
    completion_source: str | None = None
    if completion_node is not None and completion_node.value is not None:
        completion, completion_source = _resolve_text(
            completion_node, layout, f"{keypath}.completion_template"
        )
        _check_report_names(
            completion, completion_source, completion_node, f"{keypath}.completion_template"
        )

    options = unwrap(values["options"]) if "options" in values else {}
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
        max_parallel=get("max_parallel"),
    )


REPORT_VARIABLES = ("{report_file}", "{success_file}", "{failed_file}")


def _check_report_names(text: str, source: str, node: Node, keypath: str) -> None:
    """A completion template names the agent's report files (``REPORT_VARIABLES``): without
    any, the agent is never told where to write its report or what to rename it to, and every
    run of it fails after it has been paid for (docs/configuration.md, ``template``)."""
    if any(variable in text for variable in REPORT_VARIABLES):
        return
    where = "" if source == INLINE else f"{source} "
    raise node.error(
        keypath,
        f"{where}uses none of {', '.join(REPORT_VARIABLES)}: the agent would not know which "
        "file to write its report to and rename",
    )


def _check_frontmatter(text: str, source: str, node: Node, keypath: str) -> None:
    """An agent definition's frontmatter is read as the prompt will read it (``prompt/agent.py``,
    ``base/frontmatter.py``): a broken one is an error of the file at its line (``plan lint``
    passed one that ``run`` refused after making the step's branch); of ``node``'s line for
    an inline text."""
    try:
        split_frontmatter(text, path=source)
    except InputError as exc:
        if source == INLINE:
            where = f" (line {exc.line} of its text)" if exc.line is not None else ""
            raise node.error(keypath, exc.detail + where) from None
        raise ConfigError(exc.detail, path=exc.path, line=exc.line, key=keypath) from None


def _build_shared_file(key: str, node: Node, layout: Layout) -> SharedFile:
    keypath = f"shared_files.{key}"
    values: dict[str, Node] = node.value
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


def _resolve_text(node: Node, layout: Layout, keypath: str) -> tuple[str, str]:
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
        text = read_text_limited(target, MAX_AT_FILE_BYTES)
    except ReadRefused as exc:
        raise node.error(keypath, f"{rel}: {exc.reason}") from None
    except FileNotFoundError:
        raise node.error(
            keypath, f"file not found: {rel} (paths after '@' are relative to the project root)"
        ) from None
    except IsADirectoryError:
        raise node.error(keypath, f"{rel} is a directory, not a file") from None
    except OSError as exc:
        raise node.error(keypath, f"cannot read {rel}: {exc.strerror or exc}") from None
    if layout.built_in:
        source = f"{BUILT_IN}:{target.relative_to(templates_dir()).as_posix()}"
    else:
        source = normalise(rel)
    return text, source
