"""The ``review:`` section of a ``.flow/`` layer built into ``findings.settings.ReviewSettings``
(what the section means: ``findings/settings.py`` and docs/configuration.md, "review"); an
unknown rule id or an empty glob is a ConfigError naming the file and line.

A layer that holds nothing but ``review:`` is checked against that section's shape
(``review_shape.REVIEW``), which for such a layer is the whole shape's check, without loading
the shape of the chain, the agents and the plans (``plan/``, the adapters: issue 20, the
builtin reviewer reads the layer on every commit). A layer with more in it is checked whole
(``review_whole.py``).
"""

from __future__ import annotations

import difflib
from types import MappingProxyType

from gitflow_agents.base.errors import InputError
from gitflow_agents.config.check import check
from gitflow_agents.config.layer_bytes import MAX_LAYER_BYTES, layer_text
from gitflow_agents.config.review_shape import REVIEW
from gitflow_agents.config.yaml_nodes import Node, parse_layer
from gitflow_agents.findings.model import Severity
from gitflow_agents.findings.rules import RULES
from gitflow_agents.findings.settings import (
    PathGlob,
    PathThreshold,
    ReviewSettings,
    RuleSetting,
    glob_regex,
)


def _globs(node: Node | None, keypath: str) -> tuple[PathGlob, ...]:
    if node is None:
        return ()
    return tuple(
        _glob(item, str(item.value), f"{keypath}[{i}]") for i, item in enumerate(node.value)
    )


def _glob(node: Node, glob: str, keypath: str) -> PathGlob:
    try:
        regex = glob_regex(glob)
    except ValueError as exc:
        raise node.error(keypath, str(exc)) from None
    return PathGlob(glob, f"{node.file}:{node.line}", regex)


def _paths(node: Node | None) -> tuple[PathThreshold, ...]:
    """``review.paths``, in the order written (the last matching glob wins)."""
    entries = []
    for glob, setting in (node.value if node is not None else {}).items():
        fields: dict[str, Node] = setting.value
        threshold = fields.get("severity_threshold")
        if threshold is not None:
            path_glob = _glob(setting, glob, f"review.paths.{glob}")
            entries.append(PathThreshold(path_glob, Severity(str(threshold.value))))
    return tuple(entries)


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
    exclude = values.get("exclude")
    incremental = values.get("incremental")
    return ReviewSettings(
        exclude=ReviewSettings().exclude if exclude is None else _globs(exclude, "review.exclude"),
        rules=MappingProxyType(rules),
        paths=_paths(values.get("paths")),
        incremental=incremental is None or incremental.value is not False,
    )


def review_only(layer: Node) -> bool:
    """Whether the parsed layer file ``layer`` holds no key but ``review:``."""
    return set(layer.value) <= {"review"}


def review_layer_settings(layer: Node) -> ReviewSettings:
    """The review settings of a layer that holds only ``review:`` (``review_only``), checked
    against the section's shape: file:line messages as the whole shape gives them."""
    node = layer.value.get("review")
    if node is not None:
        check(node, REVIEW, "review")
    return build_review(node)


def parse_text_layer(text: str, name: str) -> Node:
    """A layer file's ``text`` (read from a commit; ``name`` in errors) parsed; InputError for
    a text over the size limit of a layer file."""
    return layer_node(text.encode("utf-8", "surrogatepass"), name)


def layer_node(data: bytes, name: str) -> Node:
    """A layer file's ``data`` (its bytes, from a file or a commit; ``name`` in errors)
    parsed; InputError for data over the size limit of a layer file, ConfigError naming the
    line of a byte that is not UTF-8."""
    if len(data) > MAX_LAYER_BYTES:
        raise InputError(f"over the {MAX_LAYER_BYTES:,}-byte limit of a layer file", path=name)
    return parse_layer(layer_text(data, name), name)
