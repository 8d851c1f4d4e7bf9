"""`git agent-review --agent R --output FILE` whose reviewer gives no verdict (a budget stopped it
or started none, it failed, timed out, was canceled, or a rate limit outlasted the wait): FILE is
written all the same, replacing an earlier run's, with a valid document that says the review did
not complete and why (SARIF: an unsuccessful invocation with an error notification, no result;
JSON: the findings object, its ``outcome`` and ``reason``, not approved); a machine ``--format``
prints it too; the exit code is the stop's. Real processes: the console scripts, as CI runs them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, CliResult, run_cli, running_agent, wait_until
from tests.helpers.files import commit_files, write_executable
from tests.helpers.flow_config import SPENDER, command_agents
from tests.helpers.review import FAKE_REVIEWER
from tests.helpers.sarif import sarif_errors

LIMITED = """#!/bin/sh
echo 'Error: 529 {"type":"error","error":{"type":"overloaded_error"}}' >&2
exit 1
"""
HANGS = [sys.executable, "-c", "import time; time.sleep(120)"]

STALE_SARIF = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "stale"}}}]}
STALE_JSON = {"overall": "approve", "summary": "an earlier run", "gate": {"approved": True}}


def agent_review(*args: str, cwd: Path) -> CliResult:
    """``git agent-review ARGS`` as its console script runs (a real process)."""
    proc = subprocess.run(
        [sys.executable, "-m", "gitflow_agents.git_agent_review", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def setup_reviewers(repo: Path, *, max_wait: int = 60) -> str:
    """Agent reviewers in ``repo``'s ``.flow/``: ``approver`` (approves), ``failr`` (gives up:
    ``report.failed.md``), ``spender`` (streams usage until a budget stops it), ``limited``
    (refused by its model API), ``hanger`` (runs until stopped); a commit to review, its sha."""
    fake = write_executable(repo.parent / "fake_reviewer", FAKE_REVIEWER)
    limited = write_executable(repo.parent / "limited", LIMITED)
    agents = {
        "approver": [str(fake), "approve"],
        "failr": [str(fake), "fail"],
        "spender": SPENDER,
        "limited": [str(limited)],
        "hanger": HANGS,
    }
    config = command_agents(agents, max_wait=max_wait)
    config = config.replace("defaults:\n", "defaults:\n  rate_limit_wait_secs: 0\n")
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(config)
    return commit_files(repo, {"calc.py": "def f(x):\n    return 1 / 0\n"}, "calc")


def stale(path: Path) -> Path:
    """``path`` holding an earlier run's approving document, as a CI workspace may keep it."""
    data = STALE_SARIF if path.suffix == ".sarif" else STALE_JSON
    path.write_text(json.dumps(data))
    return path


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def assert_unfinished_sarif(sarif: Any, *said: str) -> None:
    """A valid SARIF log of one run that did not complete: no result, an error notification
    saying ``said``, not approved."""
    assert sarif_errors(sarif) == []
    (run,) = sarif["runs"]
    assert run["tool"]["driver"]["name"] == "gitflow-agents"
    assert run["results"] == []
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    first = invocation["toolExecutionNotifications"][0]
    assert first["level"] == "error"
    for text in said:
        assert text in first["message"]["text"], first
    assert run["properties"]["approved"] is False


def assert_unfinished_json(data: Any, head: str, outcome: str, exit_code: int, *said: str) -> None:
    """The findings object of a review of ``head`` that did not complete: ``outcome``, the
    reason saying ``said``, not approved, the gate's code the process's."""
    assert data["overall"] is None and data["findings"] == []
    assert data["reviewedSha"] == head
    assert data["outcome"] == outcome
    for text in said:
        assert text in data["reason"], data["reason"]
    gate = data["gate"]
    assert (gate["approved"], gate["exitCode"]) == (False, exit_code)
    assert gate["reasons"] == [data["reason"]]


