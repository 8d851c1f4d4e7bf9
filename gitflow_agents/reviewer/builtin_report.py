"""The builtin reviewer's report written out: markdown summary, fenced JSON findings and the
verdict line (a chain's builtin step writes it). Apart from ``builtin.py`` because only a
written report needs json; ``git agent-review`` gates ``builtin.as_review``'s Review, which
this text parses to (issue 20)."""

from __future__ import annotations

import json
from typing import Any

from gitflow_agents.findings import Severity
from gitflow_agents.reviewer.builtin import BuiltinResult, report_head, review_data, verdict_line


def report(
    result: BuiltinResult,
    *,
    reviewed_sha: str | None,
    base_sha: str | None,
    threshold: Severity = Severity.ERROR,
) -> str:
    """The reviewer report: markdown summary, fenced JSON findings and the verdict line (the
    shapes in docs/protocol.md, Review verdict and Findings)."""
    data = review_data(result, reviewed_sha=reviewed_sha, base_sha=base_sha, threshold=threshold)
    return "\n".join(_report_lines(result, data)) + "\n"


def _report_lines(result: BuiltinResult, data: dict[str, Any]) -> list[str]:
    block = json.dumps(data, indent=2).splitlines()
    return [*report_head(result, data), "```json", *block, "```", "", verdict_line(result)]
