"""``run PLAN --step N --pr``: a plan step as a pull request instead of a local merge.

Which steps: ``--all`` is the wave that can start now (``plan.waves.ready_steps``, what ``plan
matrix --ready`` prints); ``--step N`` is refused (exit 2) while a step it depends on is not ✅
on origin's target (as origin's plan says), unless ``--force``. Per step: GitHub is found from
the environment and checked with one request before anything runs (``connect.py``); the step
is claimed by creating its branch on ``origin`` at the target's commit there, together with its
lease in one atomic push (``git/lease.claim_with_lease``): a branch that exists means the step is
started, and the run stops without running an agent (``--force`` continues on that branch,
building on its tip), unless this checkout's own lost run claimed it: the claim is recorded in
the run's folder before it is pushed (``step_claim.py``), and a re-run takes over a claim whose
run's process is gone while origin's branch is still at the claimed commit or one that run
pushed, continuing as ``--force`` would (a live run of this checkout holds the step's claim
lock: the step is started); ``--all`` counts such a step as ready, not started, with the same
test (``lost_claims``), and names the steps it leaves to other runs in its last line. After the
claim the target is read again: a step whose pull request
merged (and whose branch was deleted) just before the claim re-created it is ✅ there now, and
the claim is given back without running an agent. The chain
runs as ``run`` runs it, ending with ``chain.lander.BranchLander`` (✅ marked on the branch,
nothing merged, the local target untouched); an approved or rejected step's branch is pushed
(a fast-forward, never forced), and its pull request opened or updated with the run published
on it (``step_publish.py``). A run that ends otherwise gives its claim back (the branch is
deleted while it still is the claim). A claim taken over (lost, free, or ``--force``) continues
what its branch holds: finished work is reviewed, not implemented again (``recover.py``).
docs/github.md, "Plan steps as pull requests" and "Recovery: what a re-run finishes".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitflow_agents.base.atomic import real_path
from gitflow_agents.base.errors import ExitCode, GitflowError, GitHubError
from gitflow_agents.chain import ChainResult, Context, run_step
from gitflow_agents.chain.lander import BranchLander
from gitflow_agents.chain.state import done_where, plan_in_repo, target_tip
from gitflow_agents.chain.workspace import branch_name
from gitflow_agents.git import lease as git_lease
from gitflow_agents.git import queries as git
from gitflow_agents.github.pr import lease as leases
from gitflow_agents.github.pr.claim import Claim, not_taken_over, previous_claim, write_claim
from gitflow_agents.github.pr.connect import GitHub, check_access, connect, guarded, on_origin
from gitflow_agents.github.pr.plan_comment import update_glance
from gitflow_agents.github.pr.publish import (
    NOT_DISARMED,
    StepPublished,
    StepPull,
    publish_step,
    pull_body,
    rebase_refusal,
)
from gitflow_agents.github.pr.recover import resume_at
from gitflow_agents.github.pr.startable import REMOTE, startable
from gitflow_agents.plan import parse_plan
from gitflow_agents.plan.model import DONE
from gitflow_agents.reviewer import approval_status
from gitflow_agents.runs import RunPaths, new_run_id, read_json, runs_root
from gitflow_agents.runs.lock import LockInfo, StepLockedError, hold, step_lock_path
from gitflow_agents.runs.schema import step_chain
from gitflow_agents.runs.spend import Spend, step_spend

if TYPE_CHECKING:
    from gitflow_agents.github.pr.outputs import StepOutputs


@dataclass(frozen=True)
class PrOptions:
    auto_merge: str | None = None  # merge, squash, rebase
    draft: bool = False
    force: bool = False
    max_parallel: int | None = None  # --all: steps in flight at most (plan matrix --ready's)
    plan_issue: int | None = None  # the tracking issue of the plan comment (plan_comment.py)


def run_steps(
    ctx: Context,
    steps: list[int] | None,
    options: PrOptions,
    report: Callable[[ChainResult], None],
    environ: Mapping[str, str] | None = None,
    outputs: StepOutputs | None = None,
) -> int:
    """Every step of ``steps`` (None: the steps ready now, ``--all``) as a pull request, in
    order, until one does not exit 0. ``--all`` takes over the steps whose claim is this
    checkout's own lost one (``lost_claims``), as ``--step N`` does, and ends with a line
    naming the steps it left to the runs that hold them (exit 0, as for any started step).
    ``outputs`` is told which steps it takes on, how a step ended that ran no chain (a
    ``--step N`` that waits included), the head it pushed and its pull request
    (``outputs.py``)."""
    github = connect(os.environ if environ is None else environ, ctx.root)
    check_access(github)  # before the claim and before any agent: nothing to give back
    ctx = on_origin(ctx)
    free = leases.lease_checker(ctx.root, github.client, github.repo, github.ttl, REMOTE)
    wave = steps is None
    if wave:
        mine = lost_claims(ctx)
        free = _either(mine, free)
    asked = steps
    steps, left = startable(ctx, steps, options.force, options.max_parallel, free)
    for number in [n for n in asked or () if n not in steps]:  # --step N: it waits
        _begin(outputs, number, told="waiting")
    if options.auto_merge is not None and steps:
        github = guarded(github, ctx.target)
    code = int(ExitCode.OK)
    held = list(left)  # started by another run: left to it
    try:
        for index, number in enumerate(steps):
            assert ctx.plan is not None
            _begin(outputs, number)
            spent = _held_back(ctx)  # spent by the steps before: before the claim, as `run` does
            if spent is not None:
                print(f"step {number} not started: {spent}")
                _told(outputs, "budget")
                code = int(ExitCode.BUDGET)
                break
            fresh = replace(ctx, plan=parse_plan(ctx.plan.path, ctx.config.spec_plan))
            code = run_step_pr(
                fresh, github, number, options, report, fetched=index == 0, outputs=outputs
            )
            if code is STARTED:
                held.append(number)
                _told(outputs, "started")
            code = int(code)
            if code != ExitCode.OK:
                break
    except GitflowError:  # a step failed after publishing (auto-merge refused): shown too
        _glance(ctx, github, options, environ, steps)
        raise
    _glance(ctx, github, options, environ, steps)
    if wave and held:
        numbers = ", ".join(map(str, sorted(held)))
        print(f"not started (already started, branch on {REMOTE}): {numbers}")
    return code


class _Started(int):
    """The exit code (0) of a step another run holds: started, left to it."""


STARTED = _Started(ExitCode.OK)
"""``run_step_pr``'s exit 0 for a step it left to the run that holds it (``step N already
started``), told apart from a step it ran."""


def _either(
    first: Callable[[str], str | None], second: Callable[[str], str | None]
) -> Callable[[str], str | None]:
    """Why a step branch's claim is free: ``first``'s answer, else ``second``'s."""
    return lambda branch: first(branch) or second(branch)


