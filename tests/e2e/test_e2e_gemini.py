"""Gemini CLI (`gemini -p -o json`) end to end, against the Gemini streamGenerateContent stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import scenarios
from .conftest import Project, make_project
from .model_standin import Recorded, Standin

pytestmark = pytest.mark.e2e


def gemini_project(tmp_path: Path, standin: Standin) -> Project:
    return make_project(
        tmp_path,
        "gemini",
        {
            "GOOGLE_GEMINI_BASE_URL": standin.base_url,
            "GEMINI_API_KEY": "standin-key",
        },
        model="gemini-2.5-flash",
    )


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


def test_review_revise_then_approved(tmp_path: Path, standin: Standin) -> None:
    scenarios.review_gate(gemini_project(tmp_path, standin), standin)


@pytest.mark.parametrize("kind", ["stall", "401", "close"])
def test_fault(tmp_path: Path, standin: Standin, kind: str) -> None:
    scenarios.fault(gemini_project(tmp_path, standin), standin, kind)  # type: ignore[arg-type]
