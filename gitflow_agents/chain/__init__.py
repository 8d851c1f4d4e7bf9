"""Chains: a plan step through implement → review → (fix → review)* → merge (docs/chains.md).

The package, one job per module:

* ``context``   what every agent of a run shares (``ChainSettings``, ``Context``)
* ``workspace`` the step branch in a work tree of the tool's own; scratch work trees
* ``ready``     a new step work tree made ready: ignored files copied in, the setup command
* ``trees``     the tool's work trees as a cache (state, size, age, live run: ``worktrees``)
* ``gc``        which of them go (``gc``, and ``run`` at its end with ``chain.gc``)
* ``resume``    what an earlier attempt of an agent left: reuse it or set it aside
* ``agents``    running the chain's agents, alone or several at once (``run_agent``)
* ``review``    one review round: reviewers in parallel, then the gate (``review_round``)
* ``builtin``   the offline reviewer of a round, run in process (``builtin_review``)
* ``state``     where a step's state lives: done on the target (``done_where``)
* ``integrate`` merging a target that moved on into the step branch before a review
* ``land``      an approved step: mark it ✅, merge it, carry the approval note
* ``lander``    what the end of a run does with the branch: merge it, or mark it for a PR
* ``loop``      the loop of one plan step (``run_step``)
* ``parallel``  several steps at once, ``run --all --jobs N`` (``run_parallel``)
* ``record``    the step run's ``result.json``, history line and ``ChainResult``

The names below are the public API (``commands/run.py``, ``commands/flow.py``,
``github/action.py`` import them from here).
"""

from __future__ import annotations

from gitflow_agents.chain.agents import (
    TRAILER_RUN,
    AgentFailed,
    AgentKind,
    AgentRun,
    Job,
    agent_id_for,
    run_agent,
)
from gitflow_agents.chain.context import ChainSettings, Context
from gitflow_agents.chain.loop import FIX_PREAMBLE, run_step
from gitflow_agents.chain.record import ChainResult, StepOutcome, dumps
from gitflow_agents.chain.resume import META_FILE, TRAILER_AGENT
from gitflow_agents.chain.review import REVIEW_PREAMBLE, ReviewRound, record_note, review_round
from gitflow_agents.chain.state import DONE, done_where
from gitflow_agents.chain.workspace import (
    Workspace,
    branch_name,
    branch_workspace,
    refuse_foreign_checkout,
    scratch_workspace,
    step_workspace,
    worktree_path,
)

__all__ = [
    "DONE",
    "FIX_PREAMBLE",
    "META_FILE",
    "REVIEW_PREAMBLE",
    "TRAILER_AGENT",
    "TRAILER_RUN",
    "AgentFailed",
    "AgentKind",
    "AgentRun",
    "ChainResult",
    "ChainSettings",
    "Context",
    "Job",
    "ReviewRound",
    "StepOutcome",
    "Workspace",
    "agent_id_for",
    "branch_name",
    "branch_workspace",
    "done_where",
    "dumps",
    "record_note",
    "refuse_foreign_checkout",
    "review_round",
    "run_agent",
    "run_step",
    "scratch_workspace",
    "step_workspace",
    "worktree_path",
]
