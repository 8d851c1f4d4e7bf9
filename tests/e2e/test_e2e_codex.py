"""Codex CLI (`codex exec --json`) end to end, against the OpenAI Responses stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import scenarios
from .conftest import Project, make_project
from .model_standin import Recorded, Standin

pytestmark = pytest.mark.e2e


def codex_project(tmp_path: Path, standin: Standin) -> Project:
    return make_project(
        tmp_path,
        "codex",
        {"STANDIN_API_KEY": "sk-standin"},
        model="gpt-5-codex",
        options={
            # Codex 0.169 ignores OPENAI_BASE_URL: a custom provider is the way to point it.
            "provider": {
                "base_url": f"{standin.base_url}/v1",
                "env_key": "STANDIN_API_KEY",
                "request_max_retries": 1,
                "stream_max_retries": 1,
            },
        },
    )


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


def test_review_revise_then_approved(tmp_path: Path, standin: Standin) -> None:
    scenarios.review_gate(codex_project(tmp_path, standin), standin)


@pytest.mark.parametrize("kind", ["stall", "401", "close"])
def test_fault(tmp_path: Path, standin: Standin, kind: str) -> None:
    scenarios.fault(codex_project(tmp_path, standin), standin, kind)  # type: ignore[arg-type]
