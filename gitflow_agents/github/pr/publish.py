"""A pushed step branch on GitHub: its pull request, summary, inline findings, status, auto-merge.

Every write is idempotent, so running a step again (or finishing one a killed run left) never
doubles anything: the pull request for the head is found before one is opened (``api/pulls.py``)
and an open one gets only the tool's section of its body and, while it is still the tool's,
its title (``step_body.py``: what a human wrote stays), the sticky summary comment is edited in
place (``comment.py``; it draws the chain as the Mermaid flowchart ``history --format mermaid``
draws, its end node naming the outcome and the pull request, which ``record_pull`` writes into
the step run's result.json first),
inline findings already posted are skipped by their fingerprints (``review.py``), and a status
only adds the newest state.
``gitflow-agents/review`` is ``success`` only when the approval note of the pushed head is for
exactly that commit (``reviewer.approval_status``: the ✅ commit carries it, see
``chain/land.py``); it is ``pending`` while the rest is published, and auto-merge is enabled
in between (GitHub refuses it for a pull request whose checks already pass); ``pending`` is
never written over a final state of the same head (a late or repeated run must not take a
verdict back) unless auto-merge is to be armed on an approved head (the same run then writes
the verdict again), and an approved head whose auto-merge GitHub refused stays ``pending``. A
head ``--auto-merge rebase`` must not land (``rebase_refusal``: GitHub refuses to rebase it) gets
no auto-merge, and a rebase one armed before it (by an earlier run, on an earlier head) is
disabled while the head is ``pending``: green with it armed, the head would wait for a rebase
GitHub never makes, a silent stall, so a disable GitHub refuses leaves it ``pending`` too
(``disarm_rebase``). A
pull request closed without merging is reopened rather than replaced. A rejected
step's pull request carries ``CHANGES_LABEL``; an approved one loses it. docs/github.md, "Plan
steps as pull requests".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gitflow_agents.base.errors import GitHubError
from gitflow_agents.findings import Severity
from gitflow_agents.git.merge import unreplayable_merges
from gitflow_agents.github.action import comment, review, status
from gitflow_agents.github.action.comment import footer
from gitflow_agents.github.action.review import inline_note, readable_files
from gitflow_agents.github.api.client import Client, PullRequest
from gitflow_agents.github.api.commits import newest_state
from gitflow_agents.github.api.identity import Identity
from gitflow_agents.github.api.retry import GitHubRejected
from gitflow_agents.github.pr.body import (
    CHANGES_LABEL,
    is_step_pull,
    section,
    stamped,
    title_digest,
    update,
)
from gitflow_agents.github.pr.history import history_rows, last_review
from gitflow_agents.render.history import step_chart
from gitflow_agents.render.mermaid import fence_chart
from gitflow_agents.runs import RunPaths, write_result
from gitflow_agents.runs.schema import PullRef, StepChain, step_chain

FINAL_STATES = ("success", "failure", "error")
"""A head's gate status that ``pending`` never replaces (docs/github.md, "Recovery")."""


@dataclass(frozen=True)
class StepPull:
    """What the step's pull request is made of."""

    repo: str
    branch: str
    target: str
    title: str
    body: str  # the tool's section of the body (``pull_body``)
    draft: bool
    auto_merge: str | None  # merge, squash, rebase
    notices: tuple[str, ...] = ()  # notes for the sticky comment (an unguarded target)
    rebase_refused: bool = False  # a head a rebase must not land: a rebase auto-merge is disarmed


@dataclass(frozen=True)
class StepPublished:
    pull: PullRequest
    state: str  # the status set on the head: success or failure
    auto_merge: str  # "enabled", "off", DISARMED, or GitHub's reason it was not
    comment_action: str

    @property
    def disarm_failed(self) -> bool:
        """A rebase auto-merge armed before this head was not disabled (the head is pending)."""
        return self.auto_merge.startswith(NOT_DISARMED)


