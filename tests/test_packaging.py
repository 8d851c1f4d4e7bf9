"""The wheel carries templates/ and the config schema, and finds them when installed."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("gitflow_agents-*.whl")
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
    resources = (ROOT / "gitflow_agents" / "resources.py").read_text()
    (package / "resources.py").write_text(resources)
    (package / "__init__.py").write_text("")
    code = "from gitflow_agents.resources import templates_dir; print(templates_dir())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(out.stdout.strip()) == package / "templates"
