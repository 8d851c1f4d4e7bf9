"""What the pages read from the run records: rows, the cap, elapsed time."""

from __future__ import annotations

import os
from pathlib import Path

from gitflow_agents.serve.views import RunRow, elapsed_text, run_rows
from tests.helpers.serve import write_run


def test_the_newest_runs_come_first_and_older_ones_past_the_cap_are_counted(repo: Path) -> None:
    ids = [f"01900000-0000-7000-8000-00000000000{n}" for n in (1, 2, 3)]
    for run_id in ids:
        write_run(repo, run_id, status={"state": "succeeded", "agent": "a"})
    rows, older = run_rows(repo, "flows", most=2)
    assert [row.run_id for row in rows] == [ids[2], ids[1]] and older == 1
    rows, older = run_rows(repo, "flows")
    assert len(rows) == 3 and older == 0


def test_elapsed_time_runs_to_now_while_a_run_lives() -> None:
    row = RunRow("r", "f", "a", "k", "running", 100.0, None, "", "", True)
    assert elapsed_text(row, now=100.0 + 3725) == "1:02:05"
    ended = RunRow("r", "f", "a", "k", "succeeded", 100.0, 165.0, "", "", False)
    assert elapsed_text(ended, now=999.0) == "01:05"
    assert elapsed_text(RunRow("r", "f", "a", "k", "queued", None, None, "", "", True)) == ""


def test_a_record_whose_times_span_past_infinity_shows_no_time_and_the_page_renders(
    repo: Path,
) -> None:
    """`startedAt: -1e308, finishedAt: 1e308`: each finite, their difference not; the runs
    page (and the run's) answered 500 for one such agent-writable record."""
    absurd = RunRow("r", "f", "a", "k", "succeeded", -1e308, 1e308, "", "", False)
    assert elapsed_text(absurd) == ""
    write_run(repo, "01a21e00-0000-7000-8000-000000000001", status={"state": "succeeded"})
    rows, _ = run_rows(repo, "flows")
    assert rows and all(isinstance(elapsed_text(row), str) for row in rows)


def test_a_run_nothing_supervises_any_more_is_lost_not_running(repo: Path) -> None:
    write_run(
        repo,
        "01900000-0000-7000-8000-000000000001",
        status={"state": "running", "supervisor_pid": 2**22 + 7, "pid": None},
    )
    (row,), _ = run_rows(repo, "flows")
    assert (row.state, row.live) == ("lost", False)


def test_a_running_agent_shows_what_its_budgets_watch_read_so_far(repo: Path) -> None:
    """As `status`: the supervisor writes the watch's reading into status.json each second;
    the page shows it while the run has no record yet."""
    spent = {"inputTokens": 3000, "outputTokens": 600, "costUsd": 0.018, "costEstimated": True}
    write_run(
        repo,
        "01900000-0000-7000-8000-000000000001",
        # this test supervises it: not lost
        status={"state": "running", "agent": "a", "spent": spent, "supervisor_pid": os.getpid()},
    )
    (row,), _ = run_rows(repo, "flows")
    assert row.tokens == "3,000/600 $0.0180 est."


def test_a_run_waiting_out_a_rate_limit_has_no_end_yet(repo: Path) -> None:
    """As `status`: its elapsed time goes on from its first attempt's start."""
    status = {"state": "waiting", "agent": "a", "started": 1000.0, "ended": 1000.5}
    status["supervisor_pid"] = os.getpid()  # this test supervises it: not lost
    write_run(repo, "01900000-0000-7000-8000-000000000001", status=status)
    (row,), _ = run_rows(repo, "flows")
    assert (row.started, row.ended, row.live) == (1000.0, None, True)
    assert elapsed_text(row, now=1600.0) == "10:00"


