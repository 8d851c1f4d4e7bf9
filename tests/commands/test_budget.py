"""Budgets as the user meets them (``--budget-usd`` / ``--budget-tokens``, ``.flow/`` ``budget:``):
a fake Claude Code that streams its usage (tests/fakes/fake_spender) is stopped at the limit,
its tree killed, exit 5 with the numbers, the spend recorded, its work kept; re-runs, a run
killed during the stop, a plan's budget across steps, and an agent reviewer."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from gitflow_agents.base.errors import ExitCode
from gitflow_agents.git import queries as g
from gitflow_agents.runs import budget
from tests.conftest import FAKES, git, run_cli, wait_until
from tests.helpers.chain import call, configure, results

SPENDER = FAKES / "fake_spender"
RUN = ("run", "specs/feature.md", "--quiet", "--implementer", "spender", "--reviewers", "offline")


def add_spender(repo: Path, record: Path, *, budget: str = "", **env: str) -> None:
    """The fake as a claude agent ``spender`` and the builtin reviewer as ``offline``, in the
    chain's config (``configure``); ``budget``: a ``budget:`` section."""
    options = {"executable": str(SPENDER), "env": {"FAKE_SPENDER_RECORD": str(record), **env}}
    config = repo / ".flow" / "base.yaml"
    text = config.read_text() + (
        f"  spender:\n    adapter: claude\n    options: {json.dumps(options)}\n"
        "  offline:\n    adapter: builtin\n"
    )
    config.write_text(text + budget)


def add_script_agent(repo: Path, name: str, script: Path, source: str) -> None:
    """A `command` agent ``name`` that runs the Python ``source`` (written to ``script``) and
    completes by its exit."""
    script.write_text(source)
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text()
        + f"  {name}:\n    adapter: command\n    command: [{json.dumps(sys.executable)}, "
        f"{json.dumps(str(script))}]\n    options: {{completes_by_exit: true}}\n"
    )


def spent(text: str, pattern: str) -> tuple[float, int]:
    """The cost and tokens of the budget message matching ``pattern`` (``COST``, ``TOKENS``
    where the numbers go): the agent is stopped at the first check at or over the limit, and
    how many usage lines arrived by then depends on the machine's load."""
    regex = re.escape(pattern).replace("COST", r"\$(?P<cost>\d+\.\d{3})")
    regex = regex.replace("TOKENS", r"(?P<tokens>[\d,]+)")
    found = re.search(regex, text)
    assert found is not None, text
    return float(found["cost"]), int(found["tokens"].replace(",", ""))


def facts(record: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(record.read_text())
    return data


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def agent_results(repo: Path, flow: str) -> list[dict[str, Any]]:
    found = [
        json.loads(p.read_text()) for p in (repo / "flows" / flow / "runs").glob("*/result.json")
    ]
    return [r for r in found if r["run"].get("kind") != "chain"]


def test_spawn_is_stopped_at_the_limit_with_its_tree_killed_and_its_spend_recorded(
    repo: Path, tmp_path: Path
) -> None:
    configure(repo)
    record = tmp_path / "record.json"
    add_spender(repo, record)
    done = run_cli(
        "spawn", "spender", "--task", "spend", "--budget-usd", "0.05", "--quiet", cwd=repo
    )
    assert done.returncode == 5, done
    cost, tokens = spent(done.stdout, "budget: agent spent COST est. of $0.05 (tokens TOKENS)")
    assert cost >= 0.05 and tokens == round(cost / 0.006) * 1200  # $0.006, 1,200 tokens a call
    seen = facts(record)
    assert gone(seen["pid"]) and gone(seen["child"])  # the whole tree, the tool it ran too
    argv = seen["argv"]
    assert argv[argv.index("--output-format") + 1] == "stream-json" and "--verbose" in argv
    assert argv[argv.index("--max-budget-usd") + 1] == "0.05"  # Claude's own flag as well
    (result,) = agent_results(repo, "spender")
    run = result["run"]
    assert (result["status"], run["outcome"]) == ("failed", "budget")
    assert run["inputTokens"] >= 9_000 and run["costEstimated"] is True  # what it streamed
    history = call(repo, "history", "--json")
    (row,) = json.loads(history.stdout)
    assert row["outcome"] == "budget" and row["costUsd"] >= 0.054


def test_the_budget_message_states_what_the_run_spent_as_its_record_does(
    repo: Path, tmp_path: Path
) -> None:
    """An agent that spends on after the limit was seen, until its tree is killed (SIGTERM
    ignored: killed after the kill grace): the message (the run's reason) says the spend its
    record has, all it streamed, not the reading the limit was first seen at."""
    configure(repo)
    add_spender(
        repo, tmp_path / "record.json", FAKE_SPENDER_IGNORE_TERM="1", FAKE_SPENDER_SLEEP="0.01"
    )
    done = run_cli(
        "spawn", "spender", "--task", "spend", "--budget-usd", "0.02", "--kill-grace", "0.3",
        "--quiet", "--json", cwd=repo,
    )  # fmt: skip
    assert done.returncode == 5, done
    run = json.loads(done.stdout)["run"]
    cost, tokens = spent(run["reason"], "budget: agent spent COST est. of $0.02 (tokens TOKENS)")
    assert tokens == run["inputTokens"] + run["outputTokens"] > 6 * 1200  # it spent on
    assert cost == round(run["costUsd"], 3)


def test_a_budget_of_zero_starts_no_agent(repo: Path, tmp_path: Path) -> None:
    configure(repo)
    add_spender(repo, tmp_path / "record.json", budget="budget:\n  agent: {tokens: 0}\n")
    done = call(repo, "spawn", "spender", "--task", "spend", "--quiet")
    assert done.returncode == 5
    assert done.stderr.strip().endswith(
        "budget: agent is 0 tokens (nothing may be used); no agent started"
    )
    assert not (tmp_path / "record.json").exists()
    assert not (repo / "flows" / "spender" / "runs").exists()


def test_a_budget_that_starts_no_agent_is_said_in_json_too(repo: Path, tmp_path: Path) -> None:
    """With ``--json`` an agent a spent budget did not start prints its outcome on stdout as
    a stopped one's (``status: budget``) with why, besides the error line: a script reading
    the JSON gets an object, not nothing (``spawn`` and ``flow``; ``send`` the same way)."""
    configure(repo)
    add_spender(repo, tmp_path / "record.json")
    for command in (
        ("spawn", "spender", "--task", "spend"),
        ("flow", "implement", "--agent", "spender", "--task", "x", "--branch", "none-spent"),
    ):
        done = call(repo, *command, "--budget-usd", "0", "--quiet", "--json")
        assert done.returncode == 5, done
        printed = json.loads(done.stdout)
        assert printed["status"] == "budget" and "no agent started" in printed["reason"]
        assert "no agent started" in done.stderr
    assert not (tmp_path / "record.json").exists()


def test_flow_reviews_options_limit_the_review_its_reviewers_together(
    repo: Path, tmp_path: Path
) -> None:
    """`flow review --budget-tokens` is the review's limit, as `review`'s: two reviewers that
    each stay under it but together go over are stopped (exit 5), and it lifts a smaller
    `.flow/` `budget.review` (it capped each reviewer and left that in place)."""
    configure(repo)
    config = repo / ".flow" / "base.yaml"
    for name in ("s1", "s2"):
        options = {
            "executable": str(SPENDER),
            "env": {"FAKE_SPENDER_CALLS": "3", "FAKE_SPENDER_RECORD": str(tmp_path / name)},
        }
        config.write_text(
            config.read_text()
            + f"  {name}:\n    adapter: claude\n    options: {json.dumps(options)}\n"
        )
    head = git(repo, "rev-parse", "HEAD").strip()
    review = ("flow", "review", "--range", f"{head}~1..{head}", "--reviewers", "s1,s2", "--quiet")
    together = call(repo, *review, "--budget-tokens", "5000")  # 3,600 each, 7,200 in all
    assert together.returncode == 5, together
    config.write_text(config.read_text() + "budget:\n  review: {tokens: 1000}\n")
    lifted = call(repo, *review, "--budget-tokens", "100000")
    assert lifted.returncode != 5, lifted


def test_a_budget_of_zero_still_starts_the_patch_agent_which_spends_nothing(repo: Path) -> None:
    configure(repo)
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text() + "  patcher:\n    adapter: patch\n")
    done = call(repo, "spawn", "patcher", "--task", "x", "--budget-tokens", "0", "--quiet")
    assert done.returncode != ExitCode.BUDGET and "no agent started" not in done.stderr, done
    assert list((repo / "flows" / "patcher" / "runs").iterdir())  # it ran (and found no diff)


