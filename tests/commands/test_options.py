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
_SECONDS_AT_LEAST_1 = "a finite number of seconds from 1 to 31536000"  # a year, as defaults:
_SECONDS_AT_LEAST_0 = "a finite number of seconds from 0 to 31536000"
_USD = "a finite number from 0 to 1000000000"  # as an amount in .flow/
_WHOLE_FROM_0 = "a whole number from 0 to 1000000000000000"  # as a whole number in .flow/
_WHOLE_FROM_1 = "a whole number from 1 to 1000000000000000"
_BYTES = "a whole number of bytes from 1 to 1000000000000000"  # 1000 TB, as a size in .flow/
_RANGES = [
    (["run", "plan.md", "--step", "1"], "--stuck-timeout", _SECONDS_AT_LEAST_1),
    (["run", "plan.md", "--step", "1"], "--timeout", _SECONDS_AT_LEAST_1),
    (["run", "plan.md", "--step", "1"], "--kill-grace", _SECONDS_AT_LEAST_0),
    (["run", "plan.md", "--step", "1"], "--max-iterations", _WHOLE_FROM_1),
    (["run", "plan.md", "--all"], "--jobs", _WHOLE_FROM_1),
    (["run", "plan.md", "--all", "--pr"], "--max-parallel", _WHOLE_FROM_1),
    (["run", "plan.md", "--step", "1", "--pr"], "--plan-issue", _WHOLE_FROM_1),
    (["run", "plan.md"], "--step", _WHOLE_FROM_0),
    (["run", "plan.md", "--step", "1"], "--budget-usd", _USD),
    (["run", "plan.md", "--step", "1"], "--budget-tokens", _WHOLE_FROM_0),
    (["spawn", "builder"], "--stuck-timeout", _SECONDS_AT_LEAST_1),
    (["spawn", "builder"], "--timeout", _SECONDS_AT_LEAST_1),
    (["spawn", "builder"], "--kill-grace", _SECONDS_AT_LEAST_0),
    (["spawn", "builder"], "--budget-usd", _USD),
    (["spawn", "builder", "--plan", "p.md"], "--step", _WHOLE_FROM_0),
    (["send", "RUN", "hi"], "--stuck-timeout", _SECONDS_AT_LEAST_1),
    (["send", "RUN", "hi"], "--max-turns", _WHOLE_FROM_1),
    (["reply", "RUN", "hi"], "--timeout", _SECONDS_AT_LEAST_1),
    (["flow", "implement"], "--stuck-timeout", _SECONDS_AT_LEAST_1),
    (["flow", "review"], "--timeout", _SECONDS_AT_LEAST_1),
    (["flow", "fix"], "--max-iterations", _WHOLE_FROM_1),
    (["flow", "implement"], "--budget-tokens", _WHOLE_FROM_0),
    (["plan", "tend", "p.md"], "--stuck-timeout", _SECONDS_AT_LEAST_1),
    (["plan", "tend", "p.md"], "--plan-issue", _WHOLE_FROM_1),
    (["plan", "matrix", "p.md", "--ready"], "--max-parallel", _WHOLE_FROM_1),
    (["prompt", "--agent", "a", "--plan", "p.md"], "--step", _WHOLE_FROM_0),
    (["cancel", "RUN"], "--wait", _SECONDS_AT_LEAST_0),
    (["abort", "RUN"], "--wait", _SECONDS_AT_LEAST_0),
    (["review"], "--budget-usd", _USD),
    (["review"], "--budget-tokens", _WHOLE_FROM_0),
    (["review"], "--max-file-size", _BYTES),
    (["action"], "--max-inline", _WHOLE_FROM_0),
    (["action"], "--max-file-size", _BYTES),
    (["serve"], "--port", "a whole number from 0 to 65535"),
]
_BAD = {
    _SECONDS_AT_LEAST_1: ["-5", "0", "0.5", "nan", "inf", "soon", "31536000.5", "1e9"],
    _SECONDS_AT_LEAST_0: ["-1", "-0.1", "nan", "inf", "soon", "31536001", "1e300"],
    _USD: ["-1", "nan", "inf", "-inf", "1e400", "x", "1000000000.01", "1e300"],
    _WHOLE_FROM_0: ["-1", "1.5", "x", "٣", "1000000000000001", "9" * 17],
    _WHOLE_FROM_1: ["0", "-1", "2.5", "two", "", "1000000000000001"],
    _BYTES: ["0", "-1", "1.5", "1MB", "1000000000000001"],
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
        (["send", "RUN", "hi", "--wait", "0"], "wait", 0.0),
        (["serve", "--port", "0"], "port", 0),
        (["serve", "--port", "65535"], "port", 65535),
        (["action", "--max-inline", "0"], "max_inline", 0),
        (["spawn", "a", "--timeout", "31536000"], "timeout", 31536000.0),
        (
            ["run", "p.md", "--step", "1", "--stuck-timeout", "31536000"],
            "stuck_timeout",
            31536000.0,
        ),
        (["spawn", "a", "--kill-grace", "31536000"], "kill_grace", 31536000.0),
        (["cancel", "RUN", "--wait", "31536000"], "wait", 31536000.0),
        (["spawn", "a", "--budget-usd", "1e9"], "budget_usd", 1e9),
        (["run", "p.md", "--step", "999999999999999"], "step", 999999999999999),
        (["run", "p.md", "--all", "--jobs", "1000000000000000"], "jobs", 10**15),
        (["review", "--budget-tokens", "1000000000000000"], "budget_tokens", 10**15),
        (["review", "--max-file-size", "1000000000000000"], "max_file_size", 10**15),
    ],
)
def test_the_edges_of_each_range_are_accepted(argv: list[str], dest: str, value: float) -> None:
    args = cli.build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    assert type(getattr(args, dest)) is type(value)


def test_each_upper_end_is_the_one_the_same_number_has_in_flow() -> None:
    """Decisions "Hostile and broken input" 18: every number has a documented range; the
    command line's ends are ``.flow/``'s (kept apart so ``git agent-review`` loads no config)."""
    from gitflow_agents.agents.output import MAX_COUNT
    from gitflow_agents.base.units import MAX_SIZE
    from gitflow_agents.commands import options
    from gitflow_agents.config import spec

    assert options.MAX_SECONDS == spec.MAX_SECONDS == 365 * 86400
    assert options.MAX_WHOLE == spec.MAX_WHOLE == MAX_COUNT
    assert options.MAX_USD == spec.MAX_USD
    assert options.FILE_SIZE(str(MAX_SIZE)) == MAX_SIZE


@pytest.mark.parametrize("command", ["spawn", "run", "send", "flow implement", "cancel"])
def test_the_help_states_each_durations_range(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = command.split()
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args([*argv, "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    options = ["--wait"] if command == "cancel" else ["--stuck-timeout", "--timeout"]
    if command == "send":  # and how long its orchestrator has to confirm
        options.append("--wait")
    for option in options:
        described = help_text.split(f"{option} ", 2)[-1]
        assert described.split(" --")[0].count("to 31536000 (365 days") == 1, described


@pytest.mark.parametrize("argv", [["cancel", "RUN"], ["abort", "RUN"], ["send", "RUN", "hi"]])
def test_the_waits_for_a_supervisor_are_the_documented_5_seconds(argv: list[str]) -> None:
    """`cancel` waited 10 s for a supervisor that did not act (docs/supervisor.md: 5 s)."""
    assert cli.build_parser().parse_args(argv).wait == 5.0


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
