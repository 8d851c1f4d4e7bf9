"""The builtin reviewer run on a small repository (`review`) and readers of its findings (`only`, `locations`)."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.findings import Finding, Severity
from gitflow_agents.git import queries as g
from gitflow_agents.reviewer import builtin
from gitflow_agents.reviewer.checks import CheckOptions
from tests.helpers.files import commit_files


def review(
    repo: Path,
    files: dict[str, str | bytes],
    *,
    base_files: dict[str, str | bytes] | None = None,
    threshold: Severity = Severity.ERROR,
    options: CheckOptions | None = None,
) -> builtin.BuiltinResult:
    base = commit_files(repo, base_files or {}, "base", allow_empty=True)
    spec = g.DiffSpec(base, commit_files(repo, files))
    return builtin.review_diff(repo, spec, threshold=threshold, options=options)


def only(result: builtin.BuiltinResult, rule: str) -> list[Finding]:
    return [f for f in result.findings if f.rule == rule]


def locations(result: builtin.BuiltinResult) -> list[tuple[str | None, str | None, int | None]]:
    return [(f.rule, f.file, f.line) for f in result.findings]
