"""Following events.jsonl files: where a follower starts, torn and foreign lines, masking."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitflow_agents.runs import iter_runs
from gitflow_agents.runs.liveness import start_time
from gitflow_agents.runs.spend import run_spend, spend_text
from gitflow_agents.serve import stream
from gitflow_agents.serve.stream import Follower, ended_view, event_view, shown_text, tokens_text
from gitflow_agents.serve.views import run_row
from tests.conftest import FAKES
from tests.helpers.chain import call, configure
from tests.helpers.serve import event, write_run

LIVE = "01900000-0000-7000-8000-000000000001"
DONE = "01900000-0000-7000-8000-000000000002"
RUNNING = {"state": "running", "supervisor_pid": os.getpid()}  # this test supervises it: not lost


def test_a_live_run_is_read_from_its_start_a_finished_one_from_its_end(repo: Path) -> None:
    write_run(repo, LIVE, status=RUNNING, events=[event("agent:start", LIVE, pid=1)])
    done = write_run(
        repo,
        DONE,
        status={"state": "succeeded"},
        result={"status": "succeeded"},
        events=[event("agent:start", DONE, pid=2)],
    )
    follower = Follower(repo, "flows")
    follower.start()
    assert [(v["run"], v["type"]) for v in follower.poll()] == [(LIVE, "agent:start")]
    assert follower.poll() == []  # nothing new
    with (done / "events.jsonl").open("a") as handle:
        handle.write(json.dumps(event("agent:complete", DONE, status="succeeded")) + "\n")
    (view,) = follower.poll()
    assert (view["run"], view["state"]) == (DONE, "succeeded")


def test_a_torn_line_waits_for_its_end_and_a_foreign_line_is_skipped(repo: Path) -> None:
    run_dir = write_run(repo, LIVE, status=RUNNING)
    follower = Follower(repo, "flows")
    follower.start()
    line = json.dumps(event("agent:output", LIVE, tail="half and half"))
    with (run_dir / "events.jsonl").open("a") as handle:
        handle.write("not json\n[1, 2]\n" + line[:10])
    assert follower.poll() == []
    with (run_dir / "events.jsonl").open("a") as handle:
        handle.write(line[10:] + "\n")
    (view,) = follower.poll()
    assert view["text"] == "half and half"
    assert view["offset"] == (run_dir / "events.jsonl").stat().st_size


def test_a_run_without_records_yet_counts_as_live(repo: Path) -> None:
    """A chain's step run has events before any status.json or result.json."""
    write_run(repo, LIVE, events=[event("phase:start", LIVE, phase="implement")])
    follower = Follower(repo, "flows")
    follower.start()
    assert [v["text"] for v in follower.poll()] == ["phase implement"]


def test_event_views_mask_secrets_and_cut_long_output() -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    view = event_view(LIVE, "f", event("agent:failed", LIVE, agent="a", reason=f"k={secret}"))
    assert view is not None and secret not in view["text"] and view["state"] == "failed"
    long = shown_text("word " * 200 + secret)
    assert secret not in long and len(long) <= 401 and long.startswith("…")
    assert event_view(LIVE, "f", {"type": 3, "data": {}}) is None


def test_tokens_text_says_what_is_known() -> None:
    assert tokens_text({"input_tokens": 10, "output_tokens": None}) == "10/?"
    assert tokens_text({"inputTokens": 1200, "outputTokens": 2, "costUsd": 0.5}) == (
        "1,200/2 $0.5000"
    )
    assert tokens_text({"cost_usd": True}) == ""
    estimated = {"input_tokens": 1000, "output_tokens": 200, "cost_usd": 0.006}
    assert tokens_text({**estimated, "cost_estimated": True}) == "1,000/200 $0.0060 est."


def test_a_running_agents_spend_reads_as_its_record_will() -> None:
    """The page's row must not change form when the run's record replaces its last event."""
    usage = {"input_tokens": 12_345, "output_tokens": 678, "cost_usd": 0.0123}
    record = {"inputTokens": 12_345, "outputTokens": 678, "costUsd": 0.0123}
    assert tokens_text(usage) == spend_text(run_spend(record)) == "12,345/678 $0.0123"


def test_a_result_written_later_is_one_run_ended_view_with_the_steps_outcome(repo: Path) -> None:
    """A step run has no events of its own: its outcome reaches the page when recorded."""
    run_dir = write_run(repo, LIVE)
    write_run(repo, DONE, result={"status": "succeeded"})  # ended before: not announced
    follower = Follower(repo, "flows")
    follower.start()
    assert follower.poll() == []
    chain = {"outcome": "canceled", "step": 2, "agents": [], "rounds": []}
    (run_dir / "result.json").write_text(
        json.dumps({"status": "canceled", "chain": chain, "run": {"kind": "chain"}})
    )
    (view,) = follower.poll()
    assert (view["type"], view["state"], view["what"]) == ("run:ended", "canceled", "step 2")
    assert follower.poll() == []  # once


