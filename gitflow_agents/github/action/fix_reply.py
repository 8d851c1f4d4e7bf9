"""The reply to an ``/agent fix`` comment: what happened, what the fix removed, what is open.

A comment (marked ``FIX_MARKER``) on the pull request, also written to the job summary: one
per ``/agent fix`` comment, keyed to that comment's id, so a re-run of the same event edits its
reply instead of posting another; a reply that records a pushed fix keeps it, and a re-run adds
its own line; docs/github.md, "Fix on request (`/agent fix`)".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitflow_agents import render
from gitflow_agents.base.errors import GitflowError
from gitflow_agents.findings import Finding
from gitflow_agents.github.action import comment
from gitflow_agents.github.action.publish import Publisher
from gitflow_agents.github.action.runner import notice
from gitflow_agents.github.api.identity import Identity
from gitflow_agents.render import location
from gitflow_agents.render.markdown import code, escape

if TYPE_CHECKING:  # fix.py builds the outcome and imports this module
    from gitflow_agents.github.action.fix import FixOutcome

FIX_MARKER = "<!-- gitflow-agents:fix-reply -->"
REPLY_LIST_LIMIT = 20
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
HEADS = {
    "pushed": "✅ fix pushed",
    "nothing-to-fix": "✅ nothing to fix",
    "no-changes": "⚠️ no changes",
    "fixer-failed": "❌ the fixer failed",
    "branch-moved": "⚠️ not pushed: the branch moved",
    "push-refused": "❌ not pushed",
}
"""The reply's head, by the ``fix-result``."""
_PUSHED = re.compile(
    r"^\*\*gitflow-agents\*\* · `/agent fix` asked by [^\n]*?: (?:✅|⚠️) fix pushed", re.M
)
"""The head line of a reply whose run pushed a fix (``fix_reply``'s ``pushed``, or
``⚠️ fix pushed, its review did not complete``)."""


@dataclass(frozen=True)
class FixRequest:
    """The ``/agent fix`` comment a run answers: who wrote it, and its id (the key of the
    reply; None when the event did not give it)."""

    commenter: str
    comment_id: int | None = None


def reply_marker(comment_id: int) -> str:
    """The first lines of the reply to comment ``comment_id``: ``FIX_MARKER``, then a hidden
    line naming that comment (its closing ``-->`` keeps one id from being a prefix of another)."""
    return f"{FIX_MARKER}\n<!-- gitflow-agents:fix-reply-to {comment_id} -->"


def reply_head(commenter: str, what: str) -> str:
    who = f"@{commenter}" if _LOGIN.fullmatch(commenter) else "a maintainer"
    return f"{FIX_MARKER}\n**gitflow-agents** · `/agent fix` asked by {who}: {what}\n\n"


def _finding_lines(findings: Sequence[Finding]) -> list[str]:
    lines = []
    for finding in findings[:REPLY_LIST_LIMIT]:
        where = location(finding)
        message = escape(finding.message.splitlines()[0] if finding.message else "")
        lines.append(f"- {finding.severity.value} {code(where) + ' ' if where else ''}{message}")
    if len(findings) > REPLY_LIST_LIMIT:
        lines.append(f"- … and {len(findings) - REPLY_LIST_LIMIT} more")
    return lines


def fix_reply(outcome: FixOutcome, commenter: str, run_url: str | None) -> str:
    """The answer to the ``/agent fix`` comment: what happened, which findings the fix removed
    (by fingerprint: in the review before, gone from the review after) and what is still open."""
    parts = [
        reply_head(commenter, HEADS.get(outcome.result, outcome.result)) + escape(outcome.message)
    ]
    if outcome.before is not None:
        remaining = {f.fingerprint for f in outcome.review.findings}
        fixed = [f for f in outcome.before.findings if f.fingerprint not in remaining]
        if fixed:
            parts.append(
                f"**Fixed** ({len(fixed)} of {len(outcome.before.findings)} findings of the "
                f"review before):\n\n" + "\n".join(_finding_lines(fixed))
            )
        verdict = render.verdict_label(outcome.review, outcome.gate)
        reviewed = (outcome.review.reviewed_sha or "")[:12]
        parts.append(f"The new head `{reviewed}` was reviewed in the same run: **{verdict}**.")
    if outcome.review.findings and outcome.result != "nothing-to-fix":
        label = "Still open" if outcome.before is not None else "Findings of the review"
        parts.append(
            f"**{label}** ({len(outcome.review.findings)}):\n\n"
            + "\n".join(_finding_lines(outcome.review.findings))
        )
    if run_url:
        parts.append(f"[workflow run]({run_url})")
    return "\n\n".join(parts) + "\n"


def rerun_line(attempt: str | None, what: str, detail: str) -> str | None:
    """What a re-run of the workflow run (``attempt``: ``GITHUB_RUN_ATTEMPT``, 2 or more) adds
    to a reply that records an earlier attempt's pushed fix (``post_reply``); None for a
    first attempt."""
    if not (attempt and attempt.isdigit() and int(attempt) > 1):
        return None
    return f"**Re-run, attempt {int(attempt)}:** {what}: {escape(detail)}"


def post_reply(
    publisher: Publisher,
    body: str,
    asked: FixRequest,
    comment_author: str | None,
    rerun: str | None = None,
) -> None:
    """The reply comment (``body`` starts with ``FIX_MARKER``), one per ``/agent fix`` comment:
    our reply to the same comment (``reply_marker``; ours as the summary comment is, by its
    marker and our login, ``comment_author`` when set) is edited in place, or left as it is
    when its text is the same, so a re-run of the same event posts no second reply; a new
    ``/agent fix`` comment gets a reply of its own. A re-run (``rerun``: its line, from
    ``rerun_line``) never rewrites a reply that records a pushed fix (the commit is on the
    branch, and the reply is the conversation's record of it): it adds its line to it. Never
    fails the run (the result is already published)."""
    client, repo, number = publisher.client, publisher.repo, publisher.pull.number

    def write() -> object:
        if asked.comment_id is None:  # nothing to key it to: a reply of its own
            return client.create_issue_comment(repo, number, comment.cap(body))
        marker = reply_marker(asked.comment_id)
        keyed = comment.cap(marker + body.removeprefix(FIX_MARKER))
        login = Identity(client, comment_author)
        if rerun is not None:  # an earlier attempt replied: what did it do?
            earlier = comment.our_comments(client, repo, number, login, marker)
            if earlier and _PUSHED.search(earlier[0].body):
                kept = earlier[0].body
                if rerun not in kept:  # (the same attempt again: as it is)
                    added = comment.cap(f"{kept.rstrip()}\n\n{rerun}\n")
                    client.edit_issue_comment(repo, number, earlier[0].id, added)
                return earlier[0]
        return comment.upsert_summary(client, repo, number, keyed, login=login, marker=marker)

    try:
        publisher.attempt("reply to /agent fix", write)
    except GitflowError as exc:  # GitHub failing, or our login that cannot be learned
        notice("warning", f"could not reply to /agent fix: {exc}")
