"""Is an agent's program there? A missing CLI is one clear line naming the package that installs
it and the ``command`` adapter as the way to run something else (docs/agents.md, "Installing the
CLIs"), never a crashed run with ``[Errno 2]``.

``check_agents`` looks before anything starts (``run`` checks the implementer, every reviewer
and the fixer, so a missing reviewer CLI does not surface after the implementer's work);
``require_program`` checks the exact launch the adapter built, just before the engine
(``agent_run``) starts it.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gitflow_agents.agents import BUILTIN, get_adapter
from gitflow_agents.base.errors import AgentError

if TYPE_CHECKING:
    from gitflow_agents.agents.base import Adapter, LaunchSpec


class ConfiguredAgent(Protocol):
    """What ``check_agents`` reads of an agent configured under ``agents:``
    (``config.AgentConfig``; config/ is the layer above, so it is named by its shape)."""

    @property
    def adapter(self) -> str: ...

    @property
    def command(self) -> tuple[str, ...] | None: ...

    @property
    def options(self) -> Mapping[str, Any]: ...


class AgentLookup(Protocol):
    """``config.FlowConfig``: the configured agent of a name (ConfigError for an unknown one)."""

    def agent(self, name: str) -> ConfiguredAgent: ...


class AgentNotInstalled(AgentError):
    """The program an agent runs is not installed (exit 3, as every agent that cannot run)."""


def find_program(program: str, *, env: Mapping[str, str], cwd: Path) -> str | None:
    """The file started for ``argv[0] == program``, found as ``subprocess.Popen`` finds it: a
    name on ``env``'s PATH, a path with a slash relative to ``cwd``; None when there is no
    executable file there."""
    if "/" in program:
        path = cwd / program  # an absolute program replaces cwd
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(program, path=os.pathsep.join(os.get_exec_path(dict(env))))


def missing_interpreter(path: str | Path, *, env: Mapping[str, str], cwd: Path) -> str | None:
    """What is missing when the script at ``path`` (relative to ``cwd``) cannot start although
    it is an executable file: its ``#!`` line's interpreter, which the system reports as the
    script itself being missing (``ENOENT``). ``#!/usr/bin/env NAME`` looks NAME up on ``env``'s
    PATH, as env does. None when it has no ``#!`` line or its interpreter is there."""
    try:
        with (cwd / path).open("rb") as handle:
            first = handle.read(512).split(b"\n", 1)[0]
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    line = first[2:].decode("utf-8", "replace").strip()
    words = line.split()
    if not words:
        return f"its #! line names no interpreter ({first.decode('utf-8', 'replace')!r})"
    interpreter = words[0]
    if find_program(interpreter if "/" in interpreter else f"./{interpreter}", env={}, cwd=cwd):
        if Path(interpreter).name != "env":
            return None
        names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        if not names or find_program(names[0], env=env, cwd=cwd) is not None:
            return None
        return f"its #! interpreter {names[0]!r} (#!{line}) is not on PATH"
    shown = "" if line == interpreter else f" (#!{line})"
    return f"its #! interpreter {interpreter!r}{shown} does not exist or cannot run"


def not_installed_message(agent: str, adapter: Adapter, program: str) -> str:
    """One line: what is missing, what installs it, and how to run another program instead."""
    if not adapter.cli.install:  # the command adapter: the user's own program
        return (
            f"agent {agent!r}: cannot start {program!r}: no such executable "
            f"({'not on PATH' if '/' not in program else 'no executable file there'}); "
            f"check agents.{agent}.command"
        )
    where = (
        f"no {program!r} on PATH"
        if "/" not in program
        else f"no executable {program} (agents.{agent}.options.executable)"
    )
    return (
        f"agent {agent!r}: the {adapter.cli.name} CLI is not installed ({where}): install it with "
        f"`{adapter.cli.install}`, or give agents.{agent} `adapter: command` and "
        "`command: [program, args...]` to run another program (docs/agents.md)"
    )


def no_interpreter_message(agent: str, adapter: Adapter, program: str, problem: str) -> str:
    """One line: a script the agent runs whose interpreter (``missing_interpreter``) is missing."""
    fix = (
        f"check agents.{agent}.command"
        if not adapter.cli.install
        else f"install what it needs, or reinstall the {adapter.cli.name} CLI "
        f"(`{adapter.cli.install}`)"
    )
    return f"agent {agent!r}: cannot start {program!r}: {problem}; {fix}"


def require_program(spec: LaunchSpec, *, agent: str, adapter: Adapter) -> None:
    """AgentNotInstalled when the launch's program cannot be started: it is not there, or it is
    a script whose ``#!`` interpreter is not."""
    program = spec.argv[0] if spec.argv else ""
    if not program:
        return
    found = find_program(program, env=spec.env, cwd=spec.cwd)
    if found is None:
        raise AgentNotInstalled(not_installed_message(agent, adapter, program))
    problem = missing_interpreter(found, env=spec.env, cwd=spec.cwd)
    if problem is not None:
        raise AgentNotInstalled(no_interpreter_message(agent, adapter, program, problem))


def check_agents(
    config: AgentLookup, agents: Iterable[str], *, cwd: Path, env: Mapping[str, str] | None = None
) -> None:
    """AgentNotInstalled for the first of ``agents`` whose program is surely missing. A program
    known only at launch (a relative path, a ``{placeholder}``) is left to ``require_program``."""
    base_env = dict(os.environ) if env is None else env
    for name in dict.fromkeys(agents):
        agent_cfg = config.agent(name)
        if agent_cfg.adapter == BUILTIN:
            continue
        adapter = get_adapter(agent_cfg.adapter)
        program = _configured_program(agent_cfg, adapter)
        if not program or "{" in program or ("/" in program and not Path(program).is_absolute()):
            continue
        overrides = agent_cfg.options.get("env")  # applied last by every adapter
        run_env = {**base_env, **overrides} if isinstance(overrides, Mapping) else base_env
        found = find_program(program, env=run_env, cwd=cwd)
        if found is None:
            raise AgentNotInstalled(not_installed_message(name, adapter, program))
        problem = missing_interpreter(found, env=run_env, cwd=cwd)
        if problem is not None:
            raise AgentNotInstalled(no_interpreter_message(name, adapter, program, problem))


def _configured_program(agent_cfg: ConfiguredAgent, adapter: Adapter) -> str:
    """``options.executable``, else the command's first word, else the CLI's usual name."""
    executable = agent_cfg.options.get("executable")
    if isinstance(executable, str) and executable:
        return executable
    if adapter.cli.program:
        return adapter.cli.program
    raw: object = agent_cfg.command or agent_cfg.options.get("command")
    if isinstance(raw, str):
        try:
            raw = shlex.split(raw)
        except ValueError:
            return ""  # the launch refuses it with its own message
    if isinstance(raw, (list, tuple)) and raw and isinstance(raw[0], str):
        return raw[0]
    return ""