def lost_claim(ctx: Context, step: int, branch: str, me: str = "") -> Claim | None:
    """The newest claim record of ``branch`` for ``step`` left by a lost run of this checkout
    (``claim.previous_claim``: still active, its process gone), other than run ``me``'s."""
    assert ctx.plan is not None
    runs = runs_root(ctx.root, ctx.config.flow_dir, ctx.flow)
    plan = str(real_path(ctx.plan.path))
    return previous_claim(runs, plan=plan, step=step, branch=branch, remote=REMOTE, me=me)


def lost_claims(ctx: Context) -> Callable[[str], str | None]:
    """For ``--all``: why a step branch on origin is this checkout's own lost claim, which a
    run takes over (``_claim``'s test: ``lost_claim`` and ``Claim.retakable``), so the step is
    ready again; None otherwise (no lost run of this checkout claimed it, its run still lives,
    or the branch or its lease is someone else's now). Origin is read only for a branch that
    has such a record."""
    assert ctx.plan is not None
    plan = ctx.plan
    numbers = {
        branch_name(ctx.settings, plan.name, step.number): step.number for step in plan.steps
    }

    def check(branch: str) -> str | None:
        number = numbers.get(branch)
        previous = lost_claim(ctx, number, branch) if number is not None else None
        if previous is None:
            return None
        listed = git_lease.listed_claim(ctx.root, branch, REMOTE)
        tip = listed.get(f"refs/heads/{branch}")
        if tip is None or not previous.retakable(tip, _holder(ctx, branch, listed)):
            return None
        return f"the lost run {previous.run_id} of this checkout claimed it: its process is gone"

    return check


def _holder(ctx: Context, branch: str, listed: dict[str, str]) -> dict[str, Any] | None:
    """Who the lease of ``branch`` on origin names (``listed``: its ``ls-remote``), None
    without a lease."""
    found = git_lease.read_lease(ctx.root, branch, REMOTE, listed=listed)
    return found.holder if found is not None else None


