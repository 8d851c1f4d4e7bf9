from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.fsutil import (
    real_path,
    write_bytes_atomic,
    write_json_atomic,
    write_output,
    write_text_atomic,
)


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


# --- a file the user named (``--output FILE``) ---------------------------------------------------


def test_a_named_output_replaces_a_regular_file_and_creates_a_missing_one(tmp_path: Path) -> None:
    existing = tmp_path / "review.json"
    existing.write_text("old")
    before = existing.stat().st_ino
    write_output(str(existing), b"new")
    assert existing.read_bytes() == b"new" and existing.stat().st_ino != before  # replaced
    missing = tmp_path / "deeper" / "review.sarif"
    write_output(str(missing), b"made")
    assert missing.read_bytes() == b"made"
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_named_output_that_is_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    """A FIFO (a log collector, ``>(cmd)``) is opened and written, as ``> FIFO`` does: its
    reader gets the text and the FIFO stays one. The reader end is opened first without
    blocking, so the writer's open does not wait for a reader."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_output(str(fifo), b'{"overall": null}\n')
        got = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert got == b'{"overall": null}\n'
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_named_output_that_is_a_device_is_written_in_place(tmp_path: Path) -> None:
    """A character device (a copy of /dev/null's node, in a scratch folder: the real one is
    never touched) stays a device: it is written, never replaced by a regular file."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("this container may not make device nodes")
    write_output(str(node), b"gone\n")
    assert stat.S_ISCHR(node.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_a_named_output_that_names_an_open_descriptor_is_written_to_it(tmp_path: Path) -> None:
    """``/dev/fd/N`` (and ``/dev/stdout``, ``/proc/self/fd/N``, a link to one) is a descriptor
    this process holds: written to it, after what it already holds, as gawk does; the file
    behind it is neither replaced nor truncated."""
    log = tmp_path / "log.txt"
    with log.open("wb") as handle:
        handle.write(b"before\n")
        handle.flush()
        inode = log.stat().st_ino
        link = tmp_path / "out.json"
        link.symlink_to(f"/dev/fd/{handle.fileno()}")
        write_output(f"/dev/fd/{handle.fileno()}", b"one\n")
        write_output(str(link), b"two\n")
        handle.write(b"after\n")
    assert log.read_bytes() == b"before\none\ntwo\nafter\n"
    assert log.stat().st_ino == inode


def test_a_named_output_that_is_a_folder_is_a_usage_error_naming_the_option(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    with pytest.raises(UsageError) as caught:
        write_output(str(folder), b"x", option="--output")
    assert str(caught.value).startswith(f"--output {folder}: ")
    assert ".tmp" not in str(caught.value)
    assert list(folder.iterdir()) == []


def test_a_symlink_loop_resolves_without_an_error(tmp_path: Path) -> None:
    """``Path.resolve`` raises RuntimeError on one (Python 3.11): every caller would crash."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    resolved = real_path(tmp_path / "a" / "file")
    assert resolved.is_absolute() and not resolved.exists()


def test_the_package_resolves_paths_only_through_real_path() -> None:
    """A bare ``.resolve()`` would bring the RuntimeError back (``__file__`` is the package's)."""
    package = Path(__file__).parents[2] / "gitflow_agents"
    bare = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ".resolve()" in line and "__file__" not in line
    ]
    assert bare == []
