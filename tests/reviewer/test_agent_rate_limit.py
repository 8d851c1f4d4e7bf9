"""`git agent-review --agent X` whose agent stays rate limited past
``defaults.rate_limit_wait_secs`` exits 6 (issue 23), not 3, and says why."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Cli
from tests.helpers.files import commit_files, write_executable
from tests.helpers.flow_config import command_agents

LIMITED = """#!/bin/sh
echo 'Error: 529 {"type":"error","error":{"type":"overloaded_error"}}' >&2
exit 1
"""


def test_a_rate_limited_agent_reviewer_exits_6(repo: Path, cli: Cli) -> None:
    agent = write_executable(repo.parent / "limited", LIMITED)
    (repo / ".flow").mkdir()
    config = command_agents({"busy": [str(agent)]})
    (repo / ".flow" / "base.yaml").write_text(
        config.replace("defaults:\n", "defaults:\n  rate_limit_wait_secs: 0\n")
    )
    commit_files(repo, {"calc.py": "x = 1\n"}, "calc")
    ended = cli.review("HEAD", "--agent", "busy", cwd=repo)
    assert ended.returncode == 6, ended.stdout + ended.stderr
    assert "rate_limited" in ended.stderr and "overloaded" in ended.stderr