def test_a_step_out_of_budget_keeps_its_work_and_a_rerun_continues_it(
    repo: Path, tmp_path: Path
) -> None:
    configure(repo)
    record = tmp_path / "record.json"
    add_spender(repo, record, budget="budget:\n  step: {usd: 0.05}\n", FAKE_SPENDER_CALLS="12")
    first = call(repo, *RUN, "--step", "1")
    assert first.returncode == 5, first
    cost, _ = spent(
        first.stdout, "step 1: budget - budget: step spent COST est. of $0.05 (tokens TOKENS)"
    )
    assert cost >= 0.05
    (step,) = results(repo)
    assert step["chain"]["outcome"] == "budget" and step["status"] == "failed"
    rows = json.loads(call(repo, "status", "--json").stdout)  # the step run's ending
    (row,) = [r for r in rows if r["runId"] == step["run"]["runID"]]
    assert row["state"] == "budget" and row["reason"].startswith("budget: step spent")
    branch = "agents/feature/step-1"
    kept = git(repo, "show", f"{branch}:spent.txt").splitlines()
    # the calls made before the stop ($0.054 is the 9th), committed; on a loaded machine the
    # agent may make all 12 before a check sees the 9th: its last line ends it `budget` too
    assert 9 <= len(kept) <= 12
    trailers = git(repo, "log", "-1", "--format=%(trailers:only,unfold)", branch)
    assert "Gitflow-Agents-Stopped: budget" in trailers
    assert git(repo, "rev-parse", "main") != git(repo, "rev-parse", branch)  # nothing merged

    again = call(repo, *RUN, "--step", "1")  # the same budget: stopped again, the work grows
    assert again.returncode == 5
    assert len(git(repo, "show", f"{branch}:spent.txt").splitlines()) > len(kept)

    raised = call(repo, *RUN, "--step", "1", "--budget-usd", "1")  # the option wins
    assert raised.returncode == 0, raised
    assert "step 1: approved" in raised.stdout
    assert "call 11" in git(repo, "show", "main:spent.txt")


def test_run_all_stops_at_a_plan_budget_a_cli_reaches_in_its_last_line(
    repo: Path, tmp_path: Path
) -> None:
    """A CLI whose model no price table knows states its cost only at the end, after it
    renamed its report: the plan's budget cannot stop it mid-run, but that last line is judged
    too (the agent ends `budget`, its work kept on the step branch, nothing merged), and the
    next step does not start."""
    configure(repo)
    record = tmp_path / "record.json"
    budget = "budget:\n  plan: {usd: 0.01}\n"
    add_spender(repo, record, budget=budget, FAKE_SPENDER_CALLS="3", FAKE_SPENDER_MODEL="x-1")
    done = call(repo, *RUN, "--all")
    assert done.returncode == 5, done
    assert "step 1: budget - budget: plan spent $0.018 of $0.01 (tokens 3,600)" in done.stdout
    assert "step 2" not in done.stdout
    assert [r["chain"]["step"] for r in results(repo)] == [1]
    assert git(repo, "show", "agents/feature/step-1:spent.txt").count("call") == 3
    assert "spent.txt" not in git(repo, "ls-tree", "--name-only", "main")


