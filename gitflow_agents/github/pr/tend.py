"""``plan tend PLAN``: keep every open step pull request of a plan mergeable and reviewed.

For each step not ✅ on origin's target whose branch (``chain.branch_pattern``) has an open pull
request, with origin's branch tip as the head (git is the truth; GitHub's ``mergeable_state`` is
not read):

- **up to date and green** (the target is an ancestor of the head, and the newest
  ``gitflow-agents/review`` status on the head is ``success``): nothing; no request of its own
  (the open pull requests, their heads' statuses and armed auto-merge are one GraphQL read for
  the plan, ``api.open_pulls``; REST's two per pull request for a token without GraphQL). With
  ``--auto-merge`` and none armed, it is armed without a review (``_arm_found``);
- **up to date and red**: nothing (it waits for ``/agent fix`` or a human); it counts as red;
- **behind the target, or a head no review judged** (no status, or ``pending``: a human pushed):
  under the step branch's lease (``tend_lease.py``: exactly one tend, never while its step run
  works), the step branch is set to origin's head, the target merged in when it moved on (a
  normal merge commit; a conflict goes to the fixer, the chain's "target moved" round), the
  result reviewed (``chain.tend.tend_step``), pushed as a fast-forward (never forced: a push that
  finds the branch moved is left to the next tend), and published on the pull request as a step
  run's is (``publish.publish_step``: the sticky comment, inline findings, the status on exactly
  the pushed head, auto-merge re-armed with ``--auto-merge``). A merge the fixer did not resolve
  leaves the head as it is with a ``failure`` status, the conflicting files named in the sticky
  comment, and ``CONFLICT_LABEL``; the label goes when a later tend lands the merge.
- **green, with ``--auto-merge rebase``, but a merge commit of the branch resolves a conflict
  or was edited after merging cleanly**: GitHub refuses to rebase-merge such a branch ("This
  branch cannot be rebased safely"), so auto-merge would wait for good: red, said on one line
  naming the commit; a rebase auto-merge still armed on the pull request (armed before that
  head: GitHub keeps it across a writer's push) is disabled, by the publishing of a head this
  tend reviewed (``publish.disarm_rebase``, the head pending until it is) or, for one found
  green, here.

A started step whose branch has no open pull request but whose lease records one that was
closed without merging (a human closed it) is not tended: it is said and counts as waiting, for
the next ``run --pr`` of the step, which reopens it (``lease.finishable``).

On a target that requires up-to-date branches, with ``--auto-merge``, once this tend made one
pull request green (GitHub merges it next, and its merge leaves every sibling behind again), the
later behind ones wait for that merge's push (``_tend_all``): one brought up to date per merge.

A budget (``.flow/`` ``budget:``) that stops the tend's agent, or starts none, is no verdict,
nor is a model API that refused it for longer than ``defaults.rate_limit_wait_secs`` allows:
nothing is pushed or published (the head's status, the labels and the sticky comment stay as
they were, as ``run --pr`` publishes nothing for a step a budget stopped), and the next tend
tries again.

Exit code: 0 every open step pull request is green or waits on someone else (its step run or
another tend works on it), 1 one stays red, 3 an agent failed, 4 GitHub failed (as ``run``; a
rebase auto-merge it could not disable counts too),
5 a budget stopped a tend, 6 a rate limit did (the worst of them, in ``run --all --jobs``'s
order).
docs/github.md, "Tending open step pull requests".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

from gitflow_agents.base.errors import ExitCode, GitError, GitHubError
from gitflow_agents.chain import ChainResult, Context
from gitflow_agents.chain.lander import BranchLander
from gitflow_agents.chain.parallel import worst_exit
from gitflow_agents.chain.state import done_where, target_tip
from gitflow_agents.chain.tend import tend_step
from gitflow_agents.chain.workspace import branch_name
from gitflow_agents.git import lease as git_lease
from gitflow_agents.git import queries as git
from gitflow_agents.git.worktree import merge_conflicts
from gitflow_agents.github.action.status import CONTEXT
from gitflow_agents.github.api.client import PullRequest
from gitflow_agents.github.api.open_pulls import HeadStates, open_pulls
from gitflow_agents.github.pr import lease as leases
from gitflow_agents.github.pr import tend_lease
from gitflow_agents.github.pr.connect import GitHub, connect, guarded, on_origin
from gitflow_agents.github.pr.plan_comment import update_glance
from gitflow_agents.github.pr.publish import (
    NOT_DISARMED,
    StepPublished,
    arm_green,
    disarm_rebase,
    rebase_refusal,
)
from gitflow_agents.github.pr.startable import REMOTE
from gitflow_agents.github.pr.step import pending_why, publish_run, step_run_spend
from gitflow_agents.plan import parse_plan
from gitflow_agents.runs import new_run_id
from gitflow_agents.runs.lock import StepLockedError

CONFLICT_LABEL = "gitflow-agents: conflict"
"""On a step pull request whose merge of the target the fixer did not resolve."""


@dataclass(frozen=True)
class TendOptions:
    auto_merge: str | None = None  # merge, squash, rebase: re-armed on a head tend approved
    plan_issue: int | None = None  # the tracking issue of the plan comment (plan_comment.py)


class Tended(NamedTuple):
    """How one pull request was left: green, waiting (someone else works on it), red, or
    stopped (a budget or a rate limit stopped its tend: left as it was); the exit code of its
    tend (3 an agent failed, 5 a budget, 6 a rate limit, else 0)."""

    state: str
    code: int = int(ExitCode.OK)
    landing: bool = False  # this tend made it green with auto-merge armed: GitHub merges it


class _Open(NamedTuple):
    step: int
    branch: str
    pull: PullRequest


def tend_plan(
    ctx: Context,
    options: TendOptions,
    report: Callable[[ChainResult], None],
    environ: Mapping[str, str] | None = None,
) -> int:
    """Tend every open step pull request of ``ctx.plan`` (see the module doc)."""
    github = connect(os.environ if environ is None else environ, ctx.root)
    ctx = on_origin(ctx)
    pulls, states, closed = _open_step_pulls(ctx, github)
    if not pulls:
        print(f"plan tend: no open step pull request of {_plan_name(ctx)} on {github.repo}")
        update_glance(ctx, github.client, github.repo, options.plan_issue, environ, github.ttl)
        return int(ExitCode.OK)
    if options.auto_merge is not None:
        github = guarded(github, ctx.target)
    left = _tend_all(ctx, github, pulls, options, report, states) + closed
    counts = {state: sum(t.state == state for t in left) for state in ("green", "waiting", "red")}
    line = ", ".join(f"{n} {state}" for state, n in counts.items())
    for code, why in ((ExitCode.BUDGET, "a budget"), (ExitCode.RATE_LIMITED, "a rate limit")):
        stopped = sum(t.state == "stopped" and t.code == code for t in left)
        line += f", {stopped} stopped by {why}" if stopped else ""
    print(f"plan tend: {line}")
    update_glance(ctx, github.client, github.repo, options.plan_issue, environ, github.ttl)
    red = [int(ExitCode.REVISE)] if counts["red"] else []
    return worst_exit([*(t.code for t in left), *red])


def _tend_all(
    ctx: Context,
    github: GitHub,
    pulls: list[_Open],
    options: TendOptions,
    report: Callable[[ChainResult], None],
    states: HeadStates | None,
) -> list[Tended]:
    """Each open step pull request tended in plan order. On a target that requires up-to-date
    branches, with ``--auto-merge``, once this tend made one green (GitHub merges it next), the
    later ones that are behind wait for the push of that merge: bringing them up to date now
    would be undone by it (each merge would re-merge and re-review every sibling)."""
    one_at_a_time = options.auto_merge is not None and bool(github.guard and github.guard.strict)
    left: list[Tended] = []
    landing: PullRequest | None = None
    for found in pulls:
        left.append(tend_pull(ctx, github, found, options, report, states, after=landing))
        if one_at_a_time and landing is None and left[-1].landing:
            landing = found.pull
    return left


def _plan_name(ctx: Context) -> str:
    assert ctx.plan is not None
    return ctx.plan.name


def _open_step_pulls(
    ctx: Context, github: GitHub
) -> tuple[list[_Open], HeadStates | None, list[Tended]]:
    """The plan's steps not ✅ on the target whose branch on origin has an open pull request
    from ``github.repo`` itself (the newest one), and their heads' gate states: one
    ``ls-remote``, then, when a step branch is on origin, one read of the open pull requests
    into the target with their heads' statuses (``api.open_pulls``). And the steps whose pull
    request was closed without merging (``_closed``), said, each waiting."""
    assert ctx.plan is not None
    heads = git.remote_heads(ctx.root, REMOTE)
    branches = {
        step.number: branch_name(ctx.settings, ctx.plan.name, step.number)
        for step in ctx.plan.steps
    }
    started = {
        number: branch
        for number, branch in branches.items()
        if branch in heads and done_where(ctx, number) is None
    }
    if not started:
        return [], None, []
    pulls, states = open_pulls(github.client, github.repo, ctx.target, CONTEXT)
    by_branch = {p.head_ref: p for p in reversed(pulls) if p.head_repo == github.repo}
    found = [
        _Open(number, branch, by_branch[branch])
        for number, branch in started.items()
        if branch in by_branch
    ]
    rest = {number: branch for number, branch in started.items() if branch not in by_branch}
    return found, states, _closed(ctx, github, rest)


def _closed(ctx: Context, github: GitHub, started: dict[int, str]) -> list[Tended]:
    """Of the started steps without an open pull request, those whose lease records one that
    was closed without merging (``leases.closed_unmerged``): a tend does not reopen it, the
    next ``run --pr`` of the step (``--step N`` or the waves') does; said, each waiting. One
    ``ls-remote`` and fetch for their leases, one read of each such pull request."""
    if not started:
        return []
    try:
        found = git_lease.read_leases(ctx.root, started.values(), REMOTE)
    except GitError:
        return []
    left = []
    for number, branch in started.items():
        lease = found.get(branch)
        try:
            why = leases.closed_unmerged(lease, github.client, github.repo) if lease else None
        except GitHubError:
            why = None
        if why is not None and lease is not None:
            print(
                f"step {number}: PR #{lease.holder['pull']} was closed without merging: waits "
                f"for a run --pr of the step (--step {number}, or --all) to reopen it",
                flush=True,
            )
            left.append(Tended("waiting"))
    return left


def _say(step: int, pull: PullRequest, text: str) -> None:
    print(f"step {step}: PR #{pull.number} {text}", flush=True)


def _verdict(
    ctx: Context,
    github: GitHub,
    found: _Open,
    head: str,
    behind: bool,
    states: HeadStates | None = None,
) -> Tended | None:
    """What needs no tend: an up-to-date head with a final status (green, or red waiting for a
    fix), or a red head whose merge of the target the fixer could not resolve (``CONFLICT_LABEL``:
    it waits for a human's push); None when the head is ``behind`` the target or no review
    judged it. The head's status from ``states`` (read with the list of pull requests), else
    read now."""
    conflicted = CONFLICT_LABEL in found.pull.labels
    if behind and not conflicted:
        return None
    states = states or HeadStates(github.client, github.repo, CONTEXT, {})
    state = states.state(head)
    if state == "success" and not behind:
        _say(found.step, found.pull, f"green on {head[:12]}, up to date with {ctx.target}")
        return Tended("green")
    if state in ("failure", "error"):
        why = "a human resolves the conflict" if conflicted else "a fix"
        _say(found.step, found.pull, f"red on {head[:12]} ({state}): waits for {why}")
        return Tended("red")
    return None


def tend_pull(
    ctx: Context,
    github: GitHub,
    found: _Open,
    options: TendOptions,
    report: Callable[[ChainResult], None],
    states: HeadStates | None = None,
    after: PullRequest | None = None,
) -> Tended:
    """One open step pull request (see the module doc); ``states``: its head's gate state as
    the list of open pull requests read it (under the lease it is read again); ``after``: a
    pull request GitHub merges next, whose push a behind one waits for (``_tend_all``)."""
    head = _fetch_head(ctx, found.branch)
    target_sha = target_tip(ctx, fetch=False)
    assert target_sha is not None
    behind = not git.is_ancestor(ctx.root, target_sha, head)
    settled = _verdict(ctx, github, found, head, behind, states)
    if settled is not None:
        return _settled(ctx, github, found, options, settled, head, target_sha)
    if after is not None and behind:
        _say(
            found.step,
            found.pull,
            f"behind {ctx.target}: waits for PR #{after.number} to land ({ctx.target} requires "
            "up-to-date branches: tending it now would be undone by that merge)",
        )
        return Tended("waiting")
    lease = git_lease.read_lease(ctx.root, found.branch, REMOTE)
    why = tend_lease.busy(lease, github.client, github.repo, github.ttl)
    if why is not None:
        _say(found.step, found.pull, f"waits: {why}")
        return Tended("waiting")
    run_id = new_run_id()
    record = tend_lease.tend_holder(github.claimant, head, found.pull.number, run_id)
    record.update(leases.carried(lease))  # what the runs before spent on the step
    identity = dict(ctx.commit_identity or {})
    held = tend_lease.take(ctx.root, found.branch, record, lease, identity, REMOTE)
    if held is None:
        _say(found.step, found.pull, "waits: another tend or run took its lease first")
        return Tended("waiting")
    end = head
    try:
        with leases.renewing(held, github.ttl, _warn, ctx.cancel.set):
            tended, end = _tend_held(ctx, github, found, options, report, held)
    finally:
        tend_lease.done(held, end)
    return tended


def _warn(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr, flush=True)


def _fetch_head(ctx: Context, branch: str) -> str:
    """Origin's tip of ``branch``, fetched into its remote-tracking ref (origin is asked again
    only when the fetch failed: the branch gone, or origin unreadable)."""
    tracking = f"refs/remotes/{REMOTE}/{branch}"
    if git.fetch_ref(ctx.root, f"+refs/heads/{branch}:{tracking}", REMOTE):
        head = git.branch_tip(ctx.root, tracking)
    else:
        head = git.remote_branch_sha(ctx.root, branch, REMOTE)
    if head is None:
        raise GitHubError(f"{branch} is gone from {REMOTE} while its pull request is open")
    return head


def _tend_held(
    ctx: Context,
    github: GitHub,
    found: _Open,
    options: TendOptions,
    report: Callable[[ChainResult], None],
    held: leases.Held,
) -> tuple[Tended, str]:
    """Under the lease: the head and target read again (another tend may have finished just
    before), then merge, review, push, publish. The tend's state and the head left."""
    step, pull, branch = found.step, found.pull, found.branch
    head = _fetch_head(ctx, branch)
    target_sha = target_tip(ctx)
    assert target_sha is not None and ctx.plan is not None
    behind = not git.is_ancestor(ctx.root, target_sha, head)
    settled = _verdict(ctx, github, found, head, behind)
    if settled is not None:
        return _settled(ctx, github, found, options, settled, head, target_sha), head
    conflicts = merge_conflicts(ctx.root, head, target_sha) if behind else ()
    what = f"behind {ctx.target}" if behind else "a head no review judged"
    if conflicts:
        what += f", conflicting in {', '.join(conflicts)}"
    _say(step, pull, f"{what} ({head[:12]}): tending it")
    _at_head(ctx, branch, head)
    lander = BranchLander(head, str(held.record[tend_lease.TEND]))
    fresh = replace(ctx, plan=parse_plan(ctx.plan.path, ctx.config.spec_plan))
    try:
        result = tend_step(fresh, step, lander, head)
    except StepLockedError as exc:
        _say(step, pull, f"waits: {exc}")
        return Tended("waiting"), head
    report(result)
    spent = step_run_spend(result)
    if spent is not None:  # written with the lease when the tend is done
        held.spent(spent)
    lost = held.lost()
    if lost is not None:  # another tend took the pull request over as free: it is theirs now
        git.set_branch(ctx.root, branch, head)
        _say(step, pull, f"waits: {lost}; nothing was pushed or published")
        return Tended("waiting"), head
    if result.outcome == "budget" or result.exit_code == ExitCode.RATE_LIMITED:  # no verdict
        git.set_branch(ctx.root, branch, head)  # the tend's own commits: nothing is pushed
        _say(step, pull, f"not tended ({result.reason}): left as it was, for the next tend")
        return Tended("stopped", result.exit_code), head
    tip = lander.tip or head
    if result.outcome not in ("approved", "rejected") or (
        conflicts and git.conflict_markers(ctx.root, target_sha, tip)
    ):
        git.set_branch(ctx.root, branch, head)  # the tend's own commits: nothing is pushed
        return _unresolved(fresh, github, found, result, head, conflicts), head
    if tip != head:
        pushed = git.push_branch(ctx.root, tip, branch, REMOTE)
        if not pushed.ok and pushed.moved:
            _say(step, pull, f"{branch} moved on {REMOTE} meanwhile: nothing forced, next tend")
            return Tended("waiting"), head
        if not pushed.ok:
            raise GitHubError(f"cannot push {branch} to {REMOTE}: {pushed.detail}")
    published = _publish(fresh, github, options, result, found, tip, ())
    if CONFLICT_LABEL in pull.labels:
        github.client.pulls.remove_label(github.repo, pull.number, CONFLICT_LABEL)
    if published.disarm_failed:  # left pending: green, it would wait on a rebase GitHub refuses
        _say(step, pull, pending_why(published, options.auto_merge, "tend it again"))
        return Tended("red", int(ExitCode.GITHUB)), tip
    green = published.state == "success"
    tended = Tended("green" if green else "red", landing=green and options.auto_merge is not None)
    return _rebase_safe(ctx, found, options, tended, tip, target_sha), tip


def _settled(
    ctx: Context,
    github: GitHub,
    found: _Open,
    options: TendOptions,
    settled: Tended,
    head: str,
    target_sha: str,
) -> Tended:
    """A head that needs no tend (``_verdict``), as ``--auto-merge`` must leave it: red when a
    rebase must not land it (``_rebase_safe``), else, green with nothing armed, armed
    (``_arm_found``)."""
    tended = _rebase_safe(ctx, found, options, settled, head, target_sha, github)
    return _arm_found(github, found, options, tended, head)


def _arm_found(
    github: GitHub, found: _Open, options: TendOptions, tended: Tended, head: str
) -> Tended:
    """A head found green and up to date (nothing published it now) whose pull request has no
    auto-merge armed, under ``--auto-merge``: approved, yet nothing would ever merge it (a step
    published without ``--auto-merge``, or one whose rebase was refused, left so), stalling the
    wave while every tend exits 0. It is armed as publishing arms it (``publish.arm_green``:
    ``pending``, enabled, ``success`` again), with no agent run; the list of open pull requests
    says what is armed, so a later tend sends nothing. One armed for another method stays (it
    lands the head too). A draft waits for a human to mark it ready (GitHub refuses auto-merge
    on a draft). GitHub refusing it leaves the head ``pending`` and the pull request red, exit 4
    (the next tend reviews that head again and arms it, as for a refused publish)."""
    if options.auto_merge is None or tended.state != "green" or found.pull.auto_merge:
        return tended
    if found.pull.draft:
        _say(found.step, found.pull, "a draft: auto-merge waits until it is marked ready")
        return Tended("waiting", tended.code)
    published = arm_green(
        github.client, github.repo, found.pull, head, options.auto_merge, github.run_url
    )
    _say(found.step, found.pull, f"auto-merge ({options.auto_merge}): {published.auto_merge}")
    if published.state != "success":
        _say(found.step, found.pull, pending_why(published, options.auto_merge, "tend it again"))
        return Tended("red", worst_exit([tended.code, int(ExitCode.GITHUB)]))
    return tended._replace(landing=True)


def _rebase_safe(
    ctx: Context,
    found: _Open,
    options: TendOptions,
    tended: Tended,
    head: str,
    target_sha: str,
    found_green: GitHub | None = None,
) -> Tended:
    """``tended``, or red for a green head that ``--auto-merge rebase`` can never land: a merge
    commit of the branch resolves a conflict or was edited after merging cleanly, and GitHub
    refuses to rebase it, so auto-merge would wait for good while every tend exits 0.
    ``found_green``: the head was green before this tend (nothing
    published it now), so a rebase auto-merge armed on it is disabled here (``_disarm_found``);
    a head this tend published had it disabled while it was pending (``publish_run``)."""
    if options.auto_merge != "rebase" or tended.state != "green":
        return tended
    refusal = rebase_refusal(ctx.root, target_sha, head)
    if refusal is None:
        return tended
    _say(found.step, found.pull, refusal)
    code = _disarm_found(found_green, found) if found_green is not None else tended.code
    return Tended("red", worst_exit([tended.code, code]))


def _disarm_found(github: GitHub, found: _Open) -> int:
    """A green head a rebase must not land, whose pull request has a rebase auto-merge armed
    (a human's, or one armed before the edit by a version that did not disable it): GitHub
    refuses that rebase, so the pull request would wait armed and green for good (nothing
    says so on it); it is disabled (``publish.disarm_rebase``).
    No request while the open pull requests' list says none is armed for rebase (a later tend
    sends nothing), else one read of the pull request to confirm it before the disable. Its
    status was final before this tend and stays as it is (``success``); exit 4 when GitHub does
    not disable it, else 0."""
    if found.pull.auto_merge != "rebase":
        return int(ExitCode.OK)
    try:
        pull = github.client.pulls.get(github.repo, found.pull.number)
    except GitHubError as exc:
        _say(found.step, found.pull, f"cannot read whether auto-merge is armed: {exc}")
        return int(ExitCode.GITHUB)
    said = disarm_rebase(github.client, github.repo, pull)
    if said == "off":
        return int(ExitCode.OK)
    _say(found.step, found.pull, f"auto-merge (rebase): {said}")
    if said.startswith(NOT_DISARMED):
        _say(
            found.step,
            found.pull,
            "GitHub refuses to rebase it, so armed for rebase it waits for good: disable "
            "auto-merge on the pull request, or tend it again",
        )
        return int(ExitCode.GITHUB)
    return int(ExitCode.OK)


def _at_head(ctx: Context, branch: str, head: str) -> None:
    """The local step branch at origin's ``head``. Commits of the local branch that origin
    lacks (an earlier tend killed before its push, or work of this checkout) are kept on a
    branch of their own, never dropped."""
    local = git.branch_sha(ctx.root, branch)
    if local is not None and local != head and not git.is_ancestor(ctx.root, local, head):
        kept = f"{branch}-kept-{local[:12]}"
        if git.branch_sha(ctx.root, kept) is None:
            git.create_branch(ctx.root, kept, local)
        print(f"  note: the local branch {branch} had commits {REMOTE} lacks: kept as {kept}")
    git.set_branch(ctx.root, branch, head)


def _unresolved(
    ctx: Context,
    github: GitHub,
    found: _Open,
    result: ChainResult,
    head: str,
    conflicts: tuple[str, ...],
) -> Tended:
    """A merge the fixer did not resolve (or an agent that failed): the head stays, red, the
    conflicting files named in the sticky comment, ``CONFLICT_LABEL`` on the pull request."""
    notices: tuple[str, ...] = ()
    if conflicts:
        notices = (
            f"Merging {ctx.target} into {found.branch} conflicts in {', '.join(conflicts)}, "
            f"and the fixer did not resolve it: merge {ctx.target} into the branch, resolve "
            "the conflicts and push; the next tend reviews that head.",
        )
    _publish(ctx, github, TendOptions(), result, found, head, notices)
    if conflicts and CONFLICT_LABEL not in found.pull.labels:
        github.client.pulls.add_label(github.repo, found.pull.number, CONFLICT_LABEL)
    return Tended("red", result.exit_code if result.exit_code == ExitCode.AGENT_FAILED else 0)


def _publish(
    ctx: Context,
    github: GitHub,
    options: TendOptions,
    result: ChainResult,
    found: _Open,
    head: str,
    notices: tuple[str, ...],
) -> StepPublished:
    """The tend's run published on the pull request as a step run's is (its status set)."""
    warning = github.guard.warning() if github.guard is not None else None
    if options.auto_merge is not None and warning is not None:
        notices = (*notices, f"Auto-merge is on, but {warning}.")
    published = publish_run(
        ctx,
        github,
        result,
        found.branch,
        head,
        draft=False,
        auto_merge=options.auto_merge,
        notices=notices,
    )
    text = f"{found.branch} at {head[:12]}, status {published.state}"
    if options.auto_merge is not None:
        text += f", auto-merge ({options.auto_merge}): {published.auto_merge}"
    _say(found.step, found.pull, text)
    return published
