"""Findings and reviews: the values every reviewer produces and every renderer and gate reads.

Shape fixed by DESIGN.md §4:
``{overall: approve|revise, summary, findings: [{severity, file?, line?, end_line?, message,
suggestion?, rule?, fingerprint}], reviewed_sha, base_sha, unreviewed_files: [], run: {...}}``
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any


class Severity(str, enum.Enum):
    ERROR = "error"
    WARN = "warn"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is more severe: error 3, warn 2, info 1."""
        return {"error": 3, "warn": 2, "info": 1}[self.value]

    @property
    def sarif_level(self) -> str:
        return {"error": "error", "warn": "warning", "info": "note"}[self.value]

    @property
    def rdjson(self) -> str:
        return {"error": "ERROR", "warn": "WARNING", "info": "INFO"}[self.value]

    @classmethod
    def parse(cls, text: str) -> Severity:
        """Accept the usual spellings: error/err/critical/high, warn/warning/medium, info/note/low."""
        key = text.strip().lower()
        for severity, names in _SEVERITY_NAMES.items():
            if key in names:
                return severity
        raise ValueError(f"unknown severity {text!r} (expected error, warn or info)")


_SEVERITY_NAMES = {
    Severity.ERROR: {"error", "err", "critical", "high", "blocker", "major"},
    Severity.WARN: {"warn", "warning", "medium", "moderate"},
    Severity.INFO: {"info", "note", "low", "minor", "nit", "suggestion"},
}


class Overall(str, enum.Enum):
    APPROVE = "approve"
    REVISE = "revise"


_WS = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")


def fingerprint(file: str | None, rule: str | None, message: str, line_content: str = "") -> str:
    """Stable identity of a finding across pushes.

    Hash of (file, rule or normalised message, normalised line content). Line numbers are left
    out on purpose: a finding keeps its identity when lines above it move.
    """
    what = rule or _DIGITS.sub("N", _WS.sub(" ", message.strip().lower()))
    content = _WS.sub(" ", line_content.strip())
    digest = hashlib.sha256("\0".join((file or "", what, content)).encode("utf-8"))
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Finding:
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    end_line: int | None = None
    suggestion: str | None = None
    rule: str | None = None
    fingerprint: str = ""

    def with_fingerprint(self, line_content: str = "") -> Finding:
        """This finding with its fingerprint computed (kept when already set)."""
        if self.fingerprint:
            return self
        return replace(
            self, fingerprint=fingerprint(self.file, self.rule, self.message, line_content)
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"severity": self.severity.value, "message": self.message}
        for key in ("file", "line", "end_line", "suggestion", "rule"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        data["fingerprint"] = self.fingerprint
        return data


@dataclass(frozen=True)
class Review:
    """One reviewer's result. ``overall`` is None when no verdict could be established;
    ``reason`` then says why (missing marker, contradiction with the findings, parse error)."""

    overall: Overall | None
    summary: str = ""
    findings: tuple[Finding, ...] = ()
    reviewed_sha: str | None = None
    base_sha: str | None = None
    unreviewed_files: tuple[str, ...] = ()
    run: dict[str, Any] = field(default_factory=dict)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall": self.overall.value if self.overall else None,
            "summary": self.summary,
            "findings": [f.to_dict() for f in self.findings],
            "reviewed_sha": self.reviewed_sha,
            "base_sha": self.base_sha,
            "unreviewed_files": list(self.unreviewed_files),
            "run": dict(self.run),
            "reason": self.reason,
        }


# --------------------------------------------------------------------------------------------
# Verdict grammar (DESIGN.md §4)
# --------------------------------------------------------------------------------------------

VERDICT_RE = re.compile(r"^\s*REVIEW_RESULT:\s*(APPROVED|REVISE|CHANGES_REQUESTED)\s*$")
"""The one accepted marker: alone on its line, outside fenced code, upper case."""

_VERDICTS = {
    "APPROVED": Overall.APPROVE,
    "REVISE": Overall.REVISE,
    "CHANGES_REQUESTED": Overall.REVISE,
}
# Markdown decoration a reviewer may wrap around the marker: emphasis, quotes, list bullets,
# headings, inline code. A decorated marker is reported (helpfully) but never counted.
_DECORATION = re.compile(r"^[\s>*_`#+\-~]*(?:\d+[.)]\s*)?[\s*_`]*")
_NEAR_MISS = re.compile(r"^review[_ ]result\b", re.IGNORECASE)
_STRICT_CORE = re.compile(r"^REVIEW_RESULT:\s*(APPROVED|REVISE|CHANGES_REQUESTED)[\s*_`.!]*$")


