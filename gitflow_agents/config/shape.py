"""The shape of one `.flow/` YAML file, declared once: every key, its type, its default and what
it means. ``check.py`` validates each layer against it (with file:line messages) and
``json_schema.py`` turns it into the JSON Schema ``init`` writes for editors.

A rule that needs more than one key (``chain.implementer`` must name a configured agent) is
checked when the values are built (``build.py``); its JSON Schema counterpart, where one exists,
is given here as ``schema_extra`` so the editor schema still shows it.
"""

from __future__ import annotations

from types import MappingProxyType

from gitflow_agents.agents import adapter_names as registered
from gitflow_agents.config.review_shape import REVIEW
from gitflow_agents.config.spec import (
    MAX_SECONDS,
    AnyMap,
    Bool,
    Command,
    Int,
    MapOf,
    Num,
    Obj,
    Str,
    StrList,
)
from gitflow_agents.config.values import (
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
    ENV_NAME_PATTERN,
    MERGE_MODES,
    MODEL_PATTERN,
    NAME_PATTERN,
    SEVERITIES,
    ChainConfig,
)
from gitflow_agents.plan import SpecPlanConfig


def adapter_names() -> tuple[str, ...]:
    """The values ``agents.<name>.adapter`` accepts: the adapter registry's names."""
    return registered()


_AT_FILE = (
    " A value starting with '@' is the path of a file (relative to the project root) whose text"
    " is used; '@@' starts a literal '@'."
)
_AGENT_NAME = MappingProxyType({"pattern": f"^{NAME_PATTERN}$"})
_CHAIN = ChainConfig()
_SPEC_PLAN = SpecPlanConfig()

