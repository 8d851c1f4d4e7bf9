"""Send and cancel from the page: the command each runs, its outcome as a notice."""

from __future__ import annotations

import sys
from pathlib import Path

from gitflow_agents.base import proc
from gitflow_agents.serve.control import Notices, _outcome, control_argv, forward
from tests.conftest import wait_until
from tests.helpers.serve import write_run

RUN = "01900000-0000-7000-8000-000000000001"


def test_the_commands_take_a_message_that_looks_like_an_option_as_text() -> None:
    assert control_argv("send", RUN, "--close") == [
        sys.executable, "-m", "gitflow_agents", "send", "--quiet", "--", RUN, "--close",
    ]  # fmt: skip
    assert control_argv("cancel", RUN) == [
        sys.executable,
        "-m",
        "gitflow_agents",
        "cancel",
        "--",
        RUN,
    ]


def test_forward_runs_the_command_and_its_outcome_becomes_a_notice(repo: Path) -> None:
    write_run(repo, RUN, status={"state": "succeeded"}, result={"status": "succeeded"})
    notices = Notices()
    started = forward(repo, "cancel", RUN, "", notices)
    assert started.text == "cancel: started"
    wait_until(lambda: len(notices.of_run(RUN)) == 2, 60)
    outcome = notices.of_run(RUN)[-1].text
    assert outcome.startswith("cancel: ") and RUN in outcome  # "run … already ended"
    assert [n.seq for n in notices.since(started.seq)] == [started.seq + 1]


def test_a_refused_command_says_so_with_its_exit_code(repo: Path) -> None:
    notices = Notices()
    forward(repo, "send", RUN, "hello", notices)  # no such run: send refuses (exit 2)
    wait_until(lambda: len(notices.of_run(RUN)) == 2, 60)
    assert notices.of_run(RUN)[-1].text.startswith("send refused (exit 2): ")


def test_a_send_not_confirmed_is_not_called_refused() -> None:
    """exit 75: the agent's orchestrator took the message and did not answer in time."""
    said = "gitflow-agents: send: run …: NOT CONFIRMED as delivered; …"
    result = proc.Result(("gitflow-agents", "send"), 75, "", said + "\n")
    assert _outcome("send", result) == f"send not confirmed (exit 75): {said}"


def test_notices_keep_the_newest_two_hundred() -> None:
    notices = Notices()
    for index in range(250):
        notices.add(RUN, str(index))
    assert len(notices.items) == 200 and notices.items[0].text == "50" and notices.last == 250
