"""A layer file's bytes, read bounded, and its text: apart from ``yaml_nodes.py`` (which parses
them) because the builtin reviewer reads ``.flow/base.yaml``'s bytes on every commit and, when
its cache of the review settings holds those bytes (``reviewer/settings_cache.py``), parses
nothing: no PyYAML (issue 20)."""

from __future__ import annotations

import os

from gitflow_agents.base.bounded import (
    ReadRefused,
    broken_link,
    decode_text,
    inside_root,
    outside_root,
    read_limited,
)
from gitflow_agents.base.errors import ConfigError
from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import StrPath

MAX_LAYER_BYTES = 4 * 1024 * 1024
"""A layer file larger than this is refused (docs/security.md, "Bounds")."""


def read_layer_bytes(path: StrPath, display: str) -> bytes:
    """The bytes of the layer file ``path``; ConfigError naming ``display`` for a FIFO, a
    folder, a file over :data:`MAX_LAYER_BYTES` or one that cannot be read."""
    try:
        return read_limited(path, MAX_LAYER_BYTES)
    except ReadRefused as exc:
        raise ConfigError(exc.reason, path=display, line=exc.line) from None
    except OSError as exc:
        raise ConfigError(_unreadable(path, exc), path=display) from None


def refuse_outside(root: StrPath, path: StrPath, display: str) -> None:
    """ConfigError naming ``display`` when a symlink leads the layer ``path`` out of the
    project ``root`` (docs/security.md): a layer's texts go into prompts, and its settings into
    every message and decision, so only the project's own files are read."""
    if inside_root(root, path) is None:
        raise ConfigError(outside_root(path), path=display)


def read_project_layer(root: StrPath, rel: str) -> bytes:
    """The bytes of the layer ``rel`` (``.flow/base.yaml``) of the project ``root``, checked as
    ``load_flow_config`` checks it: :func:`refuse_outside`, then :func:`read_layer_bytes`."""
    path = os.path.join(root, rel)  # noqa: PTH118 - no pathlib on a small review's path
    refuse_outside(root, path, rel)
    return read_layer_bytes(path, rel)


def _unreadable(path: StrPath, exc: OSError) -> str:
    """Why the layer ``path`` could not be opened; a link that leads nowhere says so."""
    return broken_link(path, exc) or f"cannot read: {exc.strerror or exc}"


def layer_text(data: bytes, display: str) -> str:
    """A layer file's ``data`` as text (UTF-8, a byte order mark dropped); ConfigError naming
    ``display`` and the line of the first byte that is not UTF-8."""
    try:
        return decode_text(data)
    except ReadRefused as exc:
        raise ConfigError(exc.reason, path=display, line=exc.line) from None
