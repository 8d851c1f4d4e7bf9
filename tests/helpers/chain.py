"""A chain on a real temporary repository with the fake agents of tests/fakes/fake_flow_agent:
``configure`` writes the agents and commits a plan, ``run`` runs ``gitflow-agents run`` in this
process (``run_proc`` as a real process), and the readers of what a run left (``results``,
step statuses, notes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import FAKES, ROOT, CliResult, cli_main, git, run_cli

FAKE = FAKES / "fake_flow_agent"
MARKER = "<!-- gitflow-agents:git-stats -->"

PLAN = """\
# Plan: Feature

Overview of the feature.

## Implementation Steps

### Status: ❌ | Step 1: Add the module

Add src/new_module.py.

### Status: ❌ | Step 2: Polish

Polish it.
"""


def _agent(role: str, mode: str, sleep: float = 0.0, hold: Path | None = None) -> str:
    argv = [sys.executable, str(FAKE), role, mode] + (["--sleep", str(sleep)] if sleep else [])
    argv += ["--hold", str(hold)] if hold is not None else []
    return f"    adapter: command\n    command: {json.dumps(argv)}\n"


def release(hold: Path, role: str) -> None:
    """Let the agents of ``role`` (``implementer``, ``reviewer``) configured with ``hold`` go on."""
    hold.mkdir(parents=True, exist_ok=True)
    (hold / role).touch()


def configure(
    repo: Path,
    *,
    implementer: str = "edit",
    reviewer: str = "approve",
    fixer: str = "fix",
    extra_reviewers: dict[str, str] | None = None,
    sleep: float = 0.0,
    hold: Path | None = None,
) -> None:
    """Write .flow/base.yaml with fake agents (not committed: config is read from the user's
    tree) and commit a plan and a file the implementer renames. ``sleep``: the implementer and
    the reviewers wait that long first; ``hold``: they wait until ``release`` lets them go."""
    reviewers = {"reviewer": reviewer, **(extra_reviewers or {})}
    text = (
        "flow_dir: flows\ndefault_branch: main\n"
        "defaults:\n  stuck_timeout_secs: 20\n  max_wait_secs: 30\n"
        "completion_workflow:\n"
        f'  template: "Write {{report_file}}; rename it to {{success_file}} or {{failed_file}}. '
        f'Modified files: {MARKER}"\n'
        "agents:\n"
        f"  builder:\n{_agent('implementer', implementer, sleep, hold)}"
        f"  fixer:\n{_agent('fixer', fixer)}"
    )
    for name, mode in reviewers.items():
        text += f"  {name}:\n{_agent('reviewer', mode, sleep, hold)}"
    (repo / ".flow").mkdir(exist_ok=True)
    (repo / ".flow" / "base.yaml").write_text(text)
    (repo / "specs").mkdir(exist_ok=True)
    (repo / "specs" / "feature.md").write_text(PLAN)
    (repo / "docs").mkdir(exist_ok=True)
    (repo / "docs" / "old.md").write_text("a document\nwith lines\n")
    git(repo, "add", "specs", "docs")
    git(repo, "commit", "-q", "-m", "plan")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    with (repo / ".git" / "info" / "exclude").open("a") as handle:
        handle.write("/.flow/\n")


def call(repo: Path, *args: str) -> CliResult:
    """``gitflow-agents ARGS`` started in ``repo``, in this process: ``cli.main`` with its exit
    code and what it printed."""
    return cli_main(*args, cwd=repo)


RUN_ARGS = ("run", "specs/feature.md", "--quiet", "--kill-grace", "0.2")


def run(repo: Path, *args: str) -> CliResult:
    return call(repo, *RUN_ARGS, *args)


def start_run(repo: Path, *args: str) -> subprocess.Popen[bytes]:
    """``run ARGS`` started in ``repo`` as a process of its own (this checkout's code), its
    output discarded: to kill, interrupt or race while it runs."""
    return subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", *RUN_ARGS, *args],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def run_proc(repo: Path, *args: str) -> CliResult:
    """``run`` through the console script, as a real process (its exit status)."""
    return run_cli(*RUN_ARGS, *args, cwd=repo)


def results(repo: Path) -> list[dict[str, Any]]:
    runs = sorted((repo / "flows" / "feature" / "runs").glob("*/result.json"))
    found = [json.loads(p.read_text()) for p in runs]
    return [r for r in found if r.get("run", {}).get("kind") == "chain"]


def step_status(repo: Path, step: int) -> str:
    line = next(
        ln
        for ln in (repo / "specs" / "feature.md").read_text().splitlines()
        if f"Step {step}:" in ln
    )
    return line.split("|")[0].removeprefix("### Status:").strip()


def committed_status(repo: Path, ref: str, step: int) -> str:
    """The step's status in the plan as ``ref`` has it committed (a clean checkout of ``ref``)."""
    text = git(repo, "show", f"{ref}:specs/feature.md")
    line = next(ln for ln in text.splitlines() if f"Step {step}:" in ln)
    return line.split("|")[0].removeprefix("### Status:").strip()


def note(repo: Path, sha: str) -> dict[str, Any] | None:
    proc = subprocess.run(
        ["git", "-C", str(repo), "notes", "--ref=refs/notes/gitflow-agents", "show", sha],
        capture_output=True,
        text=True,
    )
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def main_sha(repo: Path) -> str:
    return git(repo, "rev-parse", "main").strip()
