"""Findings and reviews: the values every reviewer produces and every renderer and gate reads,
and their JSON shape (docs/protocol.md, Findings):
``{overall: approve|revise, summary, findings: [{severity, file?, line?, end_line?, message,
suggestion?, rule?, fingerprint, occurrence?}], reviewed_sha, base_sha, unreviewed_files: [],
run: {...}}``
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable

from gitflow_agents.base.lazy import Lazy, on_first_use
from gitflow_agents.base.records import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
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


# compiled, and hashlib (OpenSSL) loaded, when a finding is fingerprinted: most small reviews
# have none (issue 20)
_HASHLIB = on_first_use("hashlib")
_WS = Lazy(r"\s+")
_DIGITS = Lazy(r"\d+")


def _identity(
    file: str | None, rule: str | None, message: str, line_content: str
) -> tuple[str, str, str]:
    """What a fingerprint hashes besides the occurrence: the file, the rule (or the message,
    whitespace and numbers normalised) and the line's text (whitespace normalised)."""
    what = rule or _DIGITS.sub("N", _WS.sub(" ", message.strip().lower()))
    return file or "", what, _WS.sub(" ", line_content.strip())


def fingerprint(
    file: str | None, rule: str | None, message: str, line_content: str = "", occurrence: int = 1
) -> str:
    """Stable identity of a finding across pushes.

    Hash of (file, rule or normalised message, normalised line content), and the finding's
    ``occurrence`` among the findings of that file, rule and line text from the second on (a
    line with two secrets, two lines reading ``breakpoint()``: ``fill_fingerprints`` numbers
    them by the file's lines that read the same; the first keeps the identity it has alone).
    Line numbers are left out on purpose: a finding keeps its identity when lines above it
    move.
    """
    file, what, content = _identity(file, rule, message, line_content)
    if occurrence > 1:
        content += f"\0{occurrence}"
    digest: str = _HASHLIB().sha256("\0".join((file, what, content)).encode("utf-8")).hexdigest()
    return digest[:16]


class Finding(NamedTuple):
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    end_line: int | None = None
    suggestion: str | None = None
    rule: str | None = None
    fingerprint: str = ""
    occurrence: int = 1
    """Which finding of its file, rule and line text this is, in line order (a line can hold
    two secrets, two lines can read the same), counting the copies of its line above it in the
    file: 1 for the first, which is all but always the only one; part of the fingerprint from
    2 on (``fill_fingerprints`` numbers them)."""

    def with_fingerprint(self, line_content: str = "") -> Finding:
        """This finding with its fingerprint computed (kept when already set)."""
        if self.fingerprint:
            return self
        return self._replace(
            fingerprint=fingerprint(
                self.file, self.rule, self.message, line_content, self.occurrence
            )
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"severity": self.severity.value, "message": self.message}
        for key, attr in (
            ("file", "file"),
            ("line", "line"),
            ("endLine", "end_line"),
            ("suggestion", "suggestion"),
            ("rule", "rule"),
        ):
            value = getattr(self, attr)
            if value is not None:
                data[key] = value
        data["fingerprint"] = self.fingerprint
        if self.occurrence > 1:
            data["occurrence"] = self.occurrence
        return data


LineLookup = Callable[[str, int], "str | None"]
"""``(file, line) -> content of that line`` (None when unknown); feeds fingerprints."""


class FileLines:
    """A ``LineLookup`` over whole files, each read once by ``read`` (``file -> its lines``, []
    when it cannot be read); ``fill_fingerprints`` takes a file's lines from it at once where it
    counts a line's copies (a lookup per line costs more than the scan, issue 20)."""

    __slots__ = ("_files", "_read")

    def __init__(self, read: Callable[[str], list[str]]) -> None:
        self._read = read
        self._files: dict[str, list[str]] = {}

    def lines(self, file: str) -> list[str]:
        found = self._files.get(file)
        if found is None:
            found = self._files[file] = self._read(file)
        return found

    def __call__(self, file: str, line: int) -> str | None:
        lines = self.lines(file)
        return lines[line - 1] if 0 < line <= len(lines) else None