DISARMED = "disabled (armed for rebase before this head)"
"""``StepPublished.auto_merge`` once a rebase auto-merge armed earlier was disabled."""
NOT_DISARMED = "not disabled"
"""How ``StepPublished.auto_merge`` begins when disabling it failed."""


def pull_body(plan_rel: str, step: int, content: str, link: str | None) -> str:
    """The tool's section of a step pull request's body: the step's text under a line linking
    the plan, between markers naming plan and step (``step_body.section``)."""
    return section(plan_rel, step, content, link)


def upsert_pull(client: Client, spec: StepPull) -> tuple[PullRequest, str]:
    """The open pull request for the step branch, or a new one; (pull request, "created" /
    "reopened" / "updated" / "unchanged"). An open one gets the tool's section of its body
    brought up to date, and its title only while that is still the tool's own
    (``step_body.update``). With none open, the newest pull request of the branch that was
    closed without merging (a human closed it; the branch still exists, as the push just
    made sure) is reopened instead of opening a second one."""
    found = client.pulls.for_head(spec.repo, spec.branch, base=spec.target)
    action = "updated"
    if not found:
        closed = client.pulls.for_head(spec.repo, spec.branch, base=spec.target, state="closed")
        unmerged = [pull for pull in closed if not pull.merged]
        try:
            if unmerged:
                client.pulls.reopen(spec.repo, unmerged[0].number)
                found, action = [dataclasses.replace(unmerged[0], state="open")], "reopened"
        except GitHubRejected:
            pass  # GitHub will not reopen it: a new one replaces it
    if not found:
        made = client.pulls.create(
            spec.repo,
            head=spec.branch,
            base=spec.target,
            title=spec.title,
            body=stamped(spec.body, title_digest(spec.title)) + "\n",
            draft=spec.draft,
        )
        return made, "created"
    pull = found[0]
    title, body = update(pull.title, pull.body, spec.title, spec.body)
    if title is None and body is None:
        return pull, "unchanged" if action == "updated" else action
    client.pulls.update(spec.repo, pull.number, title=title, body=body)
    return pull, action


def record_pull(run_dir: Path, result: dict[str, Any], pull: PullRequest) -> dict[str, Any]:
    """``result`` (the step run's result.json in ``run_dir``) with its pull request as
    ``chain.pullRequest`` (``number``, ``url``), written back atomically: the chart's end node
    names it, in the sticky comment and in ``history --format mermaid`` alike."""
    chain = step_chain(result) or StepChain.from_json({})
    ref = PullRef(pull.number, pull.html_url)
    updated = {**result, "chain": replace(chain, pull_request=ref).to_json()}
    write_result(RunPaths(run_dir), updated)
    return updated


def publish_step(
    client: Client,
    spec: StepPull,
    result: dict[str, Any],
    run_dir: Path,
    *,
    head: str,
    approved: bool,
    threshold: Severity,
    run_url: str | None = None,
) -> StepPublished:
    """Open or update the pull request of a pushed step branch (``head`` is its tip) and
    publish the step's run (``result``: its result.json, in the run folder ``run_dir``) on it;
    see the module doc. GitHubError (exit 4) when GitHub fails after its retries. Auto-merge
    that GitHub refused (after its retries) for an approved step leaves the head ``pending``
    (``StepPublished.state``; the reason in ``auto_merge``): the caller exits 4."""
    pull, _ = upsert_pull(client, spec)
    result = record_pull(run_dir, result, pull)
    pull = dataclasses.replace(pull, head_sha=head)  # GitHub may answer the claimed commit
    # the label as the pull request just read lists it: no request when it is already right
    if approved and CHANGES_LABEL in pull.labels:
        client.pulls.remove_label(spec.repo, pull.number, CHANGES_LABEL)
    elif not approved and CHANGES_LABEL not in pull.labels:
        client.pulls.add_label(spec.repo, pull.number, CHANGES_LABEL)
    merging = open_gate(client, spec, pull, head, approved, run_url)
    found, gate = last_review(result, threshold)
    login = Identity(client, None)
    login.settle(lambda: comment.marked_comments(client, spec.repo, pull.number))
    # the changed files place findings on lines: with none to place they are not read
    files = readable_files(client, spec.repo, pull.number) if found.findings else []
    inline = review.post_inline(
        client, spec.repo, pull.number, head, found.findings, files, login=login
    )
    chart = fence_chart(step_chart(run_dir, result))
    body = comment.summary_body(
        found,
        gate,
        rows=history_rows(result, run_dir.parent),
        inline_note=inline_note(inline),
        notices=spec.notices,
        footer=footer(pull, run_url),
        where=comment.IN_FINDINGS_FILE,
        chart=chart,
    )
    sticky = comment.upsert_summary(client, spec.repo, pull.number, body, login=login)
    said = status.final_description(found, gate) if not approved else f"Approved: {head[:12]}"
    state = close_gate(client, spec, head, approved, merging, said, run_url)
    return StepPublished(pull, state, merging, sticky.action)


