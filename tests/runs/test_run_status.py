"""Every status vocabulary and the mappings between them live in ``runs/status.py`` (issue 21,
item 5): each table covers its whole vocabulary, and the modules that used their own copies
take theirs from it."""

from __future__ import annotations

from typing import get_args

from gitflow_agents.chain import StepOutcome
from gitflow_agents.runs import cards, lost, result_status
from gitflow_agents.runs import status as vocab
from gitflow_agents.supervisor import outcome


def test_each_mapping_covers_its_whole_vocabulary() -> None:
    assert set(vocab.RESULT_OF_PROCESS) == set(get_args(vocab.ProcessStatus))
    assert set(vocab.RESULT_OF_STEP) == set(get_args(vocab.StepOutcome))
    assert set(vocab.RESULT_OF_PROCESS.values()) == set(get_args(vocab.ResultStatus))
    assert get_args(vocab.ProcessStatus) == vocab.PROCESS_STATUSES
    assert get_args(vocab.LiveState) == vocab.LIVE_STATES
    assert get_args(vocab.CardStatus) == vocab.CARD_STATUSES
    assert get_args(vocab.ResultStatus) == vocab.RESULT_STATUSES


def test_the_mappings_say_what_runs_and_steps_always_recorded() -> None:
    assert {s: result_status(s) for s in vocab.PROCESS_STATUSES} == {
        "succeeded": "succeeded",
        "failed": "failed",
        "stuck": "failed",
        "timeout": "failed",
        "canceled": "canceled",
        "crashed": "failed",
        "rate_limited": "failed",
        "budget": "failed",
    }
    assert result_status("anything an agent wrote") == "failed"
    steps = {o: vocab.step_result_status(o) for o in get_args(vocab.StepOutcome)}
    assert [o for o, s in steps.items() if s == "succeeded"] == ["approved", "skipped"]
    assert [o for o, s in steps.items() if s == "canceled"] == ["canceled"]
    assert not vocab.is_live(None) and not vocab.is_live("crashed")
    assert all(vocab.is_live(state) for state in ("queued", "running", "killing", "waiting"))


def test_one_definition_of_each_vocabulary() -> None:
    assert outcome.Status is vocab.ProcessStatus
    assert StepOutcome is vocab.StepOutcome
    assert cards.CardStatus is vocab.CardStatus and cards.HistoryEvent is vocab.HistoryEvent
    assert lost.ACTIVE is vocab.LIVE_STATES
