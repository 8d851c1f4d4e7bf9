"""Checking one layer's Node tree against the declared shape (``shape.TOP``), with file:line
messages and did-you-mean hints, and merging checked layers.

Merge rules: mappings merge key by key, lists concatenate (duplicate strings dropped), anything
else is replaced by the later layer; a ``command`` argv is replaced whole.
"""

from __future__ import annotations

import difflib
import math
import re
import shlex
from collections.abc import Iterator, Mapping

from gitflow_agents.base.errors import ConfigError
from gitflow_agents.config.spec import (
    HINTS,
    AnyMap,
    Bool,
    Command,
    Int,
    MapOf,
    Num,
    Obj,
    Spec,
    Str,
    StrList,
)
from gitflow_agents.config.yaml_nodes import Node, join, kind


def check(node: Node, spec: Spec, keypath: str) -> None:
    """Raise ConfigError (file:line: key: message) unless ``node`` fits ``spec`` (the first
    problem; ``problems`` finds them all)."""
    for problem in problems(node, spec, keypath):
        raise problem


def problems(node: Node, spec: Spec, keypath: str) -> Iterator[ConfigError]:
    """Every place where ``node`` does not fit ``spec``, in file order (a value of the wrong
    kind is one problem: what is inside it is not looked at)."""
    value = node.value
    if isinstance(spec, Obj):
        if not isinstance(value, dict):
            yield node.error(keypath, f"expected a mapping, got {kind(value)}")
            return
        for key, child in value.items():
            sub = spec.fields.get(key)
            if sub is None:
                yield child.error(join(keypath, key), _unknown_key(key, spec.fields))
            else:
                yield from problems(child, sub, join(keypath, key))
    elif isinstance(spec, MapOf):
        if not isinstance(value, dict):
            yield node.error(keypath, f"expected a mapping of names, got {kind(value)}")
            return
        for key, child in value.items():
            if not re.fullmatch(spec.key_pattern, key):
                yield child.error(join(keypath, key), f"invalid name: {spec.key_what}")
            yield from problems(child, spec.item, join(keypath, key))
    elif isinstance(spec, StrList):
        yield from _str_list(node, spec, keypath)
    elif isinstance(spec, Command):
        yield from _command(node, keypath)
    else:
        problem = _scalar(node, spec, keypath)
        if problem is not None:
            yield problem


def _scalar(node: Node, spec: Spec, keypath: str) -> ConfigError | None:
    value = node.value
    if isinstance(spec, Str):
        if value is None and spec.nullable:
            return None
        if not isinstance(value, str):
            hint = f"; {spec.hint}" if spec.hint else ""
            return node.error(keypath, f"expected a string, got {kind(value)}{hint}")
        if not value.strip():
            return node.error(keypath, "must not be empty")
        choices = spec.allowed()
        if choices and value not in choices:
            return node.error(keypath, f"expected one of {', '.join(choices)}, got {value!r}")
    elif isinstance(spec, Int):
        if not isinstance(value, int) or isinstance(value, bool):
            if isinstance(value, float):  # .nan, .inf, 1.5: say which
                return node.error(keypath, f"expected {spec.what}, got {value!r}")
            shown = _as_text(value, whole=True)
            return node.error(keypath, f"expected {spec.what}, got {kind(value)}{shown}")
        if value < spec.minimum:
            return node.error(keypath, f"must be at least {spec.minimum}, got {_shown(value)}")
        if value > spec.maximum:
            return node.error(keypath, f"must be at most {spec.maximum}, got {_shown(value)}")
    elif isinstance(spec, Num):
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number:
            return node.error(keypath, f"expected a number, got {kind(value)}{_as_text(value)}")
        # an int is never converted: one too large for a float (10**400) is only compared
        if isinstance(value, float) and not math.isfinite(value):
            return node.error(keypath, f"expected a finite number, got {value}")
        if value < 0:
            return node.error(keypath, f"must be at least 0, got {_shown(value)}")
        if value > spec.maximum:
            return node.error(keypath, f"must be at most {spec.maximum}, got {_shown(value)}")
    elif isinstance(spec, Bool):
        if not isinstance(value, bool):
            return node.error(keypath, f"expected true or false, got {kind(value)}")
    elif isinstance(spec, AnyMap) and not isinstance(value, dict):
        return node.error(keypath, f"expected a mapping, got {kind(value)}")
    return None


