"""Secrets in text: masking what the builtin reviewer's secret rules find, in every output.

The rules are data: the token formats and private key formats in ``secret_rules.py``, the
secret-named literals in ``secret_keywords.py``; the builtin reviewer (``reviewer/checks.py``)
reports what they find, and the same rules mask it here. ``mask``
keeps a recognisable prefix of what they find; ``findings/redact.py`` puts every text of a
Review through the same rules (docs/security.md, "Secrets in review output"). Values are
masked, never file locations. Masking is idempotent: a masked value matches no rule again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gitflow_agents.base.lazy import Lazy
from gitflow_agents.base.records import TYPE_CHECKING
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
    key_body_pieces,
    may_begin_key,
    token_hits,
)

if TYPE_CHECKING:
    from typing import Any

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
        begin = PRIVATE_KEY.search(line)
        if begin:  # the body may follow on the line: a key in a string, its line ends escaped
            rest = line[begin.end() :]
            end = PRIVATE_KEY_END.search(rest)
            values.update(_body_values(rest[: end.start()] if end else rest))
            in_key = end is None
            continue
        if in_key:
            end = PRIVATE_KEY_END.search(line)
            values.update(_body_values(line[: end.start()] if end else line))
            in_key = end is None
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


def _body_values(text: str) -> set[str]:
    """The base64 runs of the body of a key block in ``text`` (a line, or its part inside the
    block), each piece between escaped line ends apart (``key_body_pieces``)."""
    return {value for piece in key_body_pieces(text) for value in KEY_BODY.findall(piece)}


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


# A file location in free text: a path with a folder or an extension, followed by ``:`` and
# its line (``src/app.py:12``, ``fixtures/ghp_…/settings.json:3:5``), where a path starts (after
# a space, a quote, a bracket, ``,`` or ``;``; never after ``=``, ``:`` or ``@``, so a value
# assigned or a URL's password is not one). Kept as written: masking masks values, never where
# they are. Found from each ``:<digit>`` backwards (most text has none: agent output streams
# through here).
_LOCATION_PATH = Lazy(r"/?(?:[\w.+-]+/)+[\w.+-]+|[\w.+-]*\.[A-Za-z]\w{0,9}")
_BEFORE_PATH = frozenset(" \t\n\r\f\v\"'`([<,;")


_COLON_DIGIT = Lazy(r":\d")


def _locations(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for found in _COLON_DIGIT.finditer(text):
        colon = start = found.start()
        while start and (text[start - 1].isalnum() or text[start - 1] in "_.+-/"):
            start -= 1
        if (
            start < colon
            and (start == 0 or text[start - 1] in _BEFORE_PATH)
            and _LOCATION_PATH.fullmatch(text, start, colon)
        ):
            spans.append((start, colon))
    return spans


def _kept_spans(text: str, keep: Iterable[str]) -> list[tuple[int, int]]:
    """The spans of ``text`` that are file locations: every ``path:line`` (``_locations``) and
    every occurrence of a path in ``keep`` that stands alone (not inside a longer word or
    path), merged and in order."""
    spans = _locations(text) if ":" in text else []
    for path in keep:
        if path and path in text:
            alone = re.compile(rf"(?<![\w./+-]){re.escape(path)}(?![\w/+-]|\.\w)")
            spans += [m.span() for m in alone.finditer(text)]
    if len(spans) < 2:
        return spans
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _redact(text: str, exact: list[str]) -> str:
    for value in exact:
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


def redact_text(text: str, secrets: Iterable[str] = (), *, keep: Iterable[str] = ()) -> str:
    """``text`` with every secret masked: the exact ``secrets`` (values the reviewed diff adds),
    private key bodies, known token formats, and secret-named literals (judged as in prose,
    where a bare value is a literal unless it is shaped like code: agents quote code in
    suggestions). File locations are left as written: every ``path:line``, and the paths in
    ``keep`` (the files a review names) wherever they stand alone."""
    exact = sorted({s for s in secrets if len(s) >= MIN_EXACT_LENGTH}, key=len, reverse=True)
    spans = _kept_spans(text, keep)
    if not spans:
        return _redact(text, exact)
    out: list[str] = []
    position = 0
    for start, end in spans:
        out += [_redact(text[position:start], exact), text[start:end]]
        position = end
    out.append(_redact(text[position:], exact))
    return "".join(out)


_MAX_DEPTH = 64


def _redact_data(value: Any, secrets: frozenset[str], keep: tuple[str, ...], depth: int = 0) -> Any:
    """Every string inside JSON-shaped ``value`` redacted (keys too); deeper than _MAX_DEPTH
    levels is dropped (None): nothing reads that deep, and nothing unmasked may pass."""
    if isinstance(value, str):
        return redact_text(value, secrets, keep=keep)
    if depth >= _MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        return None
    if isinstance(value, dict):
        return {
            redact_text(str(k), secrets, keep=keep): _redact_data(v, secrets, keep, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_redact_data(item, secrets, keep, depth + 1) for item in value]
    return value


def redact_data(value: Any, secrets: Iterable[str] = (), *, keep: Iterable[str] = ()) -> Any:
    """A JSON-shaped ``value`` (a run record) with every string in it redacted, keys too;
    ``keep``: file locations left as written (``redact_text``)."""
    return _redact_data(value, frozenset(secrets), tuple(keep))
