"""YAML with line numbers: a layer file read into ``Node`` trees, so every later error can name
the file, the line and the key path (``.flow/base.yaml:12: agents.builder.model: ...``).

Only PyYAML's safe loader is used (imported when a file is read, not at start-up). Duplicate
keys, non-string keys and recursive aliases are errors; merge keys (``<<: *anchor``) work.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitflow_agents.errors import ConfigError


@dataclass(frozen=True)
class Node:
    """A YAML value with where it was written: mappings hold ``dict[str, Node]``, sequences
    ``list[Node]``, scalars their Python value. ``line`` is the line of the key (1-based)."""

    value: Any
    file: str
    line: int

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(message, path=self.file, line=self.line, key=key or None)


def read_layer(path: Path, display: str) -> Node:
    """The layer file ``path`` as a Node tree (empty or only comments: an empty mapping);
    ConfigError naming ``display`` and the line otherwise."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid UTF-8 (byte {exc.start})", path=display) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", path=display) from None
    loader = yaml.SafeLoader(text)
    try:
        document = loader.get_single_node()
        if document is None:  # empty, or only comments: an empty layer
            return Node({}, display, 1)
        if not isinstance(document, yaml.MappingNode):
            raise ConfigError(
                f"expected a mapping of settings at the top level, got {kind(_plain(loader, document))}",
                path=display,
                line=document.start_mark.line + 1,
            )
        return _convert(loader, document, display, 1, "")
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        raise ConfigError(
            f"invalid YAML: {problem or exc}",
            path=display,
            line=mark.line + 1 if mark is not None else None,
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", path=display) from None
    finally:
        loader.dispose()


def _plain(loader: Any, node: Any) -> Any:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return {}
    if isinstance(node, yaml.SequenceNode):
        return []
    return loader.construct_object(node, deep=True)


def _convert(
    loader: Any, node: Any, file: str, line: int, keypath: str, inside: frozenset[int] = frozenset()
) -> Node:
    import yaml

    if id(node) in inside:  # an alias to an anchor that contains it: `a: &x [*x]`
        raise ConfigError(
            "recursive YAML alias (an anchor that contains itself)",
            path=file,
            line=node.start_mark.line + 1,
            key=keypath or None,
        )
    inside = inside | {id(node)}
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = _plain(loader, key_node)
            key_line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                raise ConfigError(
                    f"keys must be strings, got {kind(key)} {key!r}",
                    path=file,
                    line=key_line,
                    key=keypath or None,
                )
            if key in seen:
                raise ConfigError(
                    f"duplicate key (first defined on line {seen[key]})",
                    path=file,
                    line=key_line,
                    key=join(keypath, key),
                )
            seen[key] = key_line
        loader.flatten_mapping(node)  # YAML merge keys (<<: *anchor)
        items: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = _plain(loader, key_node)
            if not isinstance(key, str):
                raise ConfigError(
                    f"keys must be strings, got {kind(key)} {key!r}",
                    path=file,
                    line=key_node.start_mark.line + 1,
                    key=keypath or None,
                )
            items[key] = _convert(
                loader, value_node, file, key_node.start_mark.line + 1, join(keypath, key), inside
            )
        return Node(items, file, line)
    if isinstance(node, yaml.SequenceNode):
        return Node(
            [
                _convert(
                    loader, item, file, item.start_mark.line + 1, f"{keypath}[{index}]", inside
                )
                for index, item in enumerate(node.value)
            ],
            file,
            line,
        )
    return Node(loader.construct_object(node, deep=True), file, line)


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