def _glance(
    ctx: Context,
    github: GitHub,
    options: PrOptions,
    environ: Mapping[str, str] | None,
    steps: list[int],
) -> None:
    """The plan at a glance, once ``steps`` (any) are published, or failed after it."""
    if steps:
        update_glance(ctx, github.client, github.repo, options.plan_issue, environ, github.ttl)


def _held_back(ctx: Context) -> str | None:
    """Why the next step may not start: a budget scope it would run in is spent (the plan's,
    by the steps before; a limit of 0, the step's own too), as ``run`` asks before each step
    (``Ledger.holds_back``). Asked before the claim: a step claimed on origin only to be given
    back would show as started to every other runner meanwhile (they skip it), and leave a run
    record of a step no agent ran in."""
    if ctx.budget is None:
        return None
    return ctx.budget.holds_back(*ctx.adapters, opening=("step",))


def run_step_pr(
    ctx: Context,
    github: GitHub,
    step: int,
    options: PrOptions,
    report: Callable[[ChainResult], None],
    *,
    fetched: bool = False,
    outputs: StepOutputs | None = None,
) -> int:
    """One step: claim, chain, push, pull request (see the module doc), under the step's claim
    lock: a live run of this checkout holding it means the step is started (exit 0; with
    ``--force`` StepLockedError, exit 2), a dead one's lock is taken over. ``fetched``: the
    target was fetched just before (``on_origin``), not fetched again."""
    run_id = new_run_id()
    lock = step_lock_path(ctx.root, ctx.config.flow_dir, ctx.flow, step)
    try:
        with hold(lock.with_name(f"step-{step:02d}.claim.lock"), run_id, refuse=_busy):
            return _run_held(ctx, github, step, options, report, run_id, fetched, outputs)
    except _Busy as busy:
        if options.force:
            raise
        print(f"step {step} already started: {busy}")
        return STARTED


class _Busy(StepLockedError):
    """A live run of this checkout holds the step's claim lock."""


def _busy(path: Path, holder: LockInfo | None) -> GitflowError:
    if holder is None:
        return _Busy(f"racing runs of this checkout hold {path}")
    return _Busy(f"run {holder.run_id} (pid {holder.pid}) of this checkout is running it")


@dataclass(frozen=True)
class _Held:
    """This run's hold on the step branch: its claim record, the branch tip it builds on
    (None: the claim it just made at the target's commit), and the commit it may give the
    branch back at (None: the branch is kept whatever happens)."""

    record: Claim
    remote_tip: str | None
    release_at: str | None
    lease: leases.Held | None = None  # the lease on origin, renewed while the chain runs


def _run_held(
    ctx: Context,
    github: GitHub,
    step: int,
    options: PrOptions,
    report: Callable[[ChainResult], None],
    run_id: str,
    fetched: bool,
    outputs: StepOutputs | None,
) -> int:
    assert ctx.plan is not None
    branch = git.check_branch_name(ctx.root, branch_name(ctx.settings, ctx.plan.name, step))
    base = target_tip(ctx, fetch=not fetched)
    assert base is not None
    held: _Held | None = None
    if done_where(ctx, step) is None or ctx.settings.force:
        claimed = _claim(ctx, github, step, branch, base, options, run_id)
        if not isinstance(claimed, _Held):
            return claimed
        held = claimed
        if held.remote_tip is None and not ctx.settings.force and _done_after_claim(ctx, step):
            if _give_back(ctx, branch, held):
                held.record.discard()  # nothing ran: no run to list
            _told(outputs, "skipped")
            return int(ExitCode.OK)
    # builds on the branch it continues (finished work on it is reviewed, not redone); the
    # chain's record goes beside the claim's
    tip = held.remote_tip if held else None
    lander = BranchLander(tip, run_id, _resume(ctx, step, branch, tip))
    if outputs is not None:
        outputs.step.started = True
    try:
        with leases.renewing(held.lease if held else None, github.ttl, _say(ctx), ctx.cancel.set):
            result = run_step(ctx, step, lander)
    except BaseException:
        _give_back(ctx, branch, held)
        raise
    report(result)
    held = _stop_if_lost(held)
    if result.outcome not in ("approved", "rejected"):
        if result.outcome != "budget" or not _keep_stopped(ctx, branch, held, result):
            _give_back(ctx, branch, held)
        return result.exit_code
    head = lander.tip or git.branch_sha(ctx.root, branch)
    assert head is not None
    record = held.record.add_pushed(head) if held else None  # before the push
    _push(ctx, branch, head)
    if outputs is not None:
        outputs.step.head = head
    lease = held.lease if held else None
    code = _publish(ctx, github, options, result, branch, head, lease, outputs)
    if record is not None:
        record.update(state="done")
    return code


