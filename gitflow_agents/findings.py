"""Findings and reviews: the values every reviewer produces and every renderer and gate reads.

Shape fixed by DESIGN.md §4:
``{overall: approve|revise, summary, findings: [{severity, file?, line?, end_line?, message,
suggestion?, rule?, fingerprint}], reviewed_sha, base_sha, unreviewed_files: [], run: {...}}``
"""

from __future__ import annotations

import enum
import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any


class Severity(str, enum.Enum):
    ERROR = "error"
    WARN = "warn"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is more severe: error 3, warn 2, info 1."""
        return {"error": 3, "warn": 2, "info": 1}[self.value]

    @property
    def sarif_level(self) -> str:
        return {"error": "error", "warn": "warning", "info": "note"}[self.value]

    @property
    def rdjson(self) -> str:
        return {"error": "ERROR", "warn": "WARNING", "info": "INFO"}[self.value]

    @classmethod
    def parse(cls, text: str) -> Severity:
        """Accept the usual spellings: error/err/critical/high, warn/warning/medium, info/note/low."""
        key = text.strip().lower()
        for severity, names in _SEVERITY_NAMES.items():
            if key in names:
                return severity
        raise ValueError(f"unknown severity {text!r} (expected error, warn or info)")


_SEVERITY_NAMES = {
    Severity.ERROR: {"error", "err", "critical", "high", "blocker", "major"},
    Severity.WARN: {"warn", "warning", "medium", "moderate"},
    Severity.INFO: {"info", "note", "low", "minor", "nit", "suggestion"},
}


class Overall(str, enum.Enum):
    APPROVE = "approve"
    REVISE = "revise"


_WS = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")


def fingerprint(file: str | None, rule: str | None, message: str, line_content: str = "") -> str:
    """Stable identity of a finding across pushes.

    Hash of (file, rule or normalised message, normalised line content). Line numbers are left
    out on purpose: a finding keeps its identity when lines above it move.
    """
    what = rule or _DIGITS.sub("N", _WS.sub(" ", message.strip().lower()))
    content = _WS.sub(" ", line_content.strip())
    digest = hashlib.sha256("\0".join((file or "", what, content)).encode("utf-8"))
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Finding:
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    end_line: int | None = None
    suggestion: str | None = None
    rule: str | None = None
    fingerprint: str = ""

    def with_fingerprint(self, line_content: str = "") -> Finding:
        """This finding with its fingerprint computed (kept when already set)."""
        if self.fingerprint:
            return self
        return replace(
            self, fingerprint=fingerprint(self.file, self.rule, self.message, line_content)
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"severity": self.severity.value, "message": self.message}
        for key in ("file", "line", "end_line", "suggestion", "rule"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        data["fingerprint"] = self.fingerprint
        return data


@dataclass(frozen=True)
class Review:
    """One reviewer's result. ``overall`` is None when no verdict could be established;
    ``reason`` then says why (missing marker, contradiction with the findings, parse error)."""

    overall: Overall | None
    summary: str = ""
    findings: tuple[Finding, ...] = ()
    reviewed_sha: str | None = None
    base_sha: str | None = None
    unreviewed_files: tuple[str, ...] = ()
    run: dict[str, Any] = field(default_factory=dict)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall": self.overall.value if self.overall else None,
            "summary": self.summary,
            "findings": [f.to_dict() for f in self.findings],
            "reviewed_sha": self.reviewed_sha,
            "base_sha": self.base_sha,
            "unreviewed_files": list(self.unreviewed_files),
            "run": dict(self.run),
            "reason": self.reason,
        }
