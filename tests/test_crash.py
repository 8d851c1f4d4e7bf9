"""A bug (an unexpected exception) exits with the internal-error code 70, never 0 or 1, with one
line on stderr and the traceback in the crash log (gitflow_agents/crash.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from gitflow_agents import cli, git_agent_review
from gitflow_agents.crash import crash_log_path
from gitflow_agents.errors import ExitCode


def _boom(args: argparse.Namespace) -> int:
    raise RuntimeError("a bug\nwith a second line")


@pytest.mark.parametrize(
    ("module", "entry", "argv", "prog"),
    [
        ("status", cli.main, ["status"], "gitflow-agents"),
        ("review", git_agent_review.main, [], "git agent-review"),
        ("action", cli.main, ["action"], "gitflow-agents"),
    ],
)
def test_unexpected_exception_is_an_internal_error_with_a_crash_log(
    module: str,
    entry: object,
    argv: list[str],
    prog: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
    tmp_path: Path,
) -> None:
    import importlib

    monkeypatch.setattr(importlib.import_module(f"gitflow_agents.commands.{module}"), "run", _boom)
    monkeypatch.chdir(tmp_path)
    assert callable(entry)
    code = entry(argv)
    err = capsys.readouterr().err
    assert code == ExitCode.INTERNAL == 70
    log = crash_log_path()
    assert log.is_relative_to(isolated_home)
    assert err == (
        f"{prog}: internal error (a bug in gitflow-agents): RuntimeError: a bug; "
        f"the traceback is in {log}\n"
    )
    text = log.read_text()
    assert "Traceback (most recent call last)" in text
    assert "RuntimeError: a bug" in text
    assert "command: " in text


def test_crash_log_that_cannot_be_written_prints_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr("gitflow_agents.commands.status.run", _boom)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["status"]) == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("gitflow-agents: internal error (a bug in gitflow-agents): RuntimeError")
    assert "the traceback follows" in err
    assert "Traceback (most recent call last)" in err


def test_readme_documents_every_exit_code() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for code in ExitCode:
        assert f"| {int(code)} |" in readme, code
