"""Inline findings: one batched review on the lines of the diff, posted once per finding.

Where a comment may go comes from the pull request files' ``patch``: the new-side lines of each
hunk (added and context lines). A finding whose lines all fall inside one hunk becomes an inline
comment; every other finding stays in the summary comment only. Each inline comment carries
``<!-- gitflow-agents:fp=FINGERPRINT -->``, and a re-run skips findings whose fingerprint one of
our earlier review comments already carries, so pushing again never repeats a comment. A comment
whose thread was closed (resolved, by us as fixed or by a person, or answered with our "fixed"
reply) carries nothing: a finding reported again on a later head is commented there again.

Everything new goes into ONE ``POST /pulls/{n}/reviews`` (event COMMENT). GitHub refuses a
review as a whole when one comment is bad (422); then each comment is tried on its own, and
the ones still refused are handed back for the summary, so no finding is lost.

A review an earlier run posted twice (GitHub stored it, answered 502, and an older version
posted it again) is found by its fingerprints: the later copy's comments are deleted (unless
someone replied to one) and its body says why, since a submitted review cannot be deleted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gitflow_agents.base.errors import GitHubError
from gitflow_agents.findings import Finding, Severity
from gitflow_agents.findings.redact import redact_finding
from gitflow_agents.github.api.client import (
    Client,
    Comment,
    GitHubForbidden,
    GitHubRejected,
    InlineComment,
    PullFile,
)
from gitflow_agents.github.api.identity import Identity, resolve
from gitflow_agents.github.api.threads import review_threads
from gitflow_agents.render.markdown import code, escape, fence, suggestion_block

FP_MARKER = "<!-- gitflow-agents:fp={} -->"
_FP_RE = re.compile(r"<!-- gitflow-agents:fp=([0-9A-Za-z_.:-]+) -->")
FIXED_MARKER = "<!-- gitflow-agents:fixed={} -->"
"""On our reply "fixed in <sha>" to a thread the token may not resolve (``threads.py``)."""
FIXED_RE = re.compile(r"<!-- gitflow-agents:fixed=[0-9A-Za-z_.:-]+ -->")
_HUNK_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")

MAX_INLINE = 50
"""At most this many inline comments on one head (a re-run's included); the rest stay in the
summary (noise and GitHub's secondary rate limits both argue for a cap)."""
MAX_INLINE_BODY = 8000
MAX_SINGLE_FALLBACK = 10
"""When a batch is refused, at most this many comments are retried one by one."""
EMPTIED_REVIEW = (
    "gitflow-agents: this review repeated an earlier one (a request GitHub had stored was sent "
    "again); its comments were removed."
)

LABELS = {
    Severity.ERROR: "🔴 **error**",
    Severity.WARN: "🟡 **warn**",
    Severity.INFO: "🔵 **info**",
}

Hunk = frozenset[int]


def hunks(patch: str | None) -> tuple[Hunk, ...]:
    """New-file line numbers of each hunk of a unified ``patch`` (added and context lines)."""
    found: list[set[int]] = []
    line = 0
    for text in (patch or "").splitlines():
        match = _HUNK_RE.match(text)
        if match:
            line = int(match.group(1))
            found.append(set())
        elif found and text[:1] in ("+", " "):
            found[-1].add(line)
            line += 1
        # "-" lines are old-side only; "\ No newline at end of file" is no line at all
    return tuple(frozenset(h) for h in found)


def diff_map(files: Iterable[PullFile]) -> dict[str, tuple[Hunk, ...]]:
    """Path -> its hunks, for every file of the pull request that has a patch."""
    return {f.filename: hunks(f.patch) for f in files if f.patch}


def anchor(finding: Finding, diff: Mapping[str, Sequence[Hunk]]) -> tuple[int, int] | None:
    """(start_line, line) where ``finding`` can be commented inline, or None.

    Every line of the finding must lie inside one hunk (GitHub's rule for multi-line comments).
    """
    if not finding.file or finding.line is None:
        return None
    end = finding.end_line or finding.line
    for hunk in diff.get(finding.file, ()):
        if all(n in hunk for n in range(finding.line, end + 1)):
            return finding.line, end
    return None


def fingerprints_in(bodies: Iterable[str]) -> set[str]:
    return {fp for body in bodies for fp in _FP_RE.findall(body)}


def comment_body(finding: Finding) -> str:
    """The inline comment: severity, rule, message, the suggestion, and the fingerprint marker.

    Agent text is masked (``redact``) and inert (``render.markdown``); a suggestion written as a
    code block is fenced again so its content cannot close the fence, and a GitHub
    ```suggestion block stays one (a one-click fix)."""
    finding = redact_finding(finding)
    rule = f" {code(finding.rule)}" if finding.rule else ""
    head = f"{LABELS[finding.severity]}{rule}: {escape(finding.message)}"
    parts = [head]
    if finding.suggestion:
        block = suggestion_block(finding.suggestion)
        if block is not None:
            parts.append("\n".join(fence(block[1], block[0])))
        else:
            parts.append(escape(f"Suggestion: {finding.suggestion}"))
    marker = FP_MARKER.format(finding.fingerprint)
    body = "\n\n".join(parts)
    room = MAX_INLINE_BODY - len(marker) - 60
    if len(body) > room:
        # Cut the escaped message alone (a cut code block would swallow the marker).
        body = head[:room].rstrip() + "\n\n…(cut; the full text is in the summary comment)"
    return f"{body}\n\n{marker}"


@dataclass(frozen=True)
class InlineOutcome:
    """What happened to the findings: ``posted`` now, ``already`` posted by an earlier run,
    and ``summary_only`` (outside the diff, over the cap, or refused by GitHub)."""

    posted: tuple[Finding, ...] = ()
    already: tuple[Finding, ...] = ()
    summary_only: tuple[Finding, ...] = ()
    refused: tuple[str, ...] = ()
    """GitHub's reasons for comments it would not take."""
    review_id: int | None = None
    removed_duplicates: int = 0
    """Our inline comments deleted because an earlier one of ours has the same fingerprint."""
    seen: tuple[Comment, ...] | None = None
    """The PR's review comments as read before posting (None: not read)."""


def inline_note(inline: InlineOutcome) -> str:
    parts = []
    if inline.posted:
        parts.append(f"{len(inline.posted)} posted inline now")
    if inline.already:
        parts.append(f"{len(inline.already)} already inline from an earlier run")
    if inline.summary_only:
        parts.append(
            f"{len(inline.summary_only)} listed here only (outside the diff or over the cap)"
        )
    text = f"**Inline:** {'; '.join(parts)}." if parts else ""
    if inline.refused:
        reasons = "\n".join(f"- {escape(r)}" for r in inline.refused)
        text += (
            f"\n\n<details><summary>GitHub refused some inline comments; they are listed "
            f"above</summary>\n\n{reasons}\n\n</details>"
        )
    return text


def readable_files(client: Client, repo: str, number: int) -> list[PullFile]:
    """The pull request's files; none when the token may not read them."""
    try:
        return client.pulls.files(repo, number)
    except GitHubForbidden:
        return []


def plan_inline(
    findings: Sequence[Finding],
    diff: Mapping[str, Sequence[Hunk]],
    existing: set[str],
    *,
    max_inline: int = MAX_INLINE,
    posted_here: int = 0,
) -> tuple[list[tuple[Finding, InlineComment]], list[Finding], list[Finding]]:
    """(new inline comments, already posted, summary-only), most severe findings first, then
    by place: which findings the cap keeps does not depend on the order a reviewer listed them
    in. ``posted_here`` inline comments of ours are already on this head: they count against
    ``max_inline``, so a re-run never posts beyond it in total."""
    room = max(max_inline - posted_here, 0)
    placed: dict[int, tuple[str, int, int]] = {}  # id -> file, lines: the new comments (capped)
    posted: set[int] = set()  # id: on the diff and posted before
    taken: set[str] = set()  # one new comment per fingerprint
    for finding in sorted(findings, key=_inline_order):
        where = anchor(finding, diff)
        if where is None or not finding.file:
            continue
        if finding.fingerprint and finding.fingerprint in existing:
            posted.add(id(finding))
        elif finding.fingerprint not in taken and len(placed) < room:
            taken.add(finding.fingerprint)
            placed[id(finding)] = (finding.file, *where)
    new: list[tuple[Finding, InlineComment]] = []
    already: list[Finding] = []
    rest: list[Finding] = []
    for finding in sorted(findings, key=lambda f: -f.severity.rank):
        place = placed.get(id(finding))
        if id(finding) in posted:
            already.append(finding)
        elif place is None:
            rest.append(finding)
        else:
            path, start, end = place
            comment = InlineComment(
                path=path,
                line=end,
                body=comment_body(finding),
                start_line=start if start < end else None,
            )
            new.append((finding, comment))
    return new, already, rest


def _inline_order(finding: Finding) -> tuple[int, str, int, int, str, str]:
    """Most severe first, then by file and line, then by fingerprint: a total order."""
    line = finding.line or 0
    end = finding.end_line or line
    where = (finding.file or "", line, end)
    return (-finding.severity.rank, *where, finding.fingerprint or "", finding.message)


def post_inline(
    client: Client,
    repo: str,
    number: int,
    head_sha: str,
    findings: Sequence[Finding],
    files: Sequence[PullFile],
    *,
    login: str | Identity,
    max_inline: int = MAX_INLINE,
) -> InlineOutcome:
    """Post the new inline findings as one review; see the module docstring."""
    filled = [f.with_fingerprint() for f in findings]
    every = client.review_comments(repo, number)
    me = resolve(login, [c for c in every if _FP_RE.search(c.body)])
    ours = [c for c in every if me is not None and c.author == me]
    removed = remove_duplicates(client, repo, number, ours, every)
    here = fingerprints_in(c.body for c in ours if c.commit == head_sha)
    carrying = carried(client, repo, number, head_sha, filled, ours)
    new, already, rest = plan_inline(
        filled,
        diff_map(files),
        fingerprints_in(c.body for c in carrying),
        max_inline=max_inline,
        posted_here=len(here),
    )
    if not new:
        return InlineOutcome(
            already=tuple(already),
            summary_only=tuple(rest),
            removed_duplicates=removed,
            seen=tuple(every),
        )
    noun = "finding" if len(new) == 1 else "findings"
    body = f"gitflow-agents: {len(new)} new {noun} on the changed lines (details in the summary comment)."
    try:
        review_id = client.create_review(repo, number, head_sha, body, [c for _, c in new])
        return InlineOutcome(
            posted=tuple(f for f, _ in new),
            already=tuple(already),
            summary_only=tuple(rest),
            review_id=review_id,
            removed_duplicates=removed,
            seen=tuple(every),
        )
    except GitHubRejected as batch_error:
        posted, refused_findings, reasons = _one_by_one(client, repo, number, head_sha, new)
        return InlineOutcome(
            posted=tuple(posted),
            already=tuple(already),
            summary_only=tuple(rest + refused_findings),
            refused=(str(batch_error), *reasons),
            removed_duplicates=removed,
            seen=tuple(every),
        )


def carried(
    client: Client,
    repo: str,
    number: int,
    head_sha: str,
    findings: Sequence[Finding],
    ours: Sequence[Comment],
) -> list[Comment]:
    """Our inline comments that carry their finding to this run: all but those whose thread is
    closed (resolved, by us as fixed or by a person, or answered with our "fixed" reply), so a
    finding that comes back after its fix is commented again on the new head. A comment on this
    head always carries (a re-run posts nothing twice). The threads are read only when a
    reported finding has comments of ours on older heads alone; a token that may not read them,
    or GitHub failing on them, leaves every comment carrying (the summary lists every finding
    anyway)."""
    opening = [c for c in ours if c.reply_to is None]
    here = fingerprints_in(c.body for c in opening if c.commit == head_sha)
    wanted = {f.fingerprint for f in findings} - here
    if not fingerprints_in(c.body for c in opening if c.commit != head_sha) & wanted:
        return opening
    try:
        threads = review_threads(client, repo, number)
    except GitHubError:
        return opening
    mine = {c.id: c for c in ours}
    closed = {
        thread.comment_ids[0]
        for thread in threads
        if thread.comment_ids
        and (
            thread.resolved
            or any(i in mine and FIXED_RE.search(mine[i].body) for i in thread.comment_ids[1:])
        )
    }
    return [c for c in opening if c.commit == head_sha or c.id not in closed]


def remove_duplicates(
    client: Client, repo: str, number: int, ours: Sequence[Comment], every: Sequence[Comment]
) -> int:
    """Delete our inline comments whose fingerprint an older one of ours on the same commit
    already carries (a review posted twice; one that someone replied to stays; a finding
    commented again on a later head after its fix is no duplicate); a review left without
    comments gets ``EMPTIED_REVIEW`` as its body. How many were deleted."""
    replied = {c.reply_to for c in every if c.reply_to is not None}
    first: set[tuple[str | None, str]] = set()
    duplicates: list[Comment] = []
    for comment in sorted(ours, key=lambda c: c.id):
        fingerprints = {(comment.commit, fp) for fp in fingerprints_in([comment.body])}
        if fingerprints and fingerprints <= first and comment.id not in replied:
            duplicates.append(comment)
        first |= fingerprints
    for duplicate in duplicates:
        client.delete_review_comment(repo, duplicate.id)
    gone = {c.id for c in duplicates}
    still = {c.review_id for c in ours if c.id not in gone}
    for review_id in sorted({c.review_id for c in duplicates if c.review_id} - still):
        client.edit_review(repo, number, review_id, EMPTIED_REVIEW)
    return len(duplicates)


def _one_by_one(
    client: Client,
    repo: str,
    number: int,
    head_sha: str,
    new: Sequence[tuple[Finding, InlineComment]],
) -> tuple[list[Finding], list[Finding], list[str]]:
    posted: list[Finding] = []
    refused: list[Finding] = []
    reasons: list[str] = []
    for index, (finding, comment) in enumerate(new):
        if index >= MAX_SINGLE_FALLBACK:
            refused.append(finding)
            continue
        try:
            client.create_review_comment(repo, number, head_sha, comment)
            posted.append(finding)
        except GitHubRejected as error:
            refused.append(finding)
            reasons.append(str(error))
        # Any other GitHubError (forbidden, failing after retries) propagates: the rest would
        # fail the same way, and every finding is in the summary comment anyway.
    return posted, refused, reasons
