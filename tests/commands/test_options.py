"""The options several commands share (``commands/options.py``): the same names, types and
destinations in each command that takes them."""

from __future__ import annotations

import pytest

from gitflow_agents import cli

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
