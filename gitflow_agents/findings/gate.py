"""The merge gate: whether a review approves a commit at a severity threshold, and several
reviewers' reviews merged into one (docs/protocol.md, Review verdict; docs/findings.md, The
gate)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gitflow_agents.base.records import NamedTuple
from gitflow_agents.findings.model import (
    Accepted,
    Finding,
    Overall,
    Review,
    Severity,
    same_commit,
)
from gitflow_agents.findings.settings import PathThreshold, path_threshold


class GateResult(NamedTuple):
    """The merge gate's decision. ``exit_code``: 0 approved, 1 otherwise (the caller maps an
    agent that failed, hung or timed out to 3 before any review exists; docs/findings.md, The
    gate)."""

    approved: bool
    exit_code: int
    reasons: tuple[str, ...] = ()
    threshold: Severity = Severity.ERROR


def count_by_severity(findings: Iterable[Finding]) -> dict[Severity, int]:
    counts = dict.fromkeys(Severity, 0)
    for finding in findings:
        counts[finding.severity] += 1
    return counts


def describe_counts(findings: Iterable[Finding]) -> str:
    """``1 error, 2 warn`` (severities with none are left out); ``no findings``."""
    counts = count_by_severity(findings)
    parts = [f"{n} {severity.value}" for severity, n in counts.items() if n]
    return ", ".join(parts) or "no findings"


def gate(
    review: Review,
    *,
    threshold: Severity,
    head_sha: str | None,
    paths: Sequence[PathThreshold] = (),
) -> GateResult:
    """Approved = verdict APPROVE of a review that completed, no finding at or above
    ``threshold`` (or the threshold of the last of ``paths``, ``review.paths``, whose glob
    matches its file), and (when ``head_sha`` is given) the review is about exactly that
    commit. Everything else is not approved: a review that says it did not complete
    (``Review.outcome``) has no verdict, whatever its ``overall`` says (a findings file the
    posting job of the two-job split reads may say both)."""
    reasons = []
    if review.overall is None:
        reasons.append(review.reason or "no verdict")
    elif review.outcome:
        reasons.append(
            f"the review did not complete ({review.outcome}), so its verdict "
            f"{review.overall.value} does not count"
        )
    elif review.overall is Overall.REVISE:
        reasons.append("the reviewer asks for changes (REVIEW_RESULT: REVISE)")
    blocking = [
        f for f in review.findings if f.severity.rank >= path_threshold(paths, f, threshold).rank
    ]
    if blocking:
        noun = "finding" if len(blocking) == 1 else "findings"
        where = " (or the review.paths threshold of its path)" if paths else ""
        reasons.append(
            f"{len(blocking)} {noun} at or above {threshold.value}{where}: "
            f"{describe_counts(blocking)}"
        )
    if head_sha is not None:
        if not review.reviewed_sha:
            reasons.append(
                f"the review does not say which commit it is about (HEAD is {head_sha[:12]})"
            )
        elif not same_commit(review.reviewed_sha, head_sha):
            reasons.append(
                f"the review is about {review.reviewed_sha[:12]}, not HEAD {head_sha[:12]}"
            )
    approved = not reasons
    return GateResult(
        approved=approved,
        exit_code=0 if approved else 1,
        reasons=tuple(reasons),
        threshold=threshold,
    )


def merge_reviews(reviews: Sequence[Review]) -> Review:
    """Several reviewers as one review: approve only when every one approves; findings (and
    accepted findings) concatenated in order, duplicates (same fingerprint) dropped; no verdict
    when any reviewer has none or they reviewed different commits."""
    if not reviews:
        return Review(overall=None, reason="no reviews")
    findings: list[Finding] = []
    seen: set[str] = set()
    for finding in (f.with_fingerprint() for r in reviews for f in r.findings):
        if finding.fingerprint not in seen:
            seen.add(finding.fingerprint)
            findings.append(finding)
    accepted: dict[str, Accepted] = {}
    for item in (a for r in reviews for a in r.accepted):
        accepted.setdefault(item.finding.with_fingerprint().fingerprint, item)
    reasons = [
        f"reviewer {index}: {r.reason or 'no verdict'}"
        for index, r in enumerate(reviews, start=1)
        if r.overall is None
    ]
    shas = {r.reviewed_sha for r in reviews if r.reviewed_sha}
    if len(shas) > 1:
        reasons.append(f"reviewers saw different commits: {', '.join(sorted(shas))}")
    overall: Overall | None
    if reasons:
        overall = None
    elif all(r.overall is Overall.APPROVE for r in reviews):
        overall = Overall.APPROVE
    else:
        overall = Overall.REVISE
    bases = {r.base_sha for r in reviews if r.base_sha}
    return Review(
        overall=overall,
        summary="\n\n".join(r.summary for r in reviews if r.summary),
        findings=tuple(findings),
        reviewed_sha=next(iter(shas)) if len(shas) == 1 else None,
        base_sha=next(iter(bases)) if len(bases) == 1 else None,
        unreviewed_files=tuple(dict.fromkeys(f for r in reviews for f in r.unreviewed_files)),
        run={"reviewers": [dict(r.run) for r in reviews]},
        reason="; ".join(reasons) or _merged_reason(reviews, overall),
        accepted=tuple(accepted.values()),
        excluded_files=max((r.excluded_files for r in reviews), default=0),
    )


def _merged_reason(reviews: Sequence[Review], overall: Overall | None) -> str:
    if overall is Overall.APPROVE:
        return "all reviewers approve"
    asking = [i for i, r in enumerate(reviews, start=1) if r.overall is Overall.REVISE]
    return "reviewer " + ", ".join(map(str, asking)) + " asks for changes"
