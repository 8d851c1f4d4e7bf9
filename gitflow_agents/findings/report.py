"""Reading a reviewer's report into a ``Review``: the verdict, the findings (a fenced JSON block
or ``- [severity] path:line: message`` lines), the summary, and every reason the verdict may not
stand (docs/findings.md, Findings in a report)."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path

from gitflow_agents.base.fsutil import MAX_REPORT_CHARS, read_agent_text
from gitflow_agents.base.jsondata import JsonProblem, loads
from gitflow_agents.base.markdown import block_tokens
from gitflow_agents.findings.model import (
    Finding,
    LineLookup,
    Overall,
    Review,
    Severity,
    fill_fingerprints,
    review_from_dict,
    same_commit,
)
from gitflow_agents.findings.reply import ReplyStatus, parse_reply
from gitflow_agents.findings.verdict import fenced_lines, parse_verdict, split_lines

_BULLET_FINDING = re.compile(
    r"^\s*[-*+]\s+\[(?P<severity>[A-Za-z]+)\]\s+"
    r"(?:`?(?P<file>[^\s`:]+):(?P<line>\d+)(?::\d+)?(?:-(?P<end>\d+))?`?:\s*)?"
    r"(?P<message>\S.*)$"  # trailing blanks are stripped in code: `.*?\s*$` is quadratic
)


# A URI (``file:///...``, ``https://...``) and a Windows path (``C:\x``, ``C:/x``, ``\\host``)
# name no path in the repository, whatever follows them
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(?://|/)")
_WINDOWS = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")
_FROM_TOP = "give the file's path from the top of the repository"


def repository_path(file: str, root: str | os.PathLike[str] | None) -> str:
    """``file``, a finding's file as a reviewer wrote it, as its path from the top of the
    repository (docs/findings.md: what SARIF's ``artifactLocation.uri``, rdjsonl, annotations,
    fingerprints and every git lookup use): ``./a.py`` and ``src//a.py`` normalised; an absolute
    path inside ``root`` (the top of the work tree the reviewer worked in: Claude Code's tools
    name files by absolute path) made relative to it. ValueError saying why for one that names
    no file of the repository: outside ``root`` or above the top (``../x.py``), absolute with no
    ``root`` to judge it by, a URI, a Windows path."""
    if "\0" in file or "\n" in file or "\r" in file:
        raise ValueError(f"{file!r} is not a path: it holds a control character")
    if _WINDOWS.match(file):
        raise ValueError(f"{file!r} is a Windows path, not one in the repository; {_FROM_TOP}")
    if _URI.match(file):
        raise ValueError(f"{file!r} is a URI, not a path; {_FROM_TOP}")
    path = file
    if posixpath.isabs(path):
        inside = _inside(path, os.fspath(root)) if root is not None else None
        if inside is None:
            where = f" {os.fspath(root)}" if root is not None else ""
            raise ValueError(f"{file!r} is outside the repository{where}; {_FROM_TOP}")
        path = inside
    path = posixpath.normpath(path)
    if path == os.curdir:
        raise ValueError(f"{file!r} names no file; {_FROM_TOP}")
    if path == os.pardir or path.startswith(os.pardir + "/"):
        raise ValueError(f"{file!r} is outside the repository; {_FROM_TOP}")
    return path


def _inside(path: str, root: str) -> str | None:
    """The absolute ``path`` from ``root`` when it is inside it, as written or with symbolic
    links resolved (``/tmp`` and ``/private/tmp``); None when it is not."""
    for there, top in (
        (posixpath.normpath(path), posixpath.normpath(root)),
        (os.path.realpath(path), os.path.realpath(root)),
    ):
        relative = posixpath.relpath(there, top)
        if relative != os.pardir and not relative.startswith(os.pardir + "/"):
            return relative
    return None


class FindingsError(ValueError):
    """A findings block that cannot be read; ``line`` is 1-based in the report."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _json_blocks(text: str) -> list[tuple[int, str]]:
    """(1-based line of the opening fence, content) of every fenced ```json block."""
    blocks = []
    for token in block_tokens(text):
        info = token.info.strip().split()
        if token.type == "fence" and token.map and info and info[0].lower() == "json":
            blocks.append((token.map[0] + 1, token.content))
    return blocks


