"""Accepting findings the ways users already know (docs/review.md, "Accepting a finding"):
a layer over the builtin reviewer's finding list, leaving its rules alone.

In order, the first that applies accepts a finding:

1. a marker on its line (any comment syntax: the marker is just text on the line):
   ``agent-review: ignore[rule-id, ...]`` (bare ``agent-review: ignore``: every rule on the
   line); for the secret rules also gitleaks' ``gitleaks:allow`` and detect-secrets'
   ``pragma: allowlist secret``, or ``pragma: allowlist nextline secret`` on the line before;
2. the ``review:`` settings of ``.flow/base.yaml``: a rule with ``enabled: false``, a path
   under the rule's own ``exclude`` (a path under ``review.exclude`` is not reviewed at all:
   the builtin reviewer never reads it, so it has no finding to accept);
3. the baseline: the finding's fingerprint is recorded there.

Accepted findings leave the list the gate reads and are kept, with how and why, in
``Review.accepted``. A ``severity`` setting changes the severity of the findings that stay.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from gitflow_agents.base.lazy import Lazy
from gitflow_agents.base.records import NamedTuple
from gitflow_agents.findings.model import Accepted, Finding, Severity
from gitflow_agents.findings.settings import ReviewSettings

LineText = Callable[[str, int], "str | None"]
"""``(file, line) -> text of that line`` in the reviewed version (None: unknown)."""

NOT_SECRET_RULES = frozenset(
    {
        "python-syntax",
        "json-syntax",
        "yaml-syntax",
        "toml-syntax",
        "merge-conflict-marker",
        "bidi-control",
        "large-file",
        "debugger",
        "todo",
        "no-final-newline",
    }
)
"""The builtin rules that are not secret rules; every other rule id is one (so a token rule
added to the table is covered by the secret markers at once)."""

_GITLEAKS = Lazy(r"gitleaks:allow")  # compiled when a finding is checked (issue 20)
# detect-secrets' own spellings (its filters/allowlist.py): ``allowlist`` or the older
# ``whitelist``, a space or a dash; in any comment syntax, since the marker is just text here.
_PRAGMA = Lazy(r"pragma: ?(?:allow|white)list[ -]secret")
_PRAGMA_NEXT = Lazy(r"pragma: ?(?:allow|white)list[ -]nextline[ -]secret")
_IGNORE = Lazy(r"agent-review: ?ignore(?![\w-])(?:\[(?P<rules>[^\]]*)\])?")


def is_secret_rule(rule: str | None) -> bool:
    return rule is not None and rule not in NOT_SECRET_RULES


def marker_reason(finding: Finding, line_text: LineText) -> str | None:
    """Which marker on (or, for detect-secrets' nextline form, before) the finding's line
    accepts it; None when none does or the finding has no line."""
    if finding.file is None or finding.line is None:
        return None
    text = line_text(finding.file, finding.line) or ""
    for match in _IGNORE.finditer(text):
        listed = match.group("rules")
        if listed is None:
            return "agent-review: ignore on the line"
        if finding.rule in {part.strip() for part in listed.split(",")}:
            return f"agent-review: ignore[{listed.strip()}] on the line"
    if not is_secret_rule(finding.rule):
        return None
    if _GITLEAKS.search(text):
        return "gitleaks:allow on the line"
    pragma = _PRAGMA.search(text)
    if pragma:  # the marker as written: `whitelist` is detect-secrets' older spelling
        return f"{pragma.group(0)} on the line"
    before = line_text(finding.file, finding.line - 1) if finding.line > 1 else None
    pragma = _PRAGMA_NEXT.search(before) if before is not None else None
    if pragma:
        return f"{pragma.group(0)} on the line before"
    return None


def config_reason(finding: Finding, settings: ReviewSettings) -> str | None:
    """Which ``review:`` setting accepts the finding; None when none does."""
    rule = settings.rules.get(finding.rule or "")
    if rule is not None and not rule.enabled:
        return f"rule {finding.rule} is switched off ({rule.source})"
    if finding.file is None:
        return None
    for glob in rule.exclude if rule is not None else ():
        if glob.matches(finding.file):
            return (
                f"{finding.file} matches review.rules.{finding.rule}.exclude {glob.glob!r} "
                f"({glob.source})"
            )
    return None


class AcceptSplit(NamedTuple):
    """What acceptance leaves: the findings that stay, and those accepted."""

    findings: tuple[Finding, ...]
    accepted: tuple[Accepted, ...]


def accept(
    findings: Iterable[Finding],
    *,
    settings: ReviewSettings,
    line_text: LineText,
    baseline: Collection[str] = (),
    baseline_name: str = "",
) -> AcceptSplit:
    """``findings`` split into those that stay (with a ``severity`` setting applied) and those
    a marker, a setting or the ``baseline`` (fingerprints, read from ``baseline_name``)
    accepts."""
    kept: list[Finding] = []
    accepted: list[Accepted] = []
    for finding in findings:
        marker = marker_reason(finding, line_text)
        setting = None if marker else config_reason(finding, settings)
        if marker is not None:
            accepted.append(Accepted(finding, "marker", marker))
        elif setting is not None:
            accepted.append(Accepted(finding, "config", setting))
        elif finding.fingerprint and finding.fingerprint in baseline:
            accepted.append(Accepted(finding, "baseline", f"recorded in {baseline_name}"))
        else:
            kept.append(_with_severity(finding, settings))
    return AcceptSplit(tuple(kept), tuple(accepted))


def _with_severity(finding: Finding, settings: ReviewSettings) -> Finding:
    rule = settings.rules.get(finding.rule or "")
    if rule is None or rule.severity is None:
        return finding
    return finding._replace(severity=Severity(rule.severity))
