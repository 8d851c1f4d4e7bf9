"""Colour: ``--color``, then NO_COLOR, then FORCE_COLOR, then the terminal; rich agrees."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gitflow_agents import cli
from gitflow_agents.base import color
from gitflow_agents.runs.events import ConsoleChannel
from tests.conftest import ROOT, git

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


# (choice, environment, is a terminal) -> colour
CASES = [
    ("auto", {}, True, True),
    ("auto", {}, False, False),
    ("auto", {"TERM": "dumb"}, True, False),
    ("auto", {"NO_COLOR": "1"}, True, False),
    ("auto", {"NO_COLOR": ""}, True, True),  # present but empty: not set (no-color.org)
    ("auto", {"FORCE_COLOR": "1"}, False, True),  # CI logs
    ("auto", {"FORCE_COLOR": "0"}, False, True),  # any non-empty value (force-color.org)
    ("auto", {"FORCE_COLOR": ""}, False, False),  # empty: not set; the terminal decides
    ("auto", {"FORCE_COLOR": ""}, True, True),
    ("auto", {"FORCE_COLOR": "1", "TERM": "dumb"}, False, True),
    ("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),  # NO_COLOR first
    ("always", {"NO_COLOR": "1"}, False, True),  # the option first
    ("never", {"FORCE_COLOR": "1"}, True, False),
]


@pytest.mark.parametrize(("choice", "env", "tty", "expected"), CASES)
def test_the_rule(choice: str, env: dict[str, str], tty: bool, expected: bool) -> None:
    assert color.use_color(Stream(tty), env, choice) is expected


@pytest.mark.parametrize(("choice", "env", "tty", "expected"), CASES)
def test_rich_consoles_follow_the_rule_not_their_own(
    monkeypatch: pytest.MonkeyPatch, choice: str, env: dict[str, str], tty: bool, expected: bool
) -> None:
    """rich reads NO_COLOR, FORCE_COLOR and TTY_COMPATIBLE itself (an empty FORCE_COLOR means
    "no terminal" to it); with our settings what it draws is what the rule says."""
    from rich.console import Console

    for name in ("NO_COLOR", "FORCE_COLOR", "TERM", "TTY_COMPATIBLE", "COLORTERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {**env, "TTY_COMPATIBLE": "0"}.items():
        monkeypatch.setenv(name, value)
    stream = Stream(tty)
    on = color.use_color(stream, choice=choice)
    console = Console(file=stream, force_terminal=True, **color.rich_settings(on))
    console.print("[red]x[/red]")
    assert ("\x1b[31m" in stream.getvalue()) is expected


def test_dispatch_sets_the_choice_for_the_command_only(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    monkeypatch.setattr(
        "gitflow_agents.commands.heartbeat.run",
        lambda args: seen.append(color.use_color(Stream(False))) or 0,
    )
    assert cli.main(["--color", "always", "heartbeat"]) == 0
    assert seen == [True]
    assert color.use_color(Stream(False), {}) is False  # back to auto afterwards


def test_command_named_skips_the_color_value() -> None:
    assert cli._command_named(["--color", "never", "status"]) == "status"
    assert cli._command_named(["--color=never", "status"]) == "status"


def test_unknown_choice_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["--color", "sometimes", "status"])
    assert info.value.code == 2
    assert "--color" in capsys.readouterr().err


def test_live_table_has_no_colour_with_color_never(monkeypatch: pytest.MonkeyPatch) -> None:
    """The live table redraws on a terminal; --color never leaves rich's colours out of it."""
    from gitflow_agents.runs.events import Event

    monkeypatch.delenv("NO_COLOR", raising=False)
    drawn = {}
    for choice in ("always", "never"):
        color.choose(choice)
        try:
            stream = Stream(True)
            channel = ConsoleChannel(stream, is_tty=True)
            channel.handle(Event("agent:start", "t", "r1", {"agent": "builder", "pid": 1}))
            channel.close()
        finally:
            color.choose("auto")
        drawn[choice] = stream.getvalue()
    assert "builder" in drawn["never"] and "builder" in drawn["always"]
    assert not ANSI.search(drawn["never"])
    assert ANSI.search(drawn["always"])


# --- end to end: git agent-review on a terminal, in a pipe, in CI --------------------------------


@pytest.fixture
def defect(repo: Path) -> Path:
    (repo / "a.py").write_text("def run(:\n")
    git(repo, "add", "a.py")
    git(repo, "commit", "-q", "-m", "defect")
    return repo


def review(repo: Path, env: dict[str, str], *args: str, tty: bool = False) -> str:
    """``git agent-review HEAD`` as a real process; its stdout a pseudo-terminal when ``tty``."""
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    argv = [sys.executable, "-m", "gitflow_agents.git_agent_review", "HEAD", "--no-note", *args]
    full_env = {**base, "PYTHONPATH": str(ROOT), "TERM": "xterm", **env}
    if not tty:
        proc = subprocess.run(
            argv, cwd=repo, env=full_env, capture_output=True, text=True, timeout=60
        )
        return proc.stdout
    main, child = pty.openpty()
    try:
        with subprocess.Popen(argv, cwd=repo, env=full_env, stdout=child) as proc:
            os.close(child)
            out = b""
            while chunk := _read(main):
                out += chunk
            proc.wait(timeout=60)
    finally:
        os.close(main)
    return out.decode()


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the child closed the terminal
        return b""


@pytest.mark.parametrize(
    ("env", "args", "tty", "coloured"),
    [
        ({}, (), True, True),
        ({}, (), False, False),
        ({"NO_COLOR": ""}, (), True, True),
        ({"NO_COLOR": "1"}, (), True, False),
        ({"FORCE_COLOR": "1"}, (), False, True),
        ({"NO_COLOR": "1"}, ("--color", "always"), False, True),
        ({"FORCE_COLOR": "1"}, ("--color", "never"), True, False),
    ],
)
def test_git_agent_review_colour(
    defect: Path, env: dict[str, str], args: tuple[str, ...], tty: bool, coloured: bool
) -> None:
    out = review(defect, env, *args, tty=tty)
    assert "a.py" in out
    assert bool(ANSI.search(out)) is coloured


def test_options_the_terminal_renderer_names_exist() -> None:
    """render/terminal.py says who decides colour; every option it names is a real one."""
    from gitflow_agents import git_agent_review
    from gitflow_agents.render import terminal

    named = set(re.findall(r"--[a-z][a-z-]*", terminal.__doc__ or ""))
    assert named
    parsers = [cli.build_parser(), git_agent_review.build_parser()]
    known = {flag for p in parsers for action in p._actions for flag in action.option_strings}
    assert named <= known


def test_the_parsers_offer_the_choices_the_rule_knows() -> None:
    assert cli.COLOR_CHOICES == color.CHOICES
