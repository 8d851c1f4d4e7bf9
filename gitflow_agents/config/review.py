"""The ``review:`` section of a ``.flow/`` layer built into ``findings.settings.ReviewSettings``
(what the section means: ``findings/settings.py`` and docs/configuration.md, "review"); an
unknown rule id or an empty glob is a ConfigError naming the file and line.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from types import MappingProxyType

from gitflow_agents.base.errors import InputError
from gitflow_agents.config.check import check
from gitflow_agents.config.shape import TOP
from gitflow_agents.config.yaml_nodes import MAX_LAYER_BYTES, Node, parse_layer, read_layer
from gitflow_agents.findings.rules import RULES
from gitflow_agents.findings.settings import PathGlob, ReviewSettings, RuleSetting, glob_regex


def _globs(node: Node | None, keypath: str) -> tuple[PathGlob, ...]:
    if node is None:
        return ()
    globs = []
    for index, item in enumerate(node.value):
        try:
            regex = glob_regex(str(item.value))
        except ValueError as exc:
            raise item.error(f"{keypath}[{index}]", str(exc)) from None
        globs.append(PathGlob(str(item.value), f"{item.file}:{item.line}", regex))
    return tuple(globs)


def build_review(node: Node | None) -> ReviewSettings:
    """The values of a checked ``review:`` node (None: no section); ConfigError naming the file
    and line of an unknown rule id or an empty glob."""
    if node is None:
        return ReviewSettings()
    values: dict[str, Node] = node.value
    rules: dict[str, RuleSetting] = {}
    known = tuple(RULES)  # the builtin reviewer's rules
    rules_node = values.get("rules")
    for rule, setting in (rules_node.value if rules_node is not None else {}).items():
        keypath = f"review.rules.{rule}"
        if rule not in known:
            close = difflib.get_close_matches(rule, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise setting.error(
                keypath, f"no builtin rule {rule!r}; {hint}rules: {', '.join(known)}"
            )
        fields: dict[str, Node] = setting.value
        enabled = fields.get("enabled")
        severity = fields.get("severity")
        off = enabled is not None and enabled.value is False
        where = enabled if off else severity
        rules[rule] = RuleSetting(
            enabled=not off,
            severity=str(severity.value) if severity is not None else None,
            exclude=_globs(fields.get("exclude"), f"{keypath}.exclude"),
            source=f"{where.file}:{where.line}" if where is not None else "",
        )
    return ReviewSettings(
        exclude=_globs(values.get("exclude"), "review.exclude"), rules=MappingProxyType(rules)
    )


def _layer_settings(layer: Node) -> ReviewSettings:
    """The review settings of one parsed layer file: the whole file is checked against the
    shape first (so a typo anywhere is named, as every command names it)."""
    check(layer, TOP, "")
    return build_review(layer.value.get("review"))


def text_review_settings(text: str, name: str) -> ReviewSettings:
    """The review settings of a layer file's ``text`` (read from a commit; ``name`` in
    errors); InputError for a text over the size limit of a layer file."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_LAYER_BYTES:
        raise InputError(f"over the {MAX_LAYER_BYTES:,}-byte limit of a layer file", path=name)
    return _layer_settings(parse_layer(text, name))


def file_review_settings(path: Path, name: str) -> ReviewSettings:
    """The review settings of the layer file at ``path`` (``name`` in errors)."""
    return _layer_settings(read_layer(path, name))
