"""Threads that close themselves: the inline thread of a finding a later review no longer
reports is resolved.

A thread is ours when its first comment is one of our inline comments (our login, the
fingerprint marker of ``review.py``). When the review of the PR's current head no longer
reports that fingerprint, the finding is fixed and its thread is resolved (GraphQL
``resolveReviewThread``), except:

* a thread already resolved (by us earlier, or by a person) is left alone;
* a thread someone else replied in (any comment after ours not written by us) is left open for
  that person to close;
* a token that may not resolve threads (GraphQL ``FORBIDDEN`` / ``INSUFFICIENT_SCOPES``) gets a
  reply "fixed in <sha>" instead, carrying ``FIXED_MARKER``: a thread that already has our
  marked reply is not answered again, so a re-run replies nothing twice.

Nothing is closed unless the review is a verdict about exactly the PR's head, and a finding in a
file the review left unreviewed, or one accepted since, is not counted as fixed (fail closed: an
open thread costs a click, a wrongly closed one hides a problem). docs/github.md, "Threads that
close themselves".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gitflow_agents.findings import Review
from gitflow_agents.github.action.review import FIXED_MARKER, FIXED_RE, fingerprints_in
from gitflow_agents.github.api.client import Client, Comment, GitHubForbidden
from gitflow_agents.github.api.identity import Identity, resolve
from gitflow_agents.github.api.threads import ReviewThread, reply, resolve_thread, review_threads


@dataclass(frozen=True)
class ThreadsOutcome:
    """Our inline threads whose finding is no longer reported: ``resolved`` and ``replied`` by
    this run, ``closed`` earlier (resolved, or answered "fixed"), ``left_open`` for the person
    who replied in them."""

    resolved: int = 0
    replied: int = 0
    closed: int = 0
    left_open: int = 0
    unclosed: int = 0
    """Fixed, but the token may neither resolve nor reply."""
    refused: str | None = None
    """Why the token could not resolve (or reply), when it could not."""

    @property
    def fixed(self) -> int:
        return self.resolved + self.replied + self.closed + self.left_open + self.unclosed


def threads_note(outcome: ThreadsOutcome) -> str:
    """The sticky comment's line about fixed findings ("" when there are none)."""
    if not outcome.fixed:
        return ""
    noun = "finding" if outcome.fixed == 1 else "findings"
    text = (
        f"**Fixed:** {outcome.fixed} {noun} commented inline earlier no longer reported; "
        f"{outcome.resolved + outcome.replied + outcome.closed} of their threads closed"
    )
    if outcome.replied or outcome.refused:
        text += " (answered \u201cfixed\u201d where the token may not resolve a thread)"
    if outcome.left_open:
        text += f", {outcome.left_open} left open for the replies in them"
    return text + "."


def fixed_body(head_sha: str, fingerprint: str) -> str:
    return (
        f"gitflow-agents: fixed in {head_sha[:12]}: the review of that commit no longer "
        f"reports this finding.\n\n{FIXED_MARKER.format(fingerprint)}"
    )


def still_open(result: Review) -> frozenset[str]:
    """Fingerprints that are not fixed: reported now, or accepted since."""
    findings = [*result.findings, *(a.finding for a in result.accepted)]
    return frozenset(f.with_fingerprint().fingerprint for f in findings)


def close_fixed(
    client: Client,
    repo: str,
    number: int,
    head_sha: str,
    result: Review,
    *,
    login: str | Identity,
    comments: Sequence[Comment] | None = None,
) -> ThreadsOutcome:
    """Resolve (or answer) the threads of our findings that ``result`` no longer reports; see
    the module docstring. ``comments``: the PR's review comments when the caller has just read
    them (the ones it posted since are reported, so never fixed)."""
    if result.overall is None or result.reviewed_sha != head_sha:
        return ThreadsOutcome()
    every = client.review_comments(repo, number) if comments is None else comments
    me = resolve(login, [c for c in every if fingerprints_in([c.body])])
    if me is None:
        return ThreadsOutcome()
    by_id = {c.id: c for c in every}
    reported = still_open(result)
    ours = fingerprints_in(c.body for c in every if c.author == me and c.reply_to is None)
    if not ours - reported:
        return ThreadsOutcome()  # no finding of ours is gone: no thread to read
    try:
        threads = review_threads(client, repo, number)
    except GitHubForbidden as exc:  # the token may not read them: nothing to close
        return ThreadsOutcome(refused=str(exc))
    fixed = [
        (thread, first)
        for thread in threads
        if (first := _ours_fixed(thread, by_id, me, reported, result.unreviewed_files))
    ]
    return _close(client, repo, number, head_sha, fixed, by_id, me)


def _ours_fixed(
    thread: ReviewThread,
    by_id: dict[int, Comment],
    me: str,
    reported: frozenset[str],
    unreviewed: Sequence[str],
) -> Comment | None:
    """The first comment of ``thread`` when it is our finding and that finding is fixed."""
    first = by_id.get(thread.comment_ids[0]) if thread.comment_ids else None
    if first is None or first.author != me or first.path in unreviewed:
        return None
    fingerprints = fingerprints_in([first.body])
    return first if fingerprints and not fingerprints & reported else None


def _close(
    client: Client,
    repo: str,
    number: int,
    head_sha: str,
    fixed: Sequence[tuple[ReviewThread, Comment]],
    by_id: dict[int, Comment],
    me: str,
) -> ThreadsOutcome:
    counts = {"resolved": 0, "replied": 0, "closed": 0, "left_open": 0, "unclosed": 0}
    refused: str | None = None
    may_reply = True
    for thread, first in fixed:
        later = [by_id.get(i) for i in thread.comment_ids[1:]]
        if thread.resolved or any(c and c.author == me and FIXED_RE.search(c.body) for c in later):
            counts["closed"] += 1
            continue
        if not thread.complete or any(c is None or c.author != me for c in later):
            counts["left_open"] += 1  # someone answered: theirs to close
            continue
        if refused is None:
            try:
                resolve_thread(client, thread.id)
                counts["resolved"] += 1
                continue
            except GitHubForbidden as exc:
                refused = str(exc)
        if may_reply:
            fingerprint = sorted(fingerprints_in([first.body]))[0]
            try:
                reply(client, repo, number, first.id, fixed_body(head_sha, fingerprint))
                counts["replied"] += 1
                continue
            except GitHubForbidden:
                may_reply = False
        counts["unclosed"] += 1
    return ThreadsOutcome(
        counts["resolved"],
        counts["replied"],
        counts["closed"],
        counts["left_open"],
        counts["unclosed"],
        refused,
    )
