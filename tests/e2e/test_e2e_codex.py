"""Codex CLI (`codex exec --json`) end to end, against the OpenAI Responses stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import scenarios
from .model_standin import Recorded, Standin
from .projects import codex_project

pytestmark = pytest.mark.e2e


def system(request: Recorded) -> str:
    return request.system_text()


def test_implement_and_prompt(tmp_path: Path, standin: Standin) -> None:
    project = codex_project(tmp_path, standin)
    run = scenarios.implement(project, standin)
    scenarios.prompt_reached_model(run, standin, system)
    first = standin.main_requests()[0]
    assert first.path == "/v1/responses"
    assert first.headers.get("authorization") == "Bearer sk-standin"
    output = run.outcome.output
    assert output is not None and not output.is_error
    assert output.session_id
