"""A step work tree made ready to work in, before its first agent: the ignored files the user
listed copied in from their checkout (``chain.copy_ignored``) and the setup command run once
per new work tree (``chain.setup``; docs/chains.md, "Work trees ready to work in").

Copied files are only ever files git ignores in the user's checkout; they are kept out of every
agent commit (``Context.protected`` joins the commit filter ``Context.exclude``) and their
secret-looking values are masked in every output (``Context.secrets``). Whether the setup ran,
and for which command, is kept in the work tree's own git directory (``.git/worktrees/<name>``):
it goes when the work tree goes, and a command that changed runs again. A setup killed with its
orchestrator (``kill -9``) left no "done" record, so the next run kills what is left of it (its
tree marker) and runs it again.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import shutil
import stat
import time
from pathlib import Path

from gitflow_agents.base import proc
from gitflow_agents.base.errors import ExitCode, GitflowError
from gitflow_agents.base.fsutil import read_limited, real_path, write_json_atomic, write_text_atomic
from gitflow_agents.base.redact import MIN_EXACT_LENGTH, redact_text, secret_values
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.workspace import Workspace
from gitflow_agents.config.where import tracked_copies
from gitflow_agents.git.ignored import ignored_files
from gitflow_agents.git.worktree import admin_dir
from gitflow_agents.runs import read_json
from gitflow_agents.runs.schema import SetupEntry
from gitflow_agents.runs.tree import TREE_ENV, kill_tree

SETUP_LOG = "setup.log"
SETUP_STATE = "gitflow-agents-setup.json"
TAIL_LINES = 15
MAX_SECRET_SCAN = 1024 * 1024  # bytes of a copied file read for the values to mask
_DOTENV = re.compile(r"^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.]*\s*[=:]\s*(.*?)\s*$")
_PLAIN = re.compile(r"[a-z]+|[0-9.]+|true|false|yes|no|null|none", re.IGNORECASE)


class SetupFailed(GitflowError):
    """``chain.setup`` exited non-zero (or timed out, or could not start): the step fails."""

    exit_code = ExitCode.AGENT_FAILED

    def __init__(self, message: str, entry: SetupEntry) -> None:
        super().__init__(message)
        self.entry = entry


def make_ready(ctx: Context, ws: Workspace, run_dir: Path) -> SetupEntry | None:
    """Copy the listed ignored files into ``ws`` and run the setup command when the work tree
    has not been set up with it yet; the setup's record for the step run (None: no setup).
    ConfigError for a listed path git tracks; SetupFailed when the setup fails."""
    copy_ignored(ctx, ws)
    return run_setup(ctx, ws, run_dir)


def copy_ignored(ctx: Context, ws: Workspace) -> tuple[str, ...]:
    """Copy every file git ignores in the user's checkout that ``chain.copy_ignored`` names
    into the same place in ``ws``; the paths copied. They join ``ctx.protected`` (never
    committed) and their values ``ctx.secrets`` (masked)."""
    listed = ctx.config.chain.copy_ignored
    if not listed:
        return ()
    for problem in tracked_copies(ctx.config, ctx.root):
        raise problem
    flow_dir = ctx.exclude[0] + "/"
    copied = []
    for rel in ignored_files(ctx.root, listed):
        if rel.startswith(flow_dir) or not _copy_file(ctx.root / rel, ws.worktree, rel):
            continue
        copied.append(rel)
        ctx.protected.add(rel)
        ctx.secrets |= file_secrets(ctx.root / rel, rel)
    return tuple(copied)


def _copy_file(source: Path, worktree: Path, rel: str) -> bool:
    """Copy the regular file ``source`` to ``worktree/rel`` (temp file, then rename; the mode
    kept); False, copying nothing, when it is no regular file or its folder in the work tree
    leads out of it (a symlink an agent planted)."""
    with contextlib.suppress(OSError):
        if not stat.S_ISREG(source.stat().st_mode):
            return False
        target = worktree / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not real_path(target.parent).is_relative_to(real_path(worktree)):
            return False
        tmp = target.with_name(f".{target.name}.{os.getpid()}.copy")
        shutil.copyfile(source, tmp)
        shutil.copymode(source, tmp)
        tmp.replace(target)
        return True
    return False


def file_secrets(path: Path, rel: str) -> set[str]:
    """The values of ``path`` to mask: what the secret rules find (tokens, secret-named values,
    private key bodies), and every value of a ``KEY=value`` line (dotenv) that is not a plain
    word, number or boolean and is long enough to be masked by value."""
    try:
        text = read_limited(path, MAX_SECRET_SCAN).decode("utf-8", "replace")
    except OSError:
        return set()
    lines = text.splitlines()
    found = secret_values(lines, rel)
    for line in lines:
        match = _DOTENV.match(line)
        if match is None or line.lstrip().startswith("#"):
            continue
        value = match.group(1).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if len(value) >= MIN_EXACT_LENGTH and not _PLAIN.fullmatch(value):
            found.add(value)
    return found


def setup_command(ctx: Context) -> tuple[str, list[str]] | None:
    """``chain.setup`` as shown (the command line) and as run (a string through ``sh -c``)."""
    command = ctx.config.chain.setup
    if command is None:
        return None
    if isinstance(command, str):
        return command, ["/bin/sh", "-c", command]
    return shlex.join(command), list(command)


def run_setup(ctx: Context, ws: Workspace, run_dir: Path) -> SetupEntry | None:
    """Run ``chain.setup`` in ``ws`` unless the work tree was set up with this command already;
    its output (masked) goes to ``run_dir/setup.log``. SetupFailed when it fails."""
    found = setup_command(ctx)
    if found is None:
        return None
    shown, argv = found
    state_file = _state_file(ws)
    state = read_json(state_file) if state_file is not None else None
    if state and state.get("state") == "done" and state.get("command") == shown:
        return SetupEntry(shown, ran=False, exit_code=0, log=None)
    _kill_leftover(state, ctx.settings.kill_grace)
    token = secrets.token_hex(16)
    if state_file is not None:
        running = {"state": "running", "command": shown, "treeToken": token, "at": time.time()}
        write_json_atomic(state_file, running)
    code, output = _execute(ctx, ws, argv, token)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(run_dir / SETUP_LOG, redact_text(output, ctx.secrets))
    entry = SetupEntry(shown, ran=True, exit_code=code, log=SETUP_LOG)
    if code != 0:
        if state_file is not None:
            with contextlib.suppress(OSError):
                state_file.unlink()
        what = "timed out" if code is None else f"exited {code}"
        tail = "\n".join(output.rstrip().splitlines()[-TAIL_LINES:])
        raise SetupFailed(
            f"chain.setup `{shown}` {what} in the work tree {ws.worktree} (the log: "
            f"{run_dir / SETUP_LOG}); its last lines:\n{redact_text(tail, ctx.secrets)}",
            entry,
        )
    if state_file is not None:
        write_json_atomic(state_file, {"state": "done", "command": shown, "at": time.time()})
    return entry


def _execute(ctx: Context, ws: Workspace, argv: list[str], token: str) -> tuple[int | None, str]:
    """(exit code, output) of the setup; None for a timeout (``defaults.max_wait_secs``)."""
    env = {**ctx.env, TREE_ENV: token}
    limit = float(ctx.settings.timeout or ctx.config.max_wait_secs)
    try:
        result = proc.run(
            argv, cwd=ws.worktree, env=env, timeout=limit, check=False, merge_stderr=True
        )
    except proc.TimeoutExpired:
        return None, f"gitflow-agents: the setup timed out after {limit:g}s and was killed\n"
    except GitflowError as exc:  # the program does not exist
        return 127, f"gitflow-agents: {exc}\n"
    return result.returncode, result.stdout


def _state_file(ws: Workspace) -> Path | None:
    folder = admin_dir(ws.worktree)
    return folder / SETUP_STATE if folder is not None else None


def _kill_leftover(state: dict[str, object] | None, grace: float) -> None:
    """Kill what is left of a setup that never finished (its orchestrator was killed): every
    process carrying its tree marker."""
    token = state.get("treeToken") if state else None
    at = state.get("at") if state else None
    if state and state.get("state") == "running" and isinstance(token, str):
        kill_tree(
            None, token=token, grace=grace, since=float(at) if isinstance(at, float) else None
        )
