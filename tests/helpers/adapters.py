"""Recorded output of the agent CLIs (`tests/data/agent-output/`, `sample`)."""

from __future__ import annotations

from tests.conftest import DATA

SAMPLES = DATA / "agent-output"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()
