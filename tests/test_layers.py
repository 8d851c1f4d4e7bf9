"""The package's layers, read from its imports (every ``import``, also inside functions and under
``TYPE_CHECKING``): a module may import its own layer and the layers below it, never one above.

``LAYERS`` is the one table, highest layer first; a module belongs to the first layer one of whose
prefixes names it or a package holding it. Each top-level package is a layer of its own (github/
holds two), so the order is total; the package itself (``__version__``) is the lowest, and every
top-level name must have a row of its own (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = "gitflow_agents"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "entry points",
        (f"{PACKAGE}.cli", f"{PACKAGE}.git_agent_review", f"{PACKAGE}.__main__"),
    ),
    ("commands", (f"{PACKAGE}.commands",)),
    ("serve", (f"{PACKAGE}.serve",)),  # the web page of `serve`: a front end like commands/
    # the Action and ``run --pr`` use each other (the Action takes a step pull request's label off)
    ("github", (f"{PACKAGE}.github.action", f"{PACKAGE}.github.pr")),
    ("github api", (f"{PACKAGE}.github.api", f"{PACKAGE}.github")),
    ("chain", (f"{PACKAGE}.chain",)),
    ("reviewer", (f"{PACKAGE}.reviewer",)),
    ("agent_run", (f"{PACKAGE}.agent_run",)),
    ("supervisor", (f"{PACKAGE}.supervisor",)),
    ("prompt", (f"{PACKAGE}.prompt",)),
    ("assets", (f"{PACKAGE}.assets",)),
    ("render", (f"{PACKAGE}.render",)),
    ("runs", (f"{PACKAGE}.runs",)),
    ("config", (f"{PACKAGE}.config",)),
    ("plan", (f"{PACKAGE}.plan",)),
    ("agents", (f"{PACKAGE}.agents",)),
    ("findings", (f"{PACKAGE}.findings",)),
    ("git", (f"{PACKAGE}.git",)),
    ("base", (f"{PACKAGE}.base",)),
    ("package", (PACKAGE,)),
)


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> int:
    """The index of ``module``'s layer in ``LAYERS`` (0 is the highest)."""
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(_within(module, prefix) for prefix in prefixes):
            return index
    raise AssertionError(f"{module} is in no layer of LAYERS")


def _module_name(package_dir: Path, path: Path) -> str:
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(package_dir: Path, path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every import of the package in ``path``; ``from X import name`` counts
    as an import of ``X.name`` (a submodule or a name in ``X``: both are in ``X``'s layer or
    below, since a layer's prefixes are packages or modules)."""
    module = _module_name(package_dir, path)
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.split(".")[: len(module.split(".")) - node.level + is_package]
                base = ".".join([*parent, base] if base else parent)
            yield from ((node.lineno, f"{base}.{alias.name}") for alias in node.names)


def upward_imports(package_dir: Path) -> list[str]:
    """``file:line: module (layer) imports target (layer)`` for every import of a higher layer."""
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        module = _module_name(package_dir, path)
        for line, target in imported(package_dir, path):
            if not _within(target, package_dir.name):
                continue
            if layer_of(target) < layer_of(module):
                found.append(
                    f"{path.relative_to(package_dir.parent)}:{line}: {module} "
                    f"({LAYERS[layer_of(module)][0]}) imports {target} "
                    f"({LAYERS[layer_of(target)][0]})"
                )
    return found


def test_no_module_imports_a_higher_layer() -> None:
    assert upward_imports(ROOT / PACKAGE) == []


def test_every_top_level_name_has_a_row_of_its_own() -> None:
    """A new package or module gets its place in the order; it does not fall into the last row,
    the package's ``__init__`` (which may import nothing of the package)."""
    package = ROOT / PACKAGE
    names = [
        path.stem
        for path in package.iterdir()
        if (path.suffix == ".py" and path.name != "__init__.py") or (path / "__init__.py").is_file()
    ]
    assert len(names) > 10
    assert [name for name in names if layer_of(f"{PACKAGE}.{name}") == len(LAYERS) - 1] == []


def test_every_kind_of_upward_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE
    (package / "commands").mkdir(parents=True)
    (package / "github").mkdir()
    for name in ("__init__.py", "cli.py", "commands/__init__.py", "commands/review.py"):
        (package / name).write_text("from gitflow_agents import git\n")
    (package / "git").mkdir()
    (package / "git" / "__init__.py").write_text("from gitflow_agents import __version__\n")
    (package / "git" / "stats.py").write_text(
        "from gitflow_agents.base import fsutil\nfrom gitflow_agents.runs import fields\n"
    )
    (package / "github" / "__init__.py").write_text("")
    (package / "github" / "publish.py").write_text(
        "import gitflow_agents.commands.review\n"
        "def f():\n"
        "    from gitflow_agents.commands.history import step_chart\n"
        "    from ..cli import main\n"
        "    from .. import commands\n"
        "    from . import comment\n"
    )
    (package / "commands" / "history.py").write_text("from .. import cli\nfrom . import review\n")
    found = upward_imports(package)
    assert [entry.split(": ", 1)[0] for entry in found] == [
        "gitflow_agents/__init__.py:1",
        "gitflow_agents/commands/history.py:1",
        "gitflow_agents/git/stats.py:2",
        "gitflow_agents/github/publish.py:1",
        "gitflow_agents/github/publish.py:3",
        "gitflow_agents/github/publish.py:4",
        "gitflow_agents/github/publish.py:5",
    ]
    assert "(package) imports gitflow_agents.git (git)" in found[0]
    assert "(github api) imports gitflow_agents.cli.main (entry points)" in found[5]
    assert "(git) imports gitflow_agents.runs.fields (runs)" in found[2]