def _shown(value: float) -> str:
    """A number the user wrote, at most 20 characters of it (then "…"), as a step number is
    shown: a 400-digit one would fill the screen."""
    try:
        text = str(value)
    except ValueError:  # an int over Python's 4,300-digit limit (the YAML reader refuses it)
        return "a number of over 4300 digits"
    return text if len(text) <= 20 else text[:20] + "…"


def _as_text(value: object, *, whole: bool = False) -> str:
    """Why a number the user wrote is a string, when the string reads as a number: YAML 1.1
    (PyYAML) reads an exponent without a dot (``1e3``) as text, and a quoted number is text;
    "" for any other value."""
    if not isinstance(value, str) or not _NUMBER_TEXT.fullmatch(value.strip()):
        return ""
    example = "a whole number, e.g. 1000" if whole else "a plain number, e.g. 1000 or 1.0e+3"
    return f" {value!r} (YAML reads it as text: write it as {example})"


_NUMBER_TEXT = re.compile(r"[-+]?(?=\.?\d)(?:\d[\d_]*)?(?:\.\d*)?(?:[eE][-+]?\d+)?")


def _str_list(node: Node, spec: StrList, keypath: str) -> Iterator[ConfigError]:
    if not isinstance(node.value, list):
        yield node.error(keypath, f"expected a list of strings, got {kind(node.value)}")
        return
    for index, item in enumerate(node.value):
        where = f"{keypath}[{index}]"
        if not isinstance(item.value, str):
            yield item.error(where, f"expected a string, got {kind(item.value)}")
        elif spec.pattern is not None and not re.fullmatch(spec.pattern, item.value):
            yield item.error(where, f"{item.value!r} is not {spec.what}")


def _command(node: Node, keypath: str) -> Iterator[ConfigError]:
    value = node.value
    if value is None:
        return
    if isinstance(value, str):
        try:
            if not shlex.split(value):
                yield node.error(keypath, "must not be empty")
        except ValueError as exc:
            yield node.error(keypath, f"cannot split {value!r}: {exc}")
        return
    if not isinstance(value, list) or not value:
        yield node.error(
            keypath, f"expected a non-empty list of strings (or one string), got {kind(value)}"
        )
        return
    wrong = [(i, item) for i, item in enumerate(value) if not isinstance(item.value, str)]
    for index, item in wrong:
        yield item.error(f"{keypath}[{index}]", f"expected a string, got {kind(item.value)}")
    if not wrong and not value[0].value.strip():
        yield value[0].error(f"{keypath}[0]", "the program name must not be empty")


def _unknown_key(key: str, known: Mapping[str, object]) -> str:
    hint = HINTS.get(key)
    if hint is None:
        close = difflib.get_close_matches(key, list(known), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
    return f"unknown key ({hint})"


def merge(base: Node, over: Node, spec: Spec | None) -> Node:
    """``over`` on top of ``base``: mappings merge, lists concatenate, the rest is replaced."""
    if isinstance(spec, Command):
        return over
    if isinstance(base.value, dict) and isinstance(over.value, dict):
        merged = dict(base.value)
        for key, child in over.value.items():
            if key in merged:
                merged[key] = merge(merged[key], child, _child_spec(spec, key))
            else:
                merged[key] = child
        return Node(merged, over.file, over.line)
    if isinstance(base.value, list) and isinstance(over.value, list):
        items = list(base.value)
        known = {item.value for item in items if isinstance(item.value, str)}
        for item in over.value:
            if isinstance(item.value, str) and item.value in known:
                continue
            items.append(item)
        return Node(items, over.file, over.line)
    return over


def _child_spec(spec: Spec | None, key: str) -> Spec | None:
    if isinstance(spec, Obj):
        return spec.fields.get(key)
    if isinstance(spec, MapOf):
        return spec.item
    return None