def _claim(
    ctx: Context,
    github: GitHub,
    step: int,
    branch: str,
    base: str,
    options: PrOptions,
    run_id: str,
) -> _Held | int:
    """Claim the step branch, recorded in ``claim.json`` before the push
    (``github/step_claim.py``). A branch that exists is taken over when a lost run of this
    checkout claimed it and it is still that run's; else the step is started (exit 0), or with
    ``--force`` continued."""
    assert ctx.plan is not None
    runs = runs_root(ctx.root, ctx.config.flow_dir, ctx.flow)
    plan = str(real_path(ctx.plan.path))
    previous = lost_claim(ctx, step, branch, me=run_id)
    # written before the push: killed before it, the branch is absent and a re-run claims it
    record = write_claim(
        runs / run_id,
        plan=plan,
        step=step,
        branch=branch,
        remote=REMOTE,
        sha=base,
        holder=github.claimant,
    )
    claim, lease_made, listed = _claim_push(ctx, github, branch, base)
    if claim.ok:
        record = record.update(state="claimed")
        if previous is not None:
            previous.update(state="superseded", by=run_id)
        return _Held(record, None, base, lease_made)
    listed = listed or git_lease.listed_claim(ctx.root, branch, REMOTE)  # None: lost a race
    remote_tip = listed.get(f"refs/heads/{branch}")
    if remote_tip is None:
        record.discard()
        raise GitHubError(f"cannot create {branch} on {REMOTE}: {claim.detail}")
    lease: leases.Held | bool | None = False  # False: not the lost run's claim any more
    if previous is not None and previous.retakable(remote_tip, _holder(ctx, branch, listed)):
        who = {**github.claimant, "claimedSha": previous.claimed or remote_tip}
        lease = leases.retake(ctx.root, branch, previous, who, ctx.commit_identity, REMOTE)
    if isinstance(lease, leases.Held) and previous is not None:  # it carries the lost run on
        lost = recorded_spend(RunPaths(runs / previous.run_id).result)
        if lost is not None:
            lease.spent(lost)  # written with the next renewal
    if previous is not None and lease is not False:
        record = record.update(
            state="claimed",
            claimedSha=previous.claimed,
            created=previous.created,
            pushed=list(previous.pushed),
            takenOverFrom=previous.run_id,
        )
        previous.update(state="taken-over", by=run_id)
        print(
            f"step {step}: taking over {branch} on {REMOTE} (at {remote_tip[:12]}) from the "
            f"lost run {previous.run_id} of this checkout: its process is gone"
        )
        _continue_branch(ctx, branch, remote_tip)
        mine = previous.created and remote_tip == previous.claimed
        held = lease if isinstance(lease, leases.Held) else None
        return _Held(record, remote_tip, remote_tip if mine else None, held)
    taken = _take_free(ctx, github, step, branch, listed, record)
    if taken is not None:
        return taken
    if not options.force:
        record.discard()  # nothing ran: no run to list
        print(f"step {step} already started: {_started(github, branch, ctx.target)}")
        if previous is not None:
            print(f"  note: {not_taken_over(previous, remote_tip)}")
        return STARTED
    record = record.update(state="claimed", claimedSha=remote_tip, created=False)
    _continue_branch(ctx, branch, remote_tip)
    return _Held(record, remote_tip, None)


def _claim_push(
    ctx: Context, github: GitHub, branch: str, claimed: str
) -> tuple[git.PushResult, leases.Held | None, dict[str, str] | None]:
    """The claim and this run's lease (over a lease an earlier claim of the branch left) in
    one atomic push (``git/lease.py``): killed while claiming, a run leaves both or neither;
    the two listed by one ``ls-remote``, returned when the branch was there (no push)."""
    listed = git_lease.listed_claim(ctx.root, branch, REMOTE)
    if f"refs/heads/{branch}" in listed:  # started: no push
        return git.PushResult(False, True, f"{branch} already exists on {REMOTE}"), None, listed
    stale = git_lease.read_lease(ctx.root, branch, REMOTE, listed=listed)
    record = {**github.claimant, "claimedSha": claimed, **leases.carried(stale)}
    identity = dict(ctx.commit_identity or {})
    expected = stale.sha if stale else ""
    claim, made = git_lease.claim_with_lease(
        ctx.root, claimed, branch, record, expected, REMOTE, identity
    )
    if made is None:
        return claim, None, None
    return claim, leases.Held(ctx.root, branch, record, made, identity, REMOTE), None


