"""``gitflow-agents status`` as the user meets it (``commands/status.py``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.conftest import FAKES
from tests.helpers.chain import call, configure


def test_a_step_runs_row_shows_the_sum_of_its_agent_runs_spend(repo: Path) -> None:
    """A step run (a chain) has no usage of its own: its row shows what its agent runs spent,
    as `history` does, not "unknown" (which says a CLI did not tell)."""
    configure(repo)
    options = {"executable": str(FAKES / "fake_spender"), "env": {"FAKE_SPENDER_CALLS": "2"}}
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text()
        + f"  spender:\n    adapter: claude\n    options: {json.dumps(options)}\n"
        + "  offline:\n    adapter: builtin\n"
    )
    done = call(
        repo, "run", "specs/feature.md", "--step", "1", "--quiet",
        "--implementer", "spender", "--reviewers", "offline",
    )  # fmt: skip
    assert done.returncode in (0, 1), done
    rows = json.loads(call(repo, "status", "--json").stdout)
    (step,) = [r for r in rows if r["agent"] is None]
    assert (step["inputTokens"], step["outputTokens"]) == (2000, 400)
    assert step["costUsd"] > 0
    table = call(repo, "status").stdout
    (line,) = [ln for ln in table.splitlines() if ln.startswith(step["runId"][:13])]
    assert "2,000/400" in line and "unknown" not in line
    # its times from its record (it keeps no status.json): not "-" and "- (-)"
    assert step["endedAt"] >= step["startedAt"] and step["lastActivityKind"] == "finished"
    assert " - (-) " not in line and "ago (finished)" in line, line


def test_a_lost_runs_time_stops_at_its_last_sign_of_life() -> None:
    """A run nothing supervises any more does not go on running in `status`: its TIME ends at
    its last activity, not now."""
    from gitflow_agents.commands.status import format_table

    row = {
        "runId": "01a2-lost", "flow": "f", "agent": "a", "state": "lost", "reason": "gone",
        "startedAt": 1000.0, "endedAt": None, "lastActivityAt": 1065.0,
        "lastActivityKind": "output", "result": None,
    }  # fmt: skip
    (line,) = [ln for ln in format_table([row]).splitlines() if ln.startswith("01a2-lost")]
    assert " 1:05 " in line, line


def test_a_run_lost_while_queued_has_a_time_that_stops(repo: Path) -> None:
    """Its orchestrator died before the agent started: no activity on record, and TIME counted
    up for ever; it stops at the last write of its status.json (docs/decisions.md: a lost run's
    time ends at its last sign of life)."""
    from gitflow_agents.commands.status import collect, format_table

    run_dir = repo / "flows" / "f" / "runs" / "01a2-queued"
    run_dir.mkdir(parents=True)
    started = time.time() - 3600
    status = {"state": "queued", "agent": "a", "started": started, "supervisor_pid": 2**22 + 7}
    (run_dir / "status.json").write_text(json.dumps(status))
    os.utime(run_dir / "status.json", (started + 2, started + 2))
    (row,) = collect(repo, "flows")
    assert row["state"] == "lost" and row["durationMs"] == 2000
    (line,) = [ln for ln in format_table([row]).splitlines() if ln.startswith("01a2-queued")]
    assert " 0:02 " in line, line


def test_a_lost_run_ended_later_is_still_timed_to_its_last_sign_of_life(repo: Path) -> None:
    """Once `cancel` or a new run of its step ended a lost run, its TIME stays what it was
    while it was lost (its record's duration), not the time until it was ended."""
    from gitflow_agents.commands.status import collect, format_table

    run_dir = repo / "flows" / "f" / "runs" / "01a2-ended"
    run_dir.mkdir(parents=True)
    status = {"state": "canceled", "agent": "a", "started": 1000.0, "last_activity": 1065.0,
              "ended": 2000.0, "reason": "canceled by user"}  # fmt: skip
    (run_dir / "status.json").write_text(json.dumps(status))
    run = {"runID": "01a2-ended", "outcome": "canceled", "durationMs": 65000, "lost": True}
    (run_dir / "result.json").write_text(json.dumps({"status": "canceled", "run": run}))
    (row,) = collect(repo, "flows")
    assert row["lost"] is True and row["endedAt"] == 2000.0
    (line,) = [ln for ln in format_table([row]).splitlines() if ln.startswith("01a2-ended")]
    assert " 1:05 " in line, line


def test_a_run_waiting_out_a_rate_limit_has_no_end_and_its_time_goes_on(repo: Path) -> None:
    """Between attempts the run lives: no endedAt (even in a record that kept its first
    attempt's end), and its TIME counts from its first attempt's start, not to that end."""
    from gitflow_agents.commands.status import collect, format_table

    started = time.time() - 600
    run_dir = repo / "flows" / "f" / "runs" / "01a2-waiting"
    run_dir.mkdir(parents=True)
    status = {"state": "waiting", "agent": "a", "started": started, "ended": started + 0.5}
    status["supervisor_pid"] = os.getpid()  # this test supervises it: not lost
    (run_dir / "status.json").write_text(json.dumps(status))
    (row,) = collect(repo, "flows")
    assert (row["state"], row["startedAt"], row["endedAt"]) == ("waiting", started, None)
    (line,) = [ln for ln in format_table([row]).splitlines() if ln.startswith("01a2-waiting")]
    assert " 10:0" in line, line  # ten minutes and the seconds this test took, not 0:00


def test_runs_begun_in_the_same_millisecond_are_told_apart() -> None:
    """A run id's first 13 characters are its creation time to the millisecond: two runs begun
    in the same one (steps `--jobs` starts at once) show longer prefixes, each its own, in
    `status` (and `history`, through the same function); any other run keeps the short one."""
    from gitflow_agents.commands.status import format_table
    from gitflow_agents.runs import short_ids

    def other(run_id: str, at: int) -> str:  # the same id but for one hex digit at ``at``
        return run_id[:at] + ("1" if run_id[at] != "1" else "2") + run_id[at + 1 :]

    twin = "01a21cd7-715c-7a3e-9d1f-4c6b2e8f0a17"
    same_ms, alone = other(twin, 16), "01a21cd7-7160-7a3e-9d1f-4c6b2e8f0a17"
    assert short_ids([twin, same_ms, alone]) == [twin[:18], same_ms[:18], alone[:13]]
    same_18 = other(twin, 20)
    assert short_ids([twin, same_18]) == [twin[:23], same_18[:23]]
    row = {
        "flow": "f", "agent": "a", "state": "finished", "reason": "", "startedAt": 1000.0,
        "endedAt": 1001.0, "lastActivityAt": 1001.0, "lastActivityKind": "output", "result": None,
    }  # fmt: skip
    rows = [{"runId": run_id, **row} for run_id in (twin, same_ms, alone)]
    table = format_table(rows).splitlines()
    assert [line.split()[0] for line in table[1:]] == [twin[:18], same_ms[:18], alone[:13]]


def test_a_prefix_that_names_several_runs_is_said_so_with_their_longer_prefixes(
    repo: Path,
) -> None:
    """`cancel` and `send` given a prefix two runs share (begun in the same millisecond, in
    two flows) say it names both and how to tell them apart; it said "no run …", which is
    wrong. A prefix that names one still works."""
    from tests.conftest import run_cli

    twin = "01a21cd7-715c-7a3e-9d1f-4c6b2e8f0a17"
    other = "01a21cd7-715c-7b84-9d1f-4c6b2e8f0a17"
    for flow, run_id in (("fa", twin), ("fz", other)):
        run_dir = repo / "flows" / flow / "runs" / run_id
        run_dir.mkdir(parents=True)
        status = {"run_id": run_id, "flow": flow, "agent": "a", "state": "succeeded"}
        (run_dir / "status.json").write_text(json.dumps({**status, "started": 1, "ended": 2}))
    for command in (("cancel", twin[:13]), ("send", twin[:13], "hi")):
        done = run_cli(*command, cwd=repo)
        assert done.returncode == 2, done
        assert f"'{twin[:13]}' names 2 runs: {twin[:18]}, {other[:18]}" in done.stderr, done.stderr
    done = run_cli("cancel", twin[:18], cwd=repo)
    assert done.returncode == 0 and "already" in done.stdout + done.stderr, done


def test_runs_of_several_flows_are_listed_oldest_first_across_them(repo: Path) -> None:
    """As `history`: in the order they began, not flow by flow (the last rows the latest)."""
    from gitflow_agents.commands.status import collect

    began = [
        ("zeta", "01a21d00-0000-7000-8000-000000000001"),
        ("alpha", "01a21d00-0001-7000-8000-000000000002"),
        ("zeta", "01a21d00-0002-7000-8000-000000000003"),
    ]
    for flow, run_id in began:
        run_dir = repo / "flows" / flow / "runs" / run_id
        run_dir.mkdir(parents=True)
        (run_dir / "status.json").write_text(json.dumps({"state": "succeeded", "started": 1.0}))
    assert [(row["flow"], row["runId"]) for row in collect(repo, "flows")] == began
