"""The shared files an agent is shown: the config's ``shared_files`` this agent may see, writable
ones always, readable ones only when they exist (docs/prompt.md, "Layout")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from gitflow_agents.prompt.text import clean, resolve_placeholders

if TYPE_CHECKING:
    from gitflow_agents.config import SharedFile
    from gitflow_agents.prompt.request import PromptRequest


class File(NamedTuple):
    """One shared file as the template shows it."""

    name: str
    path: str
    info: str
    template: str | None
    source: str


def shared_files(
    request: PromptRequest, agent_type: str, variables: Mapping[str, str]
) -> tuple[list[File], list[File]]:
    """Writable files (always shown) and readable files that exist after ``{var}`` resolution,
    limited to the files whose ``agents`` list is empty or names this agent."""
    writable: list[File] = []
    readable: list[File] = []
    names = {request.agent, agent_type}
    for key, shared in request.config.shared_files.items():
        if shared.agents and not names.intersection(shared.agents):
            continue
        path = resolve_placeholders(shared.path, variables)
        file = File(
            name=key,
            path=path,
            info=clean(resolve_placeholders(shared.info, variables)),
            template=(
                clean(resolve_placeholders(shared.write_template, variables))
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
