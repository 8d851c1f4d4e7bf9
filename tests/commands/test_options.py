"""The options several commands share (``commands/options.py``): the same names, types and
destinations in each command that takes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents import cli
from gitflow_agents.base.errors import ExitCode
from tests.conftest import cli_main, git
from tests.helpers.chain import call, configure

SHARED = [
    "--flow-type",
    "web",
    "--variant",
    "fast",
    "--stuck-timeout",
    "5",
    "--timeout",
    "9.5",
    "--kill-grace",
    "2",
    "--quiet",
    "--json",
]


@pytest.mark.parametrize(
    "argv",
    [
        ["spawn", "builder"],
        ["send", "r1", "next"],
        ["reply", "r1", "next"],
        ["run", "plan.md", "--step", "1"],
        ["flow", "implement"],
        ["flow", "review"],
    ],
)
def test_every_agent_running_command_takes_the_same_layer_limit_and_output_options(
    argv: list[str],
) -> None:
    args = cli.build_parser().parse_args([*argv, *SHARED])
    assert (args.flow_type, args.variant) == ("web", "fast")
    assert (args.stuck_timeout, args.timeout, args.kill_grace) == (5.0, 9.5, 2.0)
    assert args.quiet is True and args.json is True


def test_prompt_takes_the_layer_options_without_the_run_options() -> None:
    parser = cli.build_parser()
    args = parser.parse_args(["prompt", "--agent", "a", "--flow-type", "web", "--variant", "v"])
    assert (args.flow_type, args.variant) == ("web", "v")
    with pytest.raises(SystemExit):
        parser.parse_args(["prompt", "--agent", "a", "--stuck-timeout", "5"])


@pytest.mark.parametrize(("command", "shown"), [("spawn", True), ("run", False)])
def test_kill_grace_is_in_the_help_of_spawn_not_of_run(
    command: str, shown: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args([command, "--help"])
    out = capsys.readouterr().out
    assert ("--kill-grace" in out) is shown
    assert "--stuck-timeout" in out and "--timeout" in out


# (command line before the option, the option, its documented range as the error states it)
_SECONDS_AT_LEAST_1 = "a finite number of seconds at least 1"
_RANGES = [
    (["run", "plan.md", "--step", "1"], "--stuck-timeout", _SECONDS_AT_LEAST_1),
    (["run", "plan.md", "--step", "1"], "--timeout", _SECONDS_AT_LEAST_1),
    (["run", "plan.md", "--step", "1"], "--kill-grace", "a finite number of seconds at least 0"),
    (["run", "plan.md", "--step", "1"], "--max-iterations", "a whole number at least 1"),
    (["run", "plan.md", "--all"], "--jobs", "a whole number at least 1"),
    (["run", "plan.md", "--all", "--pr"], "--max-parallel", "a whole number at least 1"),
    (["run", "plan.md", "--step", "1", "--pr"], "--plan-issue", "a whole number at least 1"),
    (["run", "plan.md"], "--step", "a whole number at least 0"),
    (["run", "plan.md", "--step", "1"], "--budget-usd", "a finite number at least 0"),
    (["run", "plan.md", "--step", "1"], "--budget-tokens", "a whole number at least 0"),
    (["spawn", "builder"], "--stuck-timeout", _SECONDS_AT_LEAST_1),
    (["spawn", "builder"], "--timeout", _SECONDS_AT_LEAST_1),
    (["spawn", "builder"], "--kill-grace", "a finite number of seconds at least 0"),
    (["spawn", "builder"], "--budget-usd", "a finite number at least 0"),
    (["spawn", "builder", "--plan", "p.md"], "--step", "a whole number at least 0"),
    (["send", "RUN", "hi"], "--stuck-timeout", _SECONDS_AT_LEAST_1),
    (["send", "RUN", "hi"], "--max-turns", "a whole number at least 1"),
    (["reply", "RUN", "hi"], "--timeout", _SECONDS_AT_LEAST_1),
    (["flow", "implement"], "--stuck-timeout", _SECONDS_AT_LEAST_1),
    (["flow", "review"], "--timeout", _SECONDS_AT_LEAST_1),
    (["flow", "fix"], "--max-iterations", "a whole number at least 1"),
    (["flow", "implement"], "--budget-tokens", "a whole number at least 0"),
    (["plan", "tend", "p.md"], "--stuck-timeout", _SECONDS_AT_LEAST_1),
    (["plan", "tend", "p.md"], "--plan-issue", "a whole number at least 1"),
    (["plan", "matrix", "p.md", "--ready"], "--max-parallel", "a whole number at least 1"),
    (["prompt", "--agent", "a", "--plan", "p.md"], "--step", "a whole number at least 0"),
    (["cancel", "RUN"], "--wait", "a finite number of seconds at least 0"),
    (["abort", "RUN"], "--wait", "a finite number of seconds at least 0"),
    (["review"], "--budget-usd", "a finite number at least 0"),
    (["review"], "--budget-tokens", "a whole number at least 0"),
    (["review"], "--max-file-size", "a whole number of bytes at least 1"),
    (["action"], "--max-inline", "a whole number at least 0"),
    (["action"], "--max-file-size", "a whole number of bytes at least 1"),
    (["serve"], "--port", "a whole number from 0 to 65535"),
]
_BAD = {
    "a finite number of seconds at least 1": ["-5", "0", "0.5", "nan", "inf", "soon"],
    "a finite number of seconds at least 0": ["-1", "-0.1", "nan", "inf", "soon"],
    "a finite number at least 0": ["-1", "nan", "inf", "-inf", "1e400", "x"],
    "a whole number at least 0": ["-1", "1.5", "x", "٣"],
    "a whole number at least 1": ["0", "-1", "2.5", "two", ""],
    "a whole number of bytes at least 1": ["0", "-1", "1.5", "1MB"],
    "a whole number from 0 to 65535": ["-1", "65536", "70000", "http"],
}


@pytest.mark.parametrize(
    ("argv", "value", "expected"),
    [
        pytest.param([*argv, f"{option}={value}"], value, f"argument {option}: must be {what}")
        for argv, option, what in _RANGES
        for value in _BAD[what]
    ],
)
def test_a_numeric_option_out_of_its_range_is_a_usage_error_naming_it_and_the_range(
    tmp_path: Path, argv: list[str], value: str, expected: str
) -> None:
    """Every number the command line takes is checked by argparse, before a command starts
    (``--stuck-timeout -5`` ended in an internal error after the step's branch and work tree
    were made; ``--timeout -1`` ran the agent into a "timeout"; ``--timeout 0`` silently fell
    back to ``defaults.max_wait_secs``): exit 2, one line naming the option, its range and the
    value given."""
    result = cli_main(*argv, cwd=tmp_path)  # no repository: nothing a command could do
    assert result.returncode == ExitCode.USAGE, result
    error = result.stderr.splitlines()[-1]
    assert expected in error and f"got {value!r}" in error, error


@pytest.mark.parametrize(
    ("argv", "dest", "value"),
    [
        (["run", "p.md", "--step", "1", "--stuck-timeout", "1"], "stuck_timeout", 1.0),
        (["run", "p.md", "--step", "1", "--timeout", "9.5"], "timeout", 9.5),
        (["spawn", "a", "--kill-grace", "0"], "kill_grace", 0.0),
        (["run", "p.md", "--step", "0"], "step", 0),
        (["run", "p.md", "--step", " 12 "], "step", 12),
        (["run", "p.md", "--all", "--max-iterations", "1"], "max_iterations", 1),
        (["spawn", "a", "--budget-usd", "0"], "budget_usd", 0.0),
        (["spawn", "a", "--budget-usd", "1e3"], "budget_usd", 1000.0),
        (["review", "--budget-tokens", "0"], "budget_tokens", 0),
        (["cancel", "RUN", "--wait", "0"], "wait", 0.0),
        (["serve", "--port", "0"], "port", 0),
        (["serve", "--port", "65535"], "port", 65535),
        (["action", "--max-inline", "0"], "max_inline", 0),
    ],
)
def test_the_edges_of_each_range_are_accepted(argv: list[str], dest: str, value: float) -> None:
    args = cli.build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    assert type(getattr(args, dest)) is type(value)


@pytest.mark.parametrize(
    ("option", "value"),
    [("--stuck-timeout", "-5"), ("--timeout", "-1"), ("--timeout", "0"), ("--stuck-timeout", "0")],
)
def test_run_with_a_limit_out_of_range_makes_no_branch_and_no_work_tree(
    repo: Path, option: str, value: str
) -> None:
    configure(repo)
    before = (git(repo, "branch", "--list"), git(repo, "worktree", "list"))
    result = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet", f"{option}={value}")
    assert result.returncode == ExitCode.USAGE, result
    assert f"argument {option}: must be {_SECONDS_AT_LEAST_1}, got {value!r}" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert (git(repo, "branch", "--list"), git(repo, "worktree", "list")) == before
    assert not (repo / "flows").exists()
