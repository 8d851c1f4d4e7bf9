"""Secrets in text: masking what the builtin reviewer's secret rules find, in every output.

The rules are data: the token formats and private key formats in ``secret_rules.py``, the
secret-named literals in ``secret_keywords.py``; the builtin reviewer (``reviewer/checks.py``)
reports what they find, and the same rules mask it here. ``mask``
keeps a recognisable prefix of what they find; ``redact_text`` and ``redact_data`` mask a text
and a JSON-shaped value, and the exact values of the secrets a reviewed diff adds wherever they
are quoted (``findings/redact.py`` applies them to every text of a Review). Masking is
idempotent: a masked value matches no rule again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gitflow_agents.base.secret_keywords import (
    ENTROPY_THRESHOLD,
    MIN_LENGTH,
    char_quote_file,
    file_kind,
    keyword_hits,
)
from gitflow_agents.base.secret_rules import (
    KEY_BODY,
    PRIVATE_KEY,
    PRIVATE_KEY_END,
    may_begin_key,
    token_hits,
)

__all__ = [
    "mask",
    "redact_data",
    "redact_text",
    "secret_values",
]

MIN_EXACT_LENGTH = 8
"""Shorter values from the diff are not masked by value (they would mask ordinary words)."""


def mask(secret: str) -> str:
    """A recognisable but useless prefix: ``AKIA****************`` style, never the whole value."""
    keep = min(4, len(secret) // 4)
    return secret[:keep] + "*" * min(len(secret) - keep, 12) + f" ({len(secret)} chars)"


def secret_values(
    lines: Iterable[str],
    path: str,
    *,
    min_length: int = MIN_LENGTH,
    entropy_threshold: float = ENTROPY_THRESHOLD,
) -> set[str]:
    """The exact secret values in ``lines`` (the added lines of the file ``path``): tokens,
    secret-named literals and the body lines of a private key block."""
    values: set[str] = set()
    kind, char_quotes = file_kind(path), char_quote_file(path)
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
        values.update(token for _, token in token_hits(line))
        values.update(
            hit.value
            for hit in keyword_hits(
                line,
                kind=kind,
                char_quotes=char_quotes,
                min_length=min_length,
                entropy_threshold=entropy_threshold,
            )
        )
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
    private key bodies, known token formats, and secret-named literals (judged as in prose,
    where a bare value is a literal unless it is shaped like code: agents quote code in
    suggestions)."""
    for value in sorted({s for s in secrets if len(s) >= MIN_EXACT_LENGTH}, key=len, reverse=True):
        if value in text:
            text = text.replace(value, mask(value))
    if may_begin_key(text):
        text = _mask_key_bodies(text)
    for _, token in token_hits(text):
        text = text.replace(token, mask(token))
    spans = sorted((hit.start, hit.end) for hit in keyword_hits(text, kind="other"))
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
