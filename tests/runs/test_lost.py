"""What a lost run's record keeps (runs/lost.py): what it spent, read from its output's usage
lines and from its budget watch's last reading, and how long it lived."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.runs import RunPaths
from gitflow_agents.runs.lost import lifetime, mark_ended, spent_before

MODEL = "claude-sonnet-4-5"


def lost_run(tmp_path: Path, calls: int, spent: dict[str, Any] | None = None) -> RunPaths:
    """A run folder as a dead supervisor left it: a `command` agent's worker.log with ``calls``
    Claude-style messages (1,000 tokens in, 100 out each), ``spent`` its watch's last reading."""
    paths = RunPaths(tmp_path / "run-1")
    paths.run_dir.mkdir()
    usage = {"input_tokens": 1000, "output_tokens": 100}
    messages = [{"id": f"m{n}", "model": MODEL, "usage": usage} for n in range(calls)]
    lines = [json.dumps({"type": "assistant", "message": message}) for message in messages]
    paths.worker_log.write_text("\n".join([*lines, "a line of stderr"]) + "\n")
    status = {"state": "running", "started": 100.0, "last_activity": 103.5,
              "extra": {"adapter": "command"}, **({"spent": spent} if spent else {})}  # fmt: skip
    paths.status.write_text(json.dumps(status))
    return paths


def watched(tokens_in: int) -> dict[str, Any]:
    """status.json's ``spent`` as a budget's watch writes it."""
    return {"inputTokens": tokens_in, "outputTokens": tokens_in // 10, "costUsd": 0.5,
            "costEstimated": True, "tokensPartial": False, "costPartial": False,
            "cachedTokens": 0}  # fmt: skip


def status_of(paths: RunPaths) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(paths.status.read_text())
    return data


def test_without_a_budget_its_output_says_what_it_spent_as_a_lower_bound(tmp_path: Path) -> None:
    paths = lost_run(tmp_path, 9)
    found = spent_before(paths, status_of(paths))
    assert (found["inputTokens"], found["outputTokens"]) == (9000, 900)
    assert found["costEstimated"] is True and found["costUsd"] == pytest.approx(0.0405)
    assert found["tokensPartial"] is True and found["costPartial"] is True


@pytest.mark.parametrize(("calls", "tokens_in", "taken"), [(9, 7000, 9000), (2, 7000, 7000)])
def test_under_a_budget_the_reading_that_says_more_counts_whole(
    tmp_path: Path, calls: int, tokens_in: int, taken: int
) -> None:
    """The log's reading is the later one (the watch writes its own each second); the watch's
    says more when the log kept only the head of a long output. One reading or the other,
    never a mix (its cost with the other's tokens)."""
    paths = lost_run(tmp_path, calls, watched(tokens_in))
    found = spent_before(paths, status_of(paths))
    assert found["inputTokens"] == taken and found["tokensPartial"] is True
    assert (found["costUsd"] == 0.5) is (taken == tokens_in)


def test_a_run_whose_output_said_nothing_has_no_spend(tmp_path: Path) -> None:
    paths = lost_run(tmp_path, 0)
    assert spent_before(paths, status_of(paths)) == {}


def test_its_record_times_it_to_its_last_sign_of_life_and_keeps_its_spend(tmp_path: Path) -> None:
    paths = lost_run(tmp_path, 3)
    mark_ended(paths, status_of(paths), "canceled by user")
    run = json.loads(paths.result.read_text())["run"]
    assert run["durationMs"] == 3500 and run["startedAt"] == 100.0
    assert run["inputTokens"] == 3000 and run["tokensPartial"] is True
    mark_ended(paths, status_of(paths), "canceled by user")  # again: the record is kept
    assert json.loads(paths.result.read_text())["run"] == run


def test_a_run_without_a_recorded_activity_lived_until_it_ended() -> None:
    assert lifetime({"started": 100.0, "last_activity": 101.0, "ended": 900.0}) == 1.0
    assert lifetime({"started": 100.0, "ended": 900.0}) == 800.0
    assert lifetime({"last_activity": 101.0}) is None


def test_a_run_lost_before_its_agent_started_is_timed_to_its_status_files_last_write(
    tmp_path: Path,
) -> None:
    """Its orchestrator was killed while it was queued: no activity was ever recorded, and its
    time counted to now, for ever (in `status`, on serve's page, in the record `cancel` wrote)."""
    assert lifetime({"started": 100.0}, written=100.25) == 0.25
    assert lifetime({"started": 100.0}) == 0.0  # nothing else known: its start, never now
    paths = RunPaths(tmp_path / "run-1")
    paths.run_dir.mkdir()
    paths.status.write_text(json.dumps({"state": "queued", "started": 100.0}))
    os.utime(paths.status, (100.5, 100.5))
    mark_ended(paths, json.loads(paths.status.read_text()), "canceled by user")
    record = json.loads(paths.result.read_text())["run"]
    assert record["durationMs"] == 500 and record["endedAt"] > 1e9  # ended now, lived 0.5 s


def test_the_whole_log_a_dead_supervisor_wrote_is_read() -> None:
    """A supervisor that died never wrote the log's tail: what is there is its head (and the
    line saying the rest comes at the run's end), all of it read."""
    from gitflow_agents.runs.lost import LOG_READ
    from gitflow_agents.supervisor.output import LOG_HEAD

    assert LOG_READ > LOG_HEAD + 1024


def test_its_log_is_read_once_while_it_stays_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve`` asks for a lost run's spend on every page: its log (up to 17 MiB) is searched
    once while its size and time stay; a log that changed is read again."""
    import os

    from gitflow_agents.runs import lost

    searched: list[int] = []
    real = lost.streamed_reading

    def counting(adapter: str, output: bytes) -> Any:
        searched.append(len(output))
        return real(adapter, output)

    monkeypatch.setattr(lost, "streamed_reading", counting)
    paths = lost_run(tmp_path, 3)
    for _ in range(3):
        assert spent_before(paths, status_of(paths))["inputTokens"] == 3000
    assert len(searched) == 1
    more = {"id": "m9", "model": MODEL, "usage": {"input_tokens": 1000, "output_tokens": 100}}
    with paths.worker_log.open("a") as log:
        log.write(json.dumps({"type": "assistant", "message": more}) + "\n")
    stat = paths.worker_log.stat()  # the same second or not, the size tells it changed
    os.utime(paths.worker_log, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert spent_before(paths, status_of(paths))["inputTokens"] == 4000
    assert len(searched) == 2
