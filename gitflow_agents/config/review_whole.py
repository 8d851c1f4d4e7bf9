"""The review settings of a `.flow/` layer that holds more than ``review:`` (``chain:``,
``agents:``...): the whole layer is checked against the whole shape first, so a typo anywhere
in it is named as every command names it (docs/decisions.md, "git agent-review and hooks"
item 9). A layer of review settings alone needs only ``review.py``, which loads less.
"""

from __future__ import annotations

from gitflow_agents.config.check import check
from gitflow_agents.config.review import build_review
from gitflow_agents.config.shape import TOP
from gitflow_agents.config.yaml_nodes import Node
from gitflow_agents.findings.settings import ReviewSettings


def whole_layer_settings(layer: Node) -> ReviewSettings:
    """The review settings of the parsed layer file ``layer``, checked whole."""
    check(layer, TOP, "")
    return build_review(layer.value.get("review"))
