from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gitflow_agents.base.fsutil import write_bytes_atomic, write_json_atomic, write_text_atomic


def test_new_file_gets_umask_mode_and_parents(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "file.txt"
    write_text_atomic(target, "héllo\r\n")
    assert target.read_bytes() == "héllo\r\n".encode()  # newlines kept exactly
    mask = os.umask(0o022)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


def test_existing_mode_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "script.sh"
    target.write_text("old")
    target.chmod(0o750)
    write_text_atomic(target, "new")
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o750


def test_symlink_target_is_replaced_and_link_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    write_bytes_atomic(link, b"new")
    assert link.is_symlink()
    assert real.read_text() == "new"


def test_failure_leaves_original_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("original")

    def broken(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        write_text_atomic(target, "new")
    assert target.read_text() == "original"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_json_is_pretty_utf8_with_final_newline(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    write_json_atomic(target, {"name": "é", "n": 1}, durable=False)
    text = target.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    assert "é" in text
    assert json.loads(text) == {"name": "é", "n": 1}


def test_a_temp_name_already_taken_is_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp file is created exclusively: a file (or a link planted) at the first name drawn
    is left alone and the next name is used."""
    target = tmp_path / "out.txt"
    draws = iter([b"\x01" * 6, b"\x02" * 6])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    taken = tmp_path / f".out.txt.{'01' * 6}.tmp"
    taken.symlink_to(tmp_path / "elsewhere")
    write_text_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert taken.is_symlink() and not (tmp_path / "elsewhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [taken.name, "out.txt"]
