"""opencode (`opencode run --format json`) end to end, against the chat-completions stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import scenarios
from .model_standin import Recorded, Standin
from .projects import opencode_project

pytestmark = pytest.mark.e2e


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


# opencode 1.18.33 starts silently and busy: its first model request leaves 4-7 s after launch
# on an idle 2-core machine, 10-20 s under `pytest -n 2`. Its own CPU is not activity
# (docs/supervisor.md), so its faults get a stuck timeout above that start-up.
STUCK_TIMEOUT = 25.0


@pytest.mark.parametrize(
    ("kind", "expected", "timeout"),
    [
        # It burns a core while it waits on the stalled stream: that must not pass for work, so
        # the run ends stuck, long before the hard timeout.
        ("stall", "stuck", 45.0),
        ("401", "failed", 45.0),
        # A cut stream sends it into an endless loop of empty steps that it prints (step_start,
        # step_finish "unknown"): output is activity, so the hard timeout ends it. The timeout
        # also covers opencode's start-up, which took over 20 s on a loaded 2-core machine (the
        # CLI never reached the stand-in): 45 s as for the other faults.
        ("close", "timeout", 45.0),
    ],
)
def test_fault(tmp_path: Path, standin: Standin, kind: str, expected: str, timeout: float) -> None:
    project = opencode_project(tmp_path, standin)
    run = scenarios.fault(
        project,
        standin,
        kind,  # type: ignore[arg-type]
        stuck_timeout=STUCK_TIMEOUT,
        timeout=timeout,
    )
    assert run.outcome.status == expected, scenarios.describe(run)
