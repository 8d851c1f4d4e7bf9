"""A budget against the real Claude Code CLI: `gitflow-agents spawn --budget-tokens` stops it
at the limit from the usage it streams (the stand-in answers every call with its usage)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT, run_cli

from .conftest import Project
from .model_standin import Say, Shell, Standin
from .projects import claude_project

pytestmark = pytest.mark.e2e


def _project(tmp_path: Path, standin: Standin, extra: str = "") -> Project:
    """The Claude project with a `builder` on the real CLI (40 turns at most) in its .flow/,
    and ``extra`` YAML lines before its agents."""
    project = claude_project(tmp_path, standin)
    (project.root / ".flow").mkdir()
    options = {"executable": str(project.executable), "max_turns": 40}
    (project.root / ".flow" / "base.yaml").write_text(
        'completion_workflow:\n  template: "Write {report_file}; rename it to {success_file}."\n'
        f"{extra}agents:\n"
        f"  builder:\n    adapter: claude\n    model: claude-sonnet-4-5\n"
        f"    options: {json.dumps(options)}\n"
    )
    return project


def test_claude_is_stopped_at_its_token_budget(tmp_path: Path, standin: Standin) -> None:
    project = _project(tmp_path, standin)
    # every call answers with a tool call, so the agent never finishes on its own
    standin.load([Shell(f"echo call {n} >> calls.txt") for n in range(30)])
    done = run_cli(
        "spawn",
        "builder",
        "--plan",
        "specs/greeting.md",
        "--step",
        "1",
        "--budget-tokens",
        "500",
        "--quiet",
        "--json",
        cwd=project.root,
        env={
            key: value
            for key, value in project.env.items()
            if key.startswith(("ANTHROPIC", "CLAUDE"))
        },
    )
    assert done.returncode == 5, done
    result = json.loads(done.stdout)
    run = result["run"]
    assert run["outcome"] == "budget", run["reason"]
    assert run["reason"].startswith("budget: agent spent ") and "tokens of 500" in run["reason"]
    assert run["inputTokens"] + run["outputTokens"] >= 500  # what the CLI streamed
    assert run["outputTokens"] > 0  # the API's own message_delta figures (partial messages)
    calls = len(standin.main_requests())
    assert calls < 30  # stopped long before its script ran out
    pid = run["pid"]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_claude_stopped_at_a_usd_budget_is_recorded_with_every_call_it_streamed(
    tmp_path: Path, standin: Standin
) -> None:
    """A USD budget gives Claude Code its own ``--max-budget-usd`` too; stopped by it, its
    result's ``usage`` leaves out its last call (2.1.330) while its cost counts it. The record
    keeps every call the stream said: at least the tokens the budget message names."""
    project = _project(tmp_path, standin)
    standin.load([Shell(f"echo call {n} >> calls.txt") for n in range(40)])
    env = {k: v for k, v in project.env.items() if k.startswith(("ANTHROPIC", "CLAUDE"))}
    done = run_cli(
        "spawn", "builder", "--plan", "specs/greeting.md", "--step", "1",
        "--budget-usd", "0.005", "--quiet", "--json", cwd=project.root, env=env,
    )  # fmt: skip
    assert done.returncode == 5, done
    run = json.loads(done.stdout)["run"]
    said = re.search(r"\(tokens ([\d,]+)\)", run["reason"])
    assert said is not None, run["reason"]
    assert run["inputTokens"] + run["outputTokens"] >= int(said[1].replace(",", "")), run
    assert run["costUsd"] is not None and run["costUsd"] > 0


def test_claude_continued_after_a_429_is_stopped_counting_what_it_spent_before(
    tmp_path: Path, standin: Standin
) -> None:
    """Five calls (750 tokens), then 429s until the CLI gives up; the session continued after
    the wait is held to the same 900-token budget with those 750 counted: it is stopped within
    its first calls, not after six more."""
    project = _project(tmp_path, standin, "defaults:\n  rate_limit_wait_secs: 3\n")
    standin.load([Shell(f"echo call {n} >> calls.txt") for n in range(40)])
    standin.refuse(429, times=2, from_turn=5)  # Claude retries once (CLAUDE_CODE_MAX_RETRIES 1)
    env = {k: v for k, v in project.env.items() if k.startswith(("ANTHROPIC", "CLAUDE"))}
    done = run_cli(
        *("spawn", "builder", "--plan", "specs/greeting.md", "--step", "1"),
        *("--budget-tokens", "900", "--quiet", "--json"),
        cwd=project.root,
        env={**env, "CLAUDE_CODE_MAX_RETRIES": "1"},
    )
    assert done.returncode == 5, done
    run = json.loads(done.stdout)["run"]
    assert run["outcome"] == "budget" and "tokens of 900" in run["reason"], run["reason"]
    assert len(standin.refused) == 2
    last_refused = standin.refused[-1].at
    after = [r for r in standin.main_requests() if r.at > last_refused]
    assert after and "(a rate limit)" in after[0].all_text()  # the session continued
    assert len(after) < 5  # 750 + 150 reaches 900 at its first call: a few at most


def test_claude_is_stopped_in_the_turn_a_send_started_and_recorded_at_that(
    tmp_path: Path, standin: Standin
) -> None:
    """A message sent while the stand-in holds the first turn's last answer: Claude Code ends
    that turn with a result (its two calls, 300 tokens) and starts another with the message.
    That turn is watched on top of the first and stopped at the 1,500-token limit; the run's
    record says what it was stopped at, not the first turn's result, the last one its output
    holds."""
    project = _project(tmp_path, standin)
    calls = [Shell(f"echo call {n} >> calls.txt") for n in range(30)]
    standin.load([Shell("echo first"), Say("first turn done", held=6), *calls])
    env = {k: v for k, v in project.env.items() if k.startswith(("ANTHROPIC", "CLAUDE"))}
    argv = [sys.executable, "-m", "gitflow_agents", "spawn", "builder", "--task", "Do it."]
    proc = subprocess.Popen(
        [*argv, "--budget-tokens", "1500", "--quiet", "--json"],
        cwd=project.root,
        env={**project.env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(standin.main_requests()) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)  # the first turn's last request: held
        (row,) = json.loads(run_cli("status", "--json", cwd=project.root, env=env).stdout)
        sent = run_cli("send", row["runId"], "Go on.", cwd=project.root, env=env)
        assert sent.returncode == 0, sent.stderr
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 5, out + err
    run = json.loads(out)["run"]
    assert run["outcome"] == "budget" and "tokens of 1,500" in run["reason"], run["reason"]
    assert 2 < len(standin.main_requests()) < 32  # stopped in the second turn
    log = (Path(run["logDirectory"]) / "worker.log").read_text()
    assert log.count('"type":"result"') == 1  # the first turn's, and no other
    assert run["inputTokens"] + run["outputTokens"] >= 1500  # not the first turn's 300
    assert run["costEstimated"] is True
