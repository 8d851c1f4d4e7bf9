"""Every third-party module the package imports is a declared runtime dependency, with a marker
that covers each supported Python where the import can happen (``tomli`` before 3.11, where
``tomllib`` is missing: without it 3.10 users got "TOML syntax not checked")."""

from __future__ import annotations

import ast
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import ROOT
from tests.test_precommit import load_pyproject

PACKAGE = ROOT / "gitflow_agents"


def _imports(path: Path) -> set[str]:
    """Top-level names of the absolute imports in ``path``, and of ``import_module("x")`` calls
    with a literal name (how an optional module such as tomli is imported)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value.split(".")[0])
    return names


def third_party_imports() -> dict[str, list[str]]:
    """Module name -> the package files importing it, for modules outside the standard library."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in _imports(path):
            if name in sys.stdlib_module_names or name in {"gitflow_agents", "__future__"}:
                continue
            found.setdefault(name, []).append(path.relative_to(ROOT).as_posix())
    return found


def declared() -> dict[str, Requirement]:
    deps = load_pyproject()["project"]["dependencies"]
    return {canonicalize_name(r.name): r for r in map(Requirement, deps)}


def distribution_of(module: str) -> str:
    """The distribution that provides ``module`` here; a module not installed in this Python
    (tomli on 3.11+) is taken to be its own distribution's name."""
    dists = packages_distributions().get(module) or [module]
    return canonicalize_name(dists[0])


def test_every_imported_third_party_module_is_declared() -> None:
    imports = third_party_imports()
    assert {"yaml", "github", "requests"} <= set(imports)  # the scan sees real imports
    runtime = declared()
    missing = {
        module: files for module, files in imports.items() if distribution_of(module) not in runtime
    }
    assert missing == {}, "imported but not in pyproject's dependencies"


def test_tomli_is_declared_for_the_pythons_without_tomllib() -> None:
    """checks.toml_parser() imports tomli where tomllib is missing (3.10); 3.11+ needs nothing."""
    assert "tomli" in third_party_imports()
    tomli = declared()["tomli"]
    assert tomli.marker is not None
    for version, wanted in (("3.10", True), ("3.11", False), ("3.14", False)):
        environment = {"python_version": version, "python_full_version": f"{version}.0"}
        assert tomli.marker.evaluate(environment) is wanted, version


def test_project_urls_name_the_repository_the_readme_names() -> None:
    urls = load_pyproject()["project"]["urls"]
    assert {"Homepage", "Documentation", "Source", "Issues", "Changelog"} <= set(urls)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (repository,) = {
        line.split("repo: ", 1)[1].split()[0]
        for line in readme.splitlines()
        if "- repo: https://" in line
    }
    for label, url in urls.items():
        assert url.startswith(repository), (label, url)
