"""The three-push scenario of incremental review (issue 25): a pull request that adds a large
module, then gets one small fix per push, reviewed by a configured agent that reads what a real
one reads and records how much (``tests/fakes/fake_measuring_reviewer``).

Shared by ``tests/reviewer/test_incremental.py`` (``git agent-review``),
``tests/github/action/test_github_incremental.py`` (the Action) and
``benchmarks/incremental_review.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

FAKES = Path(__file__).resolve().parent.parent / "fakes"
AGENT = "measurer"
FUNCTIONS = 600
"""The pushed module: this many small functions (about 20 KB of diff)."""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def reviewer_config(findings: Path, log: Path) -> str:
    """``.flow/base.yaml``: the measuring reviewer as agent ``measurer``."""
    command = [sys.executable, str(FAKES / "fake_measuring_reviewer"), str(findings), str(log)]
    return (
        "completion_workflow:\n"
        '  template: "Rename {report_file} to {success_file}."\n'
        "agents:\n"
        f"  {AGENT}:\n"
        "    adapter: command\n"
        f"    command: {json.dumps(command)}\n"
    )


def module(fixed: int = 0) -> str:
    """The pushed module; its first ``fixed`` functions no longer multiply by their index."""
    return "".join(
        f"def scale_{i}(x):\n    return x * {i}{' + 1' if i < fixed else ''}\n\n"
        for i in range(FUNCTIONS)
    )


def line_of(i: int) -> int:
    """The line of ``scale_i``'s return statement."""
    return 3 * i + 2


def finding(i: int, severity: str = "error", message: str = "") -> dict[str, Any]:
    """A finding on ``scale_i``'s return line."""
    return {
        "severity": severity,
        "file": "calc.py",
        "line": line_of(i),
        "message": message or f"scale_{i} multiplies by {i}",
        "rule": f"scale-{i}",
    }


class Scenario:
    """A repository on ``feature`` (off ``main``, which holds the reviewer's configuration),
    the findings the reviewer hands in next (``say``), and what it read (``reads``)."""

    def __init__(self, repo: Path, work: Path) -> None:
        self.repo = repo
        work.mkdir(parents=True, exist_ok=True)
        self.findings = work / "findings.json"
        self.log = work / "reads.jsonl"
        self.say([])
        config = repo / ".flow" / "base.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(reviewer_config(self.findings, self.log))
        (repo / ".gitignore").write_text(".flow/runs/\n.agents-flow/\n")
        (repo / "README.md").write_text("A calculator.\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "reviewer")
        self.base = _git(repo, "rev-parse", "HEAD").strip()
        _git(repo, "checkout", "-q", "-b", "feature")

    def say(self, findings: list[dict[str, Any]]) -> None:
        self.findings.write_text(json.dumps(findings))

    def push(self, fixed: int, message: str) -> str:
        """Commit ``module(fixed)`` as ``calc.py``; the new head."""
        (self.repo / "calc.py").write_text(module(fixed))
        _git(self.repo, "add", "calc.py")
        _git(self.repo, "commit", "-q", "-m", message)
        return _git(self.repo, "rev-parse", "HEAD").strip()

    def reads(self) -> list[dict[str, Any]]:
        """One record per review run: ``prompt``, ``diff`` and ``input`` bytes, ``command``."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]