def test_killed_during_a_budget_stop_then_run_again(repo: Path, tmp_path: Path) -> None:
    """kill -9 of ``run`` while it kills an agent that ignores SIGTERM: the agent is left
    alive; the next run finds it (a lost run in the step's work tree), kills it and stops at
    the budget again."""
    configure(repo)
    record = tmp_path / "record.json"
    add_spender(
        repo, record, budget="budget:\n  step: {tokens: 6000}\n", FAKE_SPENDER_IGNORE_TERM="1"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = [sys.executable, "-m", "gitflow_agents", *RUN, "--step", "1", "--kill-grace", "30"]
    proc = subprocess.Popen(
        argv, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(lambda: _state(repo) == "killing", timeout=60)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    orphan = facts(record)["pid"]
    assert not gone(orphan)  # SIGTERM ignored, and nobody left to send SIGKILL
    again = call(repo, *RUN, "--step", "1", "--kill-grace", "0.2")
    assert again.returncode == 5, again
    assert "budget: step spent" in again.stdout and "tokens of 6,000" in again.stdout
    wait_until(lambda: gone(orphan), timeout=10)


def _state(repo: Path) -> str | None:
    for status in (repo / "flows" / "feature" / "runs").glob("*/status.json"):
        with_state = json.loads(status.read_text())
        if with_state.get("agent") == "step-01-spender":
            state: str | None = with_state.get("state")
            return state
    return None


def test_an_agent_reviewer_out_of_budget_is_not_approved(repo: Path, tmp_path: Path) -> None:
    configure(repo)
    add_spender(repo, tmp_path / "record.json")
    (repo / "new.txt").write_text("hello\n")
    git(repo, "add", "new.txt")
    git(repo, "commit", "-qm", "new")
    done = run_cli(
        "review", "HEAD~1..HEAD", "--agent", "spender", "--budget-tokens", "5000", cwd=repo
    )
    assert done.returncode == 5, done
    _, tokens = spent(done.stderr, "budget: review spent TOKENS tokens of 5,000 (cost COST est.)")
    assert tokens >= 5_000
    notes = subprocess.run(
        ["git", "-C", str(repo), "notes", "--ref=refs/notes/gitflow-agents", "list"],
        capture_output=True,
        text=True,
    )
    assert notes.stdout == ""  # fail-closed: no approval recorded


FINAL_ONLY = """import json
usage = {"input_tokens": 100000, "output_tokens": 20000}
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done",
                  "session_id": "s1", "usage": usage, "total_cost_usd": 0.6}), flush=True)
"""


def test_an_agent_whose_only_usage_line_ends_it_over_the_limit_ends_budget(
    repo: Path, tmp_path: Path
) -> None:
    """A `command` agent printing its Claude-style result (usage, cost) as it exits: the run
    ends over the limit, so it is `budget` (exit 5), however fast the exit beat the reader."""
    configure(repo)
    add_script_agent(repo, "once", tmp_path / "final_only.py", FINAL_ONLY)
    for _ in range(3):  # the race it was lost to: exit before the reader fed the line
        done = call(repo, "spawn", "once", "--task", "x", "--budget-usd", "0.5", "--quiet")
        assert done.returncode == 5, done
        assert "budget: agent spent $0.600 of $0.5 (tokens 120,000)" in done.stdout


def test_an_agent_is_stopped_in_the_turn_after_its_first_result(repo: Path, tmp_path: Path) -> None:
    """Claude Code with stream-json input ends a turn with a result (that turn's tokens, the
    cost so far) and goes on when a message came meanwhile: the next turn's usage counts on
    top of that result, so the budget stops it there, not at the run's final result; and the
    run's record, `status` and `history` say what it was stopped at, not the first turn's
    result (the last one its output holds)."""
    configure(repo)
    record = tmp_path / "record.json"
    add_spender(repo, record, FAKE_SPENDER_CALLS="200", FAKE_SPENDER_TURN_AFTER="2")
    done = call(repo, "spawn", "spender", "--task", "spend", "--budget-tokens", "6000", "--quiet")
    assert done.returncode == 5, done
    found = re.search(r"budget: agent spent ([\d,]+) tokens of 6,000", done.stdout)
    assert found is not None, done.stdout
    stopped_at = int(found[1].replace(",", ""))
    assert 6000 <= stopped_at < 200 * 1200  # not the final result's
    assert len((repo / "spent.txt").read_text().splitlines()) < 200  # stopped mid-turn
    (result,) = agent_results(repo, "spender")
    run = result["run"]
    assert run["inputTokens"] + run["outputTokens"] >= stopped_at  # not 2,400: the first turn
    assert run["costEstimated"] is True and run["costUsd"] >= 0.03  # $0.006 a call, 5 or more
    assert not run.get("tokensPartial")  # the budget stopped it at this reading
    (row,) = json.loads(call(repo, "status", "--json").stdout)
    assert (row["inputTokens"], row["outputTokens"]) == (run["inputTokens"], run["outputTokens"])
    (shown,) = json.loads(call(repo, "history", "--json", "--agents").stdout)
    assert shown["inputTokens"] == run["inputTokens"]


def test_a_run_of_two_turns_is_recorded_with_both_turns_tokens(repo: Path, tmp_path: Path) -> None:
    """Two turns in one Claude Code process (a message sent while it ran), each ending with a
    result that states its own tokens and the cost so far: the record counts both turns, as
    the budget's watch did, and the cost the CLI stated last."""
    configure(repo)
    record = tmp_path / "record.json"
    add_spender(repo, record, FAKE_SPENDER_CALLS="5", FAKE_SPENDER_TURN_AFTER="2")
    done = call(repo, "spawn", "spender", "--task", "spend", "--budget-tokens", "60000", "--quiet")
    assert done.returncode == 0, done
    (result,) = agent_results(repo, "spender")
    run = result["run"]
    assert (run["inputTokens"], run["outputTokens"]) == (5000, 1000)
    assert run["costUsd"] == pytest.approx(0.03) and run["costEstimated"] is False


PLAIN = 'print("working on it", flush=True)\n'


def test_a_run_that_reports_no_usage_under_a_budget_says_it_was_not_counted(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `command` agent that prints no usage at all: a budget can neither stop nor count it,
    so the run ends as it would without one and a warning says so, once per process."""
    monkeypatch.setattr(budget, "_warned", set())  # once per process: this test's own
    configure(repo)
    add_script_agent(repo, "plain", tmp_path / "plain.py", PLAIN)
    said = "a run of the command adapter reported no usage (its tokens and cost are unknown)"
    for times in (1, 0):
        done = call(repo, "spawn", "plain", "--task", "x", "--budget-usd", "0.5", "--quiet")
        assert done.returncode == 0, done
        assert done.stderr.count(said) == times, done.stderr
    monkeypatch.setattr(budget, "_warned", set())
    done = call(repo, "spawn", "plain", "--task", "x", "--quiet")  # no budget: nothing said
    assert done.returncode == 0 and said not in done.stderr


PRICED = (
    "import json\n"
    "usage = {'input_tokens': 1000, 'output_tokens': 200}\n"
    "print(json.dumps({'type': 'result', 'model': 'claude-sonnet-4-5', 'usage': usage}))\n"
)


def test_a_cost_the_price_table_estimates_is_in_the_run_s_end_line_and_event(
    repo: Path, tmp_path: Path
) -> None:
    """An agent whose CLI says its tokens and model but no cost: the line and the event that
    end its run carry the cost its record has, estimated from the price table and said so
    (the live view and `serve` show it, as `history` does)."""
    configure(repo)
    add_script_agent(repo, "priced", tmp_path / "priced.py", PRICED)
    done = call(repo, "spawn", "priced", "--task", "x")
    assert done.returncode == 0, done
    (result,) = agent_results(repo, "priced")
    cost = result["run"]["costUsd"]
    assert result["run"]["costEstimated"] is True and cost == pytest.approx(0.006)
    assert f"tokens 1,000/200 ${cost:.4f} est." in done.stderr, done.stderr
    events = Path(result["run"]["logDirectory"]) / "events.jsonl"
    ends = [
        e for e in map(json.loads, events.read_text().splitlines()) if e["type"] == "agent:complete"
    ]
    assert [(e["data"]["cost_usd"], e["data"]["cost_estimated"]) for e in ends] == [(cost, True)]


def test_status_shows_what_a_watched_agent_has_spent_while_it_runs(
    repo: Path, tmp_path: Path
) -> None:
    """Under a budget the supervisor reads the agent's usage as it streams: `status` shows it
    for the running agent (its TOKENS and COST, and in `--json`), not `-` until it ends."""
    configure(repo)
    add_spender(repo, tmp_path / "record.json")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = [sys.executable, "-m", "gitflow_agents", "spawn", "spender", "--task", "spend",
            "--budget-usd", "1000", "--quiet"]  # fmt: skip
    proc = subprocess.Popen(
        argv, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )

    def running() -> dict[str, Any] | None:
        rows = json.loads(call(repo, "status", "--json").stdout)
        found = [r for r in rows if r["state"] == "running" and (r.get("inputTokens") or 0) >= 3000]
        return found[0] if found else None

    row = None
    try:
        wait_until(lambda: running() is not None, timeout=60)
        row = running()
        assert row is not None and row["outputTokens"] == row["inputTokens"] // 5
        assert row["costEstimated"] is True and row["costUsd"] > 0
        table = call(repo, "status").stdout  # a later reading: larger, or the same
        line = next(ln for ln in table.splitlines() if ln.startswith(row["runId"][:13]))
        shown = re.search(r"(\d{1,3}(?:,\d{3})+)/[\d,]+ +\$[\d.]+ est\.", line)
        assert shown is not None, table
        assert int(shown[1].replace(",", "")) >= row["inputTokens"]
    finally:
        if row is not None:
            assert call(repo, "cancel", row["runId"]).returncode == 0
        else:
            proc.kill()
        proc.wait(30)


def test_flow_stopped_by_its_budget_prints_what_it_spent(repo: Path, tmp_path: Path) -> None:
    """`flow implement` ends exit 5 with the stopped run's JSON (``--json``), its spend
    included (the run spent up to the limit), as its record has it; without ``--json`` a line
    with the budget's message."""
    configure(repo)
    add_spender(repo, tmp_path / "record.json")
    done = call(
        repo, "flow", "implement", "--agent", "spender", "--task", "x", "--branch", "spent",
        "--budget-tokens", "5000", "--quiet",
    )  # fmt: skip
    assert done.returncode == 5, done
    assert done.stdout.startswith("spender: budget: agent spent ") and "of 5,000" in done.stdout
    done = call(
        repo, "flow", "implement", "--agent", "spender", "--task", "x", "--branch", "spent2",
        "--budget-tokens", "5000", "--quiet", "--json",
    )  # fmt: skip
    assert done.returncode == 5, done
    printed = json.loads(done.stdout)
    # a flow without a plan is named "flow"
    (result,) = [r for r in agent_results(repo, "flow") if r["run"]["runID"] == printed["runID"]]
    assert printed["status"] == "budget" and printed["inputTokens"] >= 5000 * 1000 // 1200
    assert (printed["inputTokens"], printed["costUsd"]) == (
        result["run"]["inputTokens"],
        result["run"]["costUsd"],
    )


CACHED = (
    "import json\n"
    "usage = {'input_tokens': 100, 'cache_creation_input_tokens': 200,\n"
    "         'cache_read_input_tokens': 5000, 'output_tokens': 50}\n"
    "for n in range(4):\n"
    "    message = {'id': f'm{n}', 'model': 'claude-sonnet-4-5', 'usage': usage}\n"
    "    print(json.dumps({'type': 'assistant', 'message': message}), flush=True)\n"
)


def test_a_usd_budget_prices_cache_reads_as_the_cache_does(repo: Path, tmp_path: Path) -> None:
    """Four calls whose input is mostly read from the prompt cache cost $0.0126 (cache reads at
    their own price): a $0.02 budget lets them finish, and the record says what was cached. It
    stopped them at the second call when the watch priced cache reads as fresh input."""
    configure(repo)
    add_script_agent(repo, "cached", tmp_path / "cached.py", CACHED)
    done = call(repo, "spawn", "cached", "--task", "x", "--budget-usd", "0.02", "--quiet")
    assert done.returncode == 0, done
    (result,) = agent_results(repo, "cached")
    run = result["run"]
    assert (run["inputTokens"], run["cachedTokens"], run["outputTokens"]) == (21200, 20000, 200)
    assert run["costUsd"] == pytest.approx(0.0126) and run["costEstimated"] is True


def test_a_fixer_stopped_by_the_budget_leaves_its_work_as_the_steps_head(
    repo: Path, tmp_path: Path
) -> None:
    """Review 1 asks for changes and the fixer runs out of the step's budget: its work is
    committed on the step branch, and the step's record takes that commit as its head (its
    statistics and changed files count the fixer's work too), not the reviewed one."""
    configure(repo, reviewer="revise")
    add_spender(repo, tmp_path / "record.json", budget="budget:\n  step: {tokens: 6000}\n")
    done = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet", "--fixer", "spender")
    assert done.returncode == 5, done
    (step,) = results(repo)
    tip = git(repo, "rev-parse", "agents/feature/step-1").strip()
    assert "(stopped: budget)" in git(repo, "log", "-1", "--format=%s", tip)
    assert step["chain"]["headSha"] == tip
    assert "spent.txt" in step["changedFiles"]  # gitStats counts the same diff
    assert step["gitStats"]["filesChanged"] == len(step["changedFiles"])


def test_a_rerun_after_a_budget_stopped_the_fixer_continues_the_fixer_alone(
    repo: Path, tmp_path: Path
) -> None:
    """The implementer completed and review 1 asked for changes before a budget stopped the
    fixer: the same command again reuses the implementer and the review (it paid for them
    twice) and the fixer continues from its ``(stopped: budget)`` commit, as a fixer that
    failed is run again alone; once it completed, a re-run (after review 2 crashed) reuses it
    too."""
    configure(repo, reviewer="crash-when-fixed")  # review 1 asks for FIXED.txt
    add_spender(repo, tmp_path / "record.json", budget="budget:\n  agent: {tokens: 6000}\n")
    fix = ("--fixer", "spender", "--max-iterations", "2")
    first = call(repo, *RUN[:3], "--step", "1", *fix)
    assert first.returncode == 5, first
    stopped = git(repo, "rev-parse", "agents/feature/step-1").strip()
    assert "(stopped: budget)" in git(repo, "log", "-1", "--format=%s", stopped)
    config = repo / ".flow" / "base.yaml"  # the fixer now completes (and writes FIXED.txt)
    text = config.read_text().replace("  spender:", "  spender0:")
    config.write_text(text.replace("budget:\n", _FIXER + "budget:\n"))
    crashed = call(repo, *RUN[:3], "--step", "1", *fix)
    assert crashed.returncode == 3, crashed  # review 2 crashed
    _assert_fixer_continued(repo, stopped, reused=False)
    config.write_text(config.read_text().replace('"crash-when-fixed"', '"approve"'))
    done = call(repo, *RUN[:3], "--step", "1", *fix)
    assert done.returncode == 0, done
    _assert_fixer_continued(repo, stopped, reused=True)
    assert g.is_ancestor(repo, stopped, "main")


def _assert_fixer_continued(repo: Path, stopped: str, *, reused: bool) -> None:
    """The last step run reused the implementer and review 1, and its fixer started from the
    ``stopped`` commit (``reused``: the run that did so, completed)."""
    agents = results(repo)[-1]["chain"]["agents"]
    assert [(a["agentId"], a["reused"]) for a in agents[:4]] == [
        ("step-01-builder", True),
        ("step-01-reviewer-1", True),
        ("step-01-spender-1", reused),
        ("step-01-reviewer-2", False),
    ]
    assert agents[2]["startSha"] == stopped


_FIXER = (
    "  spender:\n    adapter: command\n"
    f"    command: {json.dumps([sys.executable, str(FAKES / 'fake_flow_agent'), 'fixer', 'fix'])}\n"
)


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "1e400", "-inf", "1e10"])
def test_a_budget_option_that_is_no_finite_amount_is_a_usage_error(
    repo: Path, tmp_path: Path, value: str
) -> None:
    """As `.flow/` refuses `.inf` and `.nan`: exit 2 and one line, nothing started (an infinite
    limit is none, and Claude Code was handed `--max-budget-usd inf`)."""
    configure(repo)
    add_spender(repo, tmp_path / "record.json")
    done = call(repo, "spawn", "spender", "--task", "x", f"--budget-usd={value}", "--quiet")
    assert done.returncode == 2, done
    assert "argument --budget-usd: must be a finite number from 0 to 1000000000" in done.stderr
    assert not (tmp_path / "record.json").exists()


def test_a_run_whose_supervisor_was_killed_keeps_what_its_watch_read(
    repo: Path, tmp_path: Path
) -> None:
    """`kill -9` of `spawn` under a budget: `status` shows the lost run with the spend its
    watch last read, and once `cancel` ended it, its record and `history` keep that spend as a
    lower bound (≥), not unknown."""
    configure(repo)
    record = tmp_path / "record.json"
    add_spender(repo, record)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = [sys.executable, "-m", "gitflow_agents", "spawn", "spender", "--task", "spend",
            "--budget-usd", "1000", "--quiet"]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.DEVNULL)

    def watched() -> list[dict[str, Any]]:
        rows = json.loads(call(repo, "status", "--json").stdout)
        return [r for r in rows if (r.get("inputTokens") or 0) >= 3000]

    try:
        wait_until(lambda: bool(watched()), timeout=60)
    finally:
        proc.kill()
        proc.wait()
    (row,) = json.loads(call(repo, "status", "--json").stdout)
    assert row["state"] == "lost" and row["inputTokens"] >= 3000
    assert row["tokensPartial"] is True  # its last reading: its agent may spend on
    assert call(repo, "cancel", row["runId"]).returncode == 0
    wait_until(lambda: gone(facts(record)["pid"]), timeout=30)
    (result,) = agent_results(repo, "spender")
    run = result["run"]
    assert run["inputTokens"] >= row["inputTokens"] and run["tokensPartial"] is True
    assert run["kind"] == row["kind"] and run["startedAt"] == row["startedAt"]
    assert run["durationMs"] >= 0
    (shown,) = json.loads(call(repo, "history", "--json").stdout)
    assert shown["inputTokens"] == run["inputTokens"] and shown["tokensPartial"] is True


