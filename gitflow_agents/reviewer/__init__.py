"""Reviewers and the approval record they leave behind.

``builtin`` is the offline reviewer, ``agent`` runs a configured agent as one, ``target`` is
the one review path both take (a range, a commit or the index; masked and gated); ``notes``
records a review as a git note on the reviewed commit, which the ``agent-review-gate`` hook
reads.

The note names are imported from ``notes`` when first asked for (``base.lazy``): a review with
``--no-note`` or of the staged changes (the pre-commit hook) writes no note, and the JSON
modules notes need were a tenth of a small review's imports (issue 20).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitflow_agents.base.lazy import lazy_names

if TYPE_CHECKING:
    from gitflow_agents.reviewer.notes import (
        APPROVAL_KIND,
        ApprovalNote,
        approval_status,
        note_approval,
        parse_review_note,
        read_review_note,
        record_review,
        reviewed_nothing,
    )

_LAZY = {
    "APPROVAL_KIND": "notes",
    "ApprovalNote": "notes",
    "approval_status": "notes",
    "note_approval": "notes",
    "parse_review_note": "notes",
    "read_review_note": "notes",
    "record_review": "notes",
    "reviewed_nothing": "notes",
}

__getattr__ = lazy_names(__name__, _LAZY)

__all__ = [
    "APPROVAL_KIND",
    "ApprovalNote",
    "approval_status",
    "note_approval",
    "parse_review_note",
    "read_review_note",
    "record_review",
    "reviewed_nothing",
]
