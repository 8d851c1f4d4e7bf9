"""The fixer agent of ``/agent fix``: run on the PR's head, its changes committed, not pushed.

The fixer is the base commit's ``.flow/`` agent ``options.fixer`` (a pull request cannot choose
it), run in a throw-away work tree of the PR's head with the review as its ``--after`` report;
docs/github.md, "Fix on request (`/agent fix`)".
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gitflow_agents import chain, render
from gitflow_agents.base.fsutil import real_path, write_text_atomic
from gitflow_agents.chain import AgentFailed
from gitflow_agents.config import load_flow_config
from gitflow_agents.findings import GateResult, Review
from gitflow_agents.git import queries as git
from gitflow_agents.github.action.checkout import base_checkout
from gitflow_agents.github.action.runner import Options
from gitflow_agents.github.api.client import ACTIONS_BOT_LOGIN, PullRequest
from gitflow_agents.prompt import agent_dir
from gitflow_agents.reviewer.builtin import diff_secrets
from gitflow_agents.runs import runs_root
from gitflow_agents.runs.budget import Ledger
from gitflow_agents.runs.control import listening
from gitflow_agents.runs.events import ConsoleChannel, EventHub
from gitflow_agents.runs.spend import Spend, runs_spend

FIX_FLOW = "github-fix"
FIX_PREAMBLE = """\
A maintainer asked for a fix of pull request #{number} (branch {branch}, head commit {head}).
Read the review report listed under "Previous Agent Reports" and fix what its findings ask for,
nothing more. Leave your changes uncommitted in the work tree: gitflow-agents commits them,
pushes the commit to the pull request's branch and reviews it again."""
FIX_TASK = "Fix the findings of the review of pull request #{number} (head commit {head})."
# Who commits the fix on a runner that has no git identity (a fresh runner has none).
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"


def review_report(result: Review, gate: GateResult) -> str:
    """The review as the fixer reads it: the markdown summary and the findings as JSON."""
    return (
        render.render(result, gate, "markdown").rstrip("\n")
        + "\n\n## Findings (JSON)\n\n```json\n"
        + render.render(result, gate, "json").rstrip("\n")
        + "\n```\n"
    )


def _share_flow_dir(link: Path, real: Path) -> None:
    """``link`` → ``real`` (the workspace's run-artifact folder), unless ``link`` exists."""
    real.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink() and not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(real_path(real), target_is_directory=True)


@dataclass(frozen=True)
class FixRun:
    sha: str | None
    """The fix commit; None when the fixer changed nothing."""
    run_id: str
    agent_id: str
    duration_s: float
    spend: Spend
    """What the fixer's attempts spent, as their run records say."""


class FixerFailed(AgentFailed):
    """The fixer did not complete (exit code as ``AgentFailed``); ``spend``: what its
    attempts spent before they ended (a budget's stop spent up to its limit)."""

    def __init__(self, run: chain.AgentRun, spend: Spend) -> None:
        super().__init__(run)
        self.spend = spend


def run_fixer(root: Path, pull: PullRequest, report: str, options: Options, temp: Path) -> FixRun:
    """The configured fixer (``options.fixer``, defined by the base commit's ``.flow/``) in a
    work tree of the PR's head on a throw-away branch, with ``report`` (the review) as its
    ``--after`` context; its changes committed with the run's trailers, as
    ``github-actions[bot]`` when git knows no identity. Nothing is pushed.
    FixerFailed when the fixer does not complete; ConfigError for an unknown fixer."""
    identity = git.commit_identity(root, ACTIONS_BOT_LOGIN, BOT_EMAIL)
    with contextlib.ExitStack() as stack:
        config_root = stack.enter_context(base_checkout(root, pull.base_sha, temp))
        config = load_flow_config(config_root)
        workflow = config.completion_workflow_for(options.fixer)  # ConfigError if unknown
        flow_dir = config.flow_dir.strip("/")
        # Run artifacts land in the workspace's flow dir, whichever work tree writes them.
        git.ensure_info_exclude(root, (f"/{flow_dir}/", f"/{flow_dir}"))
        _share_flow_dir(config_root / flow_dir, root / flow_dir)
        review_id = f"pr-{pull.number}-review"
        review_file = agent_dir(config_root, flow_dir, FIX_FLOW, review_id)
        review_file.mkdir(parents=True, exist_ok=True)
        write_text_atomic(review_file / workflow.success_filename, report)

        branch = f"gitflow-agents/fix-pr-{pull.number}-{secrets.token_hex(4)}"
        tree = Path(tempfile.mkdtemp(prefix="fix-", dir=temp))
        tree.rmdir()  # `git worktree add` creates it
        git.create_branch(root, branch, pull.head_sha)
        stack.callback(git.delete_branch, root, branch)
        git.add_worktree(root, tree, branch)
        stack.callback(git.remove_worktree, root, tree)
        _share_flow_dir(tree / flow_dir, root / flow_dir)

        hub = listening(EventHub([ConsoleChannel(sys.stderr, is_tty=False)]))
        stack.callback(hub.close)
        settings = chain.ChainSettings(fixer=options.fixer, threshold=options.threshold)
        ctx = chain.Context(
            root=config_root,
            config=config,
            plan=None,
            flow=FIX_FLOW,
            settings=settings,
            hub=hub,
            env={**os.environ, **identity},
            commit_identity=identity,
            budget=Ledger(config.budget, config.prices),  # `.flow/` budget: the fixer's agent run
        )
        ws = chain.Workspace(
            worktree=tree,
            branch=branch,
            base_sha=git.merge_base(root, pull.base_sha, pull.head_sha),
        )
        # the secrets the PR adds, masked in the fixer's log, events and records as the
        # review masked them (docs/security.md, "Secrets in review output")
        ctx.secrets |= diff_secrets(tree, git.DiffSpec(ws.base_sha, pull.head_sha))
        agent_id = f"pr-{pull.number}-{options.fixer}"
        facts = {"number": pull.number, "branch": pull.head_ref, "head": pull.head_sha}
        job = chain.Job(
            agent=options.fixer,
            agent_id=agent_id,
            kind="fix",
            start_sha=pull.head_sha,
            after=(review_id,),
            preamble=FIX_PREAMBLE.format(**facts),
            task=FIX_TASK.format(**facts),
            commit_message=f"Fix review findings of PR #{pull.number}",
        )
        runs = runs_root(ctx.root, flow_dir, FIX_FLOW)

        def spent(run: chain.AgentRun) -> Spend:  # what its attempts' records say
            return runs_spend(runs, (one.run_id for one in run.attempts()))

        try:
            run = chain.run_agent(ctx, ws, job)
        except AgentFailed as failed:
            raise FixerFailed(failed.run, spent(failed.run)) from failed
        spend = spent(run)
    sha = run.end_sha if run.end_sha != pull.head_sha else None
    return FixRun(sha, run.run_id, agent_id, run.duration, spend)
