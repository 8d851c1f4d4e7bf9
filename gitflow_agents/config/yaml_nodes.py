"""YAML with line numbers: a layer file read into ``Node`` trees, so every later error can name
the file, the line and the key path (``.flow/base.yaml:12: agents.builder.model: ...``).

YAML is read by gitflow_agents/base/safe_yaml.py (bounded: nesting depth, alias expansion, plain
values only; imported when a file is read, not at start-up). Duplicate keys, non-string keys
and recursive aliases are errors; merge keys (``<<: *anchor``) work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import yaml

from gitflow_agents.base.errors import ConfigError
from gitflow_agents.base.safe_yaml import YamlProblem, compose, flatten, is_merge_key, scalar
from gitflow_agents.config.layer_bytes import MAX_LAYER_BYTES as MAX_LAYER_BYTES
from gitflow_agents.config.layer_bytes import layer_text, read_layer_bytes


class Node(NamedTuple):
    """A YAML value with where it was written: mappings hold ``dict[str, Node]``, sequences
    ``list[Node]``, scalars their Python value. ``line`` is the line of the key (1-based).
    A NamedTuple: the builtin reviewer reads a layer on every commit, without dataclasses."""

    value: Any
    file: str
    line: int

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(message, path=self.file, line=self.line, key=key or None)


def read_layer(path: Path, display: str) -> Node:
    """The layer file ``path`` as a Node tree (empty or only comments: an empty mapping);
    ConfigError naming ``display`` and the line otherwise (also for a FIFO, a file over
    :data:`MAX_LAYER_BYTES`, an alias bomb or nesting too deep: gitflow_agents/base/safe_yaml.py)."""
    return parse_layer(layer_text(read_layer_bytes(path, display), display), display)


def parse_layer(text: str, display: str) -> Node:
    """The YAML ``text`` of a layer file (named ``display`` in errors) as a Node tree."""
    try:
        document = compose(text)
        if document is None:  # empty, or only comments: an empty layer
            return Node({}, display, 1)
        if not isinstance(document, yaml.MappingNode):
            raise ConfigError(
                f"expected a mapping of settings at the top level, got {kind(_plain(document))}",
                path=display,
                line=document.start_mark.line + 1,
            )
        return _convert(document, display, 1, "")
    except YamlProblem as exc:
        raise ConfigError(
            f"invalid YAML: {exc.message}",
            path=display,
            line=exc.line + 1 if exc.line is not None else None,
        ) from None


def _plain(node: Any) -> Any:
    """A scalar node's value; ``{}`` / ``[]`` for a mapping / list (to name its kind)."""
    if isinstance(node, yaml.MappingNode):
        return {}
    if isinstance(node, yaml.SequenceNode):
        return []
    return scalar(node)


def _key(key_node: Any, file: str, keypath: str) -> str:
    key = _plain(key_node)
    if not isinstance(key, str):
        shown = "" if isinstance(key, (dict, list)) else f" {key!r}"  # a list, a mapping: its kind
        raise ConfigError(
            f"keys must be strings, got {kind(key)}{shown}",
            path=file,
            line=key_node.start_mark.line + 1,
            key=keypath or None,
        )
    return key


def _convert(node: Any, file: str, line: int, keypath: str) -> Node:
    """The composed node as a Node tree. Aliases are expanded (their total is bounded by the
    composer), recursion is bounded by its depth limit."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        keys: dict[int, str] = {}
        for key_node, _ in node.value:
            if is_merge_key(key_node):
                continue
            key = keys[id(key_node)] = _key(key_node, file, keypath)
            key_line = key_node.start_mark.line + 1
            if key in seen:
                raise ConfigError(
                    f"duplicate key (first defined on line {seen[key]})",
                    path=file,
                    line=key_line,
                    key=join(keypath, key),
                )
            seen[key] = key_line
        flatten(node)  # YAML merge keys (<<: *anchor)
        items: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = keys.get(id(key_node)) or _key(key_node, file, keypath)
            items[key] = _convert(
                value_node, file, key_node.start_mark.line + 1, join(keypath, key)
            )
        return Node(items, file, line)
    if isinstance(node, yaml.SequenceNode):
        return Node(
            [
                _convert(item, file, item.start_mark.line + 1, f"{keypath}[{index}]")
                for index, item in enumerate(node.value)
            ],
            file,
            line,
        )
    return Node(scalar(node), file, line)


def join(keypath: str, key: str) -> str:
    return f"{keypath}.{key}" if keypath else key


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (dict, Node)):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def unwrap(node: Node) -> Any:
    """Plain Python value of a node tree (for ``options``)."""
    if isinstance(node.value, dict):
        return {key: unwrap(child) for key, child in node.value.items()}
    if isinstance(node.value, list):
        return [unwrap(child) for child in node.value]
    return node.value
