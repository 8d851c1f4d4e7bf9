"""Where a value of the merged configuration was written, for a message about it found after
loading (``chain.copy_ignored`` naming a tracked file is only seen when a work tree is made)."""

from __future__ import annotations

from collections.abc import Sequence

from gitflow_agents.base.errors import ConfigError
from gitflow_agents.config.values import FlowConfig, display
from gitflow_agents.config.yaml_nodes import Node, read_layer


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
