"""The values a loaded flow configuration is made of, their defaults, and the names shared with
the prompt (template variables) and the chain (branch patterns)."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

from gitflow_agents.agents.prices import Price, shipped_prices
from gitflow_agents.base.errors import ConfigError
from gitflow_agents.config.budget import Budgets
from gitflow_agents.config.spec import NAME_PATTERN as NAME_PATTERN
from gitflow_agents.findings.settings import ReviewSettings
from gitflow_agents.git.refname import branch_name_problem
from gitflow_agents.plan import SpecPlanConfig
from gitflow_agents.plan.model import BRANCH_PLACEHOLDERS, format_branch

FLOW_DIR_NAME = ".flow"
BASE_FILE = "base.yaml"
BUILT_IN = "built-in"
INLINE = "inline"

# The {variables} the tool resolves in prompts (docs/protocol.md, System prompt); shared file
# paths may use only these.
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


DEFAULT_ADAPTER = "claude"

DEFAULT_FLOW_DIR = "flows"
DEFAULT_BRANCH = "main"
DEFAULT_SPECS_FOLDER = "specs"
DEFAULT_STUCK_TIMEOUT_SECS = 1200
DEFAULT_MAX_WAIT_SECS = 3600
DEFAULT_STUCK_RETRY_GRACE_SECS = 30
DEFAULT_RATE_LIMIT_WAIT_SECS = 900
DEFAULT_REPORT_FILENAME = "report.md"
DEFAULT_SUCCESS_SUFFIX = ".complete.md"
DEFAULT_FAILURE_SUFFIX = ".failed.md"
DEFAULT_BRANCH_PATTERN = "agents/{plan_name}/step-{step}"
MERGE_MODES: tuple[str, ...] = ("ff", "merge")
DEFAULT_GC_OLDER_THAN = 14 * 86400.0  # chain.gc.older_than: 14d
SEVERITIES: tuple[str, ...] = ("error", "warn", "info")

# Names of agents, shared files, flow types and variants (``spec.NAME_PATTERN``); and of
# environment variables.
ENV_NAME_PATTERN = "[A-Za-z_][A-Za-z0-9_]*"
MODEL_PATTERN = "[A-Za-z0-9][A-Za-z0-9_.:/@-]*"  # gpt-5, anthropic/claude-sonnet-4, o3@high
NAME = re.compile(NAME_PATTERN + r"\Z")
ENV_NAME = re.compile(ENV_NAME_PATTERN + r"\Z")


@dataclass(frozen=True)
class CompletionWorkflow:
    """How agents report progress and signal completion (docs/protocol.md, Completion signal)."""

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
    structured_reply: bool = True  # Reply Format instructions in the prompt (docs/prompt.md)
    max_parallel: int | None = None  # runs of its adapter at once (runs/slots.py); None: any


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
class GcPolicy:
    """``chain.gc``: which of its work trees ``run`` removes at its end (``gc`` by default)."""

    older_than: float | None = DEFAULT_GC_OLDER_THAN  # seconds unused; None: no age limit
    max_size: int | None = None  # bytes the repository's work-tree cache may hold; None: any


@dataclass(frozen=True)
class ChainConfig:
    """The ``chain:`` section: defaults of ``run`` and ``flow`` (command-line options win)."""

    implementer: str = "builder"
    reviewers: tuple[str, ...] = ("reviewer",)
    fixer: str = "fixer"
    max_iterations: int = 3
    jobs: int = 1  # run --all: steps at once on this machine (1: one after another)
    target: str | None = None  # None: default_branch
    branch_pattern: str = DEFAULT_BRANCH_PATTERN
    merge: str = "ff"  # one of MERGE_MODES
    severity_threshold: str = "error"  # one of SEVERITIES
    # run in each new step work tree before its first agent: a shell command (str) or an argv
    setup: str | tuple[str, ...] | None = None
    # ignored files (paths or globs) copied from the user's checkout into each step work tree
    copy_ignored: tuple[str, ...] = ()
    gc: GcPolicy = field(default_factory=lambda: GcPolicy())


def branch_pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a usable step branch pattern, or None when it is.

    It may use only :data:`BRANCH_PLACEHOLDERS` (``{{``/``}}`` for literal braces) and must use
    ``{step}`` or ``{step2}``, so every step gets a branch of its own; the branch it gives step 1
    of a plan named ``plan`` must be one git takes (``git check-ref-format --branch``)."""
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
        sample = format_branch(pattern, _SAMPLE_PLAN, 1)
    except (ValueError, IndexError, KeyError) as exc:
        return f"not a valid pattern: {exc}"
    problem = branch_name_problem(sample)
    if problem is not None:
        return f"{sample!r} (step 1 of plan {_SAMPLE_PLAN!r}) is not a valid branch name: {problem}"
    return None


_SAMPLE_PLAN = "plan"


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
    rate_limit_wait_secs: int = DEFAULT_RATE_LIMIT_WAIT_SECS
    chain: ChainConfig = field(default_factory=ChainConfig)
    review: ReviewSettings = field(default_factory=ReviewSettings)
    # model -> Price: the shipped table with the project's `prices:` over it
    prices: Mapping[str, Price] = field(default_factory=shipped_prices)
    budget: Budgets = field(default_factory=Budgets)  # the `budget:` section

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
    return ", ".join(display(config.root, path) for path in config.sources) or "the config"


def display(root: Path, path: Path) -> str:
    """``path`` relative to the project root when inside it (posix slashes), else absolute."""
    try:
        return path.absolute().relative_to(root).as_posix()
    except ValueError:
        return str(path)
