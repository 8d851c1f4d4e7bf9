"""YAML frontmatter: a file that starts with a ``---`` line carries YAML up to the next ``---`` line.

Used for agent ``system_prompt`` files (the frontmatter is hoisted to the top of the prompt;
docs/prompt.md, "Layout") and for every ``.agents-flow/`` asset (docs/agents-flow-assets.md).
The split is exact: for a file with
frontmatter, ``text == opening + raw + closing + body`` where ``opening``/``closing`` are the
delimiter lines with their line endings (a leading UTF-8 BOM is dropped). CRLF files work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from gitflow_agents.base.errors import InputError
from gitflow_agents.base.safe_yaml import YamlProblem, compose, is_merge_key, load

_DELIMITER = re.compile(r"---[ \t]*\r?")
_BOM = "\ufeff"
# The YAML text starts on line 2 of the file (line 1 is the opening ---).
_FIRST_YAML_LINE = 2


@dataclass(frozen=True)
class Frontmatter:
    raw: str | None  # the YAML text between the --- lines, exactly as written (None if absent)
    data: dict[str, Any] = field(default_factory=dict)  # parsed mapping ({} if absent)
    body: str = ""  # the text after the closing --- line (the whole text if absent)
    body_line: int = 1  # 1-based line of the file where the body starts

    def key_lines(self) -> dict[str, int]:
        """File line (1-based) of every key in the frontmatter, by dotted path.

        Nested keys are joined with dots (``output.kind``), sequence items by index
        (``includes.instructions.0``). Used to point validation messages at the right line.
        """
        if not self.raw:
            return {}

        try:
            node = compose(self.raw)
        except YamlProblem:
            return {}
        lines: dict[str, int] = {}
        _collect_lines(node, "", lines)
        return lines


def _collect_lines(node: Any, prefix: str, lines: dict[str, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            path = f"{prefix}{key_node.value}"
            lines.setdefault(path, key_node.start_mark.line + _FIRST_YAML_LINE)
            _collect_lines(value_node, path + ".", lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            path = f"{prefix}{index}"
            lines.setdefault(path, item.start_mark.line + _FIRST_YAML_LINE)
            _collect_lines(item, path + ".", lines)


def split_frontmatter(text: str, *, path: str) -> Frontmatter:
    """Split ``text`` into frontmatter and body; ``path`` is only used in error messages.

    No ``---`` first line: ``Frontmatter(raw=None, data={}, body=text, body_line=1)``.
    Raises InputError (with ``path`` and the file line) for malformed YAML, frontmatter that
    is not a mapping, non-string keys, or an opening ``---`` that is never closed (line 1).
    """
    if text.startswith(_BOM):
        text = text[1:]
    first_end = text.find("\n")
    first_line = text if first_end == -1 else text[:first_end]
    if not _DELIMITER.fullmatch(first_line):
        return Frontmatter(raw=None, data={}, body=text, body_line=1)
    if first_end == -1:
        raise _unclosed(path)
    yaml_start = pos = first_end + 1
    line_number = _FIRST_YAML_LINE
    while pos <= len(text):
        end = text.find("\n", pos)
        line = text[pos:] if end == -1 else text[pos:end]
        if _DELIMITER.fullmatch(line):
            raw = text[yaml_start:pos]
            body = "" if end == -1 else text[end + 1 :]
            return Frontmatter(
                raw=raw, data=_parse(raw, path), body=body, body_line=line_number + 1
            )
        if end == -1:
            break
        pos = end + 1
        line_number += 1
    raise _unclosed(path)


def _unclosed(path: str) -> InputError:
    return InputError(
        "frontmatter opened with '---' is never closed (add a '---' line after the YAML)",
        path=path,
        line=1,
    )


MAX_FRONTMATTER_BYTES = 1024 * 1024
"""Frontmatter YAML longer than this is refused (docs/security.md, "Bounds")."""


def _parse(raw: str, path: str) -> dict[str, Any]:
    if len(raw) > MAX_FRONTMATTER_BYTES:
        raise InputError(
            f"frontmatter is {len(raw):,} characters, over the {MAX_FRONTMATTER_BYTES:,} limit",
            path=path,
            line=1,
        )
    try:
        data = load(raw)
    except YamlProblem as exc:
        line = exc.line + _FIRST_YAML_LINE if exc.line is not None else 1
        column = f" (column {exc.column + 1})" if exc.column is not None else ""
        raise InputError(
            f"invalid YAML in frontmatter: {exc.message}{column}", path=path, line=line
        ) from None
    repeated = _repeated_key(compose(raw))
    if repeated is not None:
        key, first, line = repeated
        raise InputError(
            f"duplicate key {key!r} in frontmatter (first defined on line "
            f"{first + _FIRST_YAML_LINE})",
            path=path,
            line=line + _FIRST_YAML_LINE,
        )
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(
            f"frontmatter must be a YAML mapping of 'key: value' lines, not a {_kind(data)}",
            path=path,
            line=_FIRST_YAML_LINE,
        )
    for key in data:
        if not isinstance(key, str):
            raise InputError(
                f"frontmatter keys must be strings, got {key!r}", path=path, line=_FIRST_YAML_LINE
            )
    return data


def _repeated_key(node: Any) -> tuple[str, int, int] | None:
    """The first key given twice in one mapping of the composed frontmatter (its text, the
    0-based lines of its first and second definition), as ``.flow/`` refuses one (a YAML
    merge key ``<<`` may repeat); None when there is none."""
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in current.value:
                pending.append(value_node)
                if is_merge_key(key_node) or not isinstance(key_node, yaml.ScalarNode):
                    continue
                line = key_node.start_mark.line
                if key_node.value in seen:
                    return str(key_node.value), seen[key_node.value], line
                seen[key_node.value] = line
        elif isinstance(current, yaml.SequenceNode):
            pending.extend(current.value)
    return None


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__
