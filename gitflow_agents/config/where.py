"""Where a value of the merged configuration was written, for a message about it found after
loading: ``chain.copy_ignored`` naming a tracked file needs git to see (``tracked_copies``:
``run`` when it makes a work tree, ``plan lint``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from gitflow_agents.base.errors import ConfigError
from gitflow_agents.config.values import FlowConfig, display
from gitflow_agents.config.yaml_nodes import Node, read_layer
from gitflow_agents.git.ignored import tracked_files

_GLOB = re.compile(r"[*?\[]")


def listed_at(config: FlowConfig, keypath: Sequence[str], item: str) -> tuple[str, int] | None:
    """(file as messages name it, line) of ``item`` in the list at ``keypath`` (``("chain",
    "copy_ignored")``) of the last layer that lists it; None when no layer file does."""
    for path in reversed(config.sources):
        try:
            node: Node | None = read_layer(path, display(config.root, path))
        except ConfigError:
            continue
        for key in keypath:
            node = (
                node.value.get(key) if node is not None and isinstance(node.value, dict) else None
            )
        if node is not None and isinstance(node.value, list):
            for entry in node.value:
                if str(entry.value).strip("/") == item:
                    return entry.file, entry.line
    return None


def tracked_copies(config: FlowConfig, root: Path) -> list[ConfigError]:
    """One ConfigError (file:line of the entry) for each plain path (no glob) in
    ``chain.copy_ignored`` that git tracks in the checkout ``root``: it is in every work tree already,
    and copying would put the user's copy into commits. [] without git or such an entry."""
    plain = [pattern for pattern in config.chain.copy_ignored if not _GLOB.search(pattern)]
    found: dict[str, ConfigError] = {}
    for tracked in tracked_files(root, plain):
        pattern = next(p for p in plain if tracked == p or tracked.startswith(p + "/"))
        if pattern in found:
            continue
        path, line = listed_at(config, ("chain", "copy_ignored"), pattern) or (None, None)
        found[pattern] = ConfigError(
            f"{pattern!r}: git tracks {tracked}, and copy_ignored copies only files git ignores "
            "(every work tree has the tracked ones already); take it off the list",
            path=path,
            line=line,
            key="chain.copy_ignored",
        )
    return list(found.values())
