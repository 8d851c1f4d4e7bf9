"""Where the tool's cache is (``base/xdg.py``): ``$XDG_CACHE_HOME`` when it is absolute; a
relative or empty value is ignored, as the XDG Base Directory specification says."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.base.crash import crash_log_path
from gitflow_agents.base.xdg import cache_dir, cache_home


@pytest.mark.parametrize("value", [".cache", "cache/x", "./c", "~/.cache", ""])
def test_a_relative_or_empty_cache_home_is_ignored(
    value: str, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", value)
    assert cache_home() == isolated_home / ".cache"
    assert crash_log_path() == isolated_home / ".cache" / "gitflow-agents" / "crash.log"


def test_an_absolute_cache_home_is_taken(tmp_path: Path) -> None:
    assert cache_home({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "gitflow-agents"


def test_no_cache_home_is_home_s_cache(isolated_home: Path) -> None:
    assert cache_home({}) == isolated_home / ".cache"
