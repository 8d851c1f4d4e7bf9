"""The project's own files read as data: `pyproject.toml`, the supported Pythons, the workflows, `action.yml` and the documented example workflows."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT


def load_pyproject() -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        tomllib = pytest.importorskip("tomli")
    data: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return data


def supported_pythons() -> list[str]:
    prefix = "Programming Language :: Python :: 3."
    classifiers = load_pyproject()["project"]["classifiers"]
    return [f"3.{c[len(prefix) :]}" for c in classifiers if c.startswith(prefix)]


WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def write_examples(tmp_path: Path) -> list[Path]:
    """The doc's workflows as files, and the files of docs/examples/."""
    paths = []
    for index, text in enumerate(doc_workflows()):
        path = tmp_path / f"doc-example-{index}.yml"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return [*paths, *EXAMPLES]


def load(name: str) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    return data


def load_yaml(path: Path) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def action_steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = load_yaml(ACTION)["runs"]["steps"]
    return steps


EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.yml"))
"""Workflows a repository copies as they are (docs/github.md embeds them)."""


def doc_workflows() -> list[str]:
    """The ```yaml blocks of docs/github.md that are whole workflows (have on: and jobs:)."""
    blocks = re.findall(r"^```yaml\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.M | re.S)
    return [b for b in blocks if re.search(r"^on:", b, re.M) and re.search(r"^jobs:", b, re.M)]


ACTION = ROOT / "action.yml"


DOC = ROOT / "docs" / "github.md"


def readme_command_1_after_install() -> str:
    """The part of the README's command 1 that runs after ``pip install -c … .``: a subshell in a
    scratch git repository. The release workflow runs the same text against the built files."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (command,) = re.findall(r"^python3 -m venv \.venv && .*$", readme, re.M)
    _, sep, subshell = command.partition(" && python -m pip install -c .ci/constraints.txt . && ")
    assert sep and subshell.startswith("( cd ") and subshell.endswith(" )"), command
    return subshell