def test_without_replay_a_live_run_is_read_from_its_end_too(repo: Path) -> None:
    run_dir = write_run(repo, LIVE, status=RUNNING, events=[event("agent:start", LIVE)])
    follower = Follower(repo, "flows")
    follower.start(replay=False)
    assert follower.poll() == []
    with (run_dir / "events.jsonl").open("a") as handle:
        handle.write(json.dumps(event("agent:complete", LIVE, status="failed")) + "\n")
    assert [v["state"] for v in follower.poll()] == ["failed"]


def _spent(run_dir: Path, state: str, input_tokens: int) -> None:
    """status.json as the supervisor rewrites it each second while a budget watches the agent."""
    spent = {"inputTokens": input_tokens, "outputTokens": 200, "costUsd": 0.006}
    (run_dir / "status.json").write_text(json.dumps({**RUNNING, "state": state, "spent": spent}))


def test_a_running_agents_spend_so_far_is_sent_as_it_changes(repo: Path) -> None:
    """Its output events carry no usage: the row's tokens and cost follow status.json's `spent`
    (what `status` shows), in the same form, once for each change."""
    run_dir = write_run(repo, LIVE, events=[event("agent:start", LIVE, pid=1)])
    _spent(run_dir, "running", 1000)
    follower = Follower(repo, "flows")
    follower.start()
    views = follower.poll()
    assert [(v["type"], v["tokens"]) for v in views] == [
        ("agent:start", ""),
        ("run:spent", "1,000/200 $0.0060"),
    ]
    assert views[-1]["run"] == LIVE and views[-1]["state"] == ""
    _spent(run_dir, "running", 1000)  # rewritten, the same reading: nothing new
    assert follower.poll() == []
    _spent(run_dir, "running", 2000)
    assert [v["tokens"] for v in follower.poll()] == ["2,000/200 $0.0060"]


def test_no_spend_reading_follows_the_event_that_ends_the_agent(repo: Path) -> None:
    """The supervisor's last reading may reach the page after the end's totals; it must not
    replace them. An attempt after a rate limit's wait is read again."""
    run_dir = write_run(repo, LIVE, events=[event("agent:start", LIVE, pid=1)])
    _spent(run_dir, "running", 1000)
    follower = Follower(repo, "flows")
    follower.start()
    follower.poll()
    with (run_dir / "events.jsonl").open("a") as handle:
        ended = event("agent:failed", LIVE, status="rate_limited", input_tokens=3000)
        handle.write(json.dumps(ended) + "\n")
    _spent(run_dir, "running", 2000)  # written before the end's event, read after it
    assert [(v["type"], v["tokens"]) for v in follower.poll()] == [("agent:failed", "3,000/?")]
    _spent(run_dir, "waiting", 2500)
    assert follower.poll() == []
    with (run_dir / "events.jsonl").open("a") as handle:
        handle.write(json.dumps(event("agent:start", LIVE, pid=2)) + "\n")
    _spent(run_dir, "running", 4000)
    assert [(v["type"], v["tokens"]) for v in follower.poll()] == [
        ("agent:start", ""),
        ("run:spent", "4,000/200 $0.0060"),
    ]


def test_a_rate_limits_wait_is_read_with_what_the_attempts_spent_so_far(repo: Path) -> None:
    """While a run waits out a rate limit, its status.json says what its attempts spent so far
    (a lower bound where an attempt stopped before its totals), as `status` shows it: the
    page's row follows it once the wait's event is read, not the attempt's own figures."""
    run_dir = write_run(repo, LIVE, events=[event("agent:start", LIVE, pid=1)])
    follower = Follower(repo, "flows")
    follower.start()
    follower.poll()
    with (run_dir / "events.jsonl").open("a") as handle:
        ended = event("agent:failed", LIVE, status="rate_limited", input_tokens=1000)
        handle.write(json.dumps(ended) + "\n")
    assert [v["type"] for v in follower.poll()] == ["agent:failed"]
    spent = {"inputTokens": 3000, "outputTokens": 300, "tokensPartial": True}
    (run_dir / "status.json").write_text(
        json.dumps({**RUNNING, "state": "waiting", "spent": spent})
    )
    with (run_dir / "events.jsonl").open("a") as handle:
        handle.write(json.dumps(event("agent:waiting", LIVE, reason="rate limited")) + "\n")
    assert [(v["type"], v["tokens"]) for v in follower.poll()] == [
        ("agent:waiting", ""),
        ("run:spent", "≥ 3,000/300"),
    ]


def test_a_continued_attempts_end_shows_the_runs_figures_so_far() -> None:
    """The end event of an attempt after a rate limit's wait says the run's figures as its
    record will (``run_usage``): the row shows them, not the attempt's own part."""
    run = {"inputTokens": 3000, "outputTokens": 300, "tokensPartial": True}
    ended = event("agent:complete", LIVE, input_tokens=1000, output_tokens=100, run_usage=run)
    assert (event_view(LIVE, "f", ended) or {})["tokens"] == "≥ 3,000/300"