def _take_free(
    ctx: Context, github: GitHub, step: int, branch: str, listed: dict[str, str], record: Claim
) -> _Held | None:
    """Take the claim of a started step when it is free (``github/pr/lease.py``): its run
    ended without a pull request, or its lease stopped renewing; exactly one taker wins the
    lease push. None: the step stays started. ``listed``: the branch and lease on origin."""
    remote_tip = listed[f"refs/heads/{branch}"]
    found = git_lease.read_lease(ctx.root, branch, REMOTE, listed=listed)
    why = leases.finishable(found, github.client, github.repo, github.ttl)
    if found is None or why is None:
        return None  # alive, or its run finished publishing
    mine = {**github.claimant, "claimedSha": remote_tip, **leases.carried(found)}
    identity = dict(ctx.commit_identity or {})
    lease = leases.take(ctx.root, branch, mine, found.sha, identity, REMOTE)
    if lease is None:
        return None  # another taker won it
    print(f"step {step}: taking over {branch} on {REMOTE} (at {remote_tip[:12]}): {why}")
    record = record.update(
        state="claimed", claimedSha=remote_tip, created=False, takenOverLease=found.holder
    )
    _continue_branch(ctx, branch, remote_tip)
    return _Held(record, remote_tip, None, lease)


def _resume(ctx: Context, step: int, branch: str, tip: str | None) -> str | None:
    """The continued branch's commit holding finished work (``recover.resume_at``), said."""
    resumed = resume_at(ctx, tip)
    if resumed is not None:
        print(
            f"step {step}: {branch} on {REMOTE} (at {resumed[:12]}) holds finished work: "
            "it is reviewed, not implemented again"
        )
    return resumed


def _done_after_claim(ctx: Context, step: int) -> bool:
    """Read the target again once the claim is made: a pull request that merged (its branch
    deleted) between the first read and the claim shows here, never in a later run."""
    target_tip(ctx)
    done = done_where(ctx, step)
    if done is None:
        return False
    print(f"step {step} already done on {ctx.target}: {DONE} {done}; no agent runs")
    return True


def _started(github: GitHub, branch: str, target: str) -> str:
    pulls = github.client.pulls.for_head(github.repo, branch, base=target)
    where = f"PR #{pulls[0].number}" if pulls else "no pull request yet"
    return f"branch {branch} on {REMOTE} ({where}); --force continues on it"


def _continue_branch(ctx: Context, branch: str, remote_tip: str) -> None:
    """``--force`` on a started step: the local step branch at the remote's tip (fetched), or
    kept when it already builds on it; GitHubError when the two went separate ways."""
    git.fetch_ref(ctx.root, f"+refs/heads/{branch}:refs/remotes/{REMOTE}/{branch}", REMOTE)
    local = git.branch_sha(ctx.root, branch)
    if local is not None and git.is_ancestor(ctx.root, remote_tip, local):
        return
    if local is not None and not git.is_ancestor(ctx.root, local, remote_tip):
        raise GitHubError(
            f"the local branch {branch} ({local[:12]}) and {branch} on {REMOTE} "
            f"({remote_tip[:12]}) went separate ways: nothing is forced; delete the local branch "
            "to continue on the remote's, or push it yourself"
        )
    git.set_branch(ctx.root, branch, remote_tip)


def _keep_stopped(ctx: Context, branch: str, held: _Held | None, result: ChainResult) -> bool:
    """A step a budget stopped keeps its work on origin (True): its branch, holding commits
    not on the target (an agent's work a budget stopped, or a completed agent's before it), is
    pushed, and its lease records what the run spent and that it stopped (``Held.stopped``:
    the claim is then free to any re-run, on any runner, which continues the work instead of
    paying for it again from the target). False: nothing to keep (no lease held, no work of
    its own, the push refused), so the claim is given back as for any other ending."""
    lease = held.lease if held is not None else None
    head = git.branch_sha(ctx.root, branch)
    target = target_tip(ctx, fetch=False)
    if held is None or lease is None or lease.lost_to is not None or head is None:
        return False
    if target is not None and git.is_ancestor(ctx.root, head, target):
        return False  # nothing of its own: the claim alone
    record = held.record.add_pushed(head)
    try:
        _push(ctx, branch, head)
    except GitHubError as exc:
        print(f"  note: the work the budget stopped stays on the local branch {branch}: {exc}")
        return False
    lease.stopped(str(result.outcome), step_run_spend(result))
    record.update(state="stopped")
    print(
        f"  note: {branch} on {REMOTE} keeps the work the budget stopped (at {head[:12]}); "
        "a re-run continues it"
    )
    return True