def test_steps_run_at_once_are_stopped_at_the_plans_limit_together(
    repo: Path, tmp_path: Path
) -> None:
    """`run --all --jobs 2`, two independent steps whose agents spend alike, a plan budget of
    60,000 tokens: the plan is checked with both agents' spend while they run, so each is
    stopped once together they reach it (each alone was let go up to the whole limit, twice
    the plan's budget in all); both end `budget`, exit 5."""
    configure(repo)
    plan = repo / "specs" / "feature.md"
    plan.write_text(plan.read_text().replace("Polish it.", "Depends on: none\n\nPolish it."))
    git(repo, "commit", "-qam", "step 2 depends on nothing")
    budget = "budget:\n  plan: {tokens: 60000}\n"  # 50 calls; 12,000 tokens a second each
    add_spender(repo, tmp_path / "record.json", budget=budget, FAKE_SPENDER_SLEEP="0.1")
    done = call(repo, *RUN, "--all", "--jobs", "2")
    assert done.returncode == 5, done
    steps = results(repo)
    assert sorted(r["chain"]["outcome"] for r in steps) == ["budget", "budget"]
    spent = [
        r["run"]["inputTokens"] + r["run"]["outputTokens"] for r in agent_results(repo, "feature")
    ]
    # each alone was let go to 60,000; together they stop once they reach it (each overshoots
    # by what it streams between two checks: far less than a second's 12,000 tokens)
    assert len(spent) == 2 and sum(spent) < 2 * 60000, spent
    assert "budget: plan spent" in done.stdout


