"""`git agent-review` in this process (the `run` fixture), and a repository whose configured
agents review through the same gate (`configure_reviewers`)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.helpers.files import commit_files, write_executable
from tests.helpers.flow_config import command_agents


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(monkeypatch, capsys)


def review_in_child(
    repo: Path, call: str, modules: Sequence[str], more: str = ""
) -> subprocess.CompletedProcess[str]:
    """A small review in a fresh Python in ``repo``: ``call`` (``main([...])`` of ``git agent-review``
    or ``gitflow_agents_main([...])``, the hook's form), then a stderr line ``<exit code>
    [<those of modules it imported>]``, then what ``more`` prints (issue 20's start-up tests)."""
    code = (
        "import sys\n"
        "from gitflow_agents.git_agent_review import main, gitflow_agents_main\n"
        f"code = {call}\n"
        f"print(code, sorted(m for m in {tuple(modules)!r} if m in sys.modules), file=sys.stderr)\n"
        + more
    )
    return subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)


def configure_reviewers(repo: Path) -> None:
    script = write_executable(repo.parent / "fake_reviewer", FAKE_REVIEWER)
    agents = {f"{mode}r": [str(script), mode] for mode in ("approve", "revise", "fail")}
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(command_agents(agents))
    commit_files(repo, {"calc.py": "def f(x):\n    return 1 / 0\n"}, "calc")


FAKE_REVIEWER = """#!/usr/bin/env python3
import json, os, pathlib, sys
mode = sys.argv[1]
d = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
findings = [] if mode == "approve" else [
    {"severity": "error", "file": "calc.py", "line": 2, "message": "divides by zero", "rule": "zero"}
]
block = {"overall": "approve" if mode == "approve" else "revise", "summary": "looked", "findings": findings}
verdict = "APPROVED" if mode == "approve" else "REVISE"
(d / "report.md").write_text(
    "Summary.\\n\\n```json\\n" + json.dumps(block) + "\\n```\\n\\nREVIEW_RESULT: " + verdict + "\\n"
)
target = "report.failed.md" if mode == "fail" else "report.complete.md"
os.rename(d / "report.md", d / target)
"""
