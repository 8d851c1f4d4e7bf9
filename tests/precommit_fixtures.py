"""pre-commit-hooks' test fixtures (tests/data/pre-commit-hooks/) through the builtin reviewer:
each committed in a temporary repository, one review of them all, and per fixture whether our
rule equivalent to its hook reports it. Shared by tests/reviewer/test_precommit_fixtures.py and
benchmarks/precommit_agreement.py."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gitflow_agents.git import queries as g
from gitflow_agents.reviewer import builtin

DATA = Path(__file__).resolve().parent / "data" / "pre-commit-hooks"

# hook -> our rules that do its job (debug-statements also fails on a file that does not parse)
EQUIVALENT: dict[str, frozenset[str]] = {
    "check-json": frozenset({"json-syntax"}),
    "check-yaml": frozenset({"yaml-syntax"}),
    "check-toml": frozenset({"toml-syntax"}),
    "check-ast": frozenset({"python-syntax"}),
    "debug-statements": frozenset({"debugger", "python-syntax"}),
    "detect-private-key": frozenset({"private-key"}),
    "detect-aws-credentials": frozenset({"high-entropy-secret"}),
    "check-merge-conflict": frozenset({"merge-conflict-marker"}),
    "end-of-file-fixer": frozenset({"no-final-newline"}),
}


@dataclass(frozen=True)
class Case:
    hook: str
    file: str  # under DATA
    path: str  # where it is committed: <hook>/<name>
    hook_fails: bool
    expected: bool | None  # what we report (cases.json "ours"); None: "pending"
    note: str
    reported: bool = False  # what the review reported

    @property
    def agrees(self) -> bool:
        return self.reported == self.hook_fails


def load() -> list[Case]:
    cases = []
    for entry in json.loads((DATA / "cases.json").read_text()):
        ours = entry["ours"]
        cases.append(
            Case(
                hook=entry["hook"],
                file=entry["file"],
                path=f"{entry['hook']}/{entry['as']}",
                hook_fails=entry["hook_fails"],
                expected=None if ours == "pending" else bool(ours),
                note=entry.get("note", ""),
            )
        )
    return cases


def review(repo: Path) -> list[Case]:
    """Commit every fixture in ``repo`` (an initialised repository with a commit) as one
    change, review it with the builtin reviewer, and return the cases with ``reported`` set."""
    cases = load()
    for case in cases:
        target = repo / case.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((DATA / case.file).read_bytes())
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    base = g.head_sha(repo)
    for args in (["add", "-A"], ["commit", "-q", "-m", "fixtures"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)
    result = builtin.review_diff(repo, g.DiffSpec(base, g.head_sha(repo)))
    reported = {(f.file, f.rule) for f in result.findings}
    return [
        Case(**{**c.__dict__, "reported": any((c.path, r) in reported for r in EQUIVALENT[c.hook])})
        for c in cases
    ]
