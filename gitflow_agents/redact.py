"""Secrets in text: the patterns the builtin reviewer reports, and masking them in every output.

The builtin reviewer's secret rules (``reviewer/checks.py``) find private keys, known token
formats (AWS, GitHub, Slack) and secret-named assignments of a high-entropy value; ``mask``
keeps a recognisable prefix of what they find. ``redact_review`` puts every text of a Review
(an agent reviewer's above all: messages, suggestions, rules, summary, reasons, run data) through
the same rules, and masks the exact values of the secrets the reviewed diff adds wherever they
are quoted, before anything is printed, written or posted (docs/security.md, "Secrets in review
output"). Masking is idempotent: a masked value matches no rule again.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitflow_agents.findings import Finding, Review

PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
PRIVATE_KEY_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# (rule id, label, pattern whose group 1 is the token)
TOKENS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    (
        "aws-access-key",
        "AWS access key id",
        re.compile(r"\b((?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16})\b"),
    ),
    ("github-token", "GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{36,255})\b")),
    (
        "github-token",
        "GitHub fine-grained token",
        re.compile(r"\b(github_pat_[A-Za-z0-9_]{22,255})\b"),
    ),
    ("slack-token", "Slack token", re.compile(r"\b(xox[abprs]-[A-Za-z0-9-]{10,})")),
)
# ``name = value`` where the name is a whole run of name characters (the lookbehind) that holds
# a secret word (``_SECRET_NAME``, checked apart): one greedy run and no nested repetition, so
# long runs of letters cost linear time.
ASSIGNMENT = re.compile(
    r"""(?ix)
    (?<![a-z0-9_.-])
    (?P<name>[a-z0-9_.-]+)
    ["']?\s*(?::=|=>|[:=])\s*
    (?P<quote>["'`]?)(?P<value>[^\s"'`,;)]+)(?P=quote)
    """
)
_SECRET_NAME = re.compile(
    r"secret|passw(?:or)?d|pwd|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|"
    r"client[_-]?secret|private[_-]?key|credential",
    re.I,
)
_PLACEHOLDER = re.compile(
    r"^(?:\$\{?|<|%\(|\{\{|os\.|env\.|process\.env|getenv|xxx|\*\*\*|changeme)", re.I
)
# Files where an unquoted value is a literal string, not a name: .env files, shell scripts,
# Dockerfiles, YAML, INI-style and TOML configuration, .npmrc / .pypirc.
_CONFIG_FILE = re.compile(
    r"""(?ix)(?:^|/)(?:
        \.env(?:\.[^/]*)?|[^/]*\.env|\.envrc|\.npmrc|\.pypirc|\.netrc|
        (?:[^/]*\.)?dockerfile|dockerfile\.[^/]*|containerfile|
        [^/]*\.(?:sh|bash|zsh|ksh|ya?ml|ini|cfg|conf|toml|properties)
    )$"""
)
# Unquoted values that are not secrets however random they look: URLs, absolute or home or
# relative paths, and words (letters, then digits) joined by - _ . (names like deploy-bot2).
_URL_OR_PATH = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|/|~|\.\.?/)|^[a-z0-9._-]+(?:/[a-z0-9._-]+)+$")
_WORDS = re.compile(r"^[A-Za-z]+\d*(?:[-_.][A-Za-z]+\d*)*$")
KEY_BODY = re.compile(r"[A-Za-z0-9+/=]{16,}")

MIN_SECRET_LENGTH = 16
ENTROPY_THRESHOLD = 3.5  # bits per character
MIN_EXACT_LENGTH = 8
"""Shorter values from the diff are not masked by value (they would mask ordinary words)."""


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts: dict[str, int] = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values()) if n else 0.0


def mask(secret: str) -> str:
    """A recognisable but useless prefix: ``AKIA****************`` style, never the whole value."""
    keep = min(4, len(secret) // 4)
    return secret[:keep] + "*" * min(len(secret) - keep, 12) + f" ({len(secret)} chars)"


def is_config_file(path: str) -> bool:
    """A file where an unquoted ``KEY=value`` is a literal string (.env, shell, YAML, …)."""
    return bool(_CONFIG_FILE.search(path))


def _plain_literal(value: str) -> bool:
    """An unquoted config value that is a URL, a path or words, not a credential."""
    return bool(_URL_OR_PATH.match(value) or _WORDS.match(value))


# A call or an attribute chain (settings.API_TOKEN, vault.get(…)): code in a suggestion, not a
# secret, even in prose.
_CALL_OR_ATTRIBUTE = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(.*)?|\(.*)"
)


# Identifiers, attribute chains and calls (settings.API_TOKEN, get_token()) are not secrets.
_CODE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(.*)?")


def _looks_like_code(value: str) -> bool:
    return bool(_CODE.fullmatch(value))


# Cheap tests that rule a rule out before its regex scans the text (the scans cost ~10 MB/s;
# agent output streams through here, and every line the builtin reviewer checks): every token
# starts with one of these literals, and every secret name holds one of these words
# (``_SECRET_NAME``, letter case aside).
_TOKEN_START = re.compile(r"A(?:KIA|SIA|GPA|IDA|ROA)|g(?:h[pousr]_|ithub_pat_)|xox[abprs]-")
_NAME_WORDS = ("secret", "passw", "pwd", "token", "api", "access", "auth", "private", "credential")


def _may_assign(text: str) -> bool:
    """False only when no secret-named assignment can be in ``text``. Exact for ASCII text;
    other text is always scanned (case-insensitive matching knows more letters than lower())."""
    if "=" not in text and ":" not in text:
        return False
    if not text.isascii():
        return True
    lowered = text.lower()
    return any(word in lowered for word in _NAME_WORDS)


def token_hits(text: str) -> Iterator[tuple[str, str, str]]:
    """(rule, label, token) for every known token format in ``text``."""
    if not _TOKEN_START.search(text):
        return
    for rule, label, pattern in TOKENS:
        for match in pattern.finditer(text):
            token = match.group(1)
            if "EXAMPLE" not in token:  # AWS documentation's AKIAIOSFODNN7EXAMPLE
                yield rule, label, token


def assignment_hits(
    text: str,
    *,
    config: bool,
    min_length: int = MIN_SECRET_LENGTH,
    entropy_threshold: float = ENTROPY_THRESHOLD,
) -> Iterator[re.Match[str]]:
    """Secret-named assignments of a high-entropy literal (groups ``name`` and ``value``):
    quoted anywhere; unquoted in configuration files (``config``), where a bare value is a
    string, unless it is a URL, a path or words; unquoted elsewhere unless it looks like code."""
    if not _may_assign(text):
        return
    for match in ASSIGNMENT.finditer(text):
        value = match.group("value")
        unquoted = not match.group("quote")
        if (
            not _SECRET_NAME.search(match.group("name"))
            or len(value) < min_length
            or _PLACEHOLDER.match(value)
            or (unquoted and config and _plain_literal(value))
            or (unquoted and not config and _looks_like_code(value))
            or entropy(value) < entropy_threshold
        ):
            continue
        yield match


def secret_values(
    lines: Iterable[str],
    *,
    config: bool,
    min_length: int = MIN_SECRET_LENGTH,
    entropy_threshold: float = ENTROPY_THRESHOLD,
) -> set[str]:
    """The exact secret values in ``lines`` (one file's added lines): tokens, assigned values
    and the body lines of a private key block."""
    values: set[str] = set()
    in_key = False
    for line in lines:
        if PRIVATE_KEY.search(line):
            in_key = True
            continue
        if in_key:
            if PRIVATE_KEY_END.search(line):
                in_key = False
            else:
                values.update(KEY_BODY.findall(line))
            continue
        values.update(token for _, _, token in token_hits(line))
        for match in assignment_hits(
            line, config=config, min_length=min_length, entropy_threshold=entropy_threshold
        ):
            values.add(match.group("value"))
    return values


def _mask_key_bodies(text: str) -> str:
    """The base64 body of every private key block quoted in ``text`` masked (to its END line,
    or to the end of the text)."""
    out: list[str] = []
    position = 0
    for begin in PRIVATE_KEY.finditer(text):
        if begin.start() < position:
            continue
        end = PRIVATE_KEY_END.search(text, begin.end())
        stop = end.start() if end else len(text)
        out += [text[position : begin.end()], KEY_BODY.sub("[masked]", text[begin.end() : stop])]
        position = stop
    return "".join(out) + text[position:] if out else text


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret masked: the exact ``secrets`` (values the reviewed diff adds),
    private key bodies, known token formats, and secret-named assignments of a high-entropy
    value (judged as in a configuration file, where a bare value is a literal, except that a
    call or attribute chain is code: agents quote code in suggestions)."""
    for value in sorted({s for s in secrets if len(s) >= MIN_EXACT_LENGTH}, key=len, reverse=True):
        if value in text:
            text = text.replace(value, mask(value))
    if "PRIVATE KEY" in text:
        text = _mask_key_bodies(text)
    for _, _, token in token_hits(text):
        text = text.replace(token, mask(token))
    spans = [
        m.span("value")
        for m in assignment_hits(text, config=True)
        if m.group("quote") or not _CALL_OR_ATTRIBUTE.fullmatch(m.group("value"))
    ]
    for start, end in reversed(spans):
        text = text[:start] + mask(text[start:end]) + text[end:]
    return text


_MAX_DEPTH = 64


def _redact_data(value: Any, secrets: frozenset[str], depth: int = 0) -> Any:
    """Every string inside JSON-shaped ``value`` redacted (keys too); deeper than _MAX_DEPTH
    levels is dropped (None): nothing reads that deep, and nothing unmasked may pass."""
    if isinstance(value, str):
        return redact_text(value, secrets)
    if depth >= _MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        return None
    if isinstance(value, dict):
        return {
            redact_text(str(k), secrets): _redact_data(v, secrets, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_redact_data(item, secrets, depth + 1) for item in value]
    return value


def redact_data(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A JSON-shaped ``value`` (a run record) with every string in it redacted, keys too."""
    return _redact_data(value, frozenset(secrets))


def _redact_optional(text: str | None, secrets: frozenset[str]) -> str | None:
    return None if text is None else redact_text(text, secrets)


def redact_finding(finding: Finding, secrets: Iterable[str] = ()) -> Finding:
    """``finding`` with its texts (message, suggestion, rule, file) redacted."""
    known = frozenset(secrets)
    return dataclasses.replace(
        finding,
        message=redact_text(finding.message, known),
        suggestion=_redact_optional(finding.suggestion, known),
        rule=_redact_optional(finding.rule, known),
        file=_redact_optional(finding.file, known),
    )


def redact_review(review: Review, secrets: Iterable[str] = ()) -> Review:
    """``review`` with every text in it redacted (``redact_text``): the single step between a
    reviewer's report and any output. ``secrets``: the exact values the reviewed diff adds."""
    known = frozenset(secrets)
    run = _redact_data(dict(review.run), known)
    return dataclasses.replace(
        review,
        summary=redact_text(review.summary, known),
        findings=tuple(redact_finding(f, known) for f in review.findings),
        accepted=tuple(
            dataclasses.replace(
                a, finding=redact_finding(a.finding, known), why=redact_text(a.why, known)
            )
            for a in review.accepted
        ),
        reviewed_sha=_redact_optional(review.reviewed_sha, known),
        base_sha=_redact_optional(review.base_sha, known),
        unreviewed_files=tuple(redact_text(path, known) for path in review.unreviewed_files),
        run=run if isinstance(run, dict) else {},
        reason=redact_text(review.reason, known),
    )
