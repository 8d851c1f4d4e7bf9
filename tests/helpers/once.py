"""Expensive things a test session builds once (a wheel, an sdist), shared by pytest-xdist's
workers: under ``-n 2`` the tests of one module run in both workers, and a module- or
session-scoped fixture alone would build the same file in each."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def once_per_session(
    factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]
) -> Path:
    """The folder ``name`` that ``build`` fills once per test session: the first worker builds it
    under a lock, the others wait for it and reuse it (a build that failed is tried again)."""
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's folder, above the workers' own
    folder = base / name
    with (base / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".complete").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / ".complete").touch()
    return folder