def no_temp_files(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp")) == []


def test_a_budget_stop_writes_the_sarif_and_json_that_say_so(repo: Path, tmp_path: Path) -> None:
    head = setup_reviewers(repo)
    out = tmp_path / "out"
    out.mkdir()
    sarif_file, json_file = stale(out / "review.sarif"), stale(out / "review.json")
    budget = ("--agent", "spender", "--budget-tokens", "5000")
    done = agent_review("HEAD", *budget, "--format", "json", "--output", str(sarif_file), cwd=repo)
    assert done.returncode == 5, done
    assert "budget: review spent" in done.stderr  # the error line, as before
    assert_unfinished_sarif(read(sarif_file), "did not complete the review", "budget: review spent")
    assert read(sarif_file)["runs"][0]["properties"]["outcome"] == "budget"
    printed = json.loads(done.stdout)  # --format json: the same review on stdout
    assert_unfinished_json(printed, head, "budget", 5, "budget: review spent", "tokens of 5,000")
    assert printed["run"]["inputTokens"] >= 5_000  # what the stopped reviewer spent
    # `gitflow-agents review` is the same command; a .json FILE gets the JSON
    again = run_cli("review", "HEAD", *budget, "--output", str(json_file), cwd=repo)
    assert again.returncode == 5, again
    assert again.stdout == ""  # the terminal format prints no document; stderr says why
    assert "budget: review spent" in again.stderr
    assert_unfinished_json(read(json_file), head, "budget", 5, "budget: review spent")
    no_temp_files(out)
    assert (
        "refs/notes"
        not in subprocess.run(
            ["git", "for-each-ref"], cwd=repo, capture_output=True, text=True
        ).stdout
    )  # no note, as before


def test_a_budget_that_starts_no_reviewer_writes_the_file_too(repo: Path, tmp_path: Path) -> None:
    head = setup_reviewers(repo)
    sarif_file = stale(tmp_path / "review.sarif")
    done = agent_review(
        "HEAD", "--agent", "spender", "--budget-usd", "0", "--format", "sarif",
        "--output", str(sarif_file), cwd=repo,
    )  # fmt: skip
    assert done.returncode == 5, done
    assert_unfinished_sarif(read(sarif_file), "no agent started")
    assert json.loads(done.stdout) == read(sarif_file)  # --format sarif > FILE works the same
    json_file = stale(tmp_path / "review.json")
    done = agent_review(
        "HEAD", "--agent", "spender", "--budget-usd", "0", "--output", str(json_file), cwd=repo
    )
    assert done.returncode == 5, done
    assert_unfinished_json(read(json_file), head, "budget", 5, "no agent started")
    assert read(json_file)["run"] == {}  # nothing ran, nothing is said spent


@pytest.mark.parametrize(
    ("agent", "code", "outcome", "said"),
    [
        ("failr", 3, "failed", "renamed to report.failed.md"),
        ("limited", 6, "rate_limited", "overloaded"),
    ],
)
def test_a_reviewer_that_fails_or_is_rate_limited_writes_the_file(
    repo: Path, tmp_path: Path, agent: str, code: int, outcome: str, said: str
) -> None:
    head = setup_reviewers(repo)
    sarif_file, json_file = stale(tmp_path / "r.sarif"), stale(tmp_path / "r.json")
    done = agent_review("HEAD", "--agent", agent, "--output", str(sarif_file), cwd=repo)
    assert done.returncode == code, done
    assert_unfinished_sarif(read(sarif_file), "did not complete the review", said)
    assert read(sarif_file)["runs"][0]["properties"]["outcome"] == outcome
    done = agent_review(
        "HEAD", "--agent", agent, "--format", "sarif", "--output", str(json_file), cwd=repo
    )
    assert done.returncode == code, done
    assert_unfinished_json(read(json_file), head, outcome, code, said)
    assert_unfinished_sarif(json.loads(done.stdout), said)


def test_a_reviewer_that_times_out_writes_the_file(repo: Path, tmp_path: Path) -> None:
    head = setup_reviewers(repo, max_wait=1)
    json_file = stale(tmp_path / "r.json")
    done = agent_review("HEAD", "--agent", "hanger", "--output", str(json_file), cwd=repo)
    assert done.returncode == 3, done
    assert_unfinished_json(read(json_file), head, "timeout", 3, "timeout")


def test_a_canceled_reviewer_writes_the_file_and_exits_3(repo: Path, tmp_path: Path) -> None:
    """``gitflow-agents cancel`` of the reviewer's run: exit 3, as a canceled ``spawn`` (README,
    "Exit codes"; a chain's step alone ends 130, docs/chains.md), and FILE says so."""
    head = setup_reviewers(repo)
    sarif_file = stale(tmp_path / "r.sarif")
    review = subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents.git_agent_review", "HEAD", "--agent", "hanger",
         "--format", "json", "--output", str(sarif_file)],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        wait_until(lambda: running_agent(repo, "review") is not None, timeout=60)
        running = running_agent(repo, "review")
        assert running is not None
        canceled = run_cli("cancel", str(running["runId"]), cwd=repo)
        assert canceled.returncode == 0, canceled
        out, err = review.communicate(timeout=60)
    finally:
        if review.poll() is None:
            review.kill()
            review.communicate()
    assert review.returncode == 3, out + err
    assert "canceled" in err
    assert_unfinished_sarif(read(sarif_file), "did not complete the review", "canceled")
    assert_unfinished_json(json.loads(out), head, "canceled", 3, "canceled")


