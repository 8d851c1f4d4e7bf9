"""The ``review:`` section of ``.flow/base.yaml``: what the builtin reviewer accepts without a
marker on the line, and what no reviewer sees (docs/configuration.md, "review"). ``exclude``
lists path globs never reviewed (``DEFAULT_EXCLUDE`` unless the section sets it: vendored,
generated and lock files); ``paths.<glob>.severity_threshold`` gates findings under a path at
their own threshold; ``rules.<rule-id>`` turns a rule off (``enabled: false``: its findings are
accepted), changes its ``severity`` or accepts its findings under more paths.

Globs read like ``.gitignore`` lines: ``*`` and ``?`` stay within one path segment, ``**``
crosses folders, a glob with no ``/`` (other than a trailing one) matches at any depth, one with
a ``/`` is anchored at the repository root, and a glob matching a folder matches everything
under it (one ending in ``/`` only a folder).

These are the values; ``config/review.py`` builds them from a checked ``review:`` node.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from gitflow_agents.base.records import NamedTuple
from gitflow_agents.findings.model import Finding, Severity

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


@functools.cache
def _compiled(glob: str) -> re.Pattern[str]:
    return glob_regex(glob)


@functools.cache
def _literal(glob: str) -> str:
    """The longest run of ``glob``'s plain characters (``**/`` may stand for nothing, so the
    ``/`` after it is no plain character): every path the glob matches holds it."""
    return max(re.split(r"[*?]+", glob.strip("/").replace("**/", "*")), key=len)


class PathGlob(NamedTuple):
    """One glob of ``exclude``, with where it was written (``file:line``)."""

    glob: str
    source: str
    regex: re.Pattern[str] | None = None
    """Compiled from ``glob``; None: compiled on first use (``DEFAULT_EXCLUDE``: a path that
    does not hold a glob's plain characters never compiles it, issue 20)."""

    def matches(self, path: str) -> bool:
        if _literal(self.glob) not in path:
            return False
        regex = self.regex if self.regex is not None else _compiled(self.glob)
        return regex.fullmatch(path) is not None


def pathspecs(glob: str) -> tuple[str, ...]:
    """``glob`` (module docstring) as git ``:(exclude,glob)`` pathspecs matching the same paths
    (what an agent reviewer's ``git diff`` leaves out); glob_regex's ``**`` inside a segment
    aside, which git reads as ``*``."""
    body = re.sub(r"([\\\[\]])", r"\\\1", glob.strip("/"))
    anchored = glob.startswith("/") or "/" in body
    whole = body if anchored else f"**/{body}"
    forms = (f"{whole}/**",) if glob.endswith("/") else (whole, f"{whole}/**")
    return tuple(f":(exclude,glob){form}" for form in forms)


def excluded_note(count: int) -> str:
    """``2 files excluded by review.exclude``: how every summary says it."""
    return f"{count} file{'' if count == 1 else 's'} excluded by review.exclude"


def _defaults(globs: tuple[str, ...]) -> tuple[PathGlob, ...]:
    return tuple(PathGlob(glob, "default") for glob in globs)


class RuleSetting(NamedTuple):
    """``review.rules.<rule-id>``: ``severity`` None keeps the rule's own; ``source`` is where
    ``enabled`` (when false) or else ``severity`` was set."""

    enabled: bool = True
    severity: str | None = None
    exclude: tuple[PathGlob, ...] = ()
    source: str = ""


class PathThreshold(NamedTuple):
    """``review.paths.<glob>``: findings under the glob gate at ``severity_threshold``."""

    glob: PathGlob
    severity_threshold: Severity


DEFAULT_EXCLUDE = (
    "vendor/**",
    "**/node_modules/**",
    "*.min.js",
    "*.min.css",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "uv.lock",
    "Cargo.lock",
    "go.sum",
)
"""``review.exclude`` when no layer sets it (docs/configuration.md, "review"): vendored code,
minified files and lock files, which no reviewer can usefully read."""


class ReviewSettings(NamedTuple):
    exclude: tuple[PathGlob, ...] = _defaults(DEFAULT_EXCLUDE)
    rules: Mapping[str, RuleSetting] = MappingProxyType({})
    paths: tuple[PathThreshold, ...] = ()
    incremental: bool = True
    """An agent reviewer reviews only what is new since the last reviewed head (docs/review.md,
    "Incremental review")."""

    def excluded(self, path: str) -> PathGlob | None:
        """The ``exclude`` glob that matches ``path`` (None: it is reviewed)."""
        return next((glob for glob in self.exclude if glob.matches(path)), None)


def path_threshold(paths: Sequence[PathThreshold], finding: Finding, default: Severity) -> Severity:
    """The severity threshold ``finding`` gates at: that of the last of ``paths``
    (``review.paths``) whose glob matches its file (as in CODEOWNERS), else ``default``."""
    path = finding.file
    if path is None:
        return default
    found = default
    for entry in paths:
        if entry.glob.matches(path):
            found = entry.severity_threshold
    return found
