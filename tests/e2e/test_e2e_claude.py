"""Claude Code (`claude -p`) end to end, against the Anthropic Messages stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import scenarios
from .conftest import Project, make_project
from .model_standin import Recorded, Standin

pytestmark = pytest.mark.e2e


def claude_project(tmp_path: Path, standin: Standin) -> Project:
    return make_project(
        tmp_path,
        "claude",
        {
            "ANTHROPIC_BASE_URL": standin.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-standin",
            # Without this a refused connection is retried for about 3 minutes.
            "CLAUDE_CODE_MAX_RETRIES": "1",
        },
        model="claude-sonnet-4-5",
        options={"max_turns": 10},
    )


def system(request: Recorded) -> str:
    return request.system_text()


def test_implement_and_prompt(tmp_path: Path, standin: Standin) -> None:
    project = claude_project(tmp_path, standin)
    run = scenarios.implement(project, standin)
    scenarios.prompt_reached_model(run, standin, system)
    first = standin.main_requests()[0]
    assert first.path.startswith("/v1/messages")
    assert first.headers.get("x-api-key") == "sk-ant-standin"
    assert {"Write", "Bash"} <= set(first.tool_names())
    # The CLI's own JSON result was parsed: session id and tokens reached the run.
    output = run.outcome.output
    assert output is not None and not output.is_error
    assert output.session_id


def test_review_revise_then_approved(tmp_path: Path, standin: Standin) -> None:
    scenarios.review_gate(claude_project(tmp_path, standin), standin)


@pytest.mark.parametrize("kind", ["stall", "401", "close"])
def test_fault(tmp_path: Path, standin: Standin, kind: str) -> None:
    run = scenarios.fault(claude_project(tmp_path, standin), standin, kind)  # type: ignore[arg-type]
    if kind == "401":
        # Claude exits 1 and says so in its JSON (subtype stays "success"; is_error is true).
        assert run.outcome.status == "failed"
        assert run.outcome.output is not None and run.outcome.output.is_error
