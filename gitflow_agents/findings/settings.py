"""The ``review:`` section of ``.flow/base.yaml``: what the builtin reviewer accepts without a
marker on the line (docs/configuration.md, "review"). ``exclude`` lists path globs whose
findings are accepted; ``rules.<rule-id>`` turns a rule off (``enabled: false``: its findings
are accepted), changes its ``severity`` or accepts its findings under more paths.

Globs read like ``.gitignore`` lines: ``*`` and ``?`` stay within one path segment, ``**``
crosses folders, a glob with no ``/`` (other than a trailing one) matches at any depth, one with
a ``/`` is anchored at the repository root, and a glob matching a folder matches everything
under it (one ending in ``/`` only a folder).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitflow_agents.config.yaml_nodes import Node

RULE_SEVERITIES = ("error", "warn", "info")
"""What ``review.rules.<rule-id>.severity`` takes. A rule is switched off with ``enabled:
false``, not a severity: an unquoted ``off`` is YAML's ``false``."""


def builtin_rule_ids() -> tuple[str, ...]:
    """The rule ids ``review.rules`` may name: the builtin reviewer's rules."""
    from gitflow_agents.reviewer.checks import RULES

    return tuple(RULES)


def glob_regex(glob: str) -> re.Pattern[str]:
    """``glob`` (module docstring) as a regular expression a whole repository path matches;
    ValueError for a glob that names no path."""
    body = glob.strip("/")
    if not body:
        raise ValueError("an empty glob matches no path")
    anchored = glob.startswith("/") or "/" in body
    out = [] if anchored else ["(?:.*/)?"]
    index = 0
    while index < len(body):
        if body.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif body.startswith("**", index):
            out.append(".*")
            index += 2
        else:
            char = body[index]
            out.append({"*": "[^/]*", "?": "[^/]"}.get(char) or re.escape(char))
            index += 1
    # a folder: everything under it; a glob ending in "/" names only a folder (as in .gitignore),
    # so a file of that name is not matched
    out.append("/.+" if glob.endswith("/") else "(?:/.*)?")
    return re.compile("".join(out), re.DOTALL)


@dataclass(frozen=True)
class PathGlob:
    """One glob of ``exclude``, with where it was written (``file:line``)."""

    glob: str
    source: str
    regex: re.Pattern[str] = field(compare=False, repr=False)

    def matches(self, path: str) -> bool:
        return self.regex.fullmatch(path) is not None


@dataclass(frozen=True)
class RuleSetting:
    """``review.rules.<rule-id>``: ``severity`` None keeps the rule's own; ``source`` is where
    ``enabled`` (when false) or else ``severity`` was set."""

    enabled: bool = True
    severity: str | None = None
    exclude: tuple[PathGlob, ...] = ()
    source: str = ""


@dataclass(frozen=True)
class ReviewSettings:
    exclude: tuple[PathGlob, ...] = ()
    rules: Mapping[str, RuleSetting] = field(default_factory=lambda: MappingProxyType({}))


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
    known = builtin_rule_ids()
    rules_node = values.get("rules")
    for rule, setting in (rules_node.value if rules_node is not None else {}).items():
        keypath = f"review.rules.{rule}"
        if rule not in known:
            import difflib

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


def review_settings(layer: Node) -> ReviewSettings:
    """The review settings of one parsed layer file: the whole file is checked against the
    shape first (so a typo anywhere is named, as every command names it)."""
    from gitflow_agents.config.check import check
    from gitflow_agents.config.shape import TOP

    check(layer, TOP, "")
    return build_review(layer.value.get("review"))
