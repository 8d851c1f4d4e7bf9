"""What every agent CLI goes through the same way, one test parametrized over the CLIs: the review
gate (REVISE, a fix, APPROVED) and the stand-in's three faults. What differs per CLI (the first
request, the prompt's place, Aider's reply-borne edits, opencode's start-up) is in
``test_e2e_<cli>.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import scenarios
from .model_standin import Standin
from .projects import PROJECTS

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("cli", ["auggie", "claude", "codex", "gemini", "opencode"])
def test_review_revise_then_approved(tmp_path: Path, standin: Standin, cli: str) -> None:
    scenarios.review_gate(PROJECTS[cli](tmp_path, standin), standin)


@pytest.mark.parametrize("kind", ["stall", "401", "close"])
@pytest.mark.parametrize("cli", ["auggie", "claude", "codex", "gemini"])
def test_fault(tmp_path: Path, standin: Standin, cli: str, kind: str) -> None:
    run = scenarios.fault(PROJECTS[cli](tmp_path, standin), standin, kind)  # type: ignore[arg-type]
    if cli == "claude" and kind == "401":
        # Claude exits 1 and says so in its JSON (subtype stays "success"; is_error is true).
        assert run.outcome.status == "failed"
        assert run.outcome.output is not None and run.outcome.output.is_error
