"""Writing `.flow/` files and reading the one-line error loading them gives (`write`, `load_error`, `MINIMAL`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gitflow_agents.base.errors import ConfigError
from gitflow_agents.config import (
    load_flow_config,
)

MINIMAL = 'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load_error(root: Path, *args: str | None) -> str:
    with pytest.raises(ConfigError) as info:
        load_flow_config(root, *args)
    return str(info.value)
