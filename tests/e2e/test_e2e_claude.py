"""Claude Code (`claude -p`) end to end, against the Anthropic Messages stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import scenarios
from .model_standin import Recorded, Standin
from .projects import claude_project

pytestmark = pytest.mark.e2e


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