@dataclass(frozen=True)
class VerdictResult:
    """The verdict a report states, the 1-based line it stands on, and why (always filled)."""

    verdict: Overall | None
    line: int | None
    reason: str


def fenced_lines(text: str) -> frozenset[int]:
    """1-based numbers of every line that belongs to a fenced code block (fences included).

    Uses markdown-it's CommonMark block parser, so ``` and ~~~ fences of any length, fences
    inside lists and block quotes, and unclosed fences (which run to the end) are all handled
    the way GitHub renders them.
    """
    from gitflow_agents.markdown import block_tokens

    lines: set[int] = set()
    for token in block_tokens(text):
        if token.type == "fence" and token.map:
            start, end = token.map
            lines.update(range(start + 1, end + 1))
    return frozenset(lines)


# HTML blocks whose content markdown does not show as text: script/style (hidden), pre and
# textarea (shown as code), processing instructions, declarations, CDATA. Comments inside any
# HTML block or paragraph are found separately (``_COMMENT``).
_RAW_HTML_BLOCK = re.compile(r"\s{0,3}<(script|pre|style|textarea)(?=[\s>]|$)", re.IGNORECASE)
_HIDDEN_HTML_BLOCK = re.compile(r"\s{0,3}<(?:\?|![A-Za-z]|!\[CDATA\[)")
# An HTML comment (CommonMark 0.31: ``<!-->`` and ``<!--->`` are complete comments too);
# in an HTML block an unclosed one runs to the block's end.
_COMMENT = re.compile(r"<!--(?:-?>|.*?-->)", re.DOTALL)
_OPEN_COMMENT = re.compile(r"<!--(?:-?>|.*?(?:-->|\Z))", re.DOTALL)


def _comment_lines(content: str, first: int, pattern: re.Pattern[str]) -> dict[int, str]:
    """1-based report lines whose whole visible text lies inside an HTML comment of ``content``
    (a block's content, its line k being report line ``first + k``)."""
    spans = [m.span() for m in pattern.finditer(content)]
    if not spans:
        return {}
    hidden: dict[int, str] = {}
    offset = 0
    for k, line in enumerate(content.split("\n")):
        start = offset + len(line) - len(line.lstrip())
        end = offset + len(line.rstrip())
        offset += len(line) + 1
        if end > start and any(a <= start and end <= b for a, b in spans):
            hidden[first + k] = "an HTML comment"
    return hidden


def hidden_lines(text: str) -> dict[int, str]:
    """1-based numbers of the lines markdown shows as code or does not show at all, each with
    what holds it: ``a fenced code block`` (fences included), ``an indented code block``,
    ``an HTML comment`` (in a paragraph or an HTML block, also multi-line), ``an HTML <pre>
    block`` (script, style, textarea likewise) or ``an HTML block`` (``<?…?>``, ``<!X…>``,
    CDATA).

    markdown-it's CommonMark block parser decides, as GitHub renders: fences of any length,
    inside lists and block quotes, unclosed ones running to the end; four-space indentation
    after a paragraph line continues the paragraph (not code). The visible text of a ``<div>``
    or ``<details>`` block is not hidden. A report that is nothing but one indented code block
    is not hidden either: there is no prose for it to be an example in.
    """
    from gitflow_agents.markdown import block_tokens

    hidden: dict[int, str] = {}
    tokens = block_tokens(text)
    lines = _split_lines(text)
    for token in tokens:
        if not token.map:
            continue
        start, end = token.map
        what = ""
        if token.type == "fence":
            what = "a fenced code block"
        elif token.type == "code_block":
            outside = any(line.strip() for line in lines[:start] + lines[end:])
            what = "an indented code block" if outside else ""
        elif token.type == "html_block":
            raw = _RAW_HTML_BLOCK.match(token.content)
            if raw:
                what = f"an HTML <{raw.group(1).lower()}> block"
            elif _HIDDEN_HTML_BLOCK.match(token.content):
                what = "an HTML block"
            else:
                hidden.update(_comment_lines(token.content, start + 1, _OPEN_COMMENT))
        elif token.type == "inline" and "<!--" in token.content:
            hidden.update(_comment_lines(token.content, start + 1, _COMMENT))
        if what:
            hidden.update(dict.fromkeys(range(start + 1, end + 1), what))
    return hidden


