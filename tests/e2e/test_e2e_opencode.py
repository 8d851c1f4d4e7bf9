"""opencode (`opencode run --format json`) end to end, against the chat-completions stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import scenarios
from .conftest import Project, make_project
from .model_standin import Recorded, Standin

pytestmark = pytest.mark.e2e


def opencode_project(tmp_path: Path, standin: Standin) -> Project:
    return make_project(
        tmp_path,
        "opencode",
        {"STANDIN_API_KEY": "sk-standin"},
        model="standin/standin-model",
        options={
            "allow_env": ["STANDIN_API_KEY"],
            "config": {
                "provider": {
                    "standin": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Stand-in",
                        "options": {
                            "baseURL": f"{standin.base_url}/v1",
                            "apiKey": "{env:STANDIN_API_KEY}",
                        },
                        "models": {"standin-model": {"name": "Stand-in model"}},
                    }
                }
            },
        },
    )


def system(request: Recorded) -> str:
    return request.system_text()


def test_implement_and_prompt(tmp_path: Path, standin: Standin) -> None:
    project = opencode_project(tmp_path, standin)
    run = scenarios.implement(project, standin)
    scenarios.prompt_reached_model(run, standin, system)
    first = standin.main_requests()[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers.get("authorization") == "Bearer sk-standin"
    assert {"write", "bash"} <= set(first.tool_names())
    output = run.outcome.output
    assert output is not None and not output.is_error
    assert output.session_id


def test_review_revise_then_approved(tmp_path: Path, standin: Standin) -> None:
    scenarios.review_gate(opencode_project(tmp_path, standin), standin)


@pytest.mark.parametrize("kind", ["stall", "401", "close"])
def test_fault(tmp_path: Path, standin: Standin, kind: str) -> None:
    scenarios.fault(opencode_project(tmp_path, standin), standin, kind)  # type: ignore[arg-type]
