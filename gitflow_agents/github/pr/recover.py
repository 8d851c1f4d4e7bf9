"""Recovery from any runner: what a ``run --pr`` re-run on a fresh clone finishes of a lost run.

A GitHub re-run never gets the checkout that failed back, so everything it needs is read from
origin and GitHub, never from a run folder:

- ``finishable`` (``lease.py``; the waves ask it too, ``lease_checker``): a started step whose
  holder is gone is finished by the re-run, also when its pull request is open (the lost run
  opened it, then died before its status or auto-merge: its lease has no ``pull``, written
  only once publishing finished), and when the pull request it published was closed without
  merging (it is reopened: the branch exists);
- ``resume_at``: a continued branch that holds commits not on the target holds finished work
  (the chain commits an agent's work only once the agent completed), so the re-run reviews
  it instead of running the implementer again; a branch that holds nothing of its own (the
  claim alone) is implemented. A target that moved on is merged into the branch by the
  chain's "target moved" round, so the push stays a fast-forward of what origin holds.

docs/github.md, "Recovery: what a re-run finishes".
"""

from __future__ import annotations

from gitflow_agents.chain import Context
from gitflow_agents.chain.resume import stopped_at
from gitflow_agents.chain.state import target_tip
from gitflow_agents.git import queries as git


def resume_at(ctx: Context, tip: str | None) -> str | None:
    """``tip`` (the continued branch's commit on origin) when it holds commits that are not on
    the target: finished work the run reviews; None when the branch holds nothing of its own
    (the claim alone, or no branch), so the implementer runs."""
    if tip is None:
        return None
    target = target_tip(ctx, fetch=False)
    if target is None or git.is_ancestor(ctx.root, tip, target):
        return None
    if stopped_at(ctx, tip):  # an agent's work a budget stopped: its implementer continues it
        return None
    return tip
