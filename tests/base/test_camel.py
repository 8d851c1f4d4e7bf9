"""camelCase JSON of dataclasses and NamedTuples (``base/camel.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import pytest

from gitflow_agents.base.camel import camel_json, camel_key


@dataclass(frozen=True)
class _Row:
    run_id: str
    files_changed: int | None
    reasons: tuple[str, ...] = ()
    data: dict[str, int] = field(default_factory=dict)


class _Meta(NamedTuple):
    run_id: str
    start_sha: str


def test_camel_key_joins_words() -> None:
    assert camel_key("run_id") == "runId"
    assert camel_key("cost_usd_partial") == "costUsdPartial"
    assert camel_key("flow") == "flow"


def test_camel_json_keeps_field_order_and_makes_lists_and_dicts() -> None:
    data = camel_json(_Row("r1", None, ("a", "b"), {"x": 1}))
    assert list(data) == ["runId", "filesChanged", "reasons", "data"]
    assert data == {"runId": "r1", "filesChanged": None, "reasons": ["a", "b"], "data": {"x": 1}}
    assert type(data["reasons"]) is list


def test_camel_json_takes_a_seed_spelling_and_namedtuples() -> None:
    assert camel_json(_Meta("r1", "abc"), run_id="runID") == {"runID": "r1", "startSha": "abc"}


def test_camel_json_refuses_a_key_for_no_field() -> None:
    with pytest.raises(TypeError, match="runid"):
        camel_json(_Meta("r1", "abc"), runid="runID")
