"""``config/review.py``: a layer holding only ``review:`` is checked against that section's
shape, which must give what the whole shape gives such a layer (issue 20: the builtin reviewer
reads it on every commit without the rest of the shape)."""

from __future__ import annotations

import pytest

from gitflow_agents.base.errors import ConfigError
from gitflow_agents.config.review import parse_text_layer, review_layer_settings, review_only
from gitflow_agents.config.review_whole import whole_layer_settings

LAYERS = [
    "",
    "# only a comment\n",
    "review:\n",
    "review:\n  exclude: [vendor/, 'tests/**']\n  rules:\n    todo: {enabled: false}\n",
    "review:\n  rules:\n    github-token: {severity: warn, exclude: [docs/]}\n",
    "review:\n  rules:\n    github-tokn: {enabled: false}\n",
    "review:\n  rules:\n    todo: {severity: off}\n",
    "review:\n  exclude: ['/']\n",
    "review:\n  exlude: [a]\n",
    "review: [a]\n",
    "review:\n  rules: {todo: 1}\n",
    "review:\n  exclude: [1, {a: b}]\n",
]


def _outcome(build: object, text: str) -> object:
    layer = parse_text_layer(text, ".flow/base.yaml")
    try:
        return build(layer)  # type: ignore[operator]
    except ConfigError as exc:
        return str(exc)


@pytest.mark.parametrize("text", LAYERS)
def test_review_settings_alone_check_as_the_whole_shape_does(text: str) -> None:
    assert review_only(parse_text_layer(text, ".flow/base.yaml"))
    assert _outcome(review_layer_settings, text) == _outcome(whole_layer_settings, text)


def test_a_layer_with_other_keys_is_not_review_only() -> None:
    layer = parse_text_layer("review: {}\nchain: {}\n", ".flow/base.yaml")
    assert not review_only(layer)