def open_gate(
    client: Client,
    spec: StepPull,
    pull: PullRequest,
    head: str,
    approved: bool,
    run_url: str | None,
    *,
    final: bool | None = None,
) -> str:
    """Before the verdict on ``head``: ``pending`` set, then auto-merge enabled (or a rebase one
    disarmed, ``_auto_merge``); what was done with auto-merge (``StepPublished.auto_merge``).
    ``final``: whether the head's newest status is final, when the caller knows (else read)."""
    # Pending first, then auto-merge: GitHub refuses to enable auto-merge on a pull request
    # whose required checks already pass ("clean status"), and merges once the final one does.
    # Never pending over a final state of this head: a late run must not take a verdict back;
    # except to arm auto-merge on an approved head (GitHub refuses it on a green pull request),
    # or to disarm a rebase one that must not land it, where this run writes the verdict again
    # right after (``close_gate``; pending meanwhile: nothing merges the head before it is
    # disarmed).
    if final is None:
        final = newest_state(client, spec.repo, head, status.CONTEXT) in FINAL_STATES
    changes = spec.auto_merge is not None or _rebase_armed(spec, pull)
    if not final or (changes and approved):
        status.set_pending(client, spec.repo, head, target_url=run_url)
    return _auto_merge(client, spec, pull, head, approved)


def close_gate(
    client: Client,
    spec: StepPull,
    head: str,
    approved: bool,
    merging: str,
    description: str,
    run_url: str | None,
) -> str:
    """The verdict on ``head`` once ``open_gate`` left auto-merge as it must be: the state set
    (success or failure), or "pending" (nothing written) when it did not (``merge_armed``)."""
    if not merge_armed(spec, approved, merging):
        # green without auto-merge would stall the wave, and green with a rebase auto-merge
        # still armed would stall it too (GitHub refuses that rebase); pending says "not
        # finished", and a re-run enables (or disables) it and then sets the verdict
        # (docs/github.md, "Recovery")
        return "pending"
    state = "success" if approved else "failure"
    status.set_status(client, spec.repo, head, state, description, target_url=run_url)
    return state


def arm_green(
    client: Client, repo: str, pull: PullRequest, head: str, method: str, run_url: str | None
) -> StepPublished:
    """Auto-merge (``method``) armed on the approved pull request ``pull`` whose ``head`` is
    already green and has none armed (``plan tend --auto-merge``, which found it so), the way
    publishing arms it (``open_gate``, ``close_gate``): ``pending`` first, enabled, ``success``
    again; nothing else is written. Refused by GitHub, the head stays ``pending``
    (``StepPublished.state``), so nothing would call it green while nothing merges it."""
    spec = StepPull(
        repo=repo,
        branch=pull.head_ref,
        target=pull.base_ref,
        title=pull.title,
        body="",
        draft=pull.draft,
        auto_merge=method,
    )
    merging = open_gate(client, spec, pull, head, True, run_url, final=True)
    state = close_gate(client, spec, head, True, merging, f"Approved: {head[:12]}", run_url)
    return StepPublished(pull, state, merging, "unchanged")


