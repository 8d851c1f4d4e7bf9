"""Assemble one agent's system prompt: gather the plain values of every section, resolve the
``{variables}`` in the texts that are templates, render ``templates/system_prompt.md.j2``, and
attribute each part of the result to where it came from.

The sections and their order are in docs/protocol.md, "System prompt"; every rule of each
section in docs/prompt.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from gitflow_agents.assets.assemble import SEGMENT_SEPARATOR
from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.resources import templates_dir
from gitflow_agents.findings.reply import reply_instructions
from gitflow_agents.prompt.agent import BUILT_IN, AgentDefinition, resolve_agent
from gitflow_agents.prompt.apply_to import applied_instructions
from gitflow_agents.prompt.paths import (
    agent_rel_dir,
    check_name,
    default_agent_id,
    default_flow_name,
    display_path,
    previous_report_rel,
)
from gitflow_agents.prompt.render import SYSTEM_PROMPT_TEMPLATE, render
from gitflow_agents.prompt.request import AssembledPrompt, Part, PromptRequest, Segment
from gitflow_agents.prompt.segments import block_parts, split
from gitflow_agents.prompt.shared_files import shared_files
from gitflow_agents.prompt.text import clean, fence, resolve_placeholders

if TYPE_CHECKING:
    from pathlib import Path

NOT_APPLICABLE = "N/A"


class _Report(NamedTuple):
    agent_id: str
    path: str


def assemble_prompt(request: PromptRequest) -> AssembledPrompt:
    """Build the full system prompt for one agent, with per-section attribution."""
    agent = with_applied(resolve_agent(request), request)
    plan_context: str | None = None
    if request.plan is not None and request.step is not None:
        plan_context = request.plan.assignment_context(request.step)
    elif request.task is None:
        raise UsageError("nothing to assign: give a task, or a plan with a step")
    flow_name = check_name(default_flow_name(request), "flow name")
    agent_id = check_name(
        default_agent_id(request.agent, request.step)
        if request.agent_id is None
        else request.agent_id,
        "agent id",
    )
    variables = _variables(request, agent, flow_name, agent_id)
    writable, readable = shared_files(request, agent.type, variables)
    assignment = _assignment(request, plan_context)
    directory = request.template_dir or templates_dir()
    text, blocks = render(
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
            "previous_reports": _reports(request, flow_name, agent),
            "output_requirements": clean(resolve_placeholders(agent.workflow.template, variables)),
            "reply_format": _reply_format(request, agent.type),
            "agent_definition": clean(resolve_placeholders(agent.definition, variables)),
            "assignment": [part.text for part in assignment],
        },
    )
    template_source = _template_source(request, directory)
    layers = [
        part._replace(text=clean(resolve_placeholders(part.text, variables)))
        for part in agent.layers
    ]
    parts = block_parts(template_source, agent, writable, readable, layers, assignment)
    segments: list[Segment] = []
    for name, content in blocks:
        head, inner = parts.get(name, (Part("", "template", name, template_source), []))
        segments.extend(split(content, head, inner))
    return AssembledPrompt(text=text, segments=tuple(segments))


def with_applied(agent: AgentDefinition, request: PromptRequest) -> AgentDefinition:
    """``agent`` with the instructions ``applyTo`` attaches for ``request`` appended to its
    definition, each a layer of its own (``prompt/apply_to.py``)."""
    applied = applied_instructions(request, [layer.source for layer in agent.layers])
    if not applied:
        return agent
    texts = [agent.definition, *(part.text for part in applied)]
    definition = SEGMENT_SEPARATOR.join(text for text in texts if text.strip())
    return agent._replace(definition=definition, layers=(*agent.layers, *applied))


def _template_source(request: PromptRequest, directory: Path) -> str:
    """``built-in`` for the shipped template, else the custom template's path."""
    if request.template_dir is None:
        return BUILT_IN
    return display_path(request.root, directory / SYSTEM_PROMPT_TEMPLATE)


def _variables(
    request: PromptRequest, agent: AgentDefinition, flow_name: str, agent_id: str
) -> dict[str, str]:
    """The ``{variables}`` of the prompt's texts (``config.TEMPLATE_VARIABLES``); those without
    a value in this run are ``N/A``."""
    config = request.config
    own_dir = agent_rel_dir(config.flow_dir, flow_name, agent_id)
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


def _reports(request: PromptRequest, flow_name: str, agent: AgentDefinition) -> list[_Report]:
    """The completed report of every agent named by ``--after``, by path from the root."""
    return [
        _Report(
            name,
            previous_report_rel(
                request.config.flow_dir, flow_name, name, agent.workflow.success_filename
            ),
        )
        for name in request.after
    ]


def _reply_format(request: PromptRequest, agent_type: str) -> str | None:
    """The reply instructions for this agent (its CLI from ``.flow`` config, its role from the
    type; docs/protocol.md, "Agent replies"); None when the agent's config says
    ``structured_reply: false``."""
    config = request.config.agents.get(request.agent)
    if config is not None and not config.structured_reply:
        return None
    return reply_instructions(config.adapter if config else None, agent_type, request.agent)


def _assignment(request: PromptRequest, plan_context: str | None) -> list[Part]:
    """Preamble, fenced plan context, raw task: each present one, in that order."""
    parts: list[Part] = []
    preamble = clean(request.preamble or "")
    if preamble:
        parts.append(Part(preamble, "preamble", "assignment preamble", "cli:--preamble"))
    if plan_context is not None and request.plan is not None:
        source = display_path(request.root, request.plan.path.absolute())
        label = f"{request.plan.name} step {request.step}"
        parts.append(Part(fence(clean(plan_context), "md"), "plan", label, source))
    task = clean(request.task or "")
    if task:
        parts.append(Part(task, "task", "task", "cli:--task"))
    if not parts:
        raise UsageError("nothing to assign: the task is empty")
    return parts