def _split_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def parse_verdict(text: str) -> VerdictResult:
    """Find the reviewer's verdict: the last ``REVIEW_RESULT:`` marker outside code and hidden
    HTML (``hidden_lines``).

    Fail-closed: no marker, or a last marker that is decorated (``**REVIEW_RESULT: APPROVED**``),
    lower case or followed by other text, is no verdict; the reason says what was found where.
    """
    hidden = hidden_lines(text)
    last: tuple[int, Overall | None, str] | None = None  # (line, verdict, near-miss text)
    first_hidden: int | None = None
    for number, line in enumerate(_split_lines(text), start=1):
        strict = VERDICT_RE.match(line)
        near = strict is None and _NEAR_MISS.match(_DECORATION.sub("", line, count=1))
        if not (strict or near):
            continue
        if number in hidden:
            first_hidden = first_hidden or number
            continue
        last = (number, _VERDICTS[strict.group(1)], "") if strict else (number, None, line.strip())
    if last is None:
        reason = "no REVIEW_RESULT line"
        if first_hidden is not None:
            reason += (
                f" (the marker on line {first_hidden} is inside {hidden[first_hidden]}, "
                "which does not count)"
            )
        return VerdictResult(None, None, reason)
    number, verdict, found = last
    if verdict is not None:
        marker = "APPROVED" if verdict is Overall.APPROVE else "REVISE"
        return VerdictResult(verdict, number, f"REVIEW_RESULT: {marker} on line {number}")
    core = _DECORATION.sub("", found, count=1)
    if _STRICT_CORE.match(core):
        why = "the marker must stand alone on its line"
    else:
        why = (
            "expected exactly `REVIEW_RESULT: APPROVED` or `REVIEW_RESULT: REVISE` "
            "alone on its line"
        )
    return VerdictResult(None, number, f"found `{found}` on line {number}: {why}")


# --------------------------------------------------------------------------------------------
# Findings from a reviewer's report
# --------------------------------------------------------------------------------------------

LineLookup = Callable[[str, int], "str | None"]
"""``(file, line) -> content of that line`` (None when unknown); feeds fingerprints."""

_BULLET_FINDING = re.compile(
    r"^\s*[-*+]\s+\[(?P<severity>[A-Za-z]+)\]\s+"
    r"(?:`?(?P<file>[^\s`:]+):(?P<line>\d+)(?::\d+)?(?:-(?P<end>\d+))?`?:\s*)?"
    r"(?P<message>\S.*?)\s*$"
)
_OVERALL_WORDS = {
    "approve": Overall.APPROVE,
    "approved": Overall.APPROVE,
    "revise": Overall.REVISE,
    "changes_requested": Overall.REVISE,
}


class FindingsError(ValueError):
    """A findings block that cannot be read; ``line`` is 1-based in the report."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def suggestion_replacement(finding: Finding) -> str | None:
    """The replacement text when the suggestion is a GitHub-style fenced ```suggestion block
    (replacing lines ``line``..``end_line``); None when it is prose advice."""
    text = (finding.suggestion or "").strip("\n")
    match = re.fullmatch(r"\s*(`{3,}|~{3,})suggestion[ \t]*\n(.*?)\n?[ \t]*\1\s*", text, re.DOTALL)
    if match is None or finding.line is None:
        return None
    return match.group(2) + "\n" if match.group(2) else ""


