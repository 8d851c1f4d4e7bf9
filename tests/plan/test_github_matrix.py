"""``gitflow-agents plan matrix``: a plan's steps as a GitHub Actions job matrix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import DATA, CliResult, cli_main


def cli(*args: str, cwd: Path) -> CliResult:
    return cli_main(*args, cwd=cwd, env={})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    shutil.copytree(DATA / "plans", root / "specs")
    return root


def test_matrix_lists_every_step_on_one_line(project: Path) -> None:
    result = cli("plan", "matrix", "specs/feature.md", cwd=project)
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.count("\n") == 1
    )  # one line: safe for `echo "matrix=..." >> $GITHUB_OUTPUT`
    assert json.loads(result.stdout) == {
        "include": [
            {"step": 1, "title": "Create database schema", "status": "✅"},
            {"step": 2, "title": "Implement API endpoints", "status": "❌"},
            {"step": 3, "title": "Add frontend components", "status": "❌"},
        ]
    }


def test_pending_only_leaves_out_done_steps(project: Path) -> None:
    result = cli("plan", "matrix", "specs/feature.md", "--pending-only", cwd=project)
    assert result.returncode == 0, result.stderr
    assert [row["step"] for row in json.loads(result.stdout)["include"]] == [2, 3]


def test_matrix_of_a_broken_plan_is_one_line_and_exit_2(project: Path) -> None:
    (project / "specs" / "empty.md").write_text("# Plan: nothing\n\nno steps here\n")
    result = cli("plan", "matrix", "specs/empty.md", cwd=project)
    assert result.returncode == 2
    assert "specs/empty.md" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""
