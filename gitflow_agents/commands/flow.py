"""``gitflow-agents flow implement|review|fix|research``: one flow on its own, chained by hand.

* implement / fix: the agent works in the work tree of a branch (the step branch of ``--plan`` /
  ``--step``, or ``--branch``); its changes are committed with the run's trailer and the git
  statistics are filled into its report and ``result.json``. Nothing is merged.
* review: every ``--reviewers`` agent (or the one ``--agent``) reviews ``--branch`` (against its merge-base with the
  target) or ``--range A..B`` in a detached, throw-away work tree; ``--focus-paths`` limits the
  findings that count; the gate decides the exit code and a git note records the verdict.
* research: the agent works read-only in a throw-away work tree; ``result.json`` lists the
  sources (markdown links) of its report.

``--after a,b`` names earlier agents whose ``report.complete.md`` the agent gets
(docs/protocol.md, System prompt).
Exit codes: 0 success / approved, 1 review not approved, 2 usage, 3 agent failed, 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitflow_agents.base.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from gitflow_agents.config.budget import Scope

RESEARCHER = "researcher"


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.agent_run.launch import sigterm_as_interrupt
    from gitflow_agents.chain import AgentFailed
    from gitflow_agents.commands.run import open_context

    plan = Path(args.plan) if args.plan else None
    if plan is not None and args.step is None:
        raise UsageError(f"flow {args.flow_kind}: --plan needs --step")
    if args.step is not None and plan is None:
        raise UsageError(f"flow {args.flow_kind}: --step needs --plan")
    if args.flow_kind == "review":
        _review_agents(args)
    # the options limit what the command is about: `flow review`'s the review (its reviewers
    # together, as `review`'s), the other flows' their one agent run
    scope: Scope = "review" if args.flow_kind == "review" else "agent"
    ctx = open_context(
        args, plan_path=plan, flow=args.flow_name, check_agents=False, budget_scope=scope
    )
    if ctx.plan is not None:
        ctx.plan.step(args.step)
    after = tuple(a.strip() for a in (args.after or "").split(",") if a.strip())
    with sigterm_as_interrupt(), contextlib.closing(ctx.hub):
        _check_reports(ctx, args.flow_kind, after)  # before any branch or work tree
        try:
            if args.flow_kind == "review":
                return _review(ctx, args, after)
            return _single(ctx, args, after)
        except AgentFailed as exc:
            if args.json:
                failed = {"status": "failed", "reason": str(exc), **exc.run.entry().to_json()}
                _print(args, {**failed, **_spent(ctx, exc.run.run_id)})
            else:  # as a run that completed is said (``_single``), not its JSON
                run, reason = exc.run, exc.run.reason
                said = reason if reason.startswith(f"{run.status}:") else f"{run.status}: {reason}"
                print(f"{run.agent_id}: {said} (run {run.run_id})")
            return int(exc.exit_code)


def _spent(ctx: Any, run_id: str) -> dict[str, Any]:
    """What the run ``run_id`` spent, as its record says (``inputTokens``, ``outputTokens``,
    ``costUsd``, ``costEstimated``; null where unknown): a failed run, one a budget stopped,
    spent too."""
    from gitflow_agents.runs import runs_root
    from gitflow_agents.runs.spend import runs_spend

    spend = runs_spend(runs_root(ctx.root, ctx.config.flow_dir, ctx.flow), [run_id]).to_json()
    return {key: spend[key] for key in ("inputTokens", "outputTokens", "costUsd", "costEstimated")}


def _single(ctx: Any, args: argparse.Namespace, after: tuple[str, ...]) -> int:
    from gitflow_agents import chain
    from gitflow_agents.agents.installed import check_agents
    from gitflow_agents.git import queries as git
    from gitflow_agents.runs import read_json, runs_root

    kind = args.flow_kind
    default = {"implement": ctx.settings.implementer, "fix": ctx.settings.fixer}
    agent = args.agent or default.get(kind, RESEARCHER)
    agent_id = args.agent_name or chain.agent_id_for(agent, args.step)
    if kind == "fix" and not after:
        raise UsageError("flow fix: give the review report(s) to act on with --after")
    if kind == "research" and not args.task:
        raise UsageError("flow research: give the prompt or topics with --task")
    check_agents(ctx.config, [agent], cwd=ctx.root, env=ctx.env)  # before any branch or work tree
    if kind == "research":
        with chain.scratch_workspace(ctx, "HEAD", "HEAD") as ws:
            job = chain.Job(
                agent=agent,
                agent_id=agent_id,
                kind="research",
                start_sha=ws.base_sha,
                after=after,
                task=args.task,
                reuse=False,  # asked again (maybe another question): a new answer, never the last
            )
            run = chain.run_agent(ctx, ws, job)
    else:
        if not args.branch and ctx.plan is None:
            raise UsageError(f"flow {kind}: give --plan with --step, or --branch")
        if ctx.plan is None and not args.task:  # checked before any branch or work tree exists
            raise UsageError(f"flow {kind}: with --branch, say what to do with --task")
        ws = (
            chain.branch_workspace(ctx, args.branch)
            if args.branch
            else chain.step_workspace(ctx, args.step)
        )
        job = chain.Job(
            agent=agent,
            agent_id=agent_id,
            kind=kind,
            step=args.step,
            start_sha=git.head_sha(ws.worktree),
            after=after,
            task=args.task,
            preamble=chain.FIX_PREAMBLE if kind == "fix" else None,
            commit_message=f"{ctx.flow}: {agent_id}",
        )
        run = chain.run_agent(ctx, ws, job)
    result = read_json(
        runs_root(ctx.root, ctx.config.flow_dir, ctx.flow) / run.run_id / "result.json"
    )
    if args.json:
        _print(args, result or run.entry().to_json())
        return int(ExitCode.OK)
    line = f"{agent_id}: {'reused' if run.reused else run.status}"
    if result and result.get("gitStats"):
        data = result["gitStats"]
        files = _count(data["filesChanged"], "file")
        line += f" [{files} changed, +{data['insertions']} -{data['deletions']}]"
    if kind == "research" and result:
        line += f"; {_count(len(result.get('sources', [])), 'source')} captured"
    print(line + f" (run {run.run_id})")
    if run.report is not None:
        print(f"  report: {run.report}")
    for notice in ctx.notices:
        print(f"  note: {notice}")
    return int(ExitCode.OK)


def _check_reports(ctx: Any, kind: str, after: tuple[str, ...]) -> None:
    """UsageError before anything runs when an agent named by ``--after`` left no completed
    report: the agent would be pointed at a file that does not exist."""
    from gitflow_agents.prompt.paths import check_after

    report = ctx.config.completion_workflow.success_filename
    check_after(ctx.root, ctx.config.flow_dir, ctx.flow, after, report, f"flow {kind}")


def _review_agents(args: argparse.Namespace) -> None:
    """``flow review --agent X`` reviews with X alone, as ``--reviewers X`` does (and as
    ``git agent-review --agent X`` does); giving both, or ``--agent-name`` (each reviewer's id
    is its own: docs/chains.md), is a usage error rather than an option silently ignored."""
    if args.agent_name is not None:
        raise UsageError(
            "flow review: --agent-name is not used for reviews (each reviewer's id is its "
            "agent name); choose the reviewers with --agent or --reviewers"
        )
    if args.agent is None:
        return
    if args.reviewers is not None:
        raise UsageError("flow review: give --agent or --reviewers, not both")
    args.reviewers = args.agent


def _review(ctx: Any, args: argparse.Namespace, after: tuple[str, ...]) -> int:
    from gitflow_agents import chain
    from gitflow_agents.findings import merge_reviews
    from gitflow_agents.git import queries as git
    from gitflow_agents.render import counts
    from gitflow_agents.reviewer.locate import Target, nothing_to_review

    if args.range and args.branch:
        raise UsageError("flow review: give --branch or --range, not both")
    if args.range:
        base, sep, head = args.range.partition("..")
        if not sep or not base or not head:
            raise UsageError(f"flow review: --range must be BASE..HEAD, got {args.range!r}")
    else:
        head = args.branch or "HEAD"
        base = git.merge_base(ctx.root, ctx.target, git.rev_parse(ctx.root, head))
    head_sha = git.rev_parse(ctx.root, head)
    empty = nothing_to_review(ctx.root, Target(git.rev_parse(ctx.root, base), head_sha, ""))
    if empty is not None:  # as `git agent-review`: no reviewer, no note, exit 0
        return _reviewed_nothing(args, head_sha, empty)
    focus = tuple(p.strip() for p in (args.focus_paths or "").split(",") if p.strip())
    with chain.scratch_workspace(ctx, head, base) as ws, ctx.budget.scope("review"):
        # its one round is its last, as ``run``'s is: a reused review that does not approve
        # (or that its round discarded) is asked again (docs/chains.md, "Resuming")
        review = chain.review_round(
            ctx,
            ws,
            iteration=None,
            step=args.step,
            after=after,
            task=args.task,
            focus_paths=focus,
            final=True,
        )
        chain.record_note(ctx, ws, review)
    combined = review.reviews[0] if len(review.reviews) == 1 else merge_reviews(review.reviews)
    data = {
        "status": "succeeded",
        "approved": review.gate.approved,
        "overall": "approve" if review.gate.approved else "revise",
        "reasons": list(review.gate.reasons),
        "summary": combined.summary,
        "findings": [f.to_dict() for f in combined.findings],
        "accepted": [a.to_dict() for a in combined.accepted],
        **review.entry().to_json(),
    }
    if args.json:
        _print(args, data)
    else:
        verdict = "APPROVED" if review.gate.approved else "NOT APPROVED"
        print(f"{verdict}: {review.reviewed_sha[:12]} ({counts(combined)})")
        for reason in review.gate.reasons:
            print(f"  - {reason}")
        for run in review.agents:
            print(f"  {run.agent_id}: {run.report} (run {run.run_id})")
    return int(review.gate.exit_code)


def _count(n: int, noun: str) -> str:
    """``1 file``, ``2 files``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _reviewed_nothing(args: argparse.Namespace, head: str, why: str) -> int:
    """An empty range (``reviewer/locate.nothing_to_review``): exit 0 with the line
    ``git agent-review`` prints; with ``--json`` a result that is *not approved* (nothing was),
    the line its reason (and on stderr)."""
    from gitflow_agents.chain import ReviewRound
    from gitflow_agents.findings import GateResult

    if not args.json:
        print(why)
        return int(ExitCode.OK)
    print(f"gitflow-agents: {why}", file=sys.stderr)
    nothing = ReviewRound(None, head, (), (), GateResult(False, ExitCode.OK, (why,)))
    data = {
        "status": "succeeded",
        "approved": False,
        "overall": None,
        "reasons": [why],
        "summary": "",
        "findings": [],
        "accepted": [],
        **nothing.entry().to_json(),
    }
    _print(args, data)
    return int(ExitCode.OK)