def test_the_terminal_format_in_the_file_says_the_review_did_not_complete(
    repo: Path, tmp_path: Path
) -> None:
    setup_reviewers(repo)
    text_file = tmp_path / "review.txt"
    text_file.write_text("APPROVED: an earlier run\n")
    done = agent_review(
        "HEAD", "--agent", "failr", "--output", str(text_file), "--output-format", "terminal",
        cwd=repo,
    )  # fmt: skip
    assert done.returncode == 3, done
    written = text_file.read_text()
    assert "an earlier run" not in written
    assert written.startswith("DID NOT COMPLETE: agent failr did not complete the review: ")


def test_a_completed_agent_review_is_written_as_before(repo: Path, tmp_path: Path) -> None:
    head = setup_reviewers(repo)
    sarif_file, json_file = tmp_path / "r.sarif", tmp_path / "r.json"
    done = agent_review("HEAD", "--agent", "approver", "--output", str(sarif_file), cwd=repo)
    assert done.returncode == 0, done
    sarif = read(sarif_file)
    assert sarif_errors(sarif) == []
    (run,) = sarif["runs"]
    assert run["invocations"] == [{"executionSuccessful": True}]
    assert run["properties"]["approved"] is True and "outcome" not in run["properties"]
    done = agent_review("HEAD", "--agent", "approver", "--output", str(json_file), cwd=repo)
    data = read(json_file)
    assert done.returncode == 0 and data["gate"]["approved"] is True
    assert data["overall"] == "approve" and data["reviewedSha"] == head
    assert "outcome" not in data


def test_an_interrupted_review_writes_the_file_and_exits_130(repo: Path, tmp_path: Path) -> None:
    """SIGTERM (a CI job canceled) or Ctrl-C while the reviewer runs: its tree is killed, exit 130
    as before, and FILE says the review did not complete."""
    head = setup_reviewers(repo)
    json_file = stale(tmp_path / "r.json")
    review = subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents.git_agent_review", "HEAD", "--agent", "hanger",
         "--output", str(json_file)],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        wait_until(lambda: running_agent(repo, "review") is not None, timeout=60)
        review.send_signal(signal.SIGTERM)
        out, err = review.communicate(timeout=60)
    finally:
        if review.poll() is None:
            review.kill()
            review.communicate()
    assert review.returncode == 130, out + err
    assert out == ""  # the terminal format: the error line on stderr says it
    assert_unfinished_json(read(json_file), head, "canceled", 130, "interrupted")