def finding_from_dict(data: Any, where: str = "finding") -> Finding:
    """One finding from its DESIGN §4 JSON shape; ValueError naming the bad key."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
    try:
        severity = Severity.parse(str(data.get("severity", "")))
    except ValueError as error:
        raise ValueError(f"{where}.severity: {error}") from None
    message = data.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ValueError(f"{where}.message: expected a non-empty string")
    values: dict[str, Any] = {}
    for key in ("file", "suggestion", "rule", "fingerprint"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{where}.{key}: expected a string")
        values[key] = value or None
    for key in ("line", "end_line"):
        value = data.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(f"{where}.{key}: expected a line number >= 1, got {value!r}")
        values[key] = value
    if values["line"] is None and values["end_line"] is not None:
        raise ValueError(f"{where}.end_line: given without line")
    if values["end_line"] is not None and values["end_line"] < values["line"]:
        raise ValueError(f"{where}.end_line: {values['end_line']} is before line {values['line']}")
    return Finding(
        severity=severity,
        message=message.strip(),
        file=values["file"],
        line=values["line"],
        end_line=values["end_line"],
        suggestion=values["suggestion"],
        rule=values["rule"],
        fingerprint=values["fingerprint"] or "",
    )


def review_from_dict(data: Any) -> Review:
    """A Review from the DESIGN §4 JSON shape (as ``Review.to_dict`` writes it); fingerprints
    present in the data are kept. ValueError naming the bad key."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    overall_raw = data.get("overall")
    overall = None
    if overall_raw is not None:
        overall = _OVERALL_WORDS.get(str(overall_raw).strip().lower())
        if overall is None:
            raise ValueError(f"overall: expected approve or revise, got {overall_raw!r}")
    findings_raw = data.get("findings", [])
    if not isinstance(findings_raw, list):
        raise ValueError("findings: expected a list")
    findings = tuple(
        finding_from_dict(item, f"findings[{index}]") for index, item in enumerate(findings_raw)
    )
    unreviewed = data.get("unreviewed_files", [])
    if not isinstance(unreviewed, list) or not all(isinstance(f, str) for f in unreviewed):
        raise ValueError("unreviewed_files: expected a list of paths")
    summary = data.get("summary", "")
    if summary is not None and not isinstance(summary, str):
        raise ValueError("summary: expected a string")
    for key in ("reviewed_sha", "base_sha"):
        if data.get(key) is not None and not isinstance(data.get(key), str):
            raise ValueError(f"{key}: expected a commit id string")
    run = data.get("run", {})
    return Review(
        overall=overall,
        summary=summary or "",
        findings=findings,
        reviewed_sha=data.get("reviewed_sha") or None,
        base_sha=data.get("base_sha") or None,
        unreviewed_files=tuple(unreviewed),
        run=dict(run) if isinstance(run, dict) else {},
        reason=str(data.get("reason") or ""),
    )


def _json_blocks(text: str) -> list[tuple[int, str]]:
    """(1-based line of the opening fence, content) of every fenced ```json block."""
    from gitflow_agents.markdown import block_tokens

    blocks = []
    for token in block_tokens(text):
        info = token.info.strip().split()
        if token.type == "fence" and token.map and info and info[0].lower() == "json":
            blocks.append((token.map[0] + 1, token.content))
    return blocks


def _findings_block(text: str, source: str) -> Review | None:
    """The last ```json block holding a findings object; FindingsError on a broken one.

    JSON blocks that parse but are not a findings object (an example config, say) are ignored;
    a block that does not parse at all is an error, because it may be the findings.
    """
    found: Review | None = None
    for fence_line, content in _json_blocks(text):
        try:
            data = json.loads(content)
        except json.JSONDecodeError as error:
            line = fence_line + error.lineno
            raise FindingsError(
                f"{source}:{line}: findings block is not valid JSON: {error.msg}", line
            ) from None
        except (ValueError, RecursionError) as error:  # huge numbers, absurd nesting
            raise FindingsError(
                f"{source}:{fence_line}: findings block cannot be read: {error}", fence_line
            ) from None
        if not isinstance(data, dict) or not ({"findings", "overall"} & data.keys()):
            continue
        try:
            found = review_from_dict(data)
        except ValueError as error:
            raise FindingsError(
                f"{source}:{fence_line}: findings block: {error}", fence_line
            ) from None
    return found


def _bullet_findings(text: str) -> list[Finding]:
    fenced = fenced_lines(text)
    findings = []
    for number, line in enumerate(_split_lines(text), start=1):
        match = _BULLET_FINDING.match(line)
        if match is None or number in fenced:
            continue
        try:
            severity = Severity.parse(match.group("severity"))
        except ValueError:
            continue  # "- [x] done" is a checklist, not a finding
        start = int(match.group("line")) if match.group("line") else None
        end = int(match.group("end")) if match.group("end") else None
        findings.append(
            Finding(
                severity=severity,
                message=match.group("message"),
                file=match.group("file"),
                line=start,
                end_line=end if end is not None and start is not None and end > start else None,
            )
        )
    return findings