AGENT = Obj(
    doc="One agent, used as `--agent <name>`.",
    fields={
        "type": Str(
            doc="Agent type (builder, reviewer, fixer, planner, ...): shown as Type in the prompt "
            "and matched by shared_files.<key>.agents. Default: the agent's name."
        ),
        "adapter": Str(
            choices=adapter_names,
            default=DEFAULT_ADAPTER,
            doc="Which agent CLI runs this agent. 'command' runs `command`; 'builtin' is the "
            "offline reviewer.",
        ),
        "command": Command(
            doc="Only for adapter 'command': the argv to run, as a list or one string split like "
            "a shell would (no shell is used)."
        ),
        "model": Str(
            nullable=True,
            doc="Model name passed to the agent CLI (e.g. sonnet, gpt-5-codex). Default: the "
            "CLI's own default.",
        ),
        "system_prompt": Str(
            doc="The agent definition (the prompt's 'Agent Definition' section). May start with "
            "a YAML frontmatter block, which is hoisted to the top of the prompt." + _AT_FILE
        ),
        "description": Str(nullable=True, doc="The agent's role, shown as 'Role' in the prompt."),
        "options": AnyMap(
            doc="Adapter-specific settings (executable, extra_args, env, allow_env, ...); see "
            "docs/agents.md."
        ),
        "allow_env": StrList(
            pattern=ENV_NAME_PATTERN,
            what="an environment variable name",
            doc="Names of extra environment variables the agent may see (the environment is "
            "scrubbed otherwise). Merged into options.allow_env.",
        ),
        "completion_template": Str(
            nullable=True,
            doc="Overrides completion_workflow.template for this agent (e.g. the review workflow "
            "for the reviewer)." + _AT_FILE,
        ),
        "structured_reply": Bool(
            default=True,
            doc="Put the 'Reply Format' section (<SUMMARY> ... <STATUS> XML reply instructions, "
            "worded for the agent's CLI and role) into this agent's system prompt. false leaves "
            "it out.",
        ),
        "max_parallel": Int(
            minimum=1,
            what="a whole number",
            doc="At most this many runs of this agent's adapter (its CLI, e.g. every claude "
            "agent) at once, across the project's processes; a run waits for a free slot "
            "('waiting for a claude slot'). Agents of one adapter share the slots. Default: no "
            "limit. See docs/supervisor.md, 'Rate limits'.",
        ),
    },
)
SHARED_FILE = Obj(
    doc="A file agents are told about in the prompt. `path` is required in the merged "
    "configuration.",
    fields={
        "path": Str(
            doc="Path relative to the project root; may use {variables} such as {flow_dir} and "
            "{flow_name}."
        ),
        "info": Str(doc="What the file is for (shown as Info)."),
        "writable": Bool(
            default=False,
            doc="true: agents must append to it using write_template. false: read-only, left out "
            "of the prompt while the file does not exist.",
        ),
        "write_template": Str(
            nullable=True,
            doc="The entry format agents append to a writable file; may use {variables}."
            + _AT_FILE,
        ),
        "agents": StrList(
            pattern=NAME_PATTERN,
            what="an agent name or type",
            doc="Agent names or types that see this file. Empty or absent: every agent.",
        ),
    },
)
CHAIN = Obj(
    doc="Defaults of `gitflow-agents run` and `flow` (implement -> review -> fix chains); "
    "command-line options override them.",
    fields={
        "implementer": Str(
            default=_CHAIN.implementer,
            schema_extra=_AGENT_NAME,
            doc="The agent that implements a plan step (a key under agents).",
        ),
        "reviewers": StrList(
            pattern=NAME_PATTERN,
            what="an agent name",
            default=_CHAIN.reviewers,
            schema_extra=MappingProxyType({"minItems": 1, "uniqueItems": True}),
            doc="The reviewer agents; they run in parallel and the step is approved only if "
            "every one approves. Lists of later layers are added.",
        ),
        "fixer": Str(
            default=_CHAIN.fixer,
            schema_extra=_AGENT_NAME,
            doc="The agent that fixes what the reviewers asked for.",
        ),
        "max_iterations": Int(
            minimum=1,
            what="a whole number",
            default=_CHAIN.max_iterations,
            doc="Review rounds before the step fails; the last action is always a review.",
        ),
        "jobs": Int(
            minimum=1,
            what="a whole number",
            default=_CHAIN.jobs,
            doc="run --all: plan steps run at the same time, each in its own work tree "
            "(1: one after another).",
        ),
        "target": Str(
            doc="The branch approved steps are merged into (default: default_branch).",
        ),
        "branch_pattern": Str(
            default=_CHAIN.branch_pattern,
            schema_extra=MappingProxyType({"pattern": r"\{step2?[}:!]"}),
            doc="The step branch name. Placeholders: {plan_name} (or {plan}), {step}, {step2} "
            "(zero-padded); must contain {step} or {step2}.",
        ),
        "merge": Str(
            choices=MERGE_MODES,
            default=_CHAIN.merge,
            doc="ff: fast-forward only; merge: always a merge commit. Never forced.",
        ),
        "severity_threshold": Str(
            choices=SEVERITIES,
            default=_CHAIN.severity_threshold,
            doc="Findings at or above this severity block the merge.",
        ),
        "setup": Command(
            doc="Run in each new step work tree before its first agent (e.g. 'uv sync', 'npm "
            "ci'): a string runs through the shell (sh -c), a list as it is. Its output goes "
            "to setup.log in the step's run folder; a non-zero exit fails the step. Run again "
            "only for a new work tree or a changed command.",
        ),
        "copy_ignored": StrList(
            what="a path",
            default=_CHAIN.copy_ignored,
            doc="Ignored files copied from your checkout into each step work tree (e.g. .env): "
            "paths relative to the repository root, or globs (* and ? within a folder, ** "
            "across folders). Only files git ignores are copied, never committed, and their "
            "values are masked in every output; a listed path git tracks is an error.",
        ),
        "gc": Obj(
            doc="When `run` removes old work trees of its own at its end (as `gitflow-agents "
            "gc` does: never a live one, never one whose branch has commits found nowhere "
            "else).",
            fields={
                "older_than": Str(
                    nullable=True,
                    default="14d",
                    doc="Work trees unused for longer are removed: a whole number with s, m, "
                    "h, d or w (7d, 36h). null: no age limit.",
                ),
                "max_size": Str(
                    nullable=True,
                    doc="Keep the work-tree cache of this repository under this size, oldest "
                    "first: 5GB, 500MB (KB, MB, GB, TB; KiB … TiB). Default: no limit.",
                ),
            },
        ),
    },
)
PRICES = MapOf(
    doc="Model prices in USD per million tokens, laid over the shipped table "
    "(gitflow_agents/agents/prices.yaml). They estimate the cost of a run whose agent CLI reports "
    "tokens but no cost (recorded as costEstimated: true); a model in neither table has no cost.",
    key_pattern=MODEL_PATTERN,
    key_what="a model name: letters, digits and '.', '_', '-', ':', '/', '@'",
    item=Obj(
        doc="One model's prices. input and output are required unless the shipped table has "
        "the model.",
        fields={
            "input": Num(doc="USD per million input tokens (not read from the cache)."),
            "output": Num(doc="USD per million output tokens."),
            "cached": Num(
                doc="USD per million input tokens read from the cache. Default: the input price."
            ),
        },
    ),
)
_BUDGET_ENTRY = (
    ("agent", "One agent run (each attempt of each agent)."),
    ("step", "One step run of `run` (every agent of the step, in every round)."),
    ("plan", "One `run --all` (or `run --step`) over a plan: no new step starts once it is spent."),
    ("review", "One review: `git agent-review --agent`, `flow review`, or a review round."),
)
BUDGET = Obj(
    doc="Spending limits, in USD and/or tokens (input plus output), per scope. An agent is not "
    "started when a scope it runs in is spent, and is stopped at the limit while it streams its "
    "usage. Options --budget-usd / --budget-tokens override one scope. See docs/configuration.md.",
    fields={
        scope: Obj(
            doc=doc,
            fields={
                "usd": Num(doc="USD this scope may spend (0: nothing, no agent starts)."),
                "tokens": Int(
                    minimum=0,
                    what="a whole number of tokens",
                    doc="Tokens (input plus output) this scope may use.",
                ),
            },
        )
        for scope, doc in _BUDGET_ENTRY
    },
)
TOP = Obj(
    doc="One layer of the flow configuration: .flow/base.yaml, .flow/<flow-type>/base.yaml or "
    ".flow/<flow-type>/<variant>.yaml. Layers merge: scalars are replaced, mappings merge, lists "
    "concatenate. See docs/configuration.md.",
    fields={
        "flow_dir": Str(
            default=DEFAULT_FLOW_DIR,
            doc="Folder for run directories (flows/<flow>/agents/<agent-id>/); {flow_dir} in "
            "templates.",
        ),
        "default_branch": Str(
            default=DEFAULT_BRANCH, doc="The branch changes are compared against."
        ),
        "specs_folder": Str(
            default=DEFAULT_SPECS_FOLDER,
            doc="Folder holding spec plans; {specs_folder} in templates.",
        ),
        "defaults": Obj(
            doc="Agent supervision limits, in seconds.",
            fields={
                "stuck_timeout_secs": Int(
                    maximum=MAX_SECONDS,
                    minimum=1,
                    default=DEFAULT_STUCK_TIMEOUT_SECS,
                    doc="An agent that is alive but shows no activity (output, report writes, "
                    "heartbeats) for this long is stuck.",
                ),
                "max_wait_secs": Int(
                    maximum=MAX_SECONDS,
                    minimum=1,
                    default=DEFAULT_MAX_WAIT_SECS,
                    doc="Hard limit for one agent run; then it times out.",
                ),
                "stuck_retry_grace_secs": Int(
                    maximum=MAX_SECONDS,
                    minimum=0,
                    default=DEFAULT_STUCK_RETRY_GRACE_SECS,
                    doc="After a stuck verdict: wait this long and re-check before killing and "
                    "retrying.",
                ),
                "rate_limit_wait_secs": Int(
                    maximum=MAX_SECONDS,
                    minimum=0,
                    default=DEFAULT_RATE_LIMIT_WAIT_SECS,
                    doc="A rate-limited agent (HTTP 429, 529 overloaded, a usage limit) waits "
                    "for the reset time its CLI names, else backs off, and continues its session; "
                    "at most this long in all, then it ends rate_limited (exit code 6). 0: never "
                    "wait.",
                ),
            },
        ),
        "spec_plan": Obj(
            doc="How spec plans are parsed.",
            fields={
                "top_level_end_marker": Str(
                    default=_SPEC_PLAN.top_level_end_marker,
                    doc="The line that ends the plan overview.",
                ),
                "step_header_pattern": Str(
                    default=_SPEC_PLAN.step_header_pattern,
                    doc="Regular expression of a step header line with exactly 3 capture groups: "
                    "(status) (step number) (title).",
                ),
            },
        ),
        "completion_workflow": Obj(
            doc="How agents report progress and signal completion. `template` is required in the "
            "merged configuration.",
            fields={
                "template": Str(
                    doc="The 'Output Requirements' text; must use at least one of {report_file}, "
                    "{success_file}, {failed_file}." + _AT_FILE
                ),
                "report": Obj(
                    doc="Report file names.",
                    fields={
                        "filename": Str(
                            default=DEFAULT_REPORT_FILENAME,
                            doc="Report file name ({report_file}).",
                        ),
                        "success_suffix": Str(
                            default=DEFAULT_SUCCESS_SUFFIX,
                            doc="Replaces the report's extension on success ({success_file}).",
                        ),
                        "failure_suffix": Str(
                            default=DEFAULT_FAILURE_SUFFIX,
                            doc="Replaces the report's extension on failure ({failed_file}).",
                        ),
                    },
                ),
            },
        ),
        "agents": MapOf(item=AGENT, doc="Agents by name."),
        "shared_files": MapOf(item=SHARED_FILE, doc="Shared context files by key."),
        "chain": CHAIN,
        "review": REVIEW,
        "prices": PRICES,
        "budget": BUDGET,
    },
)
