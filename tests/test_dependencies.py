"""Every third-party module the package imports is a declared runtime dependency, with a marker
that covers each supported Python where the import can happen (``tomli`` before 3.11, where
``tomllib`` is missing: without it 3.10 users got "TOML syntax not checked")."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from importlib.metadata import distributions, packages_distributions, version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import ROOT
from tests.helpers.project import load_pyproject, supported_pythons

PACKAGE = ROOT / "gitflow_agents"


def _imports(path: Path) -> set[str]:
    """Top-level names of the absolute imports in ``path``, and of ``import_module("x")`` and
    ``on_first_use("x")`` calls with literal names (how an optional or data-dependent module
    such as tomli is imported; both branches of a conditional name count)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and _imports_by_name(node.func) and node.args:
            names.update(name.split(".")[0] for name in _literal_names(node.args[0]))
    return names


def _imports_by_name(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name in ("import_module", "on_first_use")


def _literal_names(arg: ast.expr) -> list[str]:
    """The module names a call's argument can be: a string, or either branch of ``a if c else b``."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if isinstance(arg, ast.IfExp):
        return _literal_names(arg.body) + _literal_names(arg.orelse)
    return []


@functools.cache  # two tests read it: the package's files are parsed once
def third_party_imports() -> dict[str, list[str]]:
    """Module name -> the package files importing it, for modules outside the standard library."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in _imports(path):
            # _typeshed: the standard library's type stubs, imported under TYPE_CHECKING only
            if name in sys.stdlib_module_names or name in {
                "gitflow_agents",
                "__future__",
                "_typeshed",
            }:
                continue
            found.setdefault(name, []).append(path.relative_to(ROOT).as_posix())
    return found


def declared() -> dict[str, Requirement]:
    deps = load_pyproject()["project"]["dependencies"]
    return {canonicalize_name(r.name): r for r in map(Requirement, deps)}


_packages_distributions = functools.cache(packages_distributions)  # reads every installed one


def distribution_of(module: str) -> str:
    """The distribution that provides ``module`` here; a module not installed in this Python
    (tomli on 3.11+) is taken to be its own distribution's name."""
    dists = _packages_distributions().get(module) or [module]
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
    for python, wanted in (("3.10", True), ("3.11", False), ("3.14", False)):
        environment = {"python_version": python, "python_full_version": f"{python}.0"}
        assert tomli.marker.evaluate(environment) is wanted, python


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


# --- the constraints file CI installs with (.ci/constraints.txt) --------------------------------

CONSTRAINTS = ROOT / ".ci" / "constraints.txt"
DRIFT = ROOT / ".ci" / "dependency_drift.py"


def pins_for(python: str) -> dict[str, str]:
    """The pins of .ci/constraints.txt whose marker holds on ``python`` (Linux, CPython)."""
    environment = {"python_version": python, "python_full_version": f"{python}.0"}
    pins: dict[str, str] = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            name = canonicalize_name(requirement.name)
            assert name not in pins, f"two pins of {name} for Python {python}"
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", line
            pins[name] = specifier.version
    return pins


def ci_requirements() -> list[Requirement]:
    """What CI installs: the package's dependencies, its test and dev extras, and
    .ci/constraints.in (pip, build, uv)."""
    project = load_pyproject()["project"]
    texts = [*project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        texts += [t for t in extra if not t.startswith("gitflow-agents")]
    extra_in = (ROOT / ".ci" / "constraints.in").read_text(encoding="utf-8").splitlines()
    texts += [t for t in extra_in if t.strip() and not t.startswith("#")]
    return [Requirement(t) for t in texts]


def test_constraints_pin_every_ci_requirement_within_its_range_on_each_python() -> None:
    """A dependency added to pyproject without regenerating the file fails here (and
    `dependency_drift.py --check` in .ci/run fails on it too)."""
    versions = supported_pythons()
    assert versions[0] == "3.10" and len(versions) >= 5
    for python in versions:
        pins = pins_for(python)
        environment = {"python_version": python, "python_full_version": f"{python}.0"}
        for requirement in ci_requirements():
            if requirement.marker is not None and not requirement.marker.evaluate(environment):
                continue
            name = canonicalize_name(requirement.name)
            assert name in pins, f"{name} has no pin for Python {python}: regenerate"
            assert requirement.specifier.contains(pins[name], prereleases=True), (
                f"{name}=={pins[name]} is outside {requirement} (Python {python})"
            )


def test_constraints_say_how_they_were_made() -> None:
    """The header is the documented command (CONTRIBUTING.md runs the same one)."""
    header = CONSTRAINTS.read_text(encoding="utf-8").splitlines()[1].lstrip("# ").strip()
    assert header.startswith("uv pip compile --universal --python-version 3.10 ")
    assert "pyproject.toml .ci/constraints.in -o .ci/constraints.txt" in header
    assert header in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def drift(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DRIFT), *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def installed_pins() -> list[str]:
    return [
        f"{d.metadata['Name']}=={d.version}"
        for d in distributions()
        if canonicalize_name(d.metadata["Name"]) != "gitflow-agents"
    ]


def test_drift_is_silent_when_every_installed_package_is_pinned(tmp_path: Path) -> None:
    pins = tmp_path / "constraints.txt"
    pins.write_text(
        "# made here\n" + "\n".join(installed_pins()) + "\nnot-installed-pkg==1.0 # a comment\n"
        "gated==9 ; python_version < '3'\n",
        encoding="utf-8",
    )
    result = drift("--check", str(pins))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("no dependency moved:")


def test_drift_names_what_moved_and_what_has_no_pin(tmp_path: Path) -> None:
    lines = [p for p in installed_pins() if not p.lower().startswith(("pyyaml==", "jinja2=="))]
    lines.append("PyYAML==0.1")  # older than what is installed
    pins = tmp_path / "constraints.txt"
    pins.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = drift(str(pins))
    assert result.returncode == 0  # a report, not a failure, without --check
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[2:-1]}
    assert rows["pyyaml"][1:] == ["0.1", version("PyYAML"), "newer"]
    assert rows["jinja2"][1:] == ["-", version("Jinja2"), "not", "pinned"]
    assert set(rows) == {"pyyaml", "jinja2"}
    assert result.stdout.splitlines()[-1] == "1 moved, 1 not pinned"
    assert drift("--check", str(pins)).returncode == 1


def test_drift_refuses_a_line_that_is_not_a_pin_naming_file_and_line(tmp_path: Path) -> None:
    pins = tmp_path / "constraints.txt"
    pins.write_text("pyyaml==6.0.4\n\nrich>=13\n", encoding="utf-8")
    result = drift(str(pins))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"dependency_drift: {pins}:3: ")
    assert len(result.stderr.splitlines()) == 1  # one line, no traceback
    missing = drift(str(tmp_path / "absent.txt"))
    assert (
        missing.returncode == 2 and f"{tmp_path / 'absent.txt'}: cannot read it" in missing.stderr
    )


def test_drift_without_packaging_says_what_it_needs() -> None:
    """-S: no site-packages, as in an environment with the runtime dependencies only."""
    result = subprocess.run(
        [sys.executable, "-S", str(DRIFT)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert (
        result.stderr == "dependency_drift: needs the packaging package (the test extra has it)\n"
    )
