"""Aider (`aider --message`) end to end, against the chat-completions stand-in (no tools).

Aider offers the model no tools: its edits travel inside the reply text in its edit format
(``whole`` here: a file name line, then a fenced block with the whole new content). It cannot
rename a report, so the run completes by process exit, and the verdict of a review is read from
its reply.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import scenarios
from .conftest import GREETING_V1, GREETING_V2, review_report
from .model_standin import FENCE, Recorded, Say, Standin, Step
from .projects import aider_project

pytestmark = pytest.mark.e2e


def whole_file(path: str, content: str) -> str:
    return f"{path}\n{FENCE}\n{content}{FENCE}\n"


def implement(root: Path, agent_id: str) -> list[Step]:
    return [
        Say(
            "I will add the module.\n\n"
            + whole_file("greeting.py", GREETING_V1)
            + "\n<SUMMARY>Added greeting.py</SUMMARY>\n<STATUS>completed</STATUS>\n"
        )
    ]


def fix(root: Path, agent_id: str) -> list[Step]:
    # greeting.py exists but is not in the chat: aider adds it and asks the model again (a
    # second request), so the edit comes twice.
    reply = whole_file("greeting.py", GREETING_V2) + "\n<STATUS>completed</STATUS>\n"
    return [Say(reply), Say(reply)]


def review(root: Path, agent_id: str, verdict: str, sha: str) -> list[Step]:
    # No file edits: the review is the reply itself.
    return [Say(review_report(verdict, sha))]


def context(request: Recorded) -> str:
    # Aider has no system-prompt flag: the prompt file goes in with --read, as chat context.
    return request.all_text()


def test_implement_and_prompt(tmp_path: Path, standin: Standin) -> None:
    project = aider_project(tmp_path, standin)
    run = scenarios.implement(project, standin, completes_by_exit=True, script=implement)
    scenarios.prompt_reached_model(run, standin, context)
    first = standin.main_requests()[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers.get("authorization") == "Bearer sk-standin"
    assert not first.tool_names()
    output = run.outcome.output
    assert output is not None and not output.is_error, json.dumps(output.__dict__)
    assert output.input_tokens and output.output_tokens


def test_review_revise_then_approved(tmp_path: Path, standin: Standin) -> None:
    project = aider_project(tmp_path, standin)
    scenarios.review_gate(project, standin, completes_by_exit=True, review=review, fix=fix)


@pytest.mark.parametrize("kind", ["stall", "401", "close"])
def test_fault(tmp_path: Path, standin: Standin, kind: str) -> None:
    project = aider_project(tmp_path, standin)
    run = scenarios.fault(project, standin, kind, script=implement)  # type: ignore[arg-type]
    if kind == "401":
        # Aider exits 0 on an authentication failure: the adapter reads the error from its text.
        assert run.outcome.exit_code == 0
        assert run.outcome.status == "failed"
        assert "reported an error" in run.outcome.reason
