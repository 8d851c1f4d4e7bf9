"""Typed reads of record fields (``status.json``, ``result.json``, sessions), which an agent can
overwrite with anything: a field of the wrong type reads as absent, never as a crash.

``gitflow_agents/base/jsondata.py`` has already bounded nesting and numbers; these say what a field
must be for the code that uses it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
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