def fill_fingerprints(
    findings: Iterable[Finding], line_content: LineLookup | None = None
) -> tuple[Finding, ...]:
    """Every finding with its fingerprint set; line content comes from ``line_content``."""
    filled = []
    for finding in findings:
        content = ""
        if line_content is not None and finding.file and finding.line:
            content = line_content(finding.file, finding.line) or ""
        filled.append(finding.with_fingerprint(content))
    return tuple(filled)


def parse_review(
    report_text: str,
    *,
    reviewed_sha: str | None = None,
    base_sha: str | None = None,
    source: str = "report.md",
    line_content: LineLookup | None = None,
) -> Review:
    """Read a reviewer's report into a Review (never raises for bad report content).

    Verdict: the ``REVIEW_RESULT:`` marker (``parse_verdict``). Findings, first source found:
    the last fenced ```json findings block (DESIGN §4 shape), else ``- [severity] path:line:
    message`` lines outside code fences (also inside a seed-004 XML reply). Summary: the JSON
    ``summary``, else the XML ``<SUMMARY>``. ``overall`` is None, with ``reason`` saying why,
    when there is no valid marker, the findings block is broken, the JSON ``overall``
    contradicts the marker, the XML ``<STATUS>`` is failed / needs_input, or the block names a
    different commit than ``reviewed_sha``.
    """
    from .protocol import ReplyStatus, parse_reply

    verdict = parse_verdict(report_text)
    overall, reason = verdict.verdict, verdict.reason
    reply = parse_reply(report_text)
    summary = reply.summary if reply.structured else ""
    block: Review | None = None
    try:
        block = _findings_block(report_text, source)
    except FindingsError as error:
        overall, reason = None, str(error)
    if block is not None:
        findings: Iterable[Finding] = (replace(f, fingerprint="") for f in block.findings)
    else:
        findings = _bullet_findings(report_text)

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
    if overall is not None and reviewed_sha and claimed and not _same_commit(reviewed_sha, claimed):
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


def _same_commit(a: str, b: str) -> bool:
    """Full or abbreviated (>= 7 hex digits) ids naming the same commit."""
    a, b = a.strip().lower(), b.strip().lower()
    shorter = min(len(a), len(b))
    return shorter >= 7 and a[:shorter] == b[:shorter]


# --------------------------------------------------------------------------------------------
# Gate
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateResult:
    """The merge gate's decision. ``exit_code`` follows DESIGN §4: 0 approved, 1 otherwise
    (the caller maps an agent that failed, hung or timed out to 3 before any review exists)."""

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


def gate(review: Review, *, threshold: Severity, head_sha: str | None) -> GateResult:
    """Approved = verdict APPROVE, no finding at or above ``threshold``, and (when ``head_sha``
    is given) the review is about exactly that commit. Everything else is not approved."""
    reasons = []
    if review.overall is None:
        reasons.append(review.reason or "no verdict")
    elif review.overall is Overall.REVISE:
        reasons.append("the reviewer asks for changes (REVIEW_RESULT: REVISE)")
    blocking = [f for f in review.findings if f.severity.rank >= threshold.rank]
    if blocking:
        noun = "finding" if len(blocking) == 1 else "findings"
        reasons.append(
            f"{len(blocking)} {noun} at or above {threshold.value}: {describe_counts(blocking)}"
        )
    if head_sha is not None:
        if not review.reviewed_sha:
            reasons.append(
                f"the review does not say which commit it is about (HEAD is {head_sha[:12]})"
            )
        elif not _same_commit(review.reviewed_sha, head_sha):
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
    """Several reviewers as one review: approve only when every one approves; findings
    concatenated in order, duplicates (same fingerprint) dropped; no verdict when any reviewer
    has none or they reviewed different commits."""
    if not reviews:
        return Review(overall=None, reason="no reviews")
    findings: list[Finding] = []
    seen: set[str] = set()
    for finding in (f.with_fingerprint() for r in reviews for f in r.findings):
        if finding.fingerprint not in seen:
            seen.add(finding.fingerprint)
            findings.append(finding)
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
    )


def _merged_reason(reviews: Sequence[Review], overall: Overall | None) -> str:
    if overall is Overall.APPROVE:
        return "all reviewers approve"
    asking = [i for i, r in enumerate(reviews, start=1) if r.overall is Overall.REVISE]
    return "reviewer " + ", ".join(map(str, asking)) + " asks for changes"
