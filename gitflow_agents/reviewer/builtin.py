"""``builtin``: the offline reviewer. Runs the checks in ``checks.py`` over a git diff and writes
a report in the same shape an LLM reviewer writes (summary, fenced JSON findings, the exact
``REVIEW_RESULT:`` line), so both go through one parse → gate → render path."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gitflow_agents import git
from gitflow_agents.findings import Finding, Overall, Severity
from gitflow_agents.reviewer import checks
from gitflow_agents.reviewer.checks import Options


@dataclass(frozen=True)
class BuiltinResult:
    overall: Overall
    findings: tuple[Finding, ...]
    unreviewed_files: tuple[str, ...]
    notes: tuple[str, ...]  # why files were not reviewed, and similar remarks for the summary
    files_reviewed: int
    secrets: frozenset[str] = frozenset()
    """The exact secret values the range adds (for masking wherever a reviewer quotes them)."""


def review_diff(
    root: Path,
    spec: git.DiffSpec,
    *,
    threshold: Severity = Severity.ERROR,
    options: Options | None = None,
) -> BuiltinResult:
    """Check every file changed between ``spec.base`` and ``spec.head`` (None: the index)."""
    options = options or Options()
    changes = [c for c in git.diff(root, spec) if c.status != "D"]
    secrets = _change_secrets(changes, options)
    sizes = git.blob_sizes(root, spec.head, [c.path for c in changes])
    findings: list[Finding] = []
    unreviewed: list[str] = []
    notes: list[str] = []
    can_toml = checks.toml_parser() is not None
    for change in changes:
        if change.binary:
            unreviewed.append(change.path)
            notes.append(f"{change.path}: binary file, not reviewed")
            continue
        size = sizes.get(change.path, 0)
        if size > options.max_file_bytes:
            findings.append(
                checks.finding(
                    "large-file",
                    f"file is {size:,} bytes, over the {options.max_file_bytes:,}-byte limit; "
                    "consider Git LFS or leaving it out of the repository",
                    change,
                    None,
                )
            )
            unreviewed.append(change.path)
            notes.append(f"{change.path}: over the size limit, content not reviewed")
            continue
        findings.extend(checks.check_line_rules(change, options))
        rule = checks.syntax_rule(change.path)
        if rule is None or not (change.added_lines or change.deleted):
            continue  # a pure rename or mode change: content as before
        if rule[0] == "toml-syntax" and not can_toml:
            unreviewed.append(change.path)
            notes.append(f"{change.path}: TOML syntax not checked (needs Python 3.11+ or tomli)")
            continue
        new_text = git.show_file(root, spec.head, change.path)
        if new_text is None:
            continue
        old_path = change.old_path or change.path

        def old_text(old_path: str = old_path) -> str | None:
            return git.show_file(root, spec.base, old_path)

        findings.extend(checks.check_syntax(change, new_text, old_text))
    if spec.head is not None:
        patches = git.commit_patches(root, spec.base, spec.head)
        findings.extend(_history_secrets(root, spec.head, patches, changes, options))
        secrets |= _patch_secrets(patches, options)
    findings.sort(key=lambda f: (f.file or "", f.line or 0, -f.severity.rank))
    blocking = any(f.severity.rank >= threshold.rank for f in findings)
    return BuiltinResult(
        Overall.REVISE if blocking else Overall.APPROVE,
        tuple(findings),
        tuple(unreviewed),
        tuple(notes),
        len(changes),
        frozenset(secrets),
    )


def diff_secrets(root: Path, spec: git.DiffSpec, options: Options | None = None) -> frozenset[str]:
    """The exact values of the secrets ``spec`` adds, in its net diff or in any of its commits
    (what the secret rules report), without running the other checks: an agent reviewer's
    report is masked with them."""
    options = options or Options()
    values = _change_secrets([c for c in git.diff(root, spec) if c.status != "D"], options)
    if spec.head is not None:
        values |= _patch_secrets(git.commit_patches(root, spec.base, spec.head), options)
    return frozenset(values)


def _change_secrets(changes: Sequence[git.FileChange], options: Options) -> set[str]:
    values: set[str] = set()
    for change in changes:
        if not change.binary:
            values |= checks.secret_values(change, options)
    return values


def _patch_secrets(patches: Sequence[git.CommitPatch], options: Options) -> set[str]:
    values: set[str] = set()
    for patch in patches:
        for path, (lines, _) in patch.added.items():
            values |= checks.secret_values(git.FileChange(path, "M", added_lines=lines), options)
    return values


def _history_secrets(
    root: Path,
    head: str,
    patches: Sequence[git.CommitPatch],
    changes: list[git.FileChange],
    options: Options,
) -> list[Finding]:
    """Secrets that commits of the range (``patches``, one ``git log -p``) add and later ones
    remove."""
    if len(patches) < 2:
        return []  # one commit: its diff is the net diff
    found = list(checks.check_history_secrets(patches, changes, options))
    if not found:
        return []
    # a file that no longer exists is no location to point at: the message names it
    present = git.blob_sizes(root, head, sorted({f.file for f in found if f.file}))
    return [f if f.file in present else replace(f, file=None) for f in found]


def report(
    result: BuiltinResult,
    *,
    reviewed_sha: str | None,
    base_sha: str | None,
    threshold: Severity = Severity.ERROR,
) -> str:
    """The reviewer report: markdown summary, fenced JSON (DESIGN.md §4), and the verdict line."""
    counts = {s: sum(1 for f in result.findings if f.severity is s) for s in Severity}
    summary = (
        f"builtin reviewer: {result.files_reviewed} file(s) checked, "
        f"{counts[Severity.ERROR]} error(s), {counts[Severity.WARN]} warning(s), "
        f"{counts[Severity.INFO]} note(s); threshold {threshold.value}"
    )
    data = {
        "overall": result.overall.value,
        "summary": summary,
        "findings": [f.to_dict() for f in result.findings],
        "reviewed_sha": reviewed_sha,
        "base_sha": base_sha,
        "unreviewed_files": list(result.unreviewed_files),
    }
    lines = ["# Review (builtin)", "", summary, ""]
    lines += [f"- {note}" for note in result.notes]
    if result.notes:
        lines.append("")
    lines += ["```json", json.dumps(data, indent=2), "```", ""]
    verdict = "APPROVED" if result.overall is Overall.APPROVE else "REVISE"
    lines.append(f"REVIEW_RESULT: {verdict}")
    return "\n".join(lines) + "\n"
