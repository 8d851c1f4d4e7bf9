"""The system prompt every agent gets: ``assemble_prompt(PromptRequest) -> AssembledPrompt``
(text plus attributed segments) and ``write_system_prompt``. docs/prompt.md describes it.

Modules: ``request`` (the values in and out), ``assemble`` (the sections' values),
``agent`` (which agent definition), ``shared_files``, ``render`` (Jinja), ``segments``
(attribution), ``text`` (placeholders, fences), ``paths`` (agent ids and run folders).
"""

from __future__ import annotations

from gitflow_agents.prompt.assemble import assemble_prompt
from gitflow_agents.prompt.paths import (
    agent_dir,
    default_agent_id,
    default_flow_name,
    write_system_prompt,
)
from gitflow_agents.prompt.render import SYSTEM_PROMPT_TEMPLATE
from gitflow_agents.prompt.request import AssembledPrompt, PromptRequest, Segment
from gitflow_agents.prompt.text import fence, resolve_placeholders

__all__ = [
    "SYSTEM_PROMPT_TEMPLATE",
    "AssembledPrompt",
    "PromptRequest",
    "Segment",
    "agent_dir",
    "assemble_prompt",
    "default_agent_id",
    "default_flow_name",
    "fence",
    "resolve_placeholders",
    "write_system_prompt",
]
