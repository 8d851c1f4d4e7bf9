"""reviewdog's rdjsonl: one ``Diagnostic`` JSON object per line, for ``reviewdog -f=rdjsonl``.

Lines are 1-based; a range with lines only (no columns) covers whole lines, end line included.
A suggestion becomes a reviewdog ``suggestions`` entry only when it is replacement text (a
fenced ```suggestion block); prose advice is appended to the message instead, so reviewdog never
proposes to replace code with an English sentence.
"""

from __future__ import annotations

import json
from typing import Any

from ..findings import Finding, GateResult, Review, suggestion_replacement
from . import TOOL_NAME


def diagnostic(finding: Finding) -> dict[str, Any]:
    replacement = suggestion_replacement(finding)
    message = finding.message
    if finding.suggestion and replacement is None:
        message += f"\n\nSuggestion: {finding.suggestion}"
    data: dict[str, Any] = {"message": message}
    if finding.file:
        data["location"] = {"path": finding.file}
        if finding.line is not None:
            data["location"]["range"] = _range(finding)
    data["severity"] = finding.severity.rdjson
    data["source"] = {"name": TOOL_NAME}
    if finding.rule:
        data["code"] = {"value": finding.rule}
    if replacement is not None:
        data["suggestions"] = [{"range": _range(finding), "text": replacement}]
    return data


def _range(finding: Finding) -> dict[str, Any]:
    assert finding.line is not None
    return {
        "start": {"line": finding.line},
        "end": {"line": finding.end_line or finding.line},
    }


def render(review: Review, gate: GateResult | None = None) -> str:
    return "".join(json.dumps(diagnostic(f), ensure_ascii=False) + "\n" for f in review.findings)
