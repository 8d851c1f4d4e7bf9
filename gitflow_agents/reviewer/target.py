"""The builtin reviewer's review of a target (``locate.py``: a range, a commit, the index) as
a Review, masked and gated (``gated``, which an agent reviewer's review goes through too).

``git agent-review`` (``commands/review.py``) imports this module alone when no agent reviews
(every commit through the hook: issue 20); ``agent_target.review_target`` is the one review
path for either reviewer (the Action's). :func:`exit_code` is the exit code both derive from
the gate.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from gitflow_agents import findings
from gitflow_agents.base.errors import ExitCode
from gitflow_agents.base.records import TYPE_CHECKING
from gitflow_agents.findings import (
    Accepted,
    FileLines,
    GateResult,
    Review,
    Severity,
    fill_fingerprints,
)
from gitflow_agents.findings.redact import redact_review
from gitflow_agents.git import queries as git
from gitflow_agents.git.diffparse import git_lines
from gitflow_agents.reviewer import builtin
from gitflow_agents.reviewer.acceptance import Acceptance, apply
from gitflow_agents.reviewer.checks import CheckOptions
from gitflow_agents.reviewer.locate import Target as Target

if TYPE_CHECKING:
    from _typeshed import StrPath

    from gitflow_agents.findings.settings import ReviewSettings
    from gitflow_agents.git.diffparse import FileChange
    from gitflow_agents.reviewer.builtin import BuiltinResult


def builtin_review(
    root: StrPath,
    target: Target,
    threshold: Severity,
    max_file_size: int,
    blobs: git.BlobReader,
    acceptance: Acceptance | None = None,
    changes: Callable[[], tuple[FileChange, ...]] | None = None,
) -> tuple[Review, frozenset[str]]:
    """The builtin reviewer's Review of ``target`` after ``acceptance`` took out what it accepts
    (what parsing its report gives, without the round trip through markdown:
    ``builtin.as_review``; the accepted findings in ``Review.accepted``), and the exact secret
    values it found; contents are read through ``blobs``, the changed files from ``changes``
    when given (``builtin.review_diff``)."""
    result, accepted = builtin_result(
        root, target, threshold, max_file_size, blobs, acceptance, changes
    )
    return builtin_as_review(result, accepted, target, threshold, blobs), result.secrets


def builtin_as_review(
    result: BuiltinResult,
    accepted: tuple[Accepted, ...],
    target: Target,
    threshold: Severity,
    blobs: git.BlobReader,
) -> Review:
    """``result`` (with ``accepted``) as the Review its report parses to, fingerprints taken
    from the reviewed lines through ``blobs``: what ``git agent-review`` gates and what the
    chain's builtin reviewer hands on, with no report written and parsed back."""
    review = builtin.as_review(
        result, reviewed_sha=target.head, base_sha=target.base, threshold=threshold
    )
    # fingerprints from the reviewed lines, as parse_review fills those of every report
    unset = (f._replace(fingerprint="") for f in review.findings)
    filled = fill_fingerprints(unset, line_lookup(blobs, target.head))
    return review._replace(findings=filled, accepted=accepted)


def builtin_result(
    root: StrPath,
    target: Target,
    threshold: Severity,
    max_file_size: int,
    blobs: git.BlobReader,
    acceptance: Acceptance | None,
    changes: Callable[[], tuple[FileChange, ...]] | None = None,
) -> tuple[BuiltinResult, tuple[Accepted, ...]]:
    """The builtin reviewer's result on ``target`` (contents read through ``blobs``) after
    ``acceptance`` took out what it accepts, and the accepted findings: what ``git agent-review``
    and a chain's builtin reviewer both start from."""
    options = CheckOptions(max_file_bytes=max_file_size)
    acceptance = acceptance or Acceptance()
    result = builtin.review_diff(
        root,
        target.spec,
        threshold=threshold,
        options=options,
        blobs=blobs,
        excluded=acceptance.settings.excluded,
        diff=changes,
    )
    return apply(result, acceptance, line_lookup(blobs, target.head), threshold)


def line_lookup(blobs: git.BlobReader, rev: str | None) -> FileLines:
    """``(file, line) -> text`` at ``rev`` (None: the index), for stable fingerprints; every
    file is read through ``blobs`` (one ``git cat-file`` for all of them), once."""

    def lines_of(path: str) -> list[str]:
        text = blobs.text(git.object_name(rev, path))
        return git_lines(text) if text is not None else []  # git's lines: the findings' numbers

    return FileLines(lines_of)


def exit_code(review: Review, approved: bool, gate_code: int, fail_on: str) -> int:
    """The process exit code from the gate's and ``--fail-on``'s point of view."""
    if fail_on == "never":
        return ExitCode.OK
    if fail_on != "revise":
        level = Severity.parse(fail_on)
        if any(f.severity.rank >= level.rank for f in review.findings):
            return ExitCode.REVISE
    return ExitCode.OK if approved else gate_code


def review_builtin_target(
    root: StrPath,
    target: Target,
    *,
    threshold: Severity,
    max_file_size: int,
    acceptance: Acceptance | None = None,
    blobs: git.BlobReader | None = None,
    changes: Callable[[], tuple[FileChange, ...]] | None = None,
) -> tuple[Review, GateResult]:
    """The builtin reviewer's ``review_target`` (``agent_target.py``): what ``git agent-review``
    imports when no agent reviews, the everyday case (issue 20); ``acceptance``: what it
    accepts (none: nothing); ``blobs``, ``changes``: see ``agent_target.review_target``."""
    with contextlib.ExitStack() as stack:
        if blobs is None:
            blobs = stack.enter_context(git.BlobReader(root))
        parsed, secrets = builtin_review(
            root, target, threshold, max_file_size, blobs, acceptance, changes
        )
    kind, why = builtin.WHOLE_RANGE
    parsed = parsed._replace(kind=kind, kind_reason=why)
    return gated(parsed, secrets, target, threshold, (acceptance or Acceptance()).settings)


def gated(
    parsed: Review,
    secrets: frozenset[str],
    target: Target,
    threshold: Severity,
    settings: ReviewSettings,
) -> tuple[Review, GateResult]:
    """``parsed`` masked and gated: every text of the report is masked before any output sees
    it, the secret rules and the exact secret values of the reviewed diff wherever the reviewer
    quotes them (docs/security.md, "Secrets in review output"); --staged has no commit to pin
    the verdict to, every other review must be about head."""
    review = redact_review(parsed, secrets)
    verdict = findings.gate(review, threshold=threshold, head_sha=target.head, paths=settings.paths)
    return review, verdict
