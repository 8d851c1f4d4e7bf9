"""The one review path: the reviewer's review of a target (``locate.py``: a range, a commit,
the index), the builtin one as a Review, an agent's report parsed, masked and gated.

``git agent-review`` (``commands/review.py``) and the Action (``github/``) both review through
:func:`review_target`; :func:`exit_code` is the exit code both derive from the gate.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitflow_agents import findings
from gitflow_agents.base.errors import ExitCode
from gitflow_agents.findings import Accepted, GateResult, Review, Severity, fill_fingerprints
from gitflow_agents.findings.redact import redact_review
from gitflow_agents.git import queries as git
from gitflow_agents.reviewer import builtin
from gitflow_agents.reviewer.acceptance import Acceptance, Scope, apply, local_settings, scope_of
from gitflow_agents.reviewer.builtin import diff_secrets
from gitflow_agents.reviewer.checks import CheckOptions
from gitflow_agents.reviewer.locate import Target as Target

if TYPE_CHECKING:
    from gitflow_agents.findings.settings import ReviewSettings
    from gitflow_agents.git.diffparse import FileChange
    from gitflow_agents.reviewer.builtin import BuiltinResult
    from gitflow_agents.reviewer.incremental import Earlier
    from gitflow_agents.reviewer.incremental import Scope as Increment


def builtin_review(
    root: Path,
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
    root: Path,
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


def agent_report(
    root: Path,
    name: str,
    target: Target,
    *,
    config_root: Path | None = None,
    secrets: Iterable[str] = (),
    budget: tuple[float | None, int | None] = (None, None),
    increment: Increment | None = None,
    scope: Scope | None = None,
) -> tuple[str, dict[str, Any]]:
    """Run the configured agent ``name`` as the reviewer (supervised); its completed report and
    the usage its run record holds.
    ``config_root``: where ``.flow/`` and ``.agents-flow/`` are read (default: ``root``);
    ``secrets``: exact values masked in the run's records; ``budget``: the review's
    ``--budget-usd`` and ``--budget-tokens`` (None: ``.flow/`` ``budget.review``); ``scope``:
    the paths it reviews (``review.exclude``; None: every changed path); ``increment``: an
    incremental review's (None: the whole target)."""
    from gitflow_agents.reviewer.agent import run_agent_review  # noqa: PLC0415 — agent_run/, prompt/, config/ only for --agent

    return run_agent_review(
        root,
        name,
        base=target.base,
        head=target.head,
        config_root=config_root,
        secrets=secrets,
        budget=budget,
        increment=increment,
        scope=scope,
    )


def _whole_range(review: Review, increment: Increment) -> tuple[Review, Increment]:
    """After an incremental review: ``review``'s findings are the whole range's (the open ones
    carried over, ``incremental.merged``), and the reason counts what carried over and what
    was fixed."""
    from gitflow_agents.reviewer.incremental import merged  # noqa: PLC0415 — as _agent_review

    if increment.since is None:
        return review, increment
    found, fixed = merged(increment, review.findings)
    carried = len(found) - len(review.findings)
    why = f"{increment.reason}; {carried} open finding(s) carried over, {fixed} fixed"
    return review._replace(findings=found), increment._replace(reason=why)


def line_lookup(blobs: git.BlobReader, rev: str | None) -> Callable[[str, int], str | None]:
    """``(file, line) -> text`` at ``rev`` (None: the index), for stable fingerprints; every
    file is read through ``blobs`` (one ``git cat-file`` for all of them)."""

    @functools.cache
    def lines_of(path: str) -> list[str]:
        text = blobs.text(git.object_name(rev, path))
        return text.splitlines() if text is not None else []

    def lookup(path: str, line: int) -> str | None:
        lines = lines_of(path)
        return lines[line - 1] if 0 < line <= len(lines) else None

    return lookup


def exit_code(review: Review, approved: bool, gate_code: int, fail_on: str) -> int:
    """The process exit code from the gate's and ``--fail-on``'s point of view."""
    if fail_on == "never":
        return ExitCode.OK
    if fail_on != "revise":
        level = Severity.parse(fail_on)
        if any(f.severity.rank >= level.rank for f in review.findings):
            return ExitCode.REVISE
    return ExitCode.OK if approved else gate_code


