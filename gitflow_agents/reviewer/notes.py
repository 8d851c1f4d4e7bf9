"""The approval record a review leaves behind: a git note on the reviewed commit.

An approved review of a commit is recorded as a git note on that commit under
``refs/notes/gitflow-agents`` (JSON, below). The ``agent-review-gate`` hook reads it: a push
passes only when the note says approved *for exactly the pushed commit* (a note copied onto a
rewritten commit by ``notes.rewriteRef`` names the old sha and does not count) *and of a change*:
a note whose base is the reviewed commit itself reviewed nothing and never counts
(:func:`reviewed_nothing`, the one rule for the chain and ``git agent-review``).

Kept import-light on purpose (no dataclasses, datetime or ``gitflow_agents.git.queries``): the
gate hook imports this module and must start fast (it reads its notes itself); writing and
reading a note through git is ``note_record.py``.
"""

from __future__ import annotations

import json

from gitflow_agents import __version__
from gitflow_agents.base.jsondata import loads
from gitflow_agents.base.records import NamedTuple

APPROVAL_KIND = "gitflow-agents/review-note/v1"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # a range base before every commit (sha1)


class ApprovalNote(NamedTuple):
    verdict: str  # "approved" or "revise"
    reviewed_sha: str
    tree_sha: str
    base_sha: str
    agent: str
    threshold: str
    tool_version: str = __version__
    time: str = ""
    kind: str = APPROVAL_KIND

    def to_json(self) -> str:
        return json.dumps(self._asdict(), indent=2, sort_keys=True) + "\n"


def reviewed_nothing(base_sha: str, reviewed_sha: str) -> bool:
    """A review whose base is the reviewed commit compared a commit with itself: no change was
    reviewed, so it approves nothing (``git agent-review HEAD..HEAD``, a chain step whose agents
    changed nothing)."""
    return base_sha == reviewed_sha


def parse_review_note(text: str | None) -> ApprovalNote | None:
    """A note's text as an ApprovalNote; None when absent, not ours or malformed."""
    if text is None:
        return None
    try:
        data = loads(text)  # bounded: a note is anyone's text (git notes are just objects)
        if not isinstance(data, dict) or data.get("kind") != APPROVAL_KIND:
            return None
        fields = {k: str(data[k]) for k in ApprovalNote._fields if k in data}
        return ApprovalNote(**fields)
    except (ValueError, TypeError):
        return None


def note_approval(sha: str, text: str | None) -> tuple[bool, str]:
    """(approved, one-line reason) for commit ``sha`` whose note under the notes ref is
    ``text`` (None: no note)."""
    short = sha[:12]
    note = parse_review_note(text)
    if note is None:
        return False, (
            f"{short} has no recorded review; review it with `git agent-review BASE..{short}` "
            "(BASE: where the pushed work starts; the empty tree "
            f"{EMPTY_TREE} for a history all new to the remote) or `git agent-review {short}` "
            "(that commit alone); a range with no commits in it records nothing"
        )
    if note.reviewed_sha != sha:
        return False, (
            f"{short} carries a review of {note.reviewed_sha[:12]} (copied by a rewrite); "
            "review this commit"
        )
    if note.verdict != "approved":
        return False, f"{short}: the recorded review says {note.verdict} ({note.agent})"
    if reviewed_nothing(note.base_sha, note.reviewed_sha):
        return False, (
            f"{short}: the recorded review compared {short} with itself, so it reviewed no "
            f"change; review the commits that lead to it (`git agent-review BASE..{short}`)"
        )
    return True, f"{short} approved by {note.agent} at {note.time} (threshold {note.threshold})"
