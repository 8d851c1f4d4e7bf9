"""Typed reads of record fields (``status.json``, ``result.json``, sessions), which an agent can
overwrite with anything: a field of the wrong type reads as absent, never as a crash.

``gitflow_agents/base/jsondata.py`` has already bounded nesting and numbers; these say what a field
must be for the code that uses it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any


def mapping(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``data[key]`` when it is an object, else ``{}``."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def text(data: Mapping[str, Any], key: str) -> str | None:
    """``data[key]`` when it is a string, else None."""
    value = data.get(key)
    return value if isinstance(value, str) else None


def number(data: Mapping[str, Any], key: str) -> float | None:
    """``data[key]`` when it is a finite number (not a boolean), else None."""
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def integer(data: Mapping[str, Any], key: str) -> int | None:
    """``data[key]`` when it is an integer (not a boolean), else None."""
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def strings(data: Mapping[str, Any], key: str) -> list[str]:
    """The strings of the list ``data[key]`` (other items dropped); ``[]`` when not a list."""
    value = data.get(key)
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def scalar(data: Mapping[str, Any], key: str) -> Any:
    """``data[key]`` when it is a plain value (string, number, boolean), else None: for
    fields that are only shown."""
    value = data.get(key)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if isinstance(value, (str, int, float, bool)) else None


KINDS: dict[str, Callable[[Any], bool]] = {
    "a string": lambda value: isinstance(value, str),
    "a number": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    "an integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "a boolean": lambda value: isinstance(value, bool),
    "a list": lambda value: isinstance(value, list),
}
"""The kinds of value a ``mistyped`` shape names, by the words its message uses."""


def mistyped(data: Mapping[str, Any], shape: Mapping[str, Any], prefix: str = "") -> str | None:
    """The first key of ``data`` (in ``shape``'s order, depth first) whose value is not the
    kind ``shape`` gives it, as ``run.durationMs: expected a number, got a string``; None when
    none is. ``shape`` maps a key to a kind of ``KINDS`` or to the shape of the object it
    holds. A key that is missing or ``null`` is absent, never wrong: records of older versions
    lack keys, and the readers take absent as unknown."""
    for key, kind in shape.items():
        value, name = data.get(key), prefix + key
        if value is None:
            continue
        if isinstance(kind, Mapping):
            if not isinstance(value, dict):
                return f"{name}: expected an object, got {_kind_of(value)}"
            found = mistyped(value, kind, f"{name}.")
            if found is not None:
                return found
        elif not KINDS[kind](value):
            return f"{name}: expected {kind}, got {_kind_of(value)}"
    return None


def _kind_of(value: Any) -> str:
    """A JSON value's kind in ``mistyped``'s words."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, float):
        return "a number"
    return next(kind for kind, test in KINDS.items() if test(value))
