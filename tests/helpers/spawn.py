"""A project whose `.flow/` runs the given command agents, with a one-step plan committed (`setup_project`)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git
from tests.helpers.flow_config import command_agents


def setup_project(repo: Path, agents: dict[str, list[str]], stuck: int = 30) -> None:
    allow_env = {name: ["PYTHONPATH"] for name in agents}
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        command_agents(agents, stuck=stuck, allow_env=allow_env)
    )
    (repo / "specs").mkdir()
    (repo / "specs" / "feature.md").write_text(PLAN)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "project")


PLAN = """# Plan: Feature

Overview.

## Implementation Steps

### Status: ❌ | Step 1: Do it

Make it.
"""