def _give_back(ctx: Context, branch: str, held: _Held | None) -> bool:
    """Give a claim back: delete the branch on the remote while it still is the claim, and
    record it released (True). A claim kept stays active in its record: once this process is
    gone, a re-run takes it over."""
    if held is None or held.release_at is None or (held.lease and held.lease.lost_to):
        return False  # kept, or another holder's claim now
    released = git.delete_remote_branch(ctx.root, branch, held.release_at, REMOTE)
    what = "released" if released.ok else f"kept ({released.detail})"
    print(f"  note: the claim of {branch} on {REMOTE} was {what}")
    if released.ok:
        held.record.update(state="released")
        if held.lease is not None:
            held.lease.release()
    return released.ok


def _say(ctx: Context) -> Callable[[str], None]:
    """How the lease's renewals speak: once on stderr, and in the run's record (notices)."""

    def say(line: str) -> None:
        print(f"warning: {line}", file=sys.stderr, flush=True)
        ctx.notices.append(line)

    return say


def _stop_if_lost(held: _Held | None) -> _Held | None:
    """After the chain: a claim another holder took over while it ran stops the run (exit 4,
    as a branch that moved on): nothing pushed, its branch and lease left to that holder."""
    lease = held.lease if held else None
    if held is None or lease is None:
        return held
    if lease.failures:
        held = replace(held, record=held.record.update(leaseRenewalsFailed=lease.failures))
    lost = lease.lost()
    if lost is not None:
        held.record.update(state="taken-over", takenBy=lease.lost_to)
        raise GitHubError(
            f"{lost}: nothing was pushed or forced; the work stays on the local branch "
            f"{lease.branch}"
        )
    return held


def _push(ctx: Context, branch: str, head: str) -> None:
    pushed = git.push_branch(ctx.root, head, branch, REMOTE)
    if pushed.ok:
        return
    if pushed.moved:
        raise GitHubError(
            f"{branch} on {REMOTE} moved on (someone else pushed to it) while the step ran: "
            f"{head[:12]} was not pushed and nothing was forced; the work stays on the local "
            f"branch {branch}"
        )
    raise GitHubError(f"cannot push {branch} to {REMOTE}: {pushed.detail}")


def publish_run(
    ctx: Context,
    github: GitHub,
    result: ChainResult,
    branch: str,
    head: str,
    *,
    draft: bool,
    auto_merge: str | None,
    notices: tuple[str, ...],
) -> StepPublished:
    """A step run (``run --pr``'s, or ``plan tend``'s) published on its pull request: the pull
    request opened or updated with the step's title and body, the sticky comment drawn from
    the run's record, and the status on ``head`` (success only for an approval of it)."""
    assert ctx.plan is not None and result.result_path is not None
    record = read_json(result.result_path) or {}
    plan_rel = plan_in_repo(ctx) or ctx.plan.path.name
    link = f"{github.server_url}/{github.repo}/blob/{ctx.target}/{plan_rel}"
    step = ctx.plan.step(result.step or 0)
    spec = StepPull(
        repo=github.repo,
        branch=branch,
        target=ctx.target,
        title=f"[{ctx.plan.name}] Step {step.number}: {step.title}",
        body=pull_body(plan_rel, step.number, step.content, link),
        draft=draft,
        auto_merge=auto_merge,
        notices=notices,
    )
    approved = result.outcome == "approved" and approval_status(ctx.root, head)[0]
    if auto_merge == "rebase" and approved and _rebase_refused(ctx, head):
        # GitHub refuses to rebase a branch whose merge commit resolves a conflict or was
        # edited: not enabled, and one an earlier run armed disabled (the caller says why and
        # exits 1; 4 when GitHub would not disable it), so no green head waits for good on a
        # rebase that never comes
        spec = replace(spec, auto_merge=None, rebase_refused=True)
    return publish_step(
        github.client,
        spec,
        record,
        result.result_path.parent,
        head=head,
        approved=approved,
        threshold=ctx.settings.threshold,
        run_url=github.run_url,
    )


