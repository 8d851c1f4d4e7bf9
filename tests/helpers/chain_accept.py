"""A chain whose implementer adds what the offline reviewer would refuse, for the tests of accepting findings in a chain (`setup`, `RUN`, `implementer`, `reviewer_of`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.conftest import git
from tests.helpers.chain import FAKE, PLAN

RUN = ("run", "specs/feature.md", "--quiet", "--kill-grace", "0.2", "--reviewers", "offline")


def implementer(
    tmp_path: Path,
    files: dict[str, str],
    *,
    baseline: bool = False,
    then: dict[str, str] | None = None,
) -> list[str]:
    """The argv of an implementer that writes ``files`` (appending to those that exist); with
    ``baseline`` records its own findings as the baseline (``review --staged
    --write-baseline``, as a sly agent could); writes ``then``; then does the fake agent's
    usual edit and report."""
    script = tmp_path / "implementer.py"
    script.write_text(
        "import os, pathlib, subprocess, sys\n"
        "def write(files):\n"
        "    for name, text in files.items():\n"
        "        path = pathlib.Path(name)\n"
        "        path.parent.mkdir(parents=True, exist_ok=True)\n"
        "        with path.open('a') as handle:\n"
        "            handle.write(text)\n"
        f"write({files!r})\n"
        f"if {baseline!r}:\n"
        "    subprocess.run(['git', 'add', '-A'], check=True)\n"
        "    subprocess.run([sys.executable, '-m', 'gitflow_agents', 'review', '--staged',\n"
        "                    '--write-baseline'], check=True, stdout=subprocess.DEVNULL)\n"
        f"write({then or {}!r})\n"
        f"os.execv(sys.executable, [sys.executable, {str(FAKE)!r}, 'implementer', 'edit'])\n"
    )
    return [sys.executable, str(script)]


def setup(repo: Path, builder: list[str], review: str = "") -> Path:
    """.flow/base.yaml (committed, so a step can change it on its branch: the implementer of
    one test does) with the builtin reviewer ``offline``, the plan and a file to rename."""
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        "flow_dir: flows\ndefault_branch: main\n"
        "defaults:\n  stuck_timeout_secs: 20\n  max_wait_secs: 30\n"
        "completion_workflow:\n"
        '  template: "Write {report_file}; rename it to {success_file} or {failed_file}."\n'
        "agents:\n"
        f"  builder:\n{_agent(builder)}"
        f"  fixer:\n{_agent([sys.executable, str(FAKE), 'fixer', 'fix'])}"
        "  offline:\n    adapter: builtin\n" + review
    )
    (repo / "specs").mkdir()
    (repo / "specs" / "feature.md").write_text(PLAN)
    (repo / "docs").mkdir()
    (repo / "docs" / "old.md").write_text("a document\nwith lines\n")
    (repo / ".gitignore").write_text("/flows/\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "plan and agents")
    return repo


def reviewer_of(result: dict[str, Any], round_index: int = -1) -> dict[str, Any]:
    [reviewer] = result["chain"]["rounds"][round_index]["reviewers"]
    return reviewer


def _agent(argv: list[str]) -> str:
    return f"    adapter: command\n    command: {json.dumps(argv)}\n"
