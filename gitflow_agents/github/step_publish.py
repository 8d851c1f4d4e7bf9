"""A pushed step branch on GitHub: its pull request, summary, inline findings, status, auto-merge.

Every write is idempotent, so running a step again (or finishing one a killed run left) never
doubles anything: the pull request for the head is found before one is opened (``pulls.py``),
the sticky summary comment is edited in place (``comment.py``), inline findings already posted
are skipped by their fingerprints (``review.py``), and a status only adds the newest state.
``gitflow-agents/review`` is ``success`` only when the approval note of the pushed head is for
exactly that commit (``reviewer.approval_status``: the ✅ commit carries it, see
``chain/land.py``); it is ``pending`` while the rest is published, and auto-merge is enabled
in between (GitHub refuses it for a pull request whose checks already pass). A rejected step's pull request carries ``CHANGES_LABEL``; an approved one
loses it. docs/github.md, "Plan steps as pull requests".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitflow_agents.errors import GitHubError
from gitflow_agents.findings import Severity
from gitflow_agents.github import comment, review, status
from gitflow_agents.github.client import Client, GitHubForbidden, PullFile, PullRequest
from gitflow_agents.github.identity import Identity
from gitflow_agents.github.step_history import history_rows, last_review

CHANGES_LABEL = "gitflow-agents: changes requested"
STEP_MARKER = "<!-- gitflow-agents:step {plan} {step} -->"


@dataclass(frozen=True)
class StepPull:
    """What the step's pull request is made of."""

    repo: str
    branch: str
    target: str
    title: str
    body: str
    draft: bool
    auto_merge: str | None  # merge, squash, rebase


@dataclass(frozen=True)
class Published:
    pull: PullRequest
    state: str  # the status set on the head: success or failure
    auto_merge: str  # "enabled", "off", or GitHub's reason it was not
    comment_action: str


def pull_body(plan_rel: str, step: int, content: str, link: str | None) -> str:
    """The step's text under a line linking the plan, and a marker naming plan and step."""
    from gitflow_agents.render.markdown import escape

    where = f"[`{plan_rel}`]({link})" if link else f"`{plan_rel}`"
    marker = STEP_MARKER.format(plan=json.dumps(plan_rel), step=step)
    text = escape(content.strip())
    return f"Step {step} of the plan {where}, run by gitflow-agents.\n\n{text}\n\n{marker}\n"


def upsert_pull(client: Client, spec: StepPull) -> tuple[PullRequest, str]:
    """The open pull request for the step branch, its title and body brought up to date, or a
    new one; (pull request, "created" / "updated" / "unchanged")."""
    found = client.pulls_for_head(spec.repo, spec.branch, base=spec.target)
    if not found:
        made = client.create_pull(
            spec.repo,
            head=spec.branch,
            base=spec.target,
            title=spec.title,
            body=spec.body,
            draft=spec.draft,
        )
        return made, "created"
    pull = found[0]
    if (pull.title, pull.body) == (spec.title, spec.body):
        return pull, "unchanged"
    client.update_pull(spec.repo, pull.number, title=spec.title, body=spec.body)
    return pull, "updated"


def _files(client: Client, repo: str, number: int) -> list[PullFile]:
    try:
        return client.pull_files(repo, number)
    except GitHubForbidden:
        return []


def publish_step(
    client: Client,
    spec: StepPull,
    result: dict[str, Any],
    runs: Path,
    *,
    head: str,
    approved: bool,
    threshold: Severity,
    run_url: str | None = None,
) -> Published:
    """Open or update the pull request of a pushed step branch (``head`` is its tip) and
    publish the step's run on it; see the module doc. GitHubError (exit 4) when GitHub fails
    after its retries; a refused auto-merge is only reported (``Published.auto_merge``)."""
    import dataclasses

    pull, _ = upsert_pull(client, spec)
    pull = dataclasses.replace(pull, head_sha=head)  # GitHub may answer the claimed commit
    if approved:
        client.remove_label(spec.repo, pull.number, CHANGES_LABEL)
    else:
        client.add_label(spec.repo, pull.number, CHANGES_LABEL)
    # Pending first, then auto-merge: GitHub refuses to enable auto-merge on a pull request
    # whose required checks already pass ("clean status"), and merges once the final one does.
    status.set_pending(client, spec.repo, head, target_url=run_url)
    merging = _auto_merge(client, spec, pull, head, approved)
    found, gate = last_review(result, threshold)
    login = Identity(client, None)
    login.settle(
        lambda: [c for c in client.issue_comments(spec.repo, pull.number) if comment.is_marked(c)]
    )
    inline = review.post_inline(
        client,
        spec.repo,
        pull.number,
        head,
        found.findings,
        _files(client, spec.repo, pull.number),
        login=login,
    )
    from gitflow_agents.github.publish import footer, inline_note

    body = comment.summary_body(
        found,
        gate,
        rows=history_rows(result, runs),
        inline_note=inline_note(inline),
        footer=footer(pull, run_url),
        where=comment.IN_FINDINGS_FILE,
    )
    sticky = comment.upsert_summary(client, spec.repo, pull.number, body, login=login)
    state = "success" if approved else "failure"
    status.set_status(
        client,
        spec.repo,
        head,
        state,
        status.final_description(found, gate) if not approved else f"Approved: {head[:12]}",
        target_url=run_url,
    )
    return Published(pull, state, merging, sticky.action)


def _auto_merge(
    client: Client, spec: StepPull, pull: PullRequest, head: str, approved: bool
) -> str:
    if spec.auto_merge is None:
        return "off"
    if not approved:
        return "off (the step was not approved)"
    try:
        client.enable_automerge(spec.repo, pull.number, method=spec.auto_merge, expected_head=head)
    except GitHubError as exc:
        return f"not enabled: {exc}"
    return "enabled"