def fill_fingerprints(
    findings: Iterable[Finding], line_content: LineLookup | None = None
) -> tuple[Finding, ...]:
    """Every finding with its fingerprint set; line content comes from ``line_content``.

    Findings of one file and rule whose lines read the same (two lines reading
    ``breakpoint()``, two secrets on a line) are told apart by ``occurrence``
    (``number_repeats``), as code scanning's ``primaryLocationLineHash`` numbers a line's text
    among the file's identical lines: the first copy of a line in the file keeps the
    fingerprint it has alone (so does a baseline entry recorded for it), a later copy is
    numbered by the copies above it whatever else is reviewed, and each keeps its identity when
    unrelated lines move."""
    items = list(findings)
    texts: list[str | None] = []
    for finding in items:
        text = None
        if line_content is not None and finding.file and finding.line:
            text = line_content(finding.file, finding.line)
        texts.append(text)
    numbered = number_repeats(items, texts, line_content)
    return tuple(f.with_fingerprint(t or "") for f, t in zip(numbered, texts, strict=True))


def number_repeats(
    findings: list[Finding],
    contents: list[str | None],
    line_content: LineLookup | None = None,
) -> list[Finding]:
    """``findings`` (``contents``: the text of each one's line, None when unknown) with the
    ``occurrence`` of each one yet to be fingerprinted that is on a line of a file, among those
    sharing its file, rule and line text.

    A finding whose line ``line_content`` reads (the file at the reviewed head) is numbered by
    that file's lines: on the first line of the file that reads as its line does (whitespace
    normalised, as the fingerprint reads it) it keeps its number along the line (1, or 2 for a
    line's second secret of a rule); on the r-th such line, the m findings of its rule there are
    numbered after the (r - 1) * m of the copies above it, whether or not those are reviewed
    (a second ``breakpoint()`` added below a baselined one is 2, not the baselined 1). Numbers
    already given that way are kept (they never start at 1 below the first copy), so filling
    again what acceptance left gives the same fingerprints.

    A finding whose line text is unknown (no line lookup, a file that is not there) is numbered
    among the given findings, as before: a group already numbered (no two alike, as in a subset
    of findings numbered before) keeps its numbers, so a finding's fingerprint does not depend
    on which others are still reported; otherwise it is numbered 1, 2, … by line, then by its
    number."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    on_lines: dict[tuple[tuple[str, str, str], int], list[int]] = {}
    for index, (finding, content) in enumerate(zip(findings, contents, strict=True)):
        if finding.fingerprint or not finding.file or not finding.line:
            continue  # a finding without a line is one per file and rule (decisions: findings)
        key = _identity(finding.file, finding.rule, finding.message, content or "")
        if content is None or line_content is None:
            groups.setdefault(key, []).append(index)
        else:
            on_lines.setdefault((key, finding.line), []).append(index)
    numbered = list(findings)
    for members in groups.values():
        if len({findings[i].occurrence for i in members}) == len(members):
            continue
        in_order = sorted(members, key=lambda i: (findings[i].line or 0, findings[i].occurrence))
        for occurrence, index in enumerate(in_order, start=1):
            numbered[index] = findings[index]._replace(occurrence=occurrence)
    if on_lines and line_content is not None:
        copies = _copies_above(on_lines, line_content)
        for (key, line), members in on_lines.items():
            along = sorted(members, key=lambda i: (findings[i].occurrence, i))
            numbers = [findings[i].occurrence for i in along]
            if len(set(numbers)) != len(numbers):
                numbers = list(range(1, len(along) + 1))  # numbered along the line
            above = copies[key[0], line, key[2]] - 1
            if above and numbers == list(range(1, len(along) + 1)):
                numbers = [above * len(along) + n for n in numbers]
            for index, occurrence in zip(along, numbers, strict=True):
                numbered[index] = numbered[index]._replace(occurrence=occurrence)
    return numbered


def _copies_above(
    on_lines: dict[tuple[tuple[str, str, str], int], list[int]], line_content: LineLookup
) -> dict[tuple[str, int, str], int]:
    """For each (file, line, normalised text) of ``on_lines``: how many lines of the file up to
    that line (itself included) read the same, whitespace normalised (1: it is the first)."""
    wanted: dict[str, dict[int, str]] = {}
    for (file, _what, text), line in on_lines:
        wanted.setdefault(file, {})[line] = text
    counts: dict[tuple[str, int, str], int] = {}
    for file, lines in wanted.items():
        texts = set(lines.values())
        seen = dict.fromkeys(texts, 0)
        last = max(lines)
        scanned: Iterable[str | None] = (
            line_content.lines(file)[:last]
            if isinstance(line_content, FileLines)
            else (line_content(file, number) for number in range(1, last + 1))
        )
        # a line is normalised only when it could read as one of them: it holds the first word
        words = tuple({text.split(" ", 1)[0] for text in texts})
        word = words[0] if len(words) == 1 else None
        for number, raw in enumerate(scanned, start=1):
            if raw is None or (
                word not in raw if word is not None else not any(w in raw for w in words)
            ):
                continue
            text = _WS.sub(" ", raw.strip())
            if text in seen:
                seen[text] += 1
            if number in lines:
                counts[file, number, lines[number]] = seen[lines[number]]
    return counts


ACCEPTED_BY = ("marker", "config", "baseline")
"""How a finding can be accepted (docs/review.md, "Accepting a finding"): an inline marker on
its line, the ``review:`` settings of ``.flow/``, or a baseline file."""
DEFAULT_BASELINE = ".agent-review-baseline.json"
"""The baseline file a review reads when it exists, at the top of the work tree (``baseline.py``;
here so that a review can look for it without importing the JSON modules that read it)."""


class Accepted(NamedTuple):
    """A finding someone accepted: counted and shown, never part of the gate. ``by`` is one of
    ``ACCEPTED_BY``; ``why`` says which marker, setting or file, in words."""

    finding: Finding
    by: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.finding.to_dict(), "accepted": {"by": self.by, "why": self.why}}


class Review(NamedTuple):
    """One reviewer's result. ``overall`` is None when no verdict could be established;
    ``reason`` then says why (missing marker, contradiction with the findings, parse error)."""

    overall: Overall | None
    summary: str = ""
    findings: tuple[Finding, ...] = ()
    reviewed_sha: str | None = None
    base_sha: str | None = None
    unreviewed_files: tuple[str, ...] = ()
    run: dict[str, Any] = {}  # noqa: RUF012 - never changed in place (redact_review copies)
    reason: str = ""
    accepted: tuple[Accepted, ...] = ()
    """Findings accepted by a marker, a setting or the baseline: not in ``findings``."""
    excluded_files: int = 0
    """How many changed files ``review.exclude`` kept out of the review."""
    kind: str = ""
    """``incremental`` or ``full`` (docs/review.md, "Incremental review"); "" where no kind
    was decided (a chain reviewer's own result.json)."""
    kind_reason: str = ""
    """Why that kind ran: "incremental: since abc123 …", "full: …"."""
    scope_digest: str = ""
    """An agent reviewer's ``reviewer/incremental.scope_digest``: what chose the files it
    reviewed, recorded with its open findings (the note, the Action's state) for the next,
    incremental review; not an output ("" for every other review)."""
    outcome: str = ""
    """Set when the reviewer did not complete, so there is no verdict: how its agent run ended
    (``budget``, ``failed``, ``stuck``, ``timeout``, ``canceled``, ``crashed``, ``rate_limited``;
    ``error`` for anything else), ``reason`` saying why (docs/review.md, "A review that did not
    complete"); "" for a review that ran to its end, whatever its verdict."""

    def to_dict(self) -> dict[str, Any]:
        kind = {"kind": self.kind, "kindReason": self.kind_reason} if self.kind else {}
        stopped = {"outcome": self.outcome} if self.outcome else {}
        return {
            "overall": self.overall.value if self.overall else None,
            "summary": self.summary,
            "findings": [f.to_dict() for f in self.findings],
            "reviewedSha": self.reviewed_sha,
            "baseSha": self.base_sha,
            "unreviewedFiles": list(self.unreviewed_files),
            "run": dict(self.run),
            "reason": self.reason,
            "accepted": [a.to_dict() for a in self.accepted],
            "excludedFiles": self.excluded_files,
            **kind,
            **stopped,
        }


_OVERALL_WORDS = {
    "approve": Overall.APPROVE,
    "approved": Overall.APPROVE,
    "revise": Overall.REVISE,
    "changes_requested": Overall.REVISE,
}


def suggestion_replacement(finding: Finding) -> str | None:
    """The replacement text when the suggestion is a GitHub-style fenced ```suggestion block
    (replacing lines ``line``..``end_line``); None when it is prose advice."""
    text = (finding.suggestion or "").strip("\n")
    match = re.fullmatch(r"\s*(`{3,}|~{3,})suggestion[ \t]*\n(.*?)\n?[ \t]*\1\s*", text, re.DOTALL)
    if match is None or finding.line is None:
        return None
    return match.group(2) + "\n" if match.group(2) else ""


def _key(data: dict[str, Any], camel: str, snake: str, where: str = "") -> str:
    """The key ``data`` spells a field with: camelCase (what we write), else snake_case (what
    DESIGN.md's findings shape and an agent's report may use); camelCase when neither is there.
    Both, with different values, is a ValueError: which one counts would be a guess."""
    if camel in data and snake in data and data[camel] != data[snake]:
        raise ValueError(f"{where}{camel} and {where}{snake} disagree; give one")
    return snake if camel not in data and snake in data else camel


def finding_from_dict(data: Any, where: str = "finding") -> Finding:
    """One finding from its JSON shape (docs/protocol.md, Findings: ``endLine`` or
    ``end_line``); ValueError naming the bad key."""
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
    end_key = _key(data, "endLine", "end_line", f"{where}.")
    for attr, key in (("line", "line"), ("end_line", end_key)):
        value = data.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(f"{where}.{key}: expected a line number >= 1, got {value!r}")
        values[attr] = value
    if values["line"] is None and values["end_line"] is not None:
        raise ValueError(f"{where}.{end_key}: given without line")
    if values["end_line"] is not None and values["end_line"] < values["line"]:
        raise ValueError(f"{where}.{end_key}: {values['end_line']} is before line {values['line']}")
    occurrence = data.get("occurrence", 1)
    if isinstance(occurrence, bool) or not isinstance(occurrence, int) or occurrence < 1:
        raise ValueError(f"{where}.occurrence: expected a number >= 1, got {occurrence!r}")
    return Finding(
        severity=severity,
        message=message.strip(),
        file=values["file"],
        line=values["line"],
        end_line=values["end_line"],
        suggestion=values["suggestion"],
        rule=values["rule"],
        fingerprint=values["fingerprint"] or "",
        occurrence=occurrence,
    )


def accepted_from_dict(data: Any, where: str) -> Accepted:
    """One accepted finding from its JSON shape (``Accepted.to_dict``); ValueError naming the
    bad key."""
    finding = finding_from_dict(data, where)
    how = data.get("accepted")
    if not isinstance(how, dict) or how.get("by") not in ACCEPTED_BY:
        raise ValueError(f"{where}.accepted.by: expected one of {', '.join(ACCEPTED_BY)}")
    why = how.get("why")
    if not isinstance(why, str):
        raise ValueError(f"{where}.accepted.why: expected a string")
    return Accepted(finding, str(how["by"]), why)


def review_from_dict(data: Any) -> Review:
    """A Review from its JSON shape (docs/protocol.md, Findings), as ``Review.to_dict`` writes
    it (camelCase; the snake_case spelling of each key is read too); fingerprints present in the
    data are kept. ValueError naming the bad key."""
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
    accepted_raw = data.get("accepted", [])
    if not isinstance(accepted_raw, list):
        raise ValueError("accepted: expected a list")
    accepted = tuple(
        accepted_from_dict(item, f"accepted[{index}]") for index, item in enumerate(accepted_raw)
    )
    unreviewed_key = _key(data, "unreviewedFiles", "unreviewed_files")
    unreviewed = data.get(unreviewed_key, [])
    if not isinstance(unreviewed, list) or not all(isinstance(f, str) for f in unreviewed):
        raise ValueError(f"{unreviewed_key}: expected a list of paths")
    summary = data.get("summary", "")
    if summary is not None and not isinstance(summary, str):
        raise ValueError("summary: expected a string")
    shas = {}
    for camel, snake in (("reviewedSha", "reviewed_sha"), ("baseSha", "base_sha")):
        key = _key(data, camel, snake)
        if data.get(key) is not None and not isinstance(data.get(key), str):
            raise ValueError(f"{key}: expected a commit id string")
        shas[snake] = data.get(key) or None
    run = data.get("run", {})
    kind = data.get("kind")
    if kind not in (None, "", "incremental", "full"):
        raise ValueError(f"kind: expected incremental or full, got {kind!r}")
    outcome = data.get("outcome")
    if outcome is not None and not isinstance(outcome, str):
        raise ValueError("outcome: expected a string")
    return Review(
        overall=overall,
        summary=summary or "",
        findings=findings,
        reviewed_sha=shas["reviewed_sha"],
        base_sha=shas["base_sha"],
        unreviewed_files=tuple(unreviewed),
        run=dict(run) if isinstance(run, dict) else {},
        reason=str(data.get("reason") or ""),
        accepted=accepted,
        excluded_files=_count(data.get(_key(data, "excludedFiles", "excluded_files"))),
        kind=str(kind or ""),
        kind_reason=str(data.get("kindReason") or "") if kind else "",
        outcome=outcome or "",
    )


def _count(value: Any) -> int:
    """A count read back leniently: 0 for anything but a whole number at least 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def same_commit(a: str, b: str) -> bool:
    """Full or abbreviated (>= 7 hex digits) ids naming the same commit."""
    a, b = a.strip().lower(), b.strip().lower()
    shorter = min(len(a), len(b))
    return shorter >= 7 and a[:shorter] == b[:shorter]
