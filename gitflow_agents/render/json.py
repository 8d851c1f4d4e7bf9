"""JSON output: the findings shape of docs/protocol.md ("Findings"), plus the gate's decision under ``gate``."""

from __future__ import annotations

import json
from typing import Any

from ..findings import GateResult, Review


def to_data(review: Review, gate: GateResult | None = None) -> dict[str, Any]:
    data = review.to_dict()
    if gate is not None:
        data["gate"] = {
            "approved": gate.approved,
            "exitCode": gate.exit_code,
            "threshold": gate.threshold.value,
            "reasons": list(gate.reasons),
        }
    return data


def render(review: Review, gate: GateResult | None = None) -> str:
    return json.dumps(to_data(review, gate), indent=2, ensure_ascii=False) + "\n"
