"""The step outputs of ``run PLAN --step N --pr`` and ``run PLAN --all --pr`` in GitHub Actions
(action.yml's ``mode: run``): how the steps ended (``step-result``, the outcome ``run --json``
reports), the run, pull request and head commit, and what they spent, written to
``GITHUB_OUTPUT`` however the command ends (a GitHub failure, exit 4, sets ``github-error``
too; an error before any step, such as a plan that does not open, still says ``error``), as
review mode writes its own (docs/github.md, "Outputs"). Outside Actions nothing is written.

Several steps (``--all``) give one set of outputs: ``step-result`` is the worst of their
outcomes (``WORST_FIRST``), ``run-id``, ``head-sha`` and ``pull-request`` are those of the last
step that pushed its branch (``run-id``: the last step run), and the spend is their sum (unknown
when one step's is).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from gitflow_agents.base.errors import GitHubError
from gitflow_agents.github.action import comment
from gitflow_agents.github.action.publish import spend_outputs, usage_outputs
from gitflow_agents.github.action.runner import write_outputs
from gitflow_agents.github.pr.step import step_run_spend
from gitflow_agents.runs.spend import NOTHING, Spend

if TYPE_CHECKING:
    from gitflow_agents.chain import ChainResult

WORST_FIRST = (
    "canceled",
    "error",
    "budget",
    "failed",
    "rejected",
    "empty",
    "waiting",
    "started",
    "skipped",
    "approved",
)
"""``step-result`` of several steps: the first of their outcomes in this order (the order of
their exit codes, 130, 2 or 4, 5, 3, 1; then, of those that exit 0, a step this run did not
take on before one it found done, before one it approved)."""


@dataclass
class StepTold:
    """What one step's run told so far."""

    number: int
    result: ChainResult | None = None
    outcome: str = "error"
    """How a step ended that left no step run: ``started`` (another run holds it),
    ``skipped`` (done on the target), ``budget`` (not started: the budget is spent),
    ``waiting`` (``--step N``: its footprint overlaps a started step's)."""
    head: str = ""
    """The step branch's head, once pushed."""
    pull: int | None = None
    """Its pull request, once opened or updated."""
    started: bool = False
    """Its step run began (agents may have spent something)."""


@dataclass
class StepOutputs:
    """What the steps told so far; written when the ``with`` block it guards ends."""

    path: Path | None = None
    """``GITHUB_OUTPUT``; None: nothing is written."""
    steps: list[StepTold] = field(default_factory=list)

    def begin(self, number: int) -> StepTold:
        """Step ``number`` is taken on now; what it tells goes to the record returned."""
        self.steps.append(StepTold(number))
        return self.steps[-1]

    @property
    def step(self) -> StepTold:
        """The step taken on last."""
        return self.steps[-1]

    def ran(self, result: ChainResult) -> None:
        self.step.result = result

    def __enter__(self) -> StepOutputs:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        write_outputs(self.path, self.values(exc))

    def values(self, exc: BaseException | None) -> dict[str, str]:
        """The outputs of a command that ended with ``exc`` (None: it returned)."""
        if self.steps:
            # a cancelled chain's record says canceled (chain.run_step gives it on the exception)
            self.step.result = self.step.result or getattr(exc, "step_result", None)
        # the error ended the step taken on last (those before it returned), or came before any
        last = len(self.steps) - 1
        told = [(s, exc if index == last else None) for index, s in enumerate(self.steps)]
        outcomes = [_outcome(s, error) for s, error in told]
        if not self.steps and exc is not None:
            outcomes = [_outcome(StepTold(0), exc)]
        pushed = next((s for s in reversed(self.steps) if s.head), None)
        ran = next((s.result for s in reversed(self.steps) if s.result is not None), None)
        outputs = {
            "step-result": min(outcomes, key=_rank, default=""),
            "run-id": ran.run_id if ran is not None else "",
            "pull-request": str(pushed.pull) if pushed and pushed.pull is not None else "",
            "head-sha": pushed.head if pushed else "",
            **_spend_outputs([_spent(s, error) for s, error in told]),
        }
        if isinstance(exc, GitHubError):
            outputs["github-error"] = str(exc)
        return outputs


def step_outputs(environ: Mapping[str, str]) -> StepOutputs:
    """The outputs of ``run --pr`` in GitHub Actions, to ``GITHUB_OUTPUT``; elsewhere ones
    that write nothing."""
    output = environ.get("GITHUB_OUTPUT")
    in_actions = environ.get("GITHUB_ACTIONS") == "true" and bool(output)
    return StepOutputs(Path(output) if in_actions and output else None)


def _rank(outcome: str) -> int:
    return WORST_FIRST.index(outcome) if outcome in WORST_FIRST else 0


def _outcome(told: StepTold, exc: BaseException | None) -> str:
    if told.result is not None:
        return told.result.outcome
    if isinstance(exc, KeyboardInterrupt):
        return "canceled"
    return "error" if exc is not None else told.outcome


def _spent(told: StepTold, exc: BaseException | None) -> Spend | None:
    """What the step run spent (its agent runs' records, ``step_run_spend``; its record just
    written, so None there is one that ran no agent: 0). Without a step run: nothing when none
    began (it returned, was not started, or the command stopped before it: a GitHub failure, a
    plan that does not open), unknown when one began and ended in an error."""
    if told.result is not None:
        return step_run_spend(told.result) or NOTHING
    return None if told.started and exc is not None else NOTHING


def _spend_outputs(parts: list[Spend | None]) -> dict[str, str]:
    """The spend outputs of the steps' sum (``usage_outputs``: unknown when a step's is, a
    lower bound unknown too); nothing spent when no step was taken on."""
    if not parts:
        return spend_outputs(NOTHING)
    unknown = Spend()
    rows = [
        comment.RunRow("run", "—", "—", **comment.usage_fields(part or unknown)) for part in parts
    ]
    return usage_outputs(rows)