def clear_changes_label(client: Client, repo: str, pull: PullRequest) -> bool:
    """Take ``CHANGES_LABEL`` off a step pull request (``step_body.is_step_pull``) that carries
    it, when its gate turned green in the action (the review of a new head, ``/agent fix``);
    whether it was there. Only a pull request that lists it gets the one request, and a label
    gone meanwhile (404) is fine, so a re-run writes nothing or harmlessly repeats it."""
    if CHANGES_LABEL not in pull.labels or not is_step_pull(pull.body):
        return False
    client.pulls.remove_label(repo, pull.number, CHANGES_LABEL)
    return True


def merge_armed(spec: StepPull, approved: bool, merging: str) -> bool:
    """False when auto-merge was asked for an approved step and GitHub did not enable it, or
    a rebase auto-merge armed before a head a rebase must not land was not disabled."""
    if merging.startswith(NOT_DISARMED):
        return False
    return spec.auto_merge is None or not approved or merging == "enabled"


def _rebase_armed(spec: StepPull, pull: PullRequest) -> bool:
    """Whether a head a rebase must not land has auto-merge armed for rebase, which GitHub would
    never carry out (it refuses that rebase): armed before it (an earlier run's, on an earlier head: GitHub keeps it across a push by
    someone with write access), as the pull request read at the start of publishing says."""
    return spec.rebase_refused and pull.auto_merge == "rebase"


def disarm_rebase(client: Client, repo: str, pull: PullRequest) -> str:
    """Disable the rebase auto-merge armed on ``pull`` (``_rebase_armed``): DISARMED, or why
    not (beginning NOT_DISARMED); "off" when none is armed for rebase (a re-run, after it was
    disabled: no request). One armed for squash or merge stays: either lands the head as it
    was reviewed."""
    if pull.auto_merge != "rebase":
        return "off"
    try:
        client.pulls.disable_automerge(repo, pull.number)
    except GitHubError as exc:
        return f"{NOT_DISARMED}: {exc}"
    return DISARMED


def _auto_merge(
    client: Client, spec: StepPull, pull: PullRequest, head: str, approved: bool
) -> str:
    if spec.rebase_refused:
        return disarm_rebase(client, spec.repo, pull)
    if spec.auto_merge is None:
        return "off"
    if not approved:
        return "off (the step was not approved)"
    try:
        client.pulls.enable_automerge(
            spec.repo, pull.number, method=spec.auto_merge, expected_head=head
        )
    except GitHubError as exc:
        return f"not enabled: {exc}"
    return "enabled"


def rebase_refusal(root: Path, target_sha: str, head: str) -> str | None:
    """Why ``--auto-merge rebase`` must not land ``head``, or None when it may: a merge commit of
    the branch since ``target_sha`` resolves a conflict, or merged cleanly and was then edited by
    hand. GitHub's rebase replays only the other commits, and refuses a branch where that would
    not give the merge's tree ("This branch cannot be rebased safely"), so a rebase auto-merge
    would wait, armed and green, for good."""
    merges = unreplayable_merges(root, target_sha, head)
    if not merges:
        return None
    sha, why = merges[0].sha[:12], merges[0].why
    if why == "conflict":
        return (
            f"cannot be rebase-merged: its merge commit {sha} resolves a conflict, "
            'which GitHub does not rebase ("This branch cannot be rebased safely"); '
            "merge it with squash or merge"
        )
    return (
        f"cannot be rebase-merged: its merge commit {sha} differs from the clean merge of its "
        'parents (edited after merging), which GitHub does not rebase ("This branch cannot be '
        'rebased safely": replaying the other commits would leave out those edits); merge it '
        "with squash or merge"
    )
