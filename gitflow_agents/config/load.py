"""Loading a project's flow configuration: find its layer files, read each with line numbers,
check it against the shape, merge the layers, and build the frozen values.

Layers, later wins: ``.flow/base.yaml`` -> ``.flow/<flow_type>/base.yaml`` ->
``.flow/<flow_type>/<variant>.yaml``. When no project layer exists at all, the shipped
``templates/flow/`` layers stand in (docs/configuration.md); so they do when the only one is a
``.flow/base.yaml`` holding nothing but ``review:`` (the builtin reviewer's settings), which is
then read after them.
"""

from __future__ import annotations

import os
from pathlib import Path

from gitflow_agents.base.errors import ConfigError
from gitflow_agents.base.resources import templates_dir
from gitflow_agents.config.build import build, build_problems
from gitflow_agents.config.check import check, merge, problems
from gitflow_agents.config.files import Layout, builtin_flow_dir
from gitflow_agents.config.layer_bytes import refuse_outside
from gitflow_agents.config.shape import TOP
from gitflow_agents.config.values import (
    BASE_FILE,
    BUILT_IN,
    FLOW_DIR_NAME,
    NAME,
    FlowConfig,
    display,
)
from gitflow_agents.config.yaml_nodes import Node, read_layer


def _layer_paths(flow_dir: Path, flow_type: str | None, variant: str | None) -> list[Path]:
    paths = [flow_dir / BASE_FILE]
    if flow_type is not None:
        paths.append(flow_dir / flow_type / BASE_FILE)
        if variant is not None:
            paths.append(flow_dir / flow_type / f"{variant}.yaml")
    return paths


def load_flow_config(
    root: Path, flow_type: str | None = None, variant: str | None = None
) -> FlowConfig:
    """Read, merge and validate the `.flow/` layers of ``root`` (layers: see the module docstring).

    Every layer is optional except an explicitly named variant. With no config file at all the
    shipped ``templates/flow/`` layers are used instead (``FlowConfig.built_in`` is then True).
    The first problem found is raised (ConfigError); ``config_problems`` finds them all.
    """
    layout, paths = _layers(root, flow_type, variant)
    merged: Node | None = None
    for path in paths:
        node = read_layer(path, _layer_display(layout, path))
        check(node, TOP, "")
        merged = node if merged is None else merge(merged, node, TOP)
    assert merged is not None  # the shipped base.yaml always exists
    return build(merged, layout, tuple(paths), flow_type, variant)


def config_problems(
    root: Path, flow_type: str | None = None, variant: str | None = None
) -> list[ConfigError]:
    """Every problem of the `.flow/` layers ``load_flow_config`` would read (for ``plan lint``),
    in layer and file order: a file that cannot be read or parsed is one problem; every key
    of every layer that does not fit the shape is one; when all fit, every rule across keys
    that fails (``build_problems``). [] when ``load_flow_config`` would succeed."""
    try:
        layout, paths = _layers(root, flow_type, variant)
    except ConfigError as exc:
        return [exc]
    found: list[ConfigError] = []
    merged: Node | None = None
    for path in paths:
        try:
            node = read_layer(path, _layer_display(layout, path))
        except ConfigError as exc:
            found.append(exc)
            continue
        shape = list(problems(node, TOP, ""))
        found += shape
        if not shape:
            merged = node if merged is None else merge(merged, node, TOP)
    if found or merged is None:  # the values are built only from layers that all fit
        return found
    return build_problems(merged, layout, tuple(paths))


def _layers(root: Path, flow_type: str | None, variant: str | None) -> tuple[Layout, list[Path]]:
    """The layout and the layer files to read, in order (ConfigError for a bad name or a
    missing variant)."""
    root = root.absolute()
    for label, value in (("flow type", flow_type), ("variant", variant)):
        if value is not None and not NAME.match(value):
            raise ConfigError(
                f"invalid {label} {value!r}: use letters, digits, '.', '_' and '-' only"
            )
    if variant is not None and flow_type is None:
        raise ConfigError(
            f"variant {variant!r} needs a flow type (.flow/<flow-type>/{variant}.yaml)"
        )

    layout = Layout(root, root / FLOW_DIR_NAME, built_in=False)
    # Not is_file(), nor exists(): a folder, a dangling symlink or a symlink loop named like a
    # layer is reported, never silently skipped (the shipped defaults would stand in for it).
    paths = [p for p in _layer_paths(layout.flow_dir, flow_type, variant) if os.path.lexists(p)]
    for path in paths:  # a layer's texts go into prompts: the project's own files only
        refuse_outside(root, path, display(root, path))
    review_only = paths == [layout.flow_dir / BASE_FILE] and _only_review(paths[0], layout)
    if not paths or review_only:
        layout = Layout(root, builtin_flow_dir(), built_in=True)
        shipped = [p for p in _layer_paths(layout.flow_dir, flow_type, variant) if p.is_file()]
        paths = shipped + paths  # the review-only layer, if any, last (it sets only review:)
    if variant is not None:
        wanted = layout.flow_dir / str(flow_type) / f"{variant}.yaml"
        if wanted not in paths:
            raise ConfigError(_missing_variant(layout, wanted, str(flow_type)))
    return layout, paths


def _only_review(path: Path, layout: Layout) -> bool:
    """Whether the layer file ``path`` sets ``review:`` and nothing else: the builtin reviewer's
    settings, read on their own by ``git agent-review``. Such a file is no chain layer, so the
    shipped defaults still apply (docs/decisions.md, "Flow configuration" 14). A file that
    cannot be read is not: the normal path reports it."""
    try:
        node = read_layer(path, display(layout.root, path))
    except ConfigError:
        return False
    return set(node.value) == {"review"}


def _missing_variant(layout: Layout, wanted: Path, flow_type: str) -> str:
    folder = wanted.parent
    known = (
        sorted(p.stem for p in folder.glob("*.yaml") if p.is_file() and p.name != BASE_FILE)
        if folder.is_dir()
        else []
    )
    where = (
        display(layout.root, wanted) if not layout.built_in else f".flow/{flow_type}/{wanted.name}"
    )
    return (
        f"variant file {where} not found; variants of {flow_type!r}: {', '.join(known) or 'none'}"
    )


def _layer_display(layout: Layout, path: Path) -> str:
    if layout.built_in and path.is_relative_to(templates_dir()):
        return f"{BUILT_IN}:{path.relative_to(templates_dir()).as_posix()}"
    return display(layout.root, path)
