"""The review settings of ``.flow/base.yaml``, kept checked in the git directory: a small review
with a ``.flow/`` layer reads the layer's bytes and, when they are the bytes its settings were
built from, takes the settings from here without parsing YAML or checking the shape (PyYAML's
import and the checks were a third of such a review: issue 20).

One file, ``$GIT_COMMON_DIR/gitflow-agents/review-settings``, written atomically after a layer
was read and checked: ``marshal`` (a builtin module, no import cost) of plain values, the key
being the exact bytes of the layer (stored and compared whole; no modification time is
trusted), this version of gitflow-agents and its rule ids. Anything else (another layer's
bytes, another version, a file that does not load) is a miss: the layer is read as without a
cache, and the file rewritten. A layer that does not check is never stored. The Action reads
``.flow/`` from the base commit and keys on the blob's bytes the same way. Where is a value
written (``file:line``) is stored as its line, so the same bytes under another name (another
base commit's ``<sha>:.flow/base.yaml``) give that name. docs/decisions.md, issue 20's section.
"""

from __future__ import annotations

import contextlib
import marshal
import os
from types import MappingProxyType

from gitflow_agents import __version__
from gitflow_agents.base.atomic import common_git_dir, write_bytes_atomic
from gitflow_agents.base.lazy import path as as_path
from gitflow_agents.base.records import TYPE_CHECKING
from gitflow_agents.findings.model import Severity
from gitflow_agents.findings.rules import RULES
from gitflow_agents.findings.settings import PathGlob, PathThreshold, ReviewSettings, RuleSetting

if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

FORMAT = 1
"""Raised when what is stored changes shape."""
CACHE = os.path.join("gitflow-agents", "review-settings")  # noqa: PTH118
"""Under the repository's common git directory (``os.path``: a review that finds its settings
here imports no pathlib, issue 20)."""


def _key(data: bytes) -> tuple[Any, ...]:
    return (FORMAT, __version__, tuple(RULES), data)


def load(root: StrPath, data: bytes, name: str) -> ReviewSettings | None:
    """The settings stored for a layer of exactly ``data`` (its messages naming ``name``);
    None when none are (or the file is unreadable, stale or damaged)."""
    where = common_git_dir(root)
    if where is None:
        return None
    try:
        with open(os.path.join(where, CACHE), "rb") as stored:  # noqa: PTH118, PTH123
            key, plain = marshal.loads(stored.read())
        return _settings(plain, name) if key == _key(data) else None
    except (OSError, EOFError, ValueError, TypeError, KeyError, IndexError):
        return None


def store(root: StrPath, data: bytes, name: str, settings: ReviewSettings) -> None:
    """Keep ``settings``, checked from a layer of exactly ``data`` named ``name``, for the next
    review. A git directory that cannot be written (read-only, full) only means no cache."""
    where = common_git_dir(root)
    if where is None:
        return
    with contextlib.suppress(OSError):
        blob = marshal.dumps((_key(data), _plain(settings, name)))
        write_bytes_atomic(as_path(where, CACHE), blob, durable=False)  # after a miss


def _where(source: str, name: str) -> str | int:
    """A ``file:line`` of the layer ``name`` as its line; any other source as it is."""
    prefix = f"{name}:"
    line = source[len(prefix) :] if source.startswith(prefix) else ""
    return int(line) if line.isdigit() else source


def _source(where: str | int, name: str) -> str:
    return f"{name}:{where}" if isinstance(where, int) else where


def _plain(settings: ReviewSettings, name: str) -> tuple[Any, ...]:
    def globs(entries: tuple[PathGlob, ...]) -> tuple[tuple[str, str | int], ...]:
        return tuple((g.glob, _where(g.source, name)) for g in entries)

    rules = {
        rule: (s.enabled, s.severity, globs(s.exclude), _where(s.source, name))
        for rule, s in settings.rules.items()
    }
    paths = tuple((*globs((p.glob,))[0], p.severity_threshold.value) for p in settings.paths)
    return (globs(settings.exclude), rules, paths, settings.incremental)


def _settings(plain: tuple[Any, ...], name: str) -> ReviewSettings:
    """The values ``_plain`` stored; the globs compile when first matched (``PathGlob``)."""
    exclude, rules, paths, incremental = plain

    def globs(entries: tuple[tuple[str, str | int], ...]) -> tuple[PathGlob, ...]:
        return tuple(PathGlob(str(glob), _source(where, name)) for glob, where in entries)

    built = {
        str(rule): RuleSetting(bool(on), severity, globs(excluded), _source(where, name))
        for rule, (on, severity, excluded, where) in rules.items()
    }
    thresholds = tuple(
        PathThreshold(globs(((glob, where),))[0], Severity(level)) for glob, where, level in paths
    )
    return ReviewSettings(globs(exclude), MappingProxyType(built), thresholds, bool(incremental))