def _publish(
    ctx: Context,
    github: GitHub,
    options: PrOptions,
    result: ChainResult,
    branch: str,
    head: str,
    lease: leases.Held | None = None,
    outputs: StepOutputs | None = None,
) -> int:
    published = publish_run(
        ctx,
        github,
        result,
        branch,
        head,
        draft=options.draft,
        auto_merge=options.auto_merge,
        notices=_guard_notices(github, options),
    )
    pull = published.pull
    print(f"  PR #{pull.number} {pull.html_url}: {branch} at {head[:12]}, status {published.state}")
    if outputs is not None:
        outputs.step.pull = pull.number
    if options.auto_merge is not None:
        print(f"  auto-merge ({options.auto_merge}): {published.auto_merge}")
    if published.state == "pending":  # approved, auto-merge refused after every retry
        raise GitHubError(pending_why(published, options.auto_merge, "run the step again"))
    if lease is not None:  # publishing finished: the claim is never free by age now
        lease.published(pull.number, step_run_spend(result))
    if options.auto_merge == "rebase" and published.state == "success":
        target_sha = target_tip(ctx, fetch=False)
        refusal = rebase_refusal(ctx.root, target_sha, head) if target_sha else None
        if refusal is not None:  # auto-merge would wait for good: red, as `plan tend` says
            print(f"  step {result.step}: PR #{pull.number} {refusal}")
            return max(result.exit_code, int(ExitCode.REVISE))
    return result.exit_code


def _begin(outputs: StepOutputs | None, number: int, told: str | None = None) -> None:
    """``outputs`` told that step ``number`` is taken on (and, ``told``, how it ended)."""
    if outputs is not None:
        outputs.begin(number)
        if told is not None:
            _told(outputs, told)


def _told(outputs: StepOutputs | None, outcome: str) -> None:
    """``outputs`` told how the step taken on last ended that ran no chain
    (``StepTold.outcome``)."""
    if outputs is not None:
        outputs.step.outcome = outcome


def pending_why(published: StepPublished, auto_merge: str | None, again: str) -> str:
    """Why an approved head was left ``pending`` (exit 4): GitHub refused to enable auto-merge,
    or to disable the rebase one armed before a head a rebase must not land; ``again``: how to
    finish it (nothing is implemented again)."""
    pull = published.pull
    if published.disarm_failed:
        return (
            f"the rebase auto-merge armed on PR #{pull.number} before this head could not be "
            f"disabled ({published.auto_merge.removeprefix(NOT_DISARMED + ': ')}); its status "
            "stays pending, not green with a rebase armed that GitHub refuses to make (it "
            "would wait for good): disable auto-merge on the pull request, or "
            f"{again} to finish it"
        )
    return (
        f"auto-merge ({auto_merge}) could not be enabled on PR #{pull.number} "
        f"({published.auto_merge}); its status stays pending so nothing merges unseen: "
        f"{again} to finish it (nothing is implemented again)"
    )


def _rebase_refused(ctx: Context, head: str) -> bool:
    """Whether ``--auto-merge rebase`` must not land ``head`` (``publish.rebase_refusal``)."""
    target_sha = target_tip(ctx, fetch=False)
    return target_sha is not None and rebase_refusal(ctx.root, target_sha, head) is not None


def step_run_spend(result: ChainResult) -> Spend | None:
    """What a step run (``run --pr``'s, a tend's) spent, for the lease (``Held.spent``)."""
    return recorded_spend(result.result_path) if result.result_path is not None else None


def recorded_spend(path: Path) -> Spend | None:
    """What the step run recorded at ``path`` (its result.json) spent: its agent runs' records
    (``runs/spend.step_spend``); None when it ran no agent or left no record of them."""
    data = read_json(path) or {}
    chain = step_chain(data)
    if chain is None or not chain.agents:
        return None
    return step_spend(path.parent, data)


def _guard_notices(github: GitHub, options: PrOptions) -> tuple[str, ...]:
    """The sticky comment's note when auto-merge is asked and nothing guards the target."""
    warning = github.guard.warning() if github.guard is not None else None
    if options.auto_merge is None or warning is None:
        return ()
    return (f"Auto-merge is on, but {warning}.",)
