"""The step outputs of ``run PLAN --step N --pr`` in GitHub Actions (action.yml's ``mode: run``):
how the step ended (``step-result``, the outcome ``run --json`` reports), its run, pull request
and head commit, and what it spent, written to ``GITHUB_OUTPUT`` however the step ends (a
GitHub failure, exit 4, sets ``github-error`` too), as review mode writes its own
(docs/github.md, "Outputs"). Outside Actions, or for ``--all``, nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from gitflow_agents.base.errors import GitHubError
from gitflow_agents.github.action.publish import spend_outputs
from gitflow_agents.github.action.runner import write_outputs
from gitflow_agents.github.pr.step import step_run_spend
from gitflow_agents.runs.spend import NOTHING, Spend

if TYPE_CHECKING:
    from gitflow_agents.chain import ChainResult


@dataclass
class StepOutputs:
    """What the step run told so far; written when the ``with`` block it guards ends."""

    path: Path | None = None
    """``GITHUB_OUTPUT``; None: nothing is written."""
    result: ChainResult | None = None
    outcome: str = "error"
    """How a step ended that left no step run: ``started`` (another run holds it),
    ``skipped`` (done on the target), ``budget`` (not started: the budget is spent)."""
    head: str = ""
    """The step branch's head, once pushed."""
    pull: int | None = None
    """Its pull request, once opened or updated."""

    def ran(self, result: ChainResult) -> None:
        self.result = result

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
        """The outputs of a step that ended with ``exc`` (None: it returned)."""
        # a cancelled chain's record says canceled (chain.run_step gives it on the exception)
        result = self.result or getattr(exc, "step_result", None)
        outputs = {
            "step-result": _outcome(result, exc, self.outcome),
            "run-id": result.run_id if result is not None else "",
            "pull-request": str(self.pull) if self.pull is not None else "",
            "head-sha": self.head,
            **spend_outputs(_spent(result, exc)),
        }
        if isinstance(exc, GitHubError):
            outputs["github-error"] = str(exc)
        return outputs


def step_outputs(environ: Mapping[str, str], one_step: bool) -> StepOutputs:
    """The outputs of one step (``--step N``) run in GitHub Actions, to ``GITHUB_OUTPUT``;
    elsewhere (or ``--all``) ones that write nothing."""
    output = environ.get("GITHUB_OUTPUT")
    in_actions = environ.get("GITHUB_ACTIONS") == "true" and bool(output) and one_step
    return StepOutputs(Path(output) if in_actions and output else None)


def _outcome(result: ChainResult | None, exc: BaseException | None, told: str) -> str:
    if result is not None:
        return result.outcome
    if isinstance(exc, KeyboardInterrupt):
        return "canceled"
    return "error" if exc is not None else told


def _spent(result: ChainResult | None, exc: BaseException | None) -> Spend | None:
    """What the step run spent (its agent runs' records, ``step_run_spend``; its record just
    written, so None there is one that ran no agent: 0). Without a step run: nothing when it
    returned or GitHub failed (both before any agent started), unknown after any other error."""
    if result is None:
        return NOTHING if exc is None or isinstance(exc, GitHubError) else None
    return step_run_spend(result) or NOTHING
