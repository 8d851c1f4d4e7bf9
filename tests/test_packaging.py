"""What a release ships: the wheel carries templates/ and the config schema and finds them when
installed; the wheel and the sdist, each installed into a fresh virtualenv from the built file
(offline, dependencies from the local wheel folder the pre-commit tests build), run both console
scripts and the README's command 1; the sdist holds what a packager needs; ``--version`` is the
version in the wheel's metadata."""

from __future__ import annotations

import email.parser
import functools
import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

import tests.test_precommit as precommit_tests
from gitflow_agents import __version__
from tests.conftest import ROOT
from tests.helpers.offline_pip import offline_pip_env
from tests.helpers.once import once_per_session
from tests.helpers.project import readme_command_1_after_install

# The session fixture of tests/test_precommit.py: wheels of the build backend and of every
# runtime dependency, built once per requirements and Python version and kept in the temp dir.
wheelhouse = precommit_tests.wheelhouse


def _build(kind: str, out: Path) -> None:
    """The build backend's own PEP 517 hook (what `pip wheel` and `python -m build` call, without
    their start-up) builds ``kind`` (``wheel``, ``sdist``) of the checkout into ``out``."""
    code = f"import sys; from hatchling.build import build_{kind}; print(build_{kind}(sys.argv[1]))"
    subprocess.run(
        [sys.executable, "-c", code, str(out)], cwd=ROOT, check=True, capture_output=True
    )


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built by the build backend's own PEP 517 hook, once per session (for every
    xdist worker)."""
    out = once_per_session(tmp_path_factory, "wheel", functools.partial(_build, "wheel"))
    (built,) = out.glob("gitflow_agents-*.whl")
    return built


@pytest.fixture(scope="session")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist, built by the build backend's own PEP 517 hook (what `python -m build` calls),
    once per session."""
    out = once_per_session(tmp_path_factory, "sdist", functools.partial(_build, "sdist"))
    (built,) = out.glob("gitflow_agents-*.tar.gz")
    return built


def test_wheel_ships_every_template(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = [p for p in (ROOT / "templates").rglob("*") if p.is_file()]
    assert templates, "templates/ is empty"
    for path in templates:
        assert (
            f"gitflow_agents/templates/{path.relative_to(ROOT / 'templates').as_posix()}" in names
        )


def test_wheel_ships_package_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    data = [p for p in (ROOT / "gitflow_agents").rglob("*") if p.suffix in {".json", ".j2"}]
    for path in data:
        assert path.relative_to(ROOT).as_posix() in names


def test_installed_layout_is_preferred(tmp_path: Path) -> None:
    """In an installed wheel the templates sit inside the package: templates_dir() finds them."""
    package = tmp_path / "site" / "gitflow_agents"
    (package / "templates").mkdir(parents=True)
    resources = (ROOT / "gitflow_agents" / "base" / "resources.py").read_text()
    (package / "base").mkdir()
    (package / "base" / "resources.py").write_text(resources)
    (package / "base" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    code = "from gitflow_agents.base.resources import templates_dir; print(templates_dir())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(out.stdout.strip()) == package / "templates"


def test_wheel_ships_the_licence(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    (licence,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    text = zipfile.ZipFile(wheel).read(licence).decode()
    assert text.startswith("MIT License") and "gitflow-agents developers" in text


def _shipped(folder: str) -> list[str]:
    """The files under ``folder`` of the checkout that a build picks up (no bytecode)."""
    return [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    ]


def test_sdist_holds_what_a_packager_needs(sdist: Path) -> None:
    """A packager builds, tests and documents from the sdist alone: the package and its
    templates, the tests and every file they read, the docs, the licence and the changelog."""
    prefix = f"gitflow_agents-{__version__}/"
    with tarfile.open(sdist) as tar:
        names = {n.removeprefix(prefix) for n in tar.getnames()}
    wanted = [
        "pyproject.toml",
        "PKG-INFO",
        "README.md",
        "CHANGELOG.md",
        "LICENSE",
        "action.yml",
        ".pre-commit-hooks.yaml",
        ".ci/actionlint.mjs",
        ".ci/constraints.txt",
        ".ci/constraints.in",
        ".ci/dependency_drift.py",
        *(p.relative_to(ROOT).as_posix() for p in (ROOT / ".github" / "workflows").glob("*.yml")),
    ]
    for folder in ("gitflow_agents", "templates", "tests", "docs", "benchmarks"):
        files = _shipped(folder)
        assert files, folder
        wanted += files
    assert sorted(set(wanted) - names) == []
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def _metadata_version(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.parser.Parser().parsestr(archive.read(name).decode())
    return str(metadata["Version"])


@pytest.fixture(scope="module", params=["wheel", "sdist"])
def installed(
    request: pytest.FixtureRequest,
    wheelhouse: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[str, Path]:
    """A fresh virtualenv with the built wheel or sdist installed from its file, offline (the
    sdist is built into a wheel by pip, with the build backend from the wheel folder)."""
    built: Path = request.getfixturevalue(request.param)
    target = tmp_path_factory.mktemp(f"venv-{request.param}")
    venv.create(target, with_pip=False)  # this pip installs into it (--python): no ensurepip
    env = {**offline_pip_env(wheelhouse, drop=("PIP_", "PYTHON")), "PIP_NO_CACHE_DIR": "1"}
    pip = [sys.executable, "-m", "pip", "--python", str(target / "bin" / "python")]
    result = subprocess.run(
        [*pip, "install", "-q", "--no-compile", str(built)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return request.param, target / "bin"


@pytest.mark.slow
def test_built_file_runs_both_console_scripts_and_readme_command_1(
    installed: tuple[str, Path], wheel: Path, tmp_path: Path
) -> None:
    kind, bin_dir = installed
    version = _metadata_version(wheel)
    assert version == __version__  # one version: gitflow_agents/__init__.py feeds the metadata
    # The installed scripts, not this checkout: a clean PATH and no PYTHONPATH.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", TMPDIR=str(tmp_path))

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )

    assert run("gitflow-agents", "--version").stdout.strip() == f"gitflow-agents {version}"
    assert run("git", "agent-review", "--version").stdout.strip() == f"git agent-review {version}"
    package = run(
        str(bin_dir / "python"), "-c", "import gitflow_agents; print(gitflow_agents.__file__)"
    )
    assert Path(package.stdout.strip()).is_relative_to(bin_dir.parent), (kind, package.stdout)

    command_1 = run("bash", "-c", readme_command_1_after_install())
    assert command_1.returncode == 0, command_1.stdout + command_1.stderr
    # The offline example's chain landed every step (✅ on the target), and history has a row each.
    lines = command_1.stdout.splitlines()
    assert sum(line.startswith("✅ step ") and " approved " in line for line in lines) == 3
    assert (
        sum(
            line.split()[2:4] in (["step", "1"], ["step", "2"], ["step", "3"])
            for line in lines
            if " approved " in line and not line.startswith("✅")
        )
        == 3
    ), command_1.stdout
    helped = run("git", "agent-review", "-h")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: git agent-review")
