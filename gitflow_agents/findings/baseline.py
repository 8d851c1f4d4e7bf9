"""The baseline file: findings recorded by fingerprint, so later reviews report only new ones
(docs/review.md, "A baseline"). ``git agent-review --write-baseline`` writes it; reviews read it
from ``--baseline FILE`` or the default path.

The file is JSON, one finding per entry, sorted by file, rule and fingerprint, without line
numbers (a finding keeps its fingerprint when lines above it move, so the file does not churn)::

    {"kind": "gitflow-agents/review-baseline/v1",
     "findings": [{"file": "tests/keys.py", "rule": "aws-access-key", "fingerprint": "…"}]}

Writing merges: entries already recorded stay, so re-running ``--write-baseline`` on another
range adds to it and a second run on the same range changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gitflow_agents.base.errors import InputError
from gitflow_agents.base.fsutil import ReadRefused, read_text_limited, write_text_atomic
from gitflow_agents.base.jsondata import JsonProblem, loads
from gitflow_agents.findings.model import DEFAULT_BASELINE as DEFAULT_BASELINE
from gitflow_agents.findings.model import Finding

BASELINE_KIND = "gitflow-agents/review-baseline/v1"
MAX_BASELINE_BYTES = 16 * 1024 * 1024
"""A baseline larger than this is refused (docs/security.md, "Bounds")."""

Entry = tuple[str, str, str]  # (file, rule, fingerprint); "" for a missing file or rule


def parse(text: str, name: str) -> tuple[Entry, ...]:
    """The entries of a baseline's ``text``; InputError naming ``name`` (and the line, for
    JSON that does not parse) when it is not a baseline."""
    try:
        data = loads(text)
    except JsonProblem as exc:
        raise InputError(exc.message, path=name, line=exc.line) from None
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise InputError(
            f'not a review baseline (expected "kind": "{BASELINE_KIND}"); write one with '
            "git agent-review --write-baseline",
            path=name,
        )
    items = data.get("findings")
    if not isinstance(items, list):
        raise InputError("expected a list of findings", path=name, key="findings")
    return tuple(_entry(item, name, index) for index, item in enumerate(items))


def _entry(item: Any, name: str, index: int) -> Entry:
    where = f"findings[{index}]"
    if not isinstance(item, dict):
        raise InputError("expected an object", path=name, key=where)
    values = []
    for key in ("file", "rule", "fingerprint"):
        value = item.get(key, "")
        if not isinstance(value, str):
            raise InputError("expected a string", path=name, key=f"{where}.{key}")
        values.append(value)
    if not values[2]:
        raise InputError("a fingerprint is required", path=name, key=f"{where}.fingerprint")
    return values[0], values[1], values[2]


def _read_text(path: Path, name: str) -> str:
    try:
        return read_text_limited(path, MAX_BASELINE_BYTES)
    except ReadRefused as exc:
        raise InputError(exc.reason, path=name, line=exc.line) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=name) from None


def read(path: Path, name: str) -> tuple[Entry, ...]:
    """The entries of the baseline file ``path`` (named ``name`` in messages)."""
    return parse(_read_text(path, name), name)


def fingerprints(entries: Iterable[Entry]) -> frozenset[str]:
    return frozenset(entry[2] for entry in entries)


def text(entries: Iterable[Entry]) -> str:
    """The file's text: entries deduplicated and sorted, two-space JSON, a final newline."""
    findings = [
        {"file": file, "rule": rule, "fingerprint": fingerprint}
        for file, rule, fingerprint in sorted(set(entries))
    ]
    return json.dumps({"kind": BASELINE_KIND, "findings": findings}, indent=2) + "\n"


def entries_of(findings: Iterable[Finding]) -> list[Entry]:
    return [(f.file or "", f.rule or "", f.fingerprint) for f in findings if f.fingerprint]


def write(path: Path, name: str, findings: Iterable[Finding]) -> tuple[int, int]:
    """Record ``findings`` in the baseline at ``path``, keeping what it holds (an unreadable
    file is an InputError: it is never silently replaced); written atomically, and only when
    the text changes. (entries in the file, entries added)."""
    before = _read_text(path, name) if path.exists() else None
    old = set(parse(before, name)) if before is not None else set()
    new = old | set(entries_of(findings))
    content = text(new)
    if content != before:
        write_text_atomic(path, content)
    return len(new), len(new - old)
