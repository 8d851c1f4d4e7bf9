"""The ``review:`` section of ``.flow/base.yaml``: what the builtin reviewer accepts without a
marker on the line (docs/configuration.md, "review"). ``exclude`` lists path globs whose
findings are accepted; ``rules.<rule-id>`` turns a rule off (``enabled: false``: its findings
are accepted), changes its ``severity`` or accepts its findings under more paths.

Globs read like ``.gitignore`` lines: ``*`` and ``?`` stay within one path segment, ``**``
crosses folders, a glob with no ``/`` (other than a trailing one) matches at any depth, one with
a ``/`` is anchored at the repository root, and a glob matching a folder matches everything
under it (one ending in ``/`` only a folder).

These are the values; ``config/review.py`` builds them from a checked ``review:`` node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

RULE_SEVERITIES = ("error", "warn", "info")
"""What ``review.rules.<rule-id>.severity`` takes. A rule is switched off with ``enabled:
false``, not a severity: an unquoted ``off`` is YAML's ``false``."""


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


class PathGlob(NamedTuple):
    """One glob of ``exclude``, with where it was written (``file:line``)."""

    glob: str
    source: str
    regex: re.Pattern[str]  # compiled from ``glob``

    def matches(self, path: str) -> bool:
        return self.regex.fullmatch(path) is not None


class RuleSetting(NamedTuple):
    """``review.rules.<rule-id>``: ``severity`` None keeps the rule's own; ``source`` is where
    ``enabled`` (when false) or else ``severity`` was set."""

    enabled: bool = True
    severity: str | None = None
    exclude: tuple[PathGlob, ...] = ()
    source: str = ""


class ReviewSettings(NamedTuple):
    exclude: tuple[PathGlob, ...] = ()
    rules: Mapping[str, RuleSetting] = MappingProxyType({})
    incremental: bool = True
    """An agent reviewer reviews only what is new since the last reviewed head (docs/review.md,
    "Incremental review")."""
