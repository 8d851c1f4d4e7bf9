"""An agent's adapter settings checked when the configuration is loaded (``config/build.py``),
not when the agent is launched: a reviewer's unknown option used to stop a run only once the
implementer had worked. The checks are the adapter's own: every option its CLI does not know,
then the first value its ``launch`` refuses, found by launching it dry (nothing is started:
``launch`` only builds an argv and may write into the config folder it is given, here a
temporary one, removed at once)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitflow_agents.agents import BUILTIN, get_adapter
from gitflow_agents.agents.base import Invocation, unknown_options
from gitflow_agents.base.errors import ConfigError


def agent_problems(
    name: str,
    adapter: str,
    options: Mapping[str, Any],
    *,
    model: str | None = None,
    command: tuple[str, ...] | None = None,
) -> list[ConfigError]:
    """What the ``adapter`` of agent ``name`` would refuse of its ``options`` (and ``model``,
    ``command``): one ConfigError per unknown option, else the first refused value, each keyed
    as the config names it (``agents.<name>.options.<key>``, ``agents.<name>.command``), with
    no file or line (the caller knows them). [] for ``builtin``, which runs in process."""
    if adapter == BUILTIN:
        return []
    cli_adapter = get_adapter(adapter)
    unknown = [
        ConfigError(message, key=f"agents.{name}.options.{key}")
        for key, message in unknown_options(cli_adapter.cli, options)
    ]
    if unknown:
        return unknown
    if not options and command is None:
        return []  # nothing of its own to check: the adapter's defaults
    if model is None and command is not None and any("{model}" in arg for arg in command):
        # its model may come from a layer this load leaves out (`.flow/<flow-type>/`): a run
        # without one is refused when it launches the agent, not every command at load
        model = "model"
    with tempfile.TemporaryDirectory(prefix="gitflow-agents-check-") as folder:
        place = Path(folder)
        dry = Invocation(
            agent_id=name,  # the adapters key their errors agents.<agent_id>.…
            agent_dir=place / "agent",
            workdir=place,
            system_prompt_path=place / "system_prompt.md",
            system_prompt="",
            task="",
            model=model,
            options=options,
            config_dir=place / "config",
            env={},
            command=command,
        )
        try:
            cli_adapter.launch(dry)
        except ConfigError as exc:
            return [exc]
    return []
