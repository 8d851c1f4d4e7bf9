"""``base/lazy.on_first_use``: a module declared at the top, imported by the first call."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gitflow_agents.base.lazy import on_first_use


def test_a_module_is_imported_by_its_first_use_and_sys_modules_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "gfa_probe_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "gfa_probe_module", raising=False)
    probe = on_first_use("gfa_probe_module")
    assert "gfa_probe_module" not in sys.modules
    assert probe().VALUE == 1
    assert probe() is sys.modules["gfa_probe_module"]
    monkeypatch.setitem(sys.modules, "gfa_probe_module", None)  # as `import` sees it: absent
    with pytest.raises(ImportError):
        probe()
