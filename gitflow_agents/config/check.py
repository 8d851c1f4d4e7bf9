"""Checking one layer's Node tree against the declared shape (``shape.TOP``), with file:line
messages and did-you-mean hints, and merging checked layers.

Merge rules: mappings merge key by key, lists concatenate (duplicate strings dropped), anything
else is replaced by the later layer; a ``command`` argv is replaced whole.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Mapping

from gitflow_agents.config.shape import (
    HINTS,
    AnyMap,
    Bool,
    Command,
    Int,
    MapOf,
    Obj,
    Spec,
    Str,
    StrList,
)
from gitflow_agents.config.values import NAME
from gitflow_agents.config.yaml_nodes import Node, join, kind


def check(node: Node, spec: Spec, keypath: str) -> None:
    """Raise ConfigError (file:line: key: message) unless ``node`` fits ``spec``."""
    value = node.value
    if isinstance(spec, Obj):
        if not isinstance(value, dict):
            raise node.error(keypath, f"expected a mapping, got {kind(value)}")
        for key, child in value.items():
            sub = spec.fields.get(key)
            if sub is None:
                raise child.error(join(keypath, key), _unknown_key(key, spec.fields))
            check(child, sub, join(keypath, key))
    elif isinstance(spec, MapOf):
        if not isinstance(value, dict):
            raise node.error(keypath, f"expected a mapping of names, got {kind(value)}")
        for key, child in value.items():
            if not NAME.match(key):
                raise child.error(
                    join(keypath, key),
                    "invalid name: use letters, digits, '.', '_' and '-' (starting with a "
                    "letter or digit)",
                )
            check(child, spec.item, join(keypath, key))
    elif isinstance(spec, Str):
        if value is None and spec.nullable:
            return
        if not isinstance(value, str):
            raise node.error(keypath, f"expected a string, got {kind(value)}")
        if not value.strip():
            raise node.error(keypath, "must not be empty")
        choices = spec.allowed()
        if choices and value not in choices:
            raise node.error(keypath, f"expected one of {', '.join(choices)}, got {value!r}")
    elif isinstance(spec, Int):
        if not isinstance(value, int) or isinstance(value, bool):
            raise node.error(keypath, f"expected {spec.what}, got {kind(value)}")
        if value < spec.minimum:
            raise node.error(keypath, f"must be at least {spec.minimum}, got {value}")
    elif isinstance(spec, Bool):
        if not isinstance(value, bool):
            raise node.error(keypath, f"expected true or false, got {kind(value)}")
    elif isinstance(spec, StrList):
        if not isinstance(value, list):
            raise node.error(keypath, f"expected a list of strings, got {kind(value)}")
        for index, item in enumerate(value):
            where = f"{keypath}[{index}]"
            if not isinstance(item.value, str):
                raise item.error(where, f"expected a string, got {kind(item.value)}")
            if spec.pattern is not None and not re.fullmatch(spec.pattern, item.value):
                raise item.error(where, f"{item.value!r} is not {spec.what}")
    elif isinstance(spec, Command):
        _check_command(node, keypath)
    elif isinstance(spec, AnyMap) and not isinstance(value, dict):
        raise node.error(keypath, f"expected a mapping, got {kind(value)}")


def _check_command(node: Node, keypath: str) -> None:
    value = node.value
    if value is None:
        return
    if isinstance(value, str):
        try:
            if not shlex.split(value):
                raise node.error(keypath, "must not be empty")
        except ValueError as exc:
            raise node.error(keypath, f"cannot split {value!r}: {exc}") from None
        return
    if not isinstance(value, list) or not value:
        raise node.error(
            keypath, f"expected a non-empty list of strings (or one string), got {kind(value)}"
        )
    for index, item in enumerate(value):
        if not isinstance(item.value, str):
            raise item.error(f"{keypath}[{index}]", f"expected a string, got {kind(item.value)}")
    if not value[0].value.strip():
        raise value[0].error(f"{keypath}[0]", "the program name must not be empty")


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
