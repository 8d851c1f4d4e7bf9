"""``agent_run/record.py``: the state a run starts from and the files it changed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gitflow_agents.agent_run import record
from gitflow_agents.agent_run.record import changed_files, start_state, worktree_state
from tests.conftest import git, run_cli
from tests.helpers.flow_config import command_agents


def test_a_clean_work_tree_starts_from_head_with_nothing_changed(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    assert start_state(repo) == (head, {})


def test_a_dirty_work_tree_starts_with_its_files_and_only_the_agents_count(repo: Path) -> None:
    """A file dirty before the run (and untouched by it) is not the run's change; one it
    edits, creates or restores is."""
    (repo / "notes.txt").write_text("the user's, untracked\n")
    (repo / "README.md").write_text("the user's uncommitted edit\n")
    (repo / "keep.txt").write_text("untracked, restored below\n")
    head, before = start_state(repo)
    assert head == git(repo, "rev-parse", "HEAD").strip()
    assert before == worktree_state(repo, head)
    assert sorted(before) == ["README.md", "keep.txt", "notes.txt"]
    (repo / "new.txt").write_text("the agent's\n")
    (repo / "notes.txt").write_text("the agent changed it, and its size\n")
    (repo / "keep.txt").unlink()
    assert changed_files(repo, head, before, set()) == ["keep.txt", "new.txt", "notes.txt"]


def test_outside_a_repository_of_its_own_there_is_no_start_commit(
    repo: Path, tmp_path: Path
) -> None:
    inner = repo / "project"
    inner.mkdir()
    (inner / "file.txt").write_text("x\n")
    assert start_state(inner) == (None, {})
    empty = tmp_path / "fresh"
    git(tmp_path, "init", "-q", str(empty))
    (empty / "a.txt").write_text("a\n")
    assert start_state(empty) == (None, {})


STREAMER = """import json, sys, time
print(json.dumps({"type": "system", "subtype": "init", "session_id": "s1"}), flush=True)
usage = {"input_tokens": 1000, "output_tokens": 200}
message = {"id": "m1", "model": "claude-sonnet-4-5", "usage": usage, "content": []}
print(json.dumps({"type": "assistant", "message": message, "session_id": "s1"}), flush=True)
time.sleep(60)
"""


def test_a_run_stopped_mid_stream_has_no_reply_guessed_from_its_event_lines(
    repo: Path, tmp_path: Path
) -> None:
    """An agent stopped before its CLI printed a result (here by a budget) said nothing to the
    user: its stream-json event lines are not a reply (no "Status: completed" guessed from them)."""
    script = tmp_path / "streamer.py"
    script.write_text(STREAMER)
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        command_agents({"streamer": [sys.executable, str(script)]})
    )
    done = run_cli(
        "spawn", "streamer", "--task", "go", "--budget-tokens", "1000", "--quiet", cwd=repo
    )
    assert done.returncode == 5, done
    assert "Status:" not in done.stdout and '"type"' not in done.stdout
    (found,) = (repo / "flows" / "streamer" / "runs").glob("*/result.json")
    run = json.loads(found.read_text())["run"]
    assert run["outcome"] == "budget" and "reply" not in run


@pytest.mark.parametrize(
    ("stdout", "events"),
    [
        ('{"type": "system"}\n{"type": "assistant", "message": {}}\n', True),
        ('{"type": "assistant"}\nDone: the tests pass.\n', False),
        ('{"result": "no type"}', False),
        ("x\n" + '{"a":' * 100_000, False),  # nested past Python's recursion limit: no event
    ],
)
def test_a_reply_that_ends_in_a_json_event_line_is_an_event_stream(
    stdout: str, events: bool
) -> None:
    assert record._event_stream(stdout) is events


def _printed(capsys: pytest.CaptureFixture[str], outcome: str, status: str) -> str:
    reply = {"status": status, "summary": "API Error: 429", "structured": False}
    run = {"runID": "r1", "agent": "a1", "outcome": outcome, "reason": "why", "reply": reply}
    record.print_result({"run": run}, as_json=False)
    return capsys.readouterr().out


@pytest.mark.parametrize("outcome", ["rate_limited", "failed", "budget", "canceled"])
def test_a_run_that_did_not_succeed_prints_no_reply_saying_completed(
    capsys: pytest.CaptureFixture[str], outcome: str
) -> None:
    """`spawn` printed `Status: completed` (a reply guessed from an API error's text) under a
    run that ended rate limited, failed or stopped; its own failed reply still shows."""
    assert "API Error" not in _printed(capsys, outcome, "completed")
    assert "API Error" in _printed(capsys, outcome, "failed")
    assert "API Error" in _printed(capsys, "succeeded", "completed")


def test_a_repository_git_cannot_read_starts_from_no_commit(tmp_path: Path) -> None:
    """`git status` failing (a `.git` file naming a folder that is gone) meant no commit, as
    documented; the handler caught an error git's failure never was, so the run crashed."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text(f"gitdir: {tmp_path / 'gone'}\n")
    assert start_state(broken) == (None, {})
