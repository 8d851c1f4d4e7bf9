from __future__ import annotations

import argparse
import re
import sys
import types
from pathlib import Path

import pytest

from gitflow_agents import __version__, cli, git_agent_review
from gitflow_agents.agent_run.run import limits
from gitflow_agents.base.errors import ConfigError, ExitCode, format_location
from gitflow_agents.chain import ChainSettings
from gitflow_agents.commands.run import settings_from
from gitflow_agents.config import load_flow_config
from gitflow_agents.runs.tree import KILL_GRACE
from gitflow_agents.supervisor import Limits
from tests.conftest import run_cli


def test_help_lists_commands() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for name in ("init", "plan", "prompt"):
        assert name in result.stdout


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str) -> None:
    result = run_cli(flag)
    assert result.returncode == 0
    assert result.stdout.strip() == f"gitflow-agents {__version__}"


def test_git_agent_review_short_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        git_agent_review.main(["-V"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"git agent-review {__version__}"


def test_errors_docstring_names_the_real_handler() -> None:
    """errors.py's first line names the one handler that maps errors to exit codes: it exists."""
    import importlib

    from gitflow_agents.base import errors

    named = re.findall(r"``([\w.]+)``", (errors.__doc__ or "").splitlines()[0])
    assert named
    for name in named:
        module, _, attr = name.rpartition(".")
        owner = importlib.import_module(f"gitflow_agents.{module}") if module else errors
        assert callable(getattr(owner, attr, None)), name


def test_version_is_semantic(capsys: pytest.CaptureFixture[str]) -> None:
    """One version, MAJOR.MINOR.PATCH (the release tag is v + it); git agent-review shows it too.
    That the built wheel's metadata carries the same one: tests/test_packaging.py."""
    assert re.fullmatch(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)", __version__)
    with pytest.raises(SystemExit) as exit_info:
        git_agent_review.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"git agent-review {__version__}"


def test_no_command_is_usage_error() -> None:
    result = run_cli()
    assert result.returncode == ExitCode.USAGE
    assert "usage:" in result.stderr


def test_unknown_option_is_usage_error() -> None:
    result = run_cli("--no-such-option")
    assert result.returncode == ExitCode.USAGE


def test_help_imports_no_heavy_library() -> None:
    code = (
        "import sys; from gitflow_agents import cli; cli.build_parser(); "
        "heavy = {'git', 'github', 'jinja2', 'markdown_it', 'yaml', 'psutil'} & set(sys.modules); "
        "print(sorted(heavy))"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _fake_command(
    monkeypatch: pytest.MonkeyPatch, behaviour: BaseException | int
) -> argparse.Namespace:
    module = types.ModuleType("gitflow_agents.commands._fake")

    def run(args: argparse.Namespace) -> int:
        if isinstance(behaviour, BaseException):
            raise behaviour
        return behaviour

    module.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gitflow_agents.commands._fake", module)
    return argparse.Namespace(module="_fake", chdir=None)


def test_ctrl_c_is_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.dispatch(_fake_command(monkeypatch, KeyboardInterrupt())) == 130
    assert "interrupted" in capsys.readouterr().err


def test_user_error_is_one_line_with_location(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    error = ConfigError("expected a mapping", path=".flow/base.yaml", line=3, key="agents")
    assert cli.dispatch(_fake_command(monkeypatch, error)) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err == "gitflow-agents: error: .flow/base.yaml:3: agents: expected a mapping\n"


def test_return_code_passes_through(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli.dispatch(_fake_command(monkeypatch, 1)) == 1


@pytest.mark.parametrize(
    ("path", "line", "key", "expected"),
    [
        ("a.yaml", 2, "k", "a.yaml:2: k: "),
        ("a.yaml", None, "k", "a.yaml: k: "),
        ("a.yaml", None, None, "a.yaml: "),
        (None, None, None, ""),
    ],
)
def test_format_location(
    path: str | None, line: int | None, key: str | None, expected: str
) -> None:
    assert format_location(path, line, key) == expected


def test_chdir_option(tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("-C", str(tmp_path / "missing"), "plan", "show", "x.md")
    assert result.returncode == ExitCode.USAGE
    assert "missing" in result.stderr
    assert "Traceback" not in result.stderr


def test_file_where_a_folder_should_be_is_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / ".git").mkdir()
    (tmp_path / ".flow").write_text("not a folder")
    result = run_cli("init", cwd=tmp_path)
    assert result.returncode == ExitCode.USAGE
    assert "Traceback" not in result.stderr
    assert ".flow" in result.stderr
    assert ".flow is a file; init needs a folder there" in result.stderr
    assert result.stderr.count("\n") == 1


def _command_names() -> list[str]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


@pytest.mark.parametrize("name", _command_names())
def test_every_command_builds_its_own_arguments(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the named command gets its arguments built: each must still parse its own -h."""
    with pytest.raises(SystemExit) as info:
        cli.main([name, "-h"])
    assert info.value.code == 0
    assert f"usage: gitflow-agents {name}" in capsys.readouterr().out


def test_top_level_help_builds_no_command_arguments() -> None:
    import subprocess

    code = (
        "import sys; from gitflow_agents import cli; cli.build_parser(['--help']); "
        "print(sorted(m for m in sys.modules if m.startswith('gitflow_agents.') "
        "and m not in {'gitflow_agents.cli', 'gitflow_agents.base', 'gitflow_agents.base.errors', "
        "'gitflow_agents.commands', 'gitflow_agents.commands.dispatch', 'gitflow_agents.base.color', "
        "'gitflow_agents.base.records'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_command_named_skips_the_chdir_value() -> None:
    assert cli._command_named(["-C", "run", "plan", "show", "x.md"]) == "plan"
    assert cli._command_named(["--version"]) is None


def test_the_man_page_check_at_start_up_imports_nothing(tmp_path: Path) -> None:
    """Every start-up checks that `git agent-review --help` can find its page (manpage.py); when
    the page is there it costs a few access() calls, no pathlib (benchmarks/startup.py)."""
    import subprocess

    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "git-agent-review").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "git-agent-review").chmod(0o755)
    (tmp_path / "share" / "man" / "man1").mkdir(parents=True)
    (tmp_path / "share" / "man" / "man1" / "git-agent-review.1").write_text(".TH X 1\n")
    code = (
        "import sys; from gitflow_agents import cli; from gitflow_agents.commands import manpage; before = set(sys.modules); "
        f"print(manpage.ensure_reachable({{'PATH': {str(tmp_path / 'bin')!r}}}), "
        "sorted(set(sys.modules) - before), 'pathlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None [] False"


@pytest.mark.parametrize(
    ("main", "argv", "shown"),
    [
        (cli.main, ["run", "p.md", "--step", "9" * 5000], "'99999999999999999999…'"),
        (cli.main, ["run", "p.md", "--merge", "x" * 5000], "'xxxxxxxxxxxxxxxxxxxx…' (choose from"),
        (cli.main, ["plan", "show", "p.md", "y" * 5000], ": yyyyyyyyyyyyyyyyyyyy…"),
        (git_agent_review.main, ["--fail-on", "z" * 5000], "'zzzzzzzzzzzzzzzzzzzz…'"),
        (cli.main, ["run", "p.md", "--step", "x'" + "9" * 5000], '"x\'999999999999999999…"'),
    ],
)
def test_a_usage_error_echoes_at_most_20_characters_of_a_value(
    capsys: pytest.CaptureFixture[str], main: object, argv: list[str], shown: str
) -> None:
    assert callable(main)
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == ExitCode.USAGE
    error = capsys.readouterr().err.splitlines()[-1]
    assert shown in error and len(error) < 200, error


@pytest.mark.parametrize(
    ("main", "argv", "shown"),
    [
        (cli.main, ["run", "p.md", "--budget-usd=--"], "--budget-usd: must be a finite number"),
        (cli.main, ["spawn", "a", "--budget-tokens=--"], "--budget-tokens: must be a whole number"),
        (cli.main, ["run", "p.md", "--kill-grace=--"], "--kill-grace: must be a finite number"),
        (git_agent_review.main, ["--fail-on=--"], "--fail-on: invalid choice: '--'"),
    ],
)
def test_an_option_given_the_value_dashes_is_checked_as_any_value(
    capsys: pytest.CaptureFixture[str], main: object, argv: list[str], shown: str
) -> None:
    """``--opt=--``: argparse (before Python 3.12.7) dropped the ``--`` as its end of options
    and handed the command an empty list (``--budget-usd=--`` was an internal error, exit 70;
    ``--kill-grace=--`` ran with it); the value is checked as any other, exit 2."""
    assert callable(main)
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == ExitCode.USAGE
    assert shown in capsys.readouterr().err


def test_a_short_value_is_echoed_whole(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["run", "p.md", "--step", "1234567890123456789x"])
    assert "'1234567890123456789x'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "spawn", "send"])
def test_kill_grace_has_one_default(command: str) -> None:
    """``--kill-grace`` unset reaches the limits as ``runs.tree.KILL_GRACE``, the default of
    the supervisor's ``Limits`` and the chain's settings too; given, it wins."""
    argv = {
        "run": ["run", "plan.md", "--step", "1"],
        "spawn": ["spawn", "builder", "--plan", "plan.md", "--step", "1"],
        "send": ["send", "RUN", "hi"],
    }[command]
    config = load_flow_config(Path(__file__).parent)  # no .flow/: the built-in defaults
    for extra, expected in (([], KILL_GRACE), (["--kill-grace", "0.25"], 0.25)):
        args = cli.build_parser().parse_args([*argv, *extra])
        if command == "run":
            grace = settings_from(args, config).kill_grace
        else:
            grace = limits(config, kill_grace=args.kill_grace).kill_grace
        assert grace == expected
    assert ChainSettings().kill_grace == Limits(1, None).kill_grace == KILL_GRACE
