"""The runner's side of the action (github/runner.py), in this process: no network, no git."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gitflow_agents.base.errors import UsageError
from gitflow_agents.github.action.runner import (
    RunnerEnv,
    append_summary,
    read_runner_env,
    run_id_for,
    write_outputs,
)
from tests.helpers.action_runner import read_outputs

BASE = {
    "GITHUB_EVENT_NAME": "pull_request",
    "GITHUB_EVENT_PATH": "/runner/event.json",
    "GITHUB_REPOSITORY": "owner/demo",
}


def test_read_runner_env_takes_what_the_runner_sets() -> None:
    env = read_runner_env(
        {
            **BASE,
            "GITHUB_WORKSPACE": "/work/demo",
            "GITHUB_OUTPUT": "/runner/output",
            "GITHUB_STEP_SUMMARY": "",
            "GITHUB_SERVER_URL": "https://github.example/",
            "GITHUB_RUN_ID": "4242",
            "GITHUB_RUN_ATTEMPT": "2",
            "RUNNER_TEMP": "/runner/tmp",
        }
    )
    assert env.event_path == Path("/runner/event.json")
    assert env.workspace == Path("/work/demo") and env.temp == Path("/runner/tmp")
    assert env.output == Path("/runner/output") and env.step_summary is None
    assert env.run_url == "https://github.example/owner/demo/actions/runs/4242"
    assert run_id_for(env) == "4242-2"


def test_read_runner_env_names_what_is_missing_or_malformed() -> None:
    with pytest.raises(UsageError, match=r"GITHUB_EVENT_NAME, GITHUB_REPOSITORY not set"):
        read_runner_env({"GITHUB_EVENT_PATH": "/e.json", "GITHUB_REPOSITORY": ""})
    with pytest.raises(UsageError, match=r"expected owner/name, got 'demo'"):
        read_runner_env({**BASE, "GITHUB_REPOSITORY": "demo"})


def test_outside_a_workflow_run_the_run_id_is_local_and_unique(tmp_path: Path) -> None:
    env = RunnerEnv("pull_request", tmp_path / "e.json", "owner/demo", tmp_path)
    assert env.run_url is None
    first, second = run_id_for(env), run_id_for(env)
    assert re.fullmatch(r"local-\d{8}T\d{6}-[0-9a-f]{6}", first) and first != second


def test_outputs_survive_values_that_look_like_delimiters(tmp_path: Path) -> None:
    output = tmp_path / "output"
    output.write_text("earlier=kept\n")
    hostile = "line one\nghadelimiter_0\nEOF\nname<<EOF"
    write_outputs(output, {"reason": hostile, "empty": ""})
    write_outputs(output, {"run-id": "4242-1"})
    assert read_outputs(output.read_text()) == {
        "earlier": "kept",
        "reason": hostile,
        "empty": "",
        "run-id": "4242-1",
    }
    write_outputs(None, {"ignored": "x"})  # no GITHUB_OUTPUT: nothing to write, no error


def test_the_job_summary_is_appended_with_one_blank_line_between_parts(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    append_summary(summary, "### one\n\n\n")
    append_summary(summary, "### two")
    append_summary(None, "ignored")
    assert summary.read_text() == "### one\n\n### two\n\n"
