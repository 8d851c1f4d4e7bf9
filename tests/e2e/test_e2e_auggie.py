"""Auggie (`auggie --print --output-format json`) end to end, against the Augment stand-in.

Augment's API is proprietary: the stand-in speaks what research notes §5 reverse-engineered from
Auggie 0.36.0 (``/chat-stream`` newline-delimited JSON). The system prompt is assembled on the
server, so what the test can assert is that the prompt file reached it as a rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import scenarios
from .conftest import Project, make_project
from .model_standin import Recorded, Standin

pytestmark = pytest.mark.e2e


def auggie_project(tmp_path: Path, standin: Standin) -> Project:
    session = {"accessToken": "standin-token", "tenantURL": f"{standin.base_url}/", "scopes": []}
    return make_project(
        tmp_path,
        "auggie",
        {"AUGMENT_SESSION_AUTH": json.dumps(session)},
        options={"max_turns": 10},
    )


def rules(request: Recorded) -> str:
    return request.system_text()


def test_implement_and_prompt(tmp_path: Path, standin: Standin) -> None:
    project = auggie_project(tmp_path, standin)
    run = scenarios.implement(project, standin)
    scenarios.prompt_reached_model(run, standin, rules)
    first = standin.main_requests()[0]
    assert first.path == "/chat-stream"
    assert {"save-file", "launch-process"} <= set(first.tool_names())
    output = run.outcome.output
    assert output is not None and not output.is_error
    assert output.session_id


def test_review_revise_then_approved(tmp_path: Path, standin: Standin) -> None:
    scenarios.review_gate(auggie_project(tmp_path, standin), standin)


@pytest.mark.parametrize("kind", ["stall", "401", "close"])
def test_fault(tmp_path: Path, standin: Standin, kind: str) -> None:
    scenarios.fault(auggie_project(tmp_path, standin), standin, kind)  # type: ignore[arg-type]
