"""JSON the tool did not write itself (run records an agent can overwrite, webhook payloads,
findings files, git notes), read into plain, bounded values.

``json.loads`` alone lets through what later breaks: nesting deep enough to exhaust the
recursion limit, ``NaN`` / ``Infinity`` and ``1e999`` (infinite floats), integers too large to
be a float, and lone surrogates (``"\\ud800"``), which cannot be encoded as UTF-8 for printing
or writing. Here nesting over :data:`MAX_DEPTH` and non-finite or out-of-range numbers are a
:class:`JsonProblem`; lone surrogates become U+FFFD. docs/security.md, "Bounds".
"""

from __future__ import annotations

import json
import math
import re

from gitflow_agents.base.errors import TextProblem
from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 64
"""Arrays and objects nested deeper than this are refused."""
MAX_INT = 2**63
"""Integers beyond ±2**63 are refused: no record field needs them, and float() of a
much larger one overflows."""

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class JsonProblem(TextProblem, ValueError):
    """Why a JSON text cannot be used; ``line`` / ``column`` 1-based where known."""


def _constant(name: str) -> Any:
    raise JsonProblem(f"{name} is not a number JSON allows")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonProblem(f"number {text[:40]} is out of range")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 19:  # cheaper than int() of a 4,000-digit number
        raise JsonProblem(f"integer {text[:40]}... is out of range")
    value = int(text)
    if abs(value) > MAX_INT:
        raise JsonProblem(f"integer {text} is out of range")
    return value


def _check_depth(data: Any) -> None:
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            raise JsonProblem(f"nested more than {MAX_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in children)


def _clean(value: Any) -> Any:
    """``value`` with lone surrogates in every string (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_clean(item) for item in value]
    if isinstance(value, dict):
        return {_clean(key): _clean(item) for key, item in value.items()}
    return value


def loads(text: str | bytes) -> Any:
    """The JSON value of ``text`` (bytes must be UTF-8); JsonProblem for anything malformed."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JsonProblem(f"not valid UTF-8 (byte 0x{text[exc.start]:02x})") from None
    try:
        data = json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except json.JSONDecodeError as exc:
        raise JsonProblem(f"not valid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except JsonProblem:
        raise
    except RecursionError:
        raise JsonProblem(f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:
        raise JsonProblem(str(exc).splitlines()[0]) from None
    _check_depth(data)
    if _ESCAPED_SURROGATE.search(text) or _SURROGATE.search(text):
        data = _clean(data)
    return data


def load_object(text: str | bytes) -> dict[str, Any]:
    """Like :func:`loads`, for a text that must hold a JSON object."""
    data = loads(text)
    if not isinstance(data, dict):
        raise JsonProblem(f"expected a JSON object, got {kind(data)}")
    return data


def kind(value: Any) -> str:
    """``an object``, ``a list``, ``a string``… for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"
