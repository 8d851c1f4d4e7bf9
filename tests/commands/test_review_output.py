"""Where `git agent-review --output FILE` writes: a regular file (or a new one) is replaced
atomically; a FIFO, a device or a descriptor the command holds is written where it is, as
``> FILE`` does; a folder is a usage error. Real subprocesses, scratch paths only: no test
writes to a system device (/dev/null, /dev/stdout)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Cli
from tests.helpers.files import commit_files
from tests.helpers.review import run

__all__ = ["run"]  # a fixture


def review_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "gitflow_agents.git_agent_review", "HEAD", "--no-note", *args]


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def changed(repo: Path) -> Path:
    commit_files(repo, {"app.py": "print('hello')\n"}, "add app.py")
    return repo


def test_a_fifo_gets_the_document_and_stays_a_fifo(changed: Path, tmp_path: Path) -> None:
    """A FIFO someone reads (a log collector, ``>(cmd)``) is written, not replaced by a
    regular file its reader never sees. The reader end is opened first without blocking, so
    neither side waits for the other."""
    fifo = tmp_path / "review.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        proc = subprocess.run(
            review_command("--output", str(fifo), "--output-format", "json"),
            cwd=changed,
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        got = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(got)["overall"] == "approve"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".review")) == []


def test_the_commands_own_stdout_named_as_output_gets_both_in_order(
    changed: Path, tmp_path: Path
) -> None:
    """``--output /dev/fd/1`` with stdout sent to a file (a scratch file here, never a system
    device): the JSON document, then the terminal view, both in that file, which is neither
    replaced nor truncated (it was: the rename swapped it, and the terminal view went to the
    unlinked old file)."""
    log = tmp_path / "log.txt"
    with log.open("wb") as out:
        out.write(b"before\n")
        out.flush()
        inode = log.stat().st_ino
        proc = subprocess.run(
            review_command("--output", "/dev/fd/1", "--output-format", "json"),
            cwd=changed,
            env=child_env(),
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr
    assert log.stat().st_ino == inode
    text = log.read_text()
    assert text.startswith("before\n{\n")
    document, _, view = text.removeprefix("before\n").partition("\n}\n")
    assert json.loads(document + "\n}")["overall"] == "approve"
    assert view.rstrip().endswith("APPROVED: no findings")


def test_a_folder_is_a_usage_error_naming_the_option(changed: Path, run: Cli) -> None:
    reports = changed / "reports"
    reports.mkdir()
    result = run.review("HEAD", "--no-note", "--output", str(reports), cwd=changed)
    assert result.returncode == 2
    assert f"--output {reports}: " in result.stderr
    assert ".tmp" not in result.stderr and "Traceback" not in result.stderr
    assert list(reports.iterdir()) == []


@pytest.mark.parametrize("name", ["reports/", "reports//", "reports/.", "out/reports/.."])
def test_a_name_that_can_only_be_a_folder_is_a_usage_error_though_none_is_there(
    changed: Path, run: Cli, name: str
) -> None:
    """``--output reports/`` (the folder does not exist yet) wrote a file called ``reports``,
    exit 0; ``> reports/`` refuses it: a name ending in ``/`` (``.``, ``..``) names a folder."""
    result = run.review("HEAD", "--no-note", "--output", name, cwd=changed)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"--output {name}: is a folder, not a file" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (changed / "reports").exists() and not (changed / "out").exists()


def test_a_path_under_a_file_or_an_empty_one_is_a_usage_error_naming_the_option(
    changed: Path, run: Cli
) -> None:
    """``--output plain/r.json`` under a file named the error of the temp file's folder
    (``…/plain: File exists``); ``--output ""`` wrote nothing and said nothing."""
    plain = changed.parent / "plain"
    plain.write_text("mine\n")
    result = run.review("HEAD", "--no-note", "--output", str(plain / "r.json"), cwd=changed)
    assert result.returncode == 2, result.stderr
    assert f"--output {plain / 'r.json'}: {plain} is a file" in result.stderr
    assert plain.read_text() == "mine\n"
    empty = run.review("HEAD", "--no-note", "--output", "", cwd=changed)
    assert empty.returncode == 2 and "--output: give a file name" in empty.stderr
    nested = changed.parent / "new" / "dir" / "r.json"  # folders that do not exist are made
    made = run.review("HEAD", "--no-note", "--output", str(nested), cwd=changed)
    assert made.returncode == 0, made.stderr
    assert json.loads(nested.read_text())["gate"]["approved"] is True