def review_target(
    root: Path,
    target: Target,
    *,
    agent: str,
    threshold: Severity,
    max_file_size: int,
    config_root: Path | None = None,
    acceptance: Acceptance | None = None,
    budget: tuple[float | None, int | None] = (None, None),
    earlier: Earlier | None = None,
    blobs: git.BlobReader | None = None,
    changes: Callable[[], tuple[FileChange, ...]] | None = None,
) -> tuple[Review, GateResult]:
    """Run the reviewer on ``target``, parse its report, mask the secrets in it, and gate it:
    the one review path (``git agent-review``, ``gitflow-agents action``). ``config_root``,
    ``budget``: see ``agent_report``; ``acceptance``: what the builtin reviewer accepts (none:
    nothing); ``earlier``: the last review of the range, for an incremental review
    (``incremental.py``; the Review's ``kind`` and ``kind_reason`` say which kind ran);
    ``blobs``: the caller's reader of the repository's contents (None: one of its own);
    ``changes``: the builtin reviewer's changed files, from a diff of ``target.spec`` the
    caller started (``git.AskedDiff``; None: the diff runs here)."""
    settings = (acceptance or Acceptance()).settings
    with contextlib.ExitStack() as stack:
        if blobs is None:
            blobs = stack.enter_context(git.BlobReader(root))
        if agent == "builtin":
            parsed, secrets = builtin_review(
                root, target, threshold, max_file_size, blobs, acceptance, changes
            )
            kind, why = builtin.WHOLE_RANGE
            parsed = parsed._replace(kind=kind, kind_reason=why)
        else:
            if acceptance is None:  # the agent's own .flow/ (the base's in the Action)
                settings = local_settings(config_root or root)
            parsed, secrets = _agent_review(
                root,
                agent,
                target,
                blobs,
                settings=settings,
                config_root=config_root,
                max_file_size=max_file_size,
                budget=budget,
                earlier=earlier,
            )
    # Every text of the report is masked before any output sees it: the secret rules, and the
    # exact secret values of the reviewed diff wherever the reviewer quotes them
    # (docs/security.md, "Secrets in review output").
    review = redact_review(parsed, secrets)
    # --staged has no commit to pin the verdict to; every other review must be about head.
    verdict = findings.gate(review, threshold=threshold, head_sha=target.head, paths=settings.paths)
    return review, verdict


def _agent_review(
    root: Path,
    agent: str,
    target: Target,
    blobs: git.BlobReader,
    *,
    settings: ReviewSettings,
    config_root: Path | None,
    max_file_size: int,
    budget: tuple[float | None, int | None],
    earlier: Earlier | None,
) -> tuple[Review, frozenset[str]]:
    """An agent reviewer's parsed review of ``target`` (whole, or incremental since
    ``earlier``'s head) and the exact secret values of the diff; see ``review_target``."""
    # incremental review is an agent reviewer's: the builtin path never imports it (issue 20)
    from gitflow_agents.reviewer.incremental import Earlier, decide  # noqa: PLC0415 — see above

    increment = decide(root, target.base, target.head, agent, earlier or Earlier())
    scope = scope_of(settings, git.numstat(root, target.spec))
    secrets = diff_secrets(root, target.spec, CheckOptions(max_file_bytes=max_file_size))
    report, usage = agent_report(
        root,
        agent,
        target,
        config_root=config_root,
        secrets=secrets,
        budget=budget,
        scope=scope,
        increment=increment if increment.since is not None else None,
    )
    parsed = findings.parse_review(
        report,
        reviewed_sha=target.head,
        base_sha=target.base,
        source=f"{agent} report",
        line_content=line_lookup(blobs, target.head),
    )
    from gitflow_agents.reviewer.agent import with_usage  # noqa: PLC0415 — as agent_report

    parsed = parsed._replace(run=with_usage(parsed.run, usage), excluded_files=len(scope.excluded))
    parsed, increment = _whole_range(parsed, increment)
    return parsed._replace(kind=increment.kind, kind_reason=increment.reason), secrets
