"""A review's git note written and read through git (what a note says, and whether it
approves: ``notes.py``, which the gate hook imports alone, without the git queries)."""

from __future__ import annotations

import json
import time

from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.records import TYPE_CHECKING
from gitflow_agents.git import queries as git
from gitflow_agents.reviewer.locate import empty_range
from gitflow_agents.reviewer.notes import ApprovalNote, note_approval, parse_review_note

if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath


def record_review(
    root: StrPath,
    *,
    reviewed_sha: str,
    base_sha: str,
    approved: bool,
    agent: str,
    threshold: str,
    open_findings: list[dict[str, Any]] | None = None,
    scope_digest: str = "",
) -> ApprovalNote:
    """Write the note for ``reviewed_sha`` (replacing an earlier one, so a later REVISE on the
    same commit withdraws an earlier approval). UsageError for an approval of nothing (the
    reviewed commit is the base or already contained in it, ``locate.empty_range``): callers
    check first, this keeps such a note from ever existing.
    ``open_findings`` (an agent reviewer's findings as JSON) go into the note as
    ``openFindings``: what the next, incremental review of the range builds on
    (``reviewer/incremental.py``), with ``scope_digest`` as ``scopeDigest`` (what chose the
    files the review saw: a next review whose settings differ is a full one)."""
    empty = empty_range(root, base_sha, reviewed_sha) if approved else None
    if empty is not None:
        raise UsageError(
            f"refusing to record an approval of {reviewed_sha[:12]} against "
            f"{base_sha[:12]} ({empty}): nothing was reviewed"
        )

    note = ApprovalNote(
        verdict="approved" if approved else "revise",
        reviewed_sha=reviewed_sha,
        tree_sha=git.tree_sha(root, reviewed_sha),
        base_sha=base_sha,
        agent=agent,
        threshold=threshold,
        time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    text = note.to_json()
    if open_findings is not None:
        data: dict[str, Any] = {**note._asdict(), "openFindings": open_findings}
        if scope_digest:
            data["scopeDigest"] = scope_digest
        text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    git.write_note(root, reviewed_sha, text)
    return note


def read_review_note(root: StrPath, sha: str) -> ApprovalNote | None:
    """The recorded note on ``sha``; None when there is none or it is not ours / malformed."""
    return parse_review_note(_note_text(root, sha))


def approval_status(root: StrPath, sha: str) -> tuple[bool, str]:
    """(approved, one-line reason) for commit ``sha`` according to its recorded note."""
    return note_approval(sha, _note_text(root, sha))


def _note_text(root: StrPath, sha: str) -> str | None:
    return git.read_note(root, sha)