def _print(args: argparse.Namespace, data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``flow <kind>`` options (the chain options come from commands.run)."""
    from gitflow_agents.commands.options import non_negative_int
    from gitflow_agents.commands.run import add_chain_arguments

    p.add_argument(
        "--agent",
        help="agent to run (default: chain.implementer / chain.fixer of the config, "
        "researcher); review: the one reviewer, as --reviewers A",
    )
    p.add_argument("--agent-name", help="agent id (default step-NN-<agent> or <agent>)")
    p.add_argument("--flow", dest="flow_name", help="flow name (default: the plan's name)")
    p.add_argument("--plan", help="spec plan (markdown)")
    p.add_argument("--step", type=non_negative_int, help="step number in the plan")
    p.add_argument("--task", help="task text (research: the prompt or topics)")
    p.add_argument("--after", help="previous agent id(s) whose reports to read, comma separated")
    p.add_argument("--branch", help="implement/fix: branch to work on; review: branch to review")
    p.add_argument("--range", help="review: commit range BASE..HEAD")
    p.add_argument("--focus-paths", help="review: only findings under these paths count")
    add_chain_arguments(p)
    from gitflow_agents.commands.budget import add_budget_arguments

    add_budget_arguments(p, "by the agent run (review: by the review, its reviewers together)")