def _findings_block(
    text: str, source: str, root: str | os.PathLike[str] | None = None
) -> Review | None:
    """The last ```json block holding a findings object; FindingsError on a broken one.

    JSON blocks that parse but are not a findings object (an example config, say) are ignored;
    a block that does not parse at all is an error, because it may be the findings.
    """
    found: Review | None = None
    if "```" not in text and "~~~" not in text:  # no fence, no block: no parse needed
        return None

    for fence_line, content in _json_blocks(text):
        try:
            # bounded like every JSON the tool did not write: a lone surrogate ("\ud800", which
            # no UTF-8 output can hold) becomes U+FFFD; NaN, huge numbers, deep nesting refused
            data = loads(content)
        except JsonProblem as error:
            line = fence_line + error.line if error.line is not None else fence_line
            what = "is not valid JSON" if error.line is not None else "cannot be read"
            detail = error.message.removeprefix("not valid JSON: ")
            raise FindingsError(f"{source}:{line}: findings block {what}: {detail}", line) from None
        if not isinstance(data, dict) or not ({"findings", "overall"} & data.keys()):
            continue
        try:
            found = _in_repository(review_from_dict(data), root)
        except ValueError as error:
            raise FindingsError(
                f"{source}:{fence_line}: findings block: {error}", fence_line
            ) from None
    return found


def _in_repository(review: Review, root: str | os.PathLike[str] | None) -> Review:
    """``review`` with each finding's file and each of its ``unreviewed_files`` as its path
    from the top of the repository (``repository_path``); ValueError naming the field
    (``findings[N].file``, ``unreviewed_files[N]``) otherwise."""
    findings = []
    for index, finding in enumerate(review.findings):
        if finding.file is not None:
            try:
                finding = finding._replace(file=repository_path(finding.file, root))
            except ValueError as error:
                raise ValueError(f"findings[{index}].file: {error}") from None
        findings.append(finding)
    unreviewed = []
    for index, file in enumerate(review.unreviewed_files):
        try:
            unreviewed.append(repository_path(file, root))
        except ValueError as error:
            raise ValueError(f"unreviewed_files[{index}]: {error}") from None
    return review._replace(
        findings=tuple(findings), unreviewed_files=tuple(dict.fromkeys(unreviewed))
    )


def _bullet_findings(
    text: str, source: str, root: str | os.PathLike[str] | None = None
) -> list[Finding]:
    """The ``- [severity] path:line: message`` findings outside code fences; FindingsError
    naming the report's line of one whose path is no file of the repository
    (``repository_path``)."""
    candidates = [
        (number, match)
        for number, line in enumerate(split_lines(text), start=1)
        if (match := _BULLET_FINDING.match(line)) is not None
    ]
    # which lines are code only matters when there is a candidate (markdown costs time)
    fenced = fenced_lines(text) if candidates else frozenset()
    findings = []
    for number, match in candidates:
        if number in fenced:
            continue
        try:
            severity = Severity.parse(match.group("severity"))
        except ValueError:
            continue  # "- [x] done" is a checklist, not a finding
        start = int(match.group("line")) if match.group("line") else None
        end = int(match.group("end")) if match.group("end") else None
        file = match.group("file")
        if file is not None:
            try:
                file = repository_path(file, root)
            except ValueError as error:
                raise FindingsError(f"{source}:{number}: finding: {error}", number) from None
        findings.append(
            Finding(
                severity=severity,
                message=match.group("message").rstrip(),
                file=file,
                line=start,
                end_line=end if end is not None and start is not None and end > start else None,
            )
        )
    return findings


