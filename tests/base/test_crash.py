"""A bug (an unexpected exception) exits with the internal-error code 70, never 0 or 1, with one
line on stderr and the traceback in the crash log (gitflow_agents/base/crash.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from gitflow_agents import cli, git_agent_review
from gitflow_agents.base.crash import crash_log_path
from gitflow_agents.base.errors import ExitCode
from tests.conftest import ROOT


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
    readme = (ROOT / "README.md").read_text()
    for code in ExitCode:
        assert f"| {int(code)} |" in readme, code


COMMAND_MODULES = sorted(
    p.stem
    for p in (Path(cli.__file__).parent / "commands").glob("*.py")
    if p.stem != "__init__" and "\ndef run(" in p.read_text()
)


@pytest.mark.parametrize("module", COMMAND_MODULES)
def test_a_bug_in_any_command_is_exit_70(
    module: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
) -> None:
    import importlib

    monkeypatch.setattr(importlib.import_module(f"gitflow_agents.commands.{module}"), "run", _boom)
    assert cli.dispatch(argparse.Namespace(chdir=None, module=module)) == ExitCode.INTERNAL
    assert (
        "internal error (a bug in gitflow-agents): RuntimeError: a bug;" in capsys.readouterr().err
    )


def test_every_command_is_a_command_module() -> None:
    """The list above holds every module ``dispatch`` can run (so none escapes the test)."""
    subparsers = next(
        a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    named = {parser.get_default("module") for parser in subparsers.choices.values()}
    assert named == set(COMMAND_MODULES)


@pytest.mark.parametrize(
    ("entry", "prog"), [(cli, "gitflow-agents"), (git_agent_review, "git agent-review")]
)
def test_a_bug_while_building_the_parser_is_exit_70(
    entry: object,
    prog: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
) -> None:
    def broken(*args: object) -> argparse.ArgumentParser:
        raise RuntimeError("a bug")

    monkeypatch.setattr(entry, "build_parser", broken)
    # --agent: a form git agent-review reads with its parser, not by plain_args
    assert entry.main(["status", "--agent", "x"]) == ExitCode.INTERNAL  # type: ignore[attr-defined]
    assert capsys.readouterr().err.startswith(f"{prog}: internal error (a bug in gitflow-agents)")


def test_the_process_exit_status_of_a_bug_is_70(isolated_home: Path, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    code = (
        "import sys, gitflow_agents.commands.status as s\n"
        "def boom(args): raise RuntimeError('a bug')\n"
        "s.run = boom\n"
        "from gitflow_agents.cli import main\n"
        "raise SystemExit(main(['status']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=dict(os.environ), capture_output=True
    )
    assert done.returncode == 70, done.stderr
    assert b"Traceback" not in done.stderr
