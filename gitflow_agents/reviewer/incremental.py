"""Incremental review: an agent reviewer gets only what is new since the last reviewed head.

When the range's last reviewed head is known (``git agent-review``: the approval note of an
earlier commit of the range; the Action: the sticky comment's recorded state for a
``synchronize`` event's ``before``), the agent reviews ``git diff LAST HEAD`` restricted to
the range's files, with the range's file list and the findings still open as context. The
verdict covers the whole range: an open finding from before carries over (its line moved to
where it is now) unless the new diff touched its lines; then it is the reviewer's to report
again, and is counted fixed when it does not. Anything that makes the old review's ground
unsure is a full review, and ``Scope.reason`` says why. docs/review.md, "Incremental review".
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitflow_agents.base.errors import GitError, UsageError
from gitflow_agents.base.jsondata import loads
from gitflow_agents.findings import Finding, finding_from_dict
from gitflow_agents.git import queries as git
from gitflow_agents.git.diffparse import Hunk
from gitflow_agents.reviewer import builtin
from gitflow_agents.reviewer.notes import parse_review_note

if TYPE_CHECKING:
    from gitflow_agents.findings.settings import ReviewSettings

INCREMENTAL, FULL = "incremental", "full"
MAX_NOTED_COMMITS = 50
"""``git agent-review`` looks for the last reviewed head among this many newest commits."""


class Prior(NamedTuple):
    """An earlier review of the range: the head it reviewed, the base it reviewed it against,
    its reviewer, the findings it left open, and what chose its files (``scope``)."""

    reviewed_sha: str
    base_sha: str
    agent: str
    findings: tuple[Finding, ...] = ()
    scope: str | None = None
    """``scope_digest`` of the settings it reviewed with (None: not recorded, an older
    version's note or state)."""


class Earlier(NamedTuple):
    """What a caller knows of the last review: ``prior`` (None: unknown, ``unknown`` says
    why), whether incremental review is ``enabled``, and ``forced``: why a full review is
    asked for ("" when it is not)."""

    prior: Prior | None = None
    unknown: str = "no earlier review of this range is known"
    enabled: bool = True
    forced: str = ""


class Scope(NamedTuple):
    """What the reviewer is given: the whole range (``full``) or the commits since ``since``
    with the range's ``files``; ``carried``: open findings the new commits did not touch, at
    their lines in the head; ``touched``: those on lines the new commits changed."""

    kind: str
    reason: str
    since: str | None = None
    files: tuple[str, ...] = ()
    new_files: tuple[str, ...] = ()
    carried: tuple[Finding, ...] = ()
    touched: tuple[Finding, ...] = ()


def full(reason: str) -> Scope:
    return Scope(FULL, f"full: {reason}")


def scope_digest(settings: ReviewSettings) -> str:
    """What decides which files a review leaves out (``review.exclude``'s globs, the default
    ones when the section sets none) as a short digest, recorded with the review: a later
    review whose settings give another one is a full review, since a file left out then and
    reviewed now was never reviewed (``decide``)."""
    globs = sorted({glob.glob for glob in settings.exclude})
    text = json.dumps({"exclude": globs}, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def decide(
    root: Path,
    base: str,
    head: str | None,
    agent: str,
    earlier: Earlier,
    scope: str | None = None,
) -> Scope:
    """The scope of a review of ``base..head`` by ``agent``; ``scope``: the ``scope_digest`` of
    the settings it reviews with (None: its diff leaves no file out, a chain's agent reviewer),
    which must be the one the last review recorded."""
    prior = earlier.prior
    if agent == "builtin":
        return Scope(*builtin.WHOLE_RANGE)
    if head is None:
        return full("the staged changes are reviewed whole")
    if earlier.forced:
        return full(earlier.forced)
    if not earlier.enabled:
        return full("review.incremental is false")
    if prior is None:
        return full(earlier.unknown)
    since = prior.reviewed_sha
    if prior.agent != agent:
        return full(f"the last review ({since[:12]}) was by {prior.agent}, not {agent}")
    if since == head:
        return full(f"the head {head[:12]} itself is the last reviewed head")
    try:
        git.rev_parse(root, f"{since}^{{commit}}")
    except (UsageError, GitError):
        return full(f"the last reviewed head {since[:12]} is not in this repository")
    if not git.is_ancestor(root, since, head):
        return full(
            f"the last reviewed head {since[:12]} is not an ancestor of {head[:12]} "
            "(a force-push or a rebase)"
        )
    if prior.base_sha != base:
        return full(f"the base changed since the last review ({prior.base_sha[:12]} → {base[:12]})")
    if scope is not None and prior.scope is None:  # fail closed: it may have left files out
        return full("the last review does not record its review.exclude (an older version's)")
    if scope is not None and prior.scope != scope:
        return full("review.exclude changed since the last review: it may have left files out")
    files = tuple(git.numstat(root, git.DiffSpec(base, head)))
    changed = tuple(git.numstat(root, git.DiffSpec(since, head)))
    new_files = tuple(f for f in changed if f in files)
    # the changed files too, so that git sees a file with findings renamed to one of them
    paths = sorted({*_paths(prior), *changed})
    carried, touched = follow(prior.findings, *git.hunk_ranges(root, since, head, paths))
    commits = len(git.commits_between(root, since, head))
    noun = "commit" if commits == 1 else "commits"
    return Scope(
        INCREMENTAL,
        f"incremental: the {commits} {noun} since the last reviewed head {since[:12]}",
        since,
        files,
        new_files,
        carried,
        touched,
    )


def _paths(prior: Prior) -> list[str]:
    return sorted({f.file for f in prior.findings if f.file})


def follow(
    findings: Iterable[Finding],
    hunks: Mapping[str, Sequence[Hunk]],
    renames: Mapping[str, str] | None = None,
) -> tuple[tuple[Finding, ...], tuple[Finding, ...]]:
    """(carried, touched): ``findings`` (at the last reviewed head) whose lines no hunk
    changed, moved to their lines in the head (and to the new name of a file ``renames``
    names: old -> new), and those whose lines a hunk changed (a finding on a file without a
    line: when the file changed at all). A finding with no file is the reviewer's to repeat:
    it counts as touched."""
    carried: list[Finding] = []
    touched: list[Finding] = []
    renamed = renames or {}
    for finding in findings:
        moved = _moved(finding, hunks.get(finding.file or "", ())) if finding.file else None
        if moved is not None and moved.file is not None and moved.file in renamed:
            moved = moved._replace(file=renamed[moved.file])
        (touched if moved is None else carried).append(moved or finding)
    return tuple(carried), tuple(touched)


def _moved(finding: Finding, hunks: Sequence[Hunk]) -> Finding | None:
    """``finding`` with its lines where they are after ``hunks``; None when a hunk changed
    one of them (or, for a finding without a line, when there is any hunk)."""
    if finding.line is None:
        return None if hunks else finding
    first, last = finding.line, finding.end_line or finding.line
    shift = 0
    for old, old_count, _new, new_count in hunks:
        end = old + old_count - 1
        if old_count == 0:  # lines inserted after line ``old``
            if first <= old < last:
                return None
            if old < first:
                shift += new_count
        elif end < first:
            shift += new_count - old_count
        elif old <= last:
            return None
    end_line = finding.end_line + shift if finding.end_line is not None else None
    return finding._replace(line=first + shift, end_line=end_line)


def reviewed_only(scope: Scope, settings: ReviewSettings) -> Scope:
    """``scope`` without the open findings in files ``settings`` exclude: ``review.exclude``
    means never reviewed, so none of them carries over, is listed to the reviewer or counts as
    fixed, and the verdict agrees with a full review's, whose diff leaves those files out (an
    earlier review may have reviewed a file excluded since, or reported on an excluded one)."""

    def kept(findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
        return tuple(f for f in findings if f.file is None or settings.excluded(f.file) is None)

    return scope._replace(carried=kept(scope.carried), touched=kept(scope.touched))


def merged(scope: Scope, findings: Sequence[Finding]) -> tuple[tuple[Finding, ...], int]:
    """The whole range's findings after an incremental review that reported ``findings``:
    them, then the carried ones it did not repeat; and how many touched ones it no longer
    reports (fixed)."""
    seen = {f.fingerprint for f in findings}
    carried = tuple(f for f in scope.carried if f.fingerprint not in seen)
    fixed = sum(1 for f in scope.touched if f.fingerprint not in seen)
    return (*findings, *carried), fixed


def open_findings(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    """Findings as recorded for the next review (the approval note, the sticky comment)."""
    return [f.to_dict() for f in findings]


def findings_from(data: Any) -> tuple[Finding, ...] | None:
    """Recorded open findings (``open_findings``) read back; None when they are not a list
    of findings (then the last review is not known well enough to build on)."""
    if not isinstance(data, list):
        return None
    try:
        return tuple(finding_from_dict(item) for item in data)
    except ValueError:
        return None


def prior_from_notes(root: Path, base: str, head: str, agent: str) -> Prior | None:
    """``git agent-review``'s last reviewed head: the newest commit of ``base..head`` before
    ``head`` whose approval note (either verdict) is ``agent``'s own review of it and records
    its open findings (and, with them, ``scopeDigest``: ``scope_digest``). ``head``'s own note
    is not one: re-running a review is a re-run, not an increment of nothing."""
    commits = git.commits_between(root, base, head)[-MAX_NOTED_COMMITS - 1 : -1]
    for commit in reversed(commits):
        text = git.read_note(root, commit.sha)
        note = parse_review_note(text)
        if note is None or note.reviewed_sha != commit.sha or note.agent != agent:
            continue
        data = _note_data(text)
        found = findings_from(data.get("openFindings"))
        if found is None:
            return None
        return Prior(commit.sha, note.base_sha, note.agent, found, recorded_scope(data))
    return None


def recorded_scope(data: Mapping[str, Any]) -> str | None:
    """The ``scopeDigest`` a note or the Action's state records (None: none)."""
    scope = data.get("scopeDigest")
    return scope if isinstance(scope, str) and scope else None


def _note_data(text: str | None) -> dict[str, Any]:
    try:
        data = loads(text or "")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
