"""``config/review.py``: a layer holding only ``review:`` is checked against that section's
shape, which must give what the whole shape gives such a layer (issue 20: the builtin reviewer
reads it on every commit without the rest of the shape)."""

from __future__ import annotations

import pytest

from gitflow_agents.base.errors import ConfigError
from gitflow_agents.config.review import parse_text_layer, review_layer_settings, review_only
from gitflow_agents.config.review_whole import whole_layer_settings
from gitflow_agents.findings.settings import DEFAULT_EXCLUDE

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
    "review:\n  exclude: []\n",
    "review:\n  paths:\n    'docs/**': {severity_threshold: info}\n    src/: {severity_threshold: warn}\n",
    "review:\n  paths:\n    'docs/**': {severity_threshold: off}\n",
    "review:\n  paths:\n    'docs/**': {severity: warn}\n",
    "review:\n  paths:\n    '/': {severity_threshold: warn}\n",
    "review:\n  paths: [docs/]\n",
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


def test_the_default_exclude_list_applies_until_a_layer_sets_one() -> None:
    defaults = review_layer_settings(parse_text_layer("review: {}\n", ".flow/base.yaml"))
    assert [g.glob for g in defaults.exclude] == list(DEFAULT_EXCLUDE)
    assert defaults.excluded("web/node_modules/a/b.js") is not None
    assert defaults.excluded("src/app.py") is None
    off = review_layer_settings(parse_text_layer("review:\n  exclude: []\n", ".flow/base.yaml"))
    assert off.exclude == ()


def test_path_thresholds_keep_their_order_and_name_their_line() -> None:
    text = "review:\n  paths:\n    'docs/**': {severity_threshold: info}\n    src/: {severity_threshold: warn}\n"
    settings = review_layer_settings(parse_text_layer(text, ".flow/base.yaml"))
    assert [(p.glob.glob, p.severity_threshold.value, p.glob.source) for p in settings.paths] == [
        ("docs/**", "info", ".flow/base.yaml:3"),
        ("src/", "warn", ".flow/base.yaml:4"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "review:\n  paths:\n    'docs/**': {severity_threshold: off}\n",
            ".flow/base.yaml:3: review.paths.docs/**.severity_threshold:",
        ),
        (
            "review:\n  paths:\n    'docs/**': {severity: warn}\n",
            ".flow/base.yaml:3: review.paths.docs/**.severity: unknown key",
        ),
        ("review:\n  paths:\n    '/': {severity_threshold: warn}\n", ".flow/base.yaml:3:"),
    ],
)
def test_a_bad_path_setting_names_its_file_and_line(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as raised:
        review_layer_settings(parse_text_layer(text, ".flow/base.yaml"))
    assert str(raised.value).startswith(expected), str(raised.value)