def test_an_agent_runs_end_keeps_how_its_agent_ended_not_its_records_status() -> None:
    """A budget-stopped (stuck, timed out…) agent run's record says `failed`; its page row says
    `budget`, as its status.json: neither the run's last event nor run:ended turns it `failed`."""
    done = event("harness:complete", LIVE, status="failed")
    assert (event_view(LIVE, "f", done) or {})["state"] == ""
    step = event("harness:complete", LIVE, outcome="budget", runID=LIVE)
    assert (event_view(LIVE, "f", step) or {})["state"] == "budget"


def test_a_budget_stopped_run_ends_budget_on_the_stream_as_on_the_page(repo: Path) -> None:
    """The row the stream draws ends as the row a reload draws."""
    configure(repo)
    options = {"executable": str(FAKES / "fake_spender")}
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text()
        + f"  spender:\n    adapter: claude\n    options: {json.dumps(options)}\n"
    )
    done = call(repo, "spawn", "spender", "--task", "spend", "--budget-usd", "0.05", "--quiet")
    assert done.returncode == 5, done
    (paths,) = iter_runs(repo, "flows")
    follower = Follower(repo, "flows")  # not started: every event, as a page open all along
    states = [v["state"] for v in follower.poll() if v["state"]]
    assert states[-2:] == ["budget", "budget"]  # agent:failed, then run:ended
    assert ended_view(paths)["state"] == run_row(paths).state == "budget"


def test_an_agent_runs_end_brings_what_its_record_says_it_spent(tmp_path: Path) -> None:
    """The event that ended its agent said its last attempt's own figures, exact; its record
    says every attempt's, a lower bound (a rate limit's first attempt cut short, a cancel):
    run:ended brings the record's, so the live row ends as a reload draws it."""
    run = {
        "runID": "r1", "agentId": "cx", "kind": "implement", "outcome": "canceled",
        "inputTokens": 63000, "outputTokens": 12600, "costUsd": 0.378, "costEstimated": True,
        "tokensPartial": True, "costPartial": True,
    }  # fmt: skip
    last = event("agent:failed", "r1", status="canceled", input_tokens=60000, output_tokens=12000)
    run_dir = write_run(tmp_path, "r1", result={"status": "canceled", "run": run}, events=[last])
    (paths,) = iter_runs(tmp_path, "flows")
    assert paths.run_dir == run_dir
    ended = ended_view(paths)
    assert ended["tokens"] == run_row(paths).tokens == "≥ 63,000/12,600 ≥ $0.3780 est."


def test_a_run_whose_supervisor_dies_while_followed_is_sent_lost_once(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing a killed supervisor leaves says its run is lost: an open page showed it running,
    its clock ticking, until a reload. The follower asks, once its status.json stays as it was."""
    monkeypatch.setattr(stream, "LOST_EVERY", 0.0)  # ask at each poll the status.json is alike
    supervisor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = time.time() - 30
        status = {"state": "running", "agent": "a", "started": started}
        status |= {"last_activity": started + 12, "supervisor_pid": supervisor.pid}
        status["supervisor_create_time"] = start_time(supervisor.pid)
        write_run(repo, LIVE, status=status, events=[event("agent:start", LIVE, pid=1)])
        follower = Follower(repo, "flows")
        follower.start()
        assert [v["type"] for v in follower.poll()] == ["agent:start"]
        assert follower.poll() == []  # supervised: not lost
    finally:
        supervisor.kill()
        supervisor.wait()
    (view,) = follower.poll()
    assert (view["run"], view["type"], view["state"]) == (LIVE, "run:lost", "lost")
    assert view["ended"] == started + 12  # its last sign of life, where its time stops
    assert view["text"] == "neither supervisor nor agent alive"
    assert follower.poll() == []  # said once


def test_a_run_lost_before_the_stream_starts_is_sent_lost_after_its_replayed_events(
    repo: Path,
) -> None:
    """A page (re)connecting replays a live run's events, which say it runs: the lost state
    follows them in the same poll, whatever ``LOST_EVERY`` is."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    status = {"state": "running", "supervisor_pid": dead.pid, "supervisor_create_time": 1.0}
    write_run(repo, LIVE, status=status, events=[event("agent:start", LIVE, pid=1)])
    alive = {"state": "running", "supervisor_pid": os.getpid()}
    write_run(repo, DONE, status=alive, events=[event("agent:start", DONE, pid=2)])
    follower = Follower(repo, "flows")
    follower.start()
    assert [(v["run"], v["type"]) for v in follower.poll()] == [
        (LIVE, "agent:start"),
        (LIVE, "run:lost"),
        (DONE, "agent:start"),
    ]