def test_a_claude_run_its_budget_stopped_keeps_its_session_to_continue(
    repo: Path, tmp_path: Path
) -> None:
    """Stopped before its result line, a Claude run still records the session its stream named,
    so `send` continues it (with a budget that lets it finish) instead of refusing a run whose
    CLI "reported no session id"."""
    configure(repo)
    record = tmp_path / "record.json"
    add_spender(repo, record, FAKE_SPENDER_CALLS="10")
    done = call(repo, "spawn", "spender", "--task", "x", "--budget-tokens", "5000", "--quiet")
    assert done.returncode == 5, done
    (stopped,) = agent_results(repo, "spender")
    assert stopped["run"]["sessionId"] == "fake-session"
    again = call(repo, "send", stopped["run"]["runID"], "Go on.", "--quiet")
    assert again.returncode == 0, again
    argv = facts(record)["argv"]  # the continued run's
    assert argv[argv.index("--resume") + 1] == "fake-session"


def test_a_step_whose_budget_started_no_agent_spent_nothing_not_unknown(
    repo: Path, tmp_path: Path
) -> None:
    """A limit of 0: the step ends `budget` with no agent run; `history` says it spent 0 and
    $0 (known: no model was called), not `unknown` (a CLI that did not say)."""
    configure(repo)
    add_spender(repo, tmp_path / "record.json")
    done = call(repo, *RUN, "--step", "1", "--budget-usd", "0")  # the step's limit: it starts
    assert done.returncode == 5 and "no agent started" in done.stdout, done
    (row,) = json.loads(call(repo, "history", "--json").stdout)
    assert (row["inputTokens"], row["outputTokens"], row["costUsd"]) == (0, 0, 0.0)


# A `command` agent that streams Claude-style usage ($0.006 a call) once another step's agent
# waits for the one slot it holds (that run's status.json says so): the order is the files',
# not the clock's.
SLOT_SPENDER = """\
import json, os, pathlib, time
runs = pathlib.Path(os.environ["GITFLOW_AGENTS_RUN_DIR"]).parent
def queued():
    for path in runs.glob("*/status.json"):
        try:
            reason = json.loads(path.read_text()).get("reason") or ""
        except ValueError:  # being written
            continue
        if reason.startswith("waiting for a command slot"):
            return True
    return False
while not queued():
    time.sleep(0.02)
for call in range(1000):
    with open("spent.txt", "a") as work:
        work.write(f"call {call}\\n")
    usage = {"input_tokens": 1000, "output_tokens": 200}
    message = {"id": f"m{call}", "model": "claude-sonnet-4-5", "usage": usage}
    print(json.dumps({"type": "assistant", "message": message}), flush=True)
    time.sleep(0.02)
"""


