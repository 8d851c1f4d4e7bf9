"""The builtin reviewer's acceptance read from where it is kept (docs/review.md, "Accepting a
finding"): the ``review:`` section of ``.flow/base.yaml`` and the baseline file, from the work
tree for ``git agent-review`` and the pre-commit hook, from the *base* commit in the Action and
a chain's step, so a pull request cannot switch off its own review (docs/github.md,
"Configuration comes from the base branch"). A layer's checked settings are kept in the git
directory, keyed by its bytes (``settings_cache.py``).

``git agent-review`` reads the same files through ``commands/review.py``, which imports the
YAML and JSON readers only when the cache misses or a baseline exists (issue 20); this module
is for the callers whose start-up does not matter (the Action, the chain, an agent reviewer).
"""

from __future__ import annotations

import os
from pathlib import Path

from gitflow_agents.base.errors import InputError
from gitflow_agents.config.layer_bytes import read_project_layer
from gitflow_agents.config.review import layer_node, review_layer_settings, review_only
from gitflow_agents.config.review_whole import whole_layer_settings
from gitflow_agents.findings import baseline as baselines
from gitflow_agents.findings.settings import ReviewSettings
from gitflow_agents.git import queries as git
from gitflow_agents.reviewer import settings_cache
from gitflow_agents.reviewer.acceptance import LAYER, Acceptance, baseline_at


def layer_settings(root: Path, data: bytes, name: str) -> ReviewSettings:
    """The review settings of a layer of ``data`` (named ``name`` in messages), checked as
    every command checks it (a layer with more than ``review:`` in it against the whole
    shape), from the cache when it holds them; kept there once checked."""
    cached = settings_cache.load(root, data, name)
    if cached is not None:
        return cached
    layer = layer_node(data, name)
    settings = review_layer_settings(layer) if review_only(layer) else whole_layer_settings(layer)
    settings_cache.store(root, data, name, settings)
    return settings


def local_settings(root: Path) -> ReviewSettings:
    """The ``review:`` settings of the ``.flow/base.yaml`` under ``root`` (the defaults when
    there is none): what an agent reviewer's scope and thresholds come from."""
    layer = root / LAYER
    if not os.path.lexists(layer):  # a dangling link is reported, not taken for "no file"
        return ReviewSettings()
    return layer_settings(root, read_project_layer(root, LAYER), LAYER)


def settings_at(root: Path, sha: str) -> ReviewSettings:
    """The ``review:`` settings of the commit ``sha``'s ``.flow/base.yaml``."""
    text = git.show_file(root, sha, LAYER)
    if text is None:
        return ReviewSettings()
    return layer_settings(root, text.encode("utf-8", "surrogatepass"), f"{sha[:12]}:{LAYER}")


def local_acceptance(root: Path, baseline_file: str | None) -> Acceptance:
    """From the work tree of ``root``: ``.flow/base.yaml`` and the baseline (``baseline_file``
    relative to the current directory, which must exist; else the default file when it
    exists)."""
    settings = local_settings(root)
    found = baseline_at(root, baseline_file)
    return Acceptance(settings) if found is None else with_baseline(settings, *found)


def with_baseline(settings: ReviewSettings, path: Path, name: str) -> Acceptance:
    """``settings`` and the fingerprints of the baseline file ``path`` (``name`` in messages)."""
    return Acceptance(settings, baselines.fingerprints(baselines.read(path, name)), name)


def acceptance_at(root: Path, sha: str) -> Acceptance:
    """From the commit ``sha`` (the base of a pull request or merge group): its committed
    ``.flow/base.yaml`` and default baseline file, never the reviewed commits' own."""
    settings = settings_at(root, sha)
    name = f"{sha[:12]}:{baselines.DEFAULT_BASELINE}"
    text = git.show_file(root, sha, baselines.DEFAULT_BASELINE)
    if text is None:
        return Acceptance(settings)
    if len(text.encode("utf-8", "surrogatepass")) > baselines.MAX_BASELINE_BYTES:
        raise InputError(f"over the {baselines.MAX_BASELINE_BYTES:,}-byte limit", path=name)
    return Acceptance(settings, baselines.fingerprints(baselines.parse(text, name)), name)
