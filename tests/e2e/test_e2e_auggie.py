"""Auggie (`auggie --print --output-format json`) end to end, against the Augment stand-in.

Augment's API is proprietary: the stand-in speaks what research notes §5 reverse-engineered from
Auggie 0.36.0 (``/chat-stream`` newline-delimited JSON). The system prompt is assembled on the
server, so what the test can assert is that the prompt file reached it as a rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import scenarios
from .model_standin import Recorded, Standin
from .projects import auggie_project

pytestmark = pytest.mark.e2e


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