def test_a_lost_run_shows_what_status_shows_and_its_time_to_its_last_sign_of_life(
    repo: Path,
) -> None:
    """A run whose supervisor was killed: its row says what `status` says it spent (the larger
    of its watch's last reading and its worker.log's usage lines, `≥`), not the watch's older
    reading alone, and its time ends at its last activity, not now; once `cancel` ended it,
    its record's duration, not the time to the cancel."""
    import json

    spent = {"inputTokens": 5000, "outputTokens": 500, "costUsd": 0.0225, "costEstimated": True}
    status = {
        "state": "running", "agent": "a", "supervisor_pid": 2**22 + 7, "pid": None,
        "started": 1000.0, "last_activity": 1002.0, "spent": spent,
        "extra": {"adapter": "command"},
    }  # fmt: skip
    run_dir = write_run(repo, "01900000-0000-7000-8000-000000000001", status=status)
    usage = {"input_tokens": 1000, "output_tokens": 100}
    lines = [
        json.dumps({"type": "assistant", "message": {"id": f"m{n}", "usage": usage}})
        for n in range(6)
    ]
    (run_dir / "worker.log").write_text("\n".join(lines) + "\n")
    (row,), _ = run_rows(repo, "flows")
    assert row.state == "lost" and row.tokens.startswith("≥ 6,000/600"), row.tokens
    assert elapsed_text(row, now=5000.0) == "00:02"
    record = {"status": "canceled", "run": {"lost": True, "startedAt": 1000.0, "durationMs": 2000,
              "endedAt": 1016.0, "inputTokens": 6000, "outputTokens": 600, "tokensPartial": True}}  # fmt: skip
    write_run(repo, "01900000-0000-7000-8000-000000000001", result=record,
              status={**status, "state": "canceled", "ended": 1016.0})  # fmt: skip
    (row,), _ = run_rows(repo, "flows")
    assert elapsed_text(row, now=5000.0) == "00:02", row


def test_a_lost_run_page_says_why_as_status_does(repo: Path) -> None:
    """A run whose supervisor was killed (``kill -9``) while its agent still runs: its page
    gives the reason `status` gives, the processes alive and the cancel that stops them; once
    they are gone too, that nothing of it is alive."""
    import subprocess
    import sys

    from gitflow_agents.commands.status import collect
    from gitflow_agents.runs.liveness import start_time
    from gitflow_agents.serve.views import run_detail

    run_id = "01900000-0000-7000-8000-000000000001"
    agent = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        status = {
            "state": "running", "agent": "a", "supervisor_pid": 2**22 + 7, "pid": agent.pid,
            "create_time": start_time(agent.pid), "started": 1000.0, "reason": "",
        }  # fmt: skip
        write_run(repo, run_id, status=status)
        [row] = collect(repo, "flows")
        detail = run_detail(repo, "flows", run_id)
        assert detail is not None and detail.row.state == "lost"
        assert detail.reason == row["reason"]
        assert (
            f"gitflow-agents cancel {run_id}" in detail.reason and str(agent.pid) in detail.reason
        )
    finally:
        agent.communicate(b"")  # its stdin closed: it ends
    [row] = collect(repo, "flows")
    detail = run_detail(repo, "flows", run_id)
    assert detail is not None and detail.reason == row["reason"] != ""


def test_a_run_lost_while_queued_is_timed_to_its_status_files_last_write(repo: Path) -> None:
    """No activity on record (its orchestrator died before the agent started): its time
    counted to now, for ever; as `status`, it ends at the last write of its status.json."""
    started = 1_700_000_000.0
    status = {"state": "queued", "started": started, "supervisor_pid": 2**22 + 7}
    run_dir = write_run(repo, "01900000-0000-7000-8000-000000000001", status=status)
    os.utime(run_dir / "status.json", (started + 3, started + 3))
    (row,), _ = run_rows(repo, "flows")
    assert (row.state, row.ended) == ("lost", started + 3)
    assert elapsed_text(row) == "00:03"


def test_the_runs_page_is_newest_first_across_flows_and_its_cap_keeps_the_newest(
    repo: Path,
) -> None:
    """The runs were read flow by flow (flows by name): a run just begun in flow ``a`` was
    listed below older runs of flow ``z``, and with the cap full of ``z``'s not drawn at all."""
    older = [f"01900000-0000-7000-8000-00000000000{n}" for n in (1, 2, 3)]
    for run_id in older:
        write_run(repo, run_id, status={"state": "succeeded"}, flow="z")
    newest = "01900000-0001-7000-8000-000000000004"
    write_run(repo, newest, status={"state": "succeeded"}, flow="a")
    rows, rest = run_rows(repo, "flows", most=2)
    assert [(row.run_id, row.flow) for row in rows] == [(newest, "a"), (older[2], "z")]
    assert rest == 2
