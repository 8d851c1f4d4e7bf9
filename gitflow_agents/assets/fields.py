"""Typed reads of an asset's frontmatter keys, each wrong value a located ``ManifestError``.

A read never raises: a missing required key or a value of the wrong type or range appends an
``invalid_frontmatter`` error at the key's file line and returns None (or the default), so a scan
reports every problem of a file at once. The keys and their types are listed in
docs/agents-flow-assets.md, "Frontmatter".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitflow_agents.assets.model import (
    AGENTS_FLOW_DIR,
    OUTPUT_KINDS,
    AgentIncludes,
    ManifestError,
    ManifestErrorCode,
    OutputKind,
)
from gitflow_agents.base.errors import format_location
from gitflow_agents.base.frontmatter import Frontmatter


class Errors(list[ManifestError]):
    """The errors of a scan, each added with its file (from the project root), line and key."""

    def add(
        self,
        code: ManifestErrorCode,
        source_path: str,
        line: int | None,
        detail: str,
        *,
        agent_id: str | None = None,
        key: str | None = None,
    ) -> None:
        """An error whose message starts with the file from the project root, line and key."""
        where = f"{AGENTS_FLOW_DIR}/{source_path}" if source_path else AGENTS_FLOW_DIR
        message = format_location(where, line, key) + detail
        self.append(ManifestError(code, message, source_path or None, agent_id, line))


class Fields:
    """The frontmatter of one file (``rel``, relative to ``.agents-flow/``); errors go to
    ``errors`` and are attributed to ``agent_id`` when known."""

    def __init__(self, errors: Errors, front: Frontmatter, rel: str, agent_id: str | None) -> None:
        self.errors = errors
        self.data = front.data
        self.lines = front.key_lines()
        self.rel = rel
        self.agent_id = agent_id

    def line(self, key: str) -> int:
        return self.lines.get(key, 1)

    def error(
        self, key: str, detail: str, *, code: ManifestErrorCode = "invalid_frontmatter"
    ) -> None:
        self.errors.add(code, self.rel, self.line(key), detail, agent_id=self.agent_id, key=key)

    def missing(self, detail: str) -> None:
        """A required key is absent: the error points at the file's first line."""
        self.errors.add("invalid_frontmatter", self.rel, 1, detail, agent_id=self.agent_id)

    def get(self, key: str) -> Any:
        return _lookup(self.data, key)

    def text(self, key: str, *, required: bool = False) -> str | None:
        value = self.get(key)
        if value is None:
            if required:
                self.missing(f"required key {key!r} is missing")
            return None
        if not isinstance(value, str) or (required and not value.strip()):
            self.error(key, f"must be a non-empty string, got {describe(value)}")
            return None
        return value.strip() if required else value

    def choice(self, key: str, allowed: tuple[str, ...]) -> Any:
        value = self.get(key)
        if value is None:
            return None
        if value not in allowed:
            self.error(key, f"must be one of {', '.join(allowed)}; got {describe(value)}")
            return None
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.error(key, f"must be a list of strings, got {describe(value)}")
            return ()
        return tuple(value)

    def flag(self, key: str, *, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.error(key, f"must be true or false, got {describe(value)}")
            return default
        return value


def _lookup(data: Mapping[str, Any], key: str) -> Any:
    """``a.b`` reads the nested ``{a: {b: ...}}`` or, failing that, a literal ``a.b:`` key."""
    if "." in key:
        head, _, rest = key.partition(".")
        nested = data.get(head)
        if isinstance(nested, Mapping) and rest in nested:
            return nested[rest]
    return data.get(key)


def output_kind(fields: Fields) -> OutputKind:
    """``output: {kind: ...}`` or the literal ``output.kind:`` key (they must agree); required."""
    nested = fields.data.get("output")
    dotted = fields.data.get("output.kind")
    if nested is not None and not isinstance(nested, Mapping):
        fields.error("output", f"must be a mapping with a 'kind' key, got {describe(nested)}")
        nested = None
    if isinstance(nested, Mapping):
        for key in nested:
            if key != "kind":
                fields.error(f"output.{key}", "unknown key (output takes only 'kind')")
    nested_kind = nested.get("kind") if isinstance(nested, Mapping) else None
    if nested_kind is not None and dotted is not None and nested_kind != dotted:
        fields.error(
            "output.kind", f"given twice with different values: {nested_kind!r} and {dotted!r}"
        )
        return "text"
    value = nested_kind if nested_kind is not None else dotted
    if value is None:
        fields.missing("required key 'output.kind' is missing (one of text, plan, score)")
        return "text"
    if value not in OUTPUT_KINDS:
        fields.error("output.kind", f"must be one of text, plan, score; got {describe(value)}")
        return "text"
    kind: OutputKind = value
    return kind


def temperature(fields: Fields) -> float | None:
    value = fields.get("temperature")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 2:
        fields.error("temperature", f"must be a number from 0 to 2, got {describe(value)}")
        return None
    return float(value)


_INCLUDE_KEYS = ("instructions", "skills", "globalSystemPrompt")


def includes(fields: Fields) -> AgentIncludes:
    value = fields.get("includes")
    if value is None:
        return AgentIncludes()
    if not isinstance(value, Mapping):
        fields.error("includes", f"must be a mapping, got {describe(value)}")
        return AgentIncludes()
    for key in value:
        if key not in _INCLUDE_KEYS:
            fields.error(
                f"includes.{key}", f"unknown key (expected one of {', '.join(_INCLUDE_KEYS)})"
            )
    return AgentIncludes(
        instructions=fields.strings("includes.instructions"),
        skills=fields.strings("includes.skills"),
        global_system_prompt=fields.flag("includes.globalSystemPrompt", default=True),
    )


def describe(value: Any) -> str:
    """A value as a message shows it: YAML booleans, "a list (...)", "a mapping", else repr."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return f"a list ({value!r})"
    if isinstance(value, Mapping):
        return "a mapping"
    return repr(value)
