"""Reviewers and the approval record they leave behind.

``builtin`` is the offline reviewer, ``agent`` runs a configured agent as one, ``target`` is
the builtin reviewer's review of a target (a range, a commit or the index; masked and gated),
``agent_target`` an agent reviewer's and the one review path for either; ``note_record``
records a review as a git note on the reviewed commit (what it says: ``notes``), which the
``agent-review-gate`` hook reads.

The note names are imported from ``notes`` / ``note_record`` when first asked for
(``base.lazy``): a review with ``--no-note`` or of the staged changes (the pre-commit hook)
writes no note, and the JSON modules notes need were a tenth of a small review's imports
(issue 20).
"""

from __future__ import annotations

from gitflow_agents.base.lazy import lazy_names
from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:
    from gitflow_agents.reviewer.locate import empty_range
    from gitflow_agents.reviewer.note_record import (
        approval_status,
        read_review_note,
        record_review,
    )
    from gitflow_agents.reviewer.notes import (
        APPROVAL_KIND,
        ApprovalNote,
        note_approval,
        parse_review_note,
        reviewed_nothing,
    )

_LAZY = {
    "APPROVAL_KIND": "notes",
    "ApprovalNote": "notes",
    "approval_status": "note_record",
    "empty_range": "locate",
    "note_approval": "notes",
    "parse_review_note": "notes",
    "read_review_note": "note_record",
    "record_review": "note_record",
    "reviewed_nothing": "notes",
}

__getattr__ = lazy_names(__name__, _LAZY)

__all__ = [
    "APPROVAL_KIND",
    "ApprovalNote",
    "approval_status",
    "empty_range",
    "note_approval",
    "parse_review_note",
    "read_review_note",
    "record_review",
    "reviewed_nothing",
]
