"""Gemini CLI (`gemini -p -o json`) end to end, against the Gemini streamGenerateContent stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import scenarios
from .model_standin import Recorded, Standin
from .projects import gemini_project

pytestmark = pytest.mark.e2e


def system(request: Recorded) -> str:
    return request.system_text()


def test_implement_and_prompt(tmp_path: Path, standin: Standin) -> None:
    project = gemini_project(tmp_path, standin)
    run = scenarios.implement(project, standin)
    scenarios.prompt_reached_model(run, standin, system)
    first = standin.main_requests()[0]
    assert ":streamGenerateContent" in first.path
    assert first.headers.get("x-goog-api-key") == "standin-key"
    output = run.outcome.output
    assert output is not None and not output.is_error
