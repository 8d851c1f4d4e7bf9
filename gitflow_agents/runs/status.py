"""Every status vocabulary of a run, and the mappings between them, in one place.

The words (docs/architecture.md, Glossary, "status"):

- ``ProcessStatus``: how one agent process ended (the supervisor's ``Outcome.status``);
- ``RunState``: ``status.json``'s ``state``: ``LIVE_STATES`` while the run lives, then a
  ``ProcessStatus``;
- ``ResultStatus``: result.json's ``status``: ``RESULT_OF_PROCESS`` maps a process status to
  it, ``RESULT_OF_STEP`` a step's ending;
- ``CardStatus``: a card's ``agent_status``: queued, running, then a ``ResultStatus``;
- ``HistoryEvent``: what a card's or a flow's history line says happened: queued, started,
  then a ``ResultStatus``;
- ``StepOutcome``: how a step run ended (result.json ``chain.outcome``).

Two more live where they are parsed: an agent reply's ``<STATUS>`` (``ReplyStatus``,
``findings/reply.py``, with the spellings it accepts) and a plan step's status text
(``plan/``; one starting with ✅ marks a merged step).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

ProcessStatus = Literal[
    "succeeded", "failed", "stuck", "timeout", "canceled", "crashed", "rate_limited", "budget"
]
PROCESS_STATUSES: tuple[ProcessStatus, ...] = (
    "succeeded",
    "failed",
    "stuck",
    "timeout",
    "canceled",
    "crashed",
    "rate_limited",  # the model API refused for longer than the run may wait (docs/supervisor.md)
    "budget",  # stopped at the limit of a budget (runs/budget.py)
)

LiveState = Literal["queued", "running", "killing", "waiting"]
LIVE_STATES: tuple[LiveState, ...] = ("queued", "running", "killing", "waiting")
"""``status.json`` states of a run that has not ended ("killing": its tree is being killed;
"waiting": rate limited, it starts again at ``waitingUntil``)."""

ResultStatus = Literal["succeeded", "failed", "canceled"]
RESULT_STATUSES: tuple[ResultStatus, ...] = ("succeeded", "failed", "canceled")

CardStatus = Literal["queued", "running", "succeeded", "failed", "canceled"]
CARD_STATUSES: tuple[CardStatus, ...] = ("queued", "running", *RESULT_STATUSES)

HistoryEvent = Literal["queued", "started", "succeeded", "failed", "canceled"]

# "empty": the implementer or a fixer changed nothing, so there was nothing (new) to review
# "budget": a budget ran out (an agent stopped at its limit, or not started)
StepOutcome = Literal["approved", "rejected", "failed", "canceled", "skipped", "empty", "budget"]

RESULT_OF_PROCESS: Mapping[str, ResultStatus] = {  # keys: every ProcessStatus
    "succeeded": "succeeded",
    "failed": "failed",
    "stuck": "failed",
    "timeout": "failed",
    "canceled": "canceled",
    "crashed": "failed",
    "rate_limited": "failed",
    "budget": "failed",
}
"""A process status as result.json says it: stuck, timed out, crashed, rate-limited and
budget-stopped runs failed."""

RESULT_OF_STEP: Mapping[str, ResultStatus] = {  # keys: every StepOutcome
    "approved": "succeeded",
    "skipped": "succeeded",  # already done on the target
    "rejected": "failed",
    "failed": "failed",
    "canceled": "canceled",
    "empty": "failed",
    "budget": "failed",
}
"""A step's ending as its result.json ``status`` and history line say it."""


def result_status(process_status: str) -> ResultStatus:
    """A process status (any string read back) as result.json's status; unknown: failed."""
    return RESULT_OF_PROCESS.get(process_status, "failed")


def step_result_status(outcome: str) -> ResultStatus:
    """A step's ending as result.json's status; unknown: failed."""
    return RESULT_OF_STEP.get(outcome, "failed")


def is_live(state: object) -> bool:
    """Whether a ``status.json`` state is one of a run that has not ended."""
    return state in LIVE_STATES


LOST_REASON = "lost (its supervisor died)"
"""How a step run's record begins the reason of an agent run it lists as lost: one an earlier
run of the step left when its supervisor was killed (``chain/agents.lost_runs``)."""


def listed_lost(status: str, reason: str) -> bool:
    """Whether a step run's ``chain.agents`` entry (its ``status`` and ``reason``) is such a
    lost run: it reviewed nothing of the round its agent id names (the new run's reviewer of
    that id did), so it carries no verdict."""
    return status == "canceled" and reason.startswith(LOST_REASON)