def test_a_step_that_waited_for_a_slot_is_not_started_once_the_plan_is_spent(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --all --jobs 2`, two independent steps whose implementer has `max_parallel: 1`: the
    one that holds the slot is stopped at the plan's $0.05; the other, queued for the slot
    meanwhile, asks the budget again once it gets the slot and starts no agent, as one refused
    before it was prepared: that message, exit 5, its run's spend a known 0 (it started its
    CLI, which the watch killed at once: recorded with its spend unknown, and a warning). Its
    step reads as one a spent budget started no agent for: no agent run in its record (it
    listed the refused run), its history line `failed (budget)` (it said `failed (implement)`,
    as for an implementer that failed); the refused run's own record says it did not start."""
    monkeypatch.setattr(budget, "_warned", set())  # once per process: this test's own
    configure(repo)
    plan = repo / "specs" / "feature.md"
    plan.write_text(plan.read_text().replace("Polish it.", "Depends on: none\n\nPolish it."))
    git(repo, "commit", "-qam", "step 2 depends on nothing")
    log = tmp_path / "started.log"
    script = tmp_path / "spender.py"
    script.write_text(SLOT_SPENDER)
    # each start logged by a shell first, at once (the watch would kill a Python before it logs)
    started = (
        f"echo started >> {shlex.quote(str(log))}; exec {shlex.join([sys.executable, str(script)])}"
    )
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text()
        + "  slotted:\n    adapter: command\n    model: claude-sonnet-4-5\n    max_parallel: 1\n"
        f"    command: {json.dumps(['/bin/sh', '-c', started])}\n"
        "  offline:\n    adapter: builtin\n"
        "budget:\n  plan: {usd: 0.05}\n"
    )
    done = call(
        repo, "run", "specs/feature.md", "--quiet", "--implementer", "slotted",
        "--reviewers", "offline", "--all", "--jobs", "2",
    )  # fmt: skip
    assert done.returncode == 5, done
    assert log.read_text().splitlines() == ["started"]  # one agent process, not two
    assert "reported no usage" not in done.stderr, done.stderr
    steps = results(repo)
    assert sorted(r["chain"]["outcome"] for r in steps) == ["budget", "budget"]
    (refused,) = [r for r in steps if "no agent started" in r["chain"]["reason"]]
    assert re.fullmatch(
        r"budget: plan spent \$0\.\d{3} est\. of \$0\.05 \(tokens [\d,]+\); "
        r"no agent started \(the implementer\)",
        refused["chain"]["reason"],
    ), refused["chain"]["reason"]
    assert refused["chain"]["agents"] == []  # no agent ran
    line = refused["run"]["historyLine"]
    assert " failed (budget); " in line, line
    step_run = refused["run"]["runID"]
    (run,) = [
        r["run"] for r in agent_results(repo, "feature") if r["run"]["chainRunID"] == step_run
    ]
    assert (run["outcome"], run["reason"]) == ("budget", refused["chain"]["reason"])
    assert (run["inputTokens"], run["outputTokens"], run["costUsd"]) == (0, 0, 0.0)
    assert not run.get("tokensPartial") and not run.get("costPartial")
    shown = run_cli("history", cwd=repo).stdout
    assert "≥" not in shown and "unknown" not in shown, shown  # the plan's sum is exact


def streamed_calls(repo: Path) -> int:
    """The most `assistant` lines an agent run's worker.log holds: what its supervisor read."""
    logs = (repo / "flows" / "feature" / "runs").glob("*/worker.log")
    return max((log.read_text().count('"type": "assistant"') for log in logs), default=0)


@pytest.mark.parametrize("budget", [("--budget-usd", "100"), ()], ids=["budget", "no-budget"])
@pytest.mark.parametrize("canceled_first", [False, True])
def test_a_step_run_again_after_a_kill_lists_the_lost_run_once_and_counts_its_spend(
    repo: Path, tmp_path: Path, canceled_first: bool, budget: tuple[str, ...]
) -> None:
    """`kill -9` of `run` while its implementer streams usage leaves no step record; the step
    run again ends the lost agent run and lists it once in its own record (its reason said
    once, one node in the chart), so the step's and the plan's spend in `history` count what
    it spent (a lower bound, what its output's usage lines said: with or without a budget).
    The same when `cancel` ended the lost run first; and `history`'s default table shows it
    inside the step run, not as a run of its own. Its record and the step's time it to its
    last sign of life, not to when it was ended. Run once more, nothing is listed or counted
    twice."""
    configure(repo)
    # the first run is killed mid-stream (100 calls at 0.05 s: it is still spending); the run
    # again goes through its 100 calls unpaced
    add_spender(repo, tmp_path / "record.json", FAKE_SPENDER_CALLS="100", FAKE_SPENDER_SLEEP="0.05",
                FAKE_SPENDER_SLEEP_ONCE=str(tmp_path / "paced"))  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = [sys.executable, "-m", "gitflow_agents", *RUN, "--step", "1", *budget]
    proc = subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.DEVNULL)

    def read() -> bool:  # and, under a budget, what its watch read is in its status.json
        runs = (repo / "flows" / "feature" / "runs").glob("*/status.json")
        spent = [json.loads(path.read_text()).get("spent") or {} for path in runs]
        watched = any((found.get("inputTokens") or 0) >= 3000 for found in spent)
        return streamed_calls(repo) >= 3 and (watched or not budget)

    try:
        wait_until(read, timeout=60)
    finally:
        proc.kill()
        proc.wait()
    (lost,) = [r for r in json.loads(call(repo, "status", "--json").stdout) if r["agent"]]
    assert lost["state"] == "lost" and lost["inputTokens"] >= 3000 and lost["tokensPartial"]
    time.sleep(1.5)  # dead for a while before anything ends it
    if canceled_first:
        assert call(repo, "cancel", lost["runId"]).returncode == 0
        # no step run lists it yet: `history` shows it as a row of its own, with its spend
        (alone,) = json.loads(call(repo, "history", "--json").stdout)
        assert alone["runId"] == lost["runId"] and alone["tokensPartial"] is True
        assert alone["inputTokens"] >= lost["inputTokens"]
    again = call(repo, *RUN, "--step", "1", *budget)
    assert again.returncode == 0, again
    (step,) = results(repo)
    listed = [a for a in step["chain"]["agents"] if a["runID"] == lost["runId"]]
    assert [a["status"] for a in listed] == ["canceled"]  # once
    assert listed[0]["reason"].count("lost (its supervisor died)") == 1, listed[0]["reason"]
    chart = call(repo, "history", "--format", "mermaid").stdout
    assert chart.count("CANCELED") == 1, chart
    run_dir = repo / "flows" / "feature" / "runs" / lost["runId"]
    record = json.loads((run_dir / "result.json").read_text())["run"]
    status = json.loads((run_dir / "status.json").read_text())
    lived = status["last_activity"] - status["started"]
    assert status["ended"] - status["started"] > lived + 1  # ended well after
    assert abs(record["durationMs"] - lived * 1000) <= 1, (record["durationMs"], lived)
    assert abs(listed[0]["durationMs"] - lived * 1000) <= 1, (listed[0]["durationMs"], lived)
    assert record["inputTokens"] >= lost["inputTokens"] and record["tokensPartial"] is True
    assert record["costUsd"] > 0 and record["costPartial"] is True
    rows = json.loads(call(repo, "history", "--json").stdout)
    assert [r["runId"] for r in rows] == [step["run"]["runID"]]  # the lost run inside it
    (row,) = rows
    assert row["inputTokens"] == 100 * 1000 + record["inputTokens"] and row["tokensPartial"]
    assert call(repo, *RUN, "--step", "1", *budget).returncode == 0  # skipped
    (again_row,) = json.loads(call(repo, "history", "--json").stdout)
    assert again_row["inputTokens"] == row["inputTokens"]  # counted once
    assert [r["chain"]["agents"] for r in results(repo)] == [step["chain"]["agents"]]


@pytest.mark.parametrize("budget", [(), ("--budget-usd", "1000")])
def test_a_run_canceled_before_its_result_keeps_what_its_stream_said_it_spent(
    repo: Path, tmp_path: Path, budget: tuple[str, ...]
) -> None:
    """Without a budget a run with a control channel (`spawn`) still streams Claude Code's
    usage (stream-json, to take messages); canceled before its `result` line, its record and
    `history` keep what its messages said (a lower bound: its last call may have gone on), not
    unknown. With a budget that it did not reach, the same: a lower bound (the watch's reading),
    as only a budget's own stop is recorded at its reading."""
    configure(repo)
    record = tmp_path / "record.json"
    add_spender(repo, record)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = [sys.executable, "-m", "gitflow_agents", "spawn", "spender", "--task", "spend",
            "--quiet", *budget]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.DEVNULL)
    spent_txt = repo / "spent.txt"

    def calls() -> int:
        return len(spent_txt.read_text().splitlines()) if spent_txt.exists() else 0

    try:
        wait_until(lambda: calls() >= 3, timeout=60)
        (row,) = json.loads(call(repo, "status", "--json").stdout)
        assert call(repo, "cancel", row["runId"]).returncode == 0
    finally:
        proc.wait(30)
    made = calls()
    (result,) = agent_results(repo, "spender")
    run = result["run"]
    assert run["outcome"] == "canceled"
    # each call is counted in spent.txt, then its message printed
    assert (made - 1) * 1000 <= run["inputTokens"] <= made * 1000
    assert run["outputTokens"] == run["inputTokens"] // 5 and run["costEstimated"] is True
    assert run["tokensPartial"] is True and run["costPartial"] is True
    (shown,) = json.loads(call(repo, "history", "--json", "--agents").stdout)
    assert shown["inputTokens"] == run["inputTokens"] and shown["tokensPartial"] is True


RENAMES_THEN_SPENDS = """\
import json, os, pathlib, sys, time
folder = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
block = {"overall": "approve", "summary": "ok", "findings": []}
report = "Summary.\\n\\n```json\\n" + json.dumps(block) + "\\n```\\n\\nREVIEW_RESULT: APPROVED\\n"
(folder / "report.md").write_text(report)
(folder / "report.md").rename(folder / "report.complete.md")
time.sleep(float(sys.argv[1]))  # the supervisor sees the rename first
usage = {"input_tokens": 20000, "output_tokens": 4000}
print(json.dumps({"type": "result", "usage": usage, "total_cost_usd": 0.12, "result": "done"}))
"""


@pytest.mark.parametrize("pause", ["0", "0.5"])
def test_a_review_whose_usage_comes_after_its_rename_is_held_to_its_budget(
    repo: Path, tmp_path: Path, pause: str
) -> None:
    """Claude Code renames the report (a tool call) and then prints its `result` with the
    run's cost: a reviewer whose cost there is over its budget ends `budget`, exit 5, is not
    approved and records no note, whether the rename or the result reached the supervisor
    first."""
    configure(repo)
    script = tmp_path / "reviewer.py"
    script.write_text(RENAMES_THEN_SPENDS)
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text() + "  finalrev:\n    adapter: command\n    model: claude-sonnet-4-5\n"
        f'    command: [{json.dumps(sys.executable)}, {json.dumps(str(script))}, "{pause}"]\n'
    )
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "extra.py").write_text("x = 1\n")
    git(repo, "add", "extra.py")
    git(repo, "commit", "-q", "-m", "extra")
    done = call(repo, "review", "--agent", "finalrev", "--budget-usd", "0.05", f"{base}..HEAD")
    assert done.returncode == 5, done
    assert "budget: review spent $0.120 of $0.05" in done.stderr + done.stdout
    assert "APPROVED" not in done.stdout
    notes = subprocess.run(
        ["git", "notes", "--ref", "gitflow-agents", "list"], cwd=repo, capture_output=True
    )
    assert notes.stdout.strip() == b""
    again = call(repo, "review", "--agent", "finalrev", "--budget-usd", "0.05", f"{base}..HEAD")
    assert again.returncode == 5, again  # the second time: the same, nothing approved


WORKS_THEN_SPENDS = """\
import json, os, pathlib
folder = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
pathlib.Path("work.txt").write_text("done\\n")
(folder / "report.md").write_text("## Summary\\n\\nwork\\n")
(folder / "report.md").rename(folder / "report.complete.md")
usage = {"input_tokens": 1000, "output_tokens": 200}
print(json.dumps({"type": "result", "usage": usage, "total_cost_usd": 0.006, "result": "done"}))
"""


def test_a_step_whose_implementer_spent_the_limit_exactly_lands_its_work_and_starts_no_reviewer(
    repo: Path, tmp_path: Path
) -> None:
    """The implementer completes its report and then says it spent the step's 1,200 tokens
    exactly: within its limit (only a limit gone over counts once the report is complete), its
    work committed; the reviewer is then not started, and the message says which agent."""
    configure(repo)
    add_spender(repo, tmp_path / "record.json")
    add_script_agent(repo, "worker", tmp_path / "worker.py", WORKS_THEN_SPENDS)
    done = call(
        repo, "run", "specs/feature.md", "--quiet", "--implementer", "worker",
        "--reviewers", "spender", "--step", "1", "--budget-tokens", "1200",
    )  # fmt: skip
    assert done.returncode == 5, done
    assert (
        "budget: step spent 1,200 tokens of 1,200 (cost $0.0060); no agent started "
        "(the reviewer)" in done.stdout
    ), done
    (implementer,) = agent_results(repo, "feature")
    assert implementer["run"]["outcome"] == "succeeded"
    assert git(repo, "show", "agents/feature/step-1:work.txt") == "done\n"


FAKE_GEMINI = """\
import json, os, pathlib
folder = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
(folder / "report.md").write_text("## Summary\\n\\ndone\\n")
(folder / "report.md").rename(folder / "report.complete.md")
tokens = {"prompt": 1000, "candidates": 200}
stats = {"models": {"gemini-2.5-pro": {"tokens": tokens}}}
print(json.dumps({"session_id": "s1", "response": "done", "stats": stats}))
"""


def add_fake_gemini(repo: Path, tmp_path: Path, source: str) -> None:
    """The chain's config (``configure``) with a `gemini` agent `gem` whose executable runs
    the Python ``source``."""
    configure(repo)
    script = tmp_path / "gemini.py"
    script.write_text(source)
    fake = tmp_path / "gemini"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")
    fake.chmod(0o755)
    config = repo / ".flow" / "base.yaml"
    options = {"executable": str(fake)}
    config.write_text(
        config.read_text() + f"  gem:\n    adapter: gemini\n    options: {json.dumps(options)}\n"
    )


# A fake Gemini CLI whose first call uses 1,200 tokens and is rate limited (a 429 whose
# retry-after passes at once); a later call would complete. Each start is counted in CALLS
# (a file's path, put before the source).
LIMITED_GEMINI = """\
import json, os, pathlib, sys
calls = pathlib.Path(CALLS)
n = int(calls.read_text()) + 1 if calls.exists() else 1
calls.write_text(str(n))
if n > 1:
    folder = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
    (folder / "report.md").write_text("## Summary\\n\\ndone\\n")
    (folder / "report.md").rename(folder / "report.complete.md")
stats = {"models": {"gemini-2.5-pro": {"tokens": {"prompt": 1000, "candidates": 200}}}}
print(json.dumps({"session_id": "s1", "response": "", "stats": stats}))
if n == 1:
    sys.stderr.write("HTTP 429 Too Many Requests (retry-after: 0.1)\\n")
    sys.exit(1)
"""


def test_a_step_whose_next_attempt_a_spent_budget_refuses_keeps_what_the_first_spent(
    repo: Path, tmp_path: Path
) -> None:
    """The implementer (a CLI that says its usage when it ends) spends the step's 1,200 tokens
    exactly and is rate limited: within its limit (not gone over), so it waits; the budget is
    asked again before the next attempt and starts none. The message says that no further
    attempt started (it said "no agent started", though one had run and spent), and the step
    keeps the first attempt's spend: its record lists the implementer's run, `history` counts
    its 1,000/200 tokens, the history line names the implementer."""
    calls = tmp_path / "calls"
    add_fake_gemini(repo, tmp_path, f"CALLS = {str(calls)!r}\n{LIMITED_GEMINI}")
    done = call(
        repo, "run", "specs/feature.md", "--quiet", "--implementer", "gem",
        "--reviewers", "reviewer", "--step", "1", "--budget-tokens", "1200",
    )  # fmt: skip
    assert done.returncode == 5, done
    assert calls.read_text() == "1"  # no second attempt
    said = "budget: step spent 1,200 tokens of 1,200 (cost "
    (step,) = results(repo)
    reason = step["chain"]["reason"]
    assert reason.startswith(said) and reason.endswith(
        "); no further attempt started (the implementer)"
    ), reason
    assert " failed (implement); " in step["run"]["historyLine"], step["run"]["historyLine"]
    (agent,) = step["chain"]["agents"]
    (run,) = [r["run"] for r in agent_results(repo, "feature")]
    assert run["runID"] == agent["runID"] and (run["outcome"], run["reason"]) == ("budget", reason)
    assert (run["inputTokens"], run["outputTokens"]) == (1000, 200)
    (row,) = json.loads(run_cli("history", "--json", cwd=repo).stdout)
    assert (row["inputTokens"], row["outputTokens"], row["tokensPartial"]) == (1000, 200, False)


@pytest.mark.parametrize(("limit", "code"), [("100", 5), ("1200", 0)])
def test_a_cli_that_says_its_usage_only_at_its_end_is_judged_on_it(
    repo: Path, tmp_path: Path, limit: str, code: int
) -> None:
    """Gemini CLI (Aider, Auggie) says its usage only when it ends, so no watch stops it
    mid-run; its end is judged on it all the same: over a limit the run ends `budget`, exit 5
    (a reviewer so is not approved), as a watched CLI's last usage line ends it. At the limit
    exactly it completed within it."""
    add_fake_gemini(repo, tmp_path, FAKE_GEMINI)
    done = call(repo, "spawn", "gem", "--task", "x", "--budget-tokens", limit)
    assert done.returncode == code, done
    (result,) = agent_results(repo, "gem")
    assert result["run"]["outcome"] == ("budget" if code else "succeeded")
    said = done.stdout + done.stderr
    # its end line says how it ended, as its record (it said "succeeded", then the budget)
    ended = [line for line in said.splitlines() if line.startswith("gem: ") and "00:" in line]
    assert ended and ended[-1].startswith("gem: budget " if code else "gem: succeeded "), said
    assert ("gem: succeeded" in said) is not bool(code), said
    if code:
        assert "budget: agent spent 1,200 tokens of 100" in said


def test_a_usd_budget_warns_of_an_unpriced_cli_that_says_its_usage_only_at_its_end(
    repo: Path, tmp_path: Path
) -> None:
    """A CLI that says its tokens only at its end (Gemini CLI, Aider) with a model no price
    table knows: a USD budget cannot count it, and the run says so once, as a watched CLI's
    first reading does (it ran to its end with its cost unknown and said nothing)."""
    add_fake_gemini(repo, tmp_path, FAKE_GEMINI.replace("gemini-2.5-pro", "gemini-unpriced-9"))
    done = call(repo, "spawn", "gem", "--task", "x", "--budget-usd", "1", "--quiet")
    assert done.returncode == 0, done
    said = [line for line in done.stderr.splitlines() if "has no price" in line]
    assert len(said) == 1 and "gemini-unpriced-9" in said[0], done.stderr
    assert "a USD budget cannot count it" in said[0]


LIMITED = """\
import json, sys
usage = {"input_tokens": 1000, "output_tokens": 200}
message = {"id": "m1", "model": "claude-sonnet-4-5", "usage": usage}
print(json.dumps({"type": "assistant", "message": message}), flush=True)
print("API Error: Request rejected (429) rate limit exceeded; retry in 120s", file=sys.stderr)
sys.exit(1)
"""


def test_a_step_interrupted_while_its_agent_waits_out_a_rate_limit_keeps_what_it_spent(
    repo: Path, tmp_path: Path
) -> None:
    """SIGTERM (a CI job canceled) while the step's implementer waits out a rate limit: exit
    130, and the step's record lists that agent run with what it streamed (`≥`), so the step's
    and the plan's sums keep it (they said a known 0/$0)."""
    configure(repo)
    add_spender(repo, tmp_path / "record.json")  # and the builtin reviewer `offline`
    add_script_agent(repo, "limited", tmp_path / "limited.py", LIMITED)
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text().replace("defaults:\n", "defaults:\n  rate_limit_wait_secs: 600\n", 1)
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = [sys.executable, "-m", "gitflow_agents", "run", "specs/feature.md", "--step", "1",
            "--implementer", "limited", "--reviewers", "offline", "--quiet"]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=repo, env=env, stderr=subprocess.DEVNULL)

    def waiting() -> bool:
        rows = json.loads(call(repo, "status", "--json").stdout)
        return any(r.get("state") == "waiting" for r in rows)

    try:
        wait_until(waiting, timeout=60)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 130
    finally:
        proc.kill()
        proc.wait()
    (step,) = results(repo)
    assert [a["status"] for a in step["chain"]["agents"]] == ["canceled"]
    (row,) = json.loads(call(repo, "history", "--json").stdout)
    assert row["inputTokens"] == 1000 and row["tokensPartial"] is True