def parse_review(
    report_text: str,
    *,
    reviewed_sha: str | None = None,
    base_sha: str | None = None,
    source: str = "report.md",
    line_content: LineLookup | None = None,
    root: str | os.PathLike[str] | None = None,
) -> Review:
    """Read a reviewer's report into a Review (never raises for bad report content; linear in
    its length, and a report over :data:`MAX_REPORT_CHARS` is not read: no verdict).

    Each finding's file is its path from the top of the repository (``repository_path``; an
    absolute one inside ``root``, the top of the work tree the reviewer worked in, made
    relative): one that names no file of the repository is a bad field of the report, as a bad
    severity or line is (no verdict, the reason naming it).

    Verdict: the ``REVIEW_RESULT:`` marker (``parse_verdict``). Findings, first source found:
    the last fenced ```json findings block (docs/protocol.md, Findings), else ``- [severity]
    path:line: message`` lines outside code fences (also inside an XML reply: docs/protocol.md,
    Agent replies). Summary: the JSON ``summary``, else the XML ``<SUMMARY>``. ``overall`` is
    None, with ``reason`` saying why, when there is no valid marker, the findings block is
    broken, the JSON ``overall`` contradicts the marker, the XML ``<STATUS>`` is failed /
    needs_input, or the block names a different commit than ``reviewed_sha``.
    """
    if len(report_text) > MAX_REPORT_CHARS:
        return Review(
            overall=None,
            summary="",
            findings=(),
            reviewed_sha=reviewed_sha,
            base_sha=base_sha,
            reason=(
                # "or more": a file is read only up to a bound (fsutil.read_agent_text)
                f"{source} is {len(report_text):,} characters or more, over the "
                f"{MAX_REPORT_CHARS:,} limit: it is not read, so there is no verdict"
            ),
        )
    verdict = parse_verdict(report_text)
    overall, reason = verdict.verdict, verdict.reason
    reply = parse_reply(report_text)
    summary = reply.summary if reply.structured else ""
    block: Review | None = None
    try:
        block = _findings_block(report_text, source, root)
    except FindingsError as error:
        overall, reason = None, str(error)
    findings: Iterable[Finding] = ()
    if block is not None:
        findings = (f._replace(fingerprint="") for f in block.findings)
    else:
        try:
            findings = _bullet_findings(report_text, source, root)
        except FindingsError as error:  # the first reason stands
            overall, reason = None, reason if overall is None else str(error)

    if overall is not None and block is not None and block.overall not in (None, overall):
        said = "APPROVED" if overall is Overall.APPROVE else "REVISE"
        overall = None
        reason = f"report says {said} but its findings block says {block.overall.value}"
    if (
        overall is not None
        and reply.structured
        and reply.status
        in (
            ReplyStatus.FAILED,
            ReplyStatus.NEEDS_INPUT,
        )
    ):
        overall = None
        reason = f"the reply's <STATUS> is {reply.status.value}, so its verdict does not stand"
    claimed = block.reviewed_sha if block is not None else None
    if overall is not None and reviewed_sha and claimed and not same_commit(reviewed_sha, claimed):
        overall = None
        reason = f"findings block is about commit {claimed} but {reviewed_sha} was reviewed"
    return Review(
        overall=overall,
        summary=(block.summary if block is not None and block.summary else summary),
        findings=fill_fingerprints(findings, line_content),
        reviewed_sha=reviewed_sha or claimed,
        base_sha=base_sha or (block.base_sha if block is not None else None),
        unreviewed_files=block.unreviewed_files if block is not None else (),
        run=dict(block.run) if block is not None else {},
        reason=reason,
    )


def read_review(
    report: Path | None,
    *,
    reviewed_sha: str | None = None,
    base_sha: str | None = None,
    source: str = "report.md",
    root: str | os.PathLike[str] | None = None,
) -> Review:
    """The report file ``report`` read (bounded, like every report: docs/security.md,
    "Bounds"; a report over the cap is not read whole, and :func:`parse_review` refuses it)
    and parsed into a Review; None or a symlink or FIFO reads as "" (no verdict). A chain
    review is read once, here: its record and the gate take this value. ``root``: the top of
    the work tree the reviewer worked in (``parse_review``)."""
    text = read_agent_text(report, MAX_REPORT_CHARS) if report is not None else ""
    return parse_review(
        text, reviewed_sha=reviewed_sha, base_sha=base_sha, source=source, root=root
    )
