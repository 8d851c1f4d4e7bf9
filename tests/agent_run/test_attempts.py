"""Rate limits pause, then resume (issue 23, item 3): a rate-limited agent waits (the reset time
its CLI names, else a backoff), bounded by ``defaults.rate_limit_wait_secs``, and continues its
session where its CLI can resume, else starts again; the wait is on record and in ``status``;
after the total wait the run ends rate_limited, exit code 6. A fake ``claude`` on PATH (its
result JSON, through the real supervisor) and a fake command; waits are a fraction of a second."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.agent_run.attempts import Waits, wait_ends
from gitflow_agents.agent_run.run import AgentJob, AgentRunner, limits
from gitflow_agents.config import load_flow_config
from gitflow_agents.config.budget import Budgets, Cap
from gitflow_agents.runs.budget import Ledger
from gitflow_agents.runs.events import EventHub
from gitflow_agents.runs.slots import holders
from gitflow_agents.runs.spend import Spend
from gitflow_agents.supervisor import Outcome
from tests.conftest import Cli, git, wait_until
from tests.helpers.fake_claude import STDIN_TASK
from tests.helpers.files import write_executable

# A fake Claude Code: a script of answers, one a call (the last repeats). "limit:<secs>" ends the
# call rate limited with a usage-limit reset <secs> from now (a whole second, rounded up) ("limit" alone: a 429, no reset;
# "say:<text>": an error result saying <text>);
# "stream:<n>" prints n assistant lines of 1,000 input tokens, then completes; "done" completes. Each call writes the file part-<n>.txt (work that must not be lost) and logs
# its argv. Each call costs $0.01 (a refused one) or $0.02, and says the session's total after a
# --resume, as Claude Code does.
FAKE_CLAUDE = (
    """#!{python}
import json, math, os, pathlib, sys, time
argv = sys.argv[1:]
"""
    + STDIN_TASK
    + """state = pathlib.Path({state!r})
calls = [json.loads(line) for line in state.read_text().splitlines()] if state.exists() else []
with state.open("a") as f:
    f.write(json.dumps(argv) + "\\n")
script = {script!r}
answer = script[min(len(calls), len(script) - 1)]
n = len(calls) + 1
pathlib.Path(f"part-{{n}}.txt").write_text(f"work of call {{n}}\\n")
session = argv[argv.index("--resume") + 1] if "--resume" in argv else "sess-1"
usage = {{"input_tokens": 100, "output_tokens": 10}}
# as Claude Code 2.1.330 says it: after --resume, total_cost_usd is the session's so far (its
# usage the process's own): a running total kept beside the state
spent = pathlib.Path({state!r} + ".cost")
before = float(spent.read_text()) if "--resume" in argv and spent.exists() else 0.0
def total(own):
    spent.write_text(str(before + own))
    return before + own
if os.environ.get("FAKE_QUEUE") and n == 1 and answer.startswith(("limit", "say:")):
    # someone `send`s it a message meanwhile; before the reset is reckoned: the import takes a
    # while, and a reset it outlived was a backoff of 15-30 s instead of a wait of under 1 s
    from gitflow_agents.runs.control import queue_message
    queue_message(pathlib.Path(os.environ["GITFLOW_AGENTS_RUN_DIR"]), os.environ["FAKE_QUEUE"])
if answer.startswith(("limit", "say:")):
    secs = answer.partition(":")[2]
    text = (secs if answer.startswith("say:")
            else f"Claude AI usage limit reached|{{math.ceil(time.time() + float(secs))}}" if secs
            else 'API Error: 429 {{"type":"error","error":{{"type":"rate_limit_error"}}}}')
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": True, "result": text,
                      "session_id": session, "usage": usage, "total_cost_usd": total(0.01)}}))
    sys.exit(1)
if answer.startswith("stream"):  # API calls of 1,000 input tokens each, streamed, then done
    for call in range(int(answer.partition(":")[2])):
        message = {{"id": f"m{{n}}-{{call}}", "usage": {{"input_tokens": 1000, "output_tokens": 0}}}}
        print(json.dumps({{"type": "assistant", "message": message}}), flush=True)
        time.sleep(0.05)
seen = pathlib.Path(os.environ["GITFLOW_AGENTS_RUN_DIR"], "status.json").read_text()
pathlib.Path({state!r} + ".status").write_text(seen)  # the run's status while this call runs
d = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
(d / "report.md").write_text("## Summary\\n\\nDone.\\n")
os.rename(d / "report.md", d / "report.complete.md")
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "done",
                  "session_id": session, "usage": usage, "total_cost_usd": total(0.02)}}))
"""
)


def setup(repo: Path, tmp_path: Path, script: list[str], wait: int, **agent: Any) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    write_executable(
        bin_dir / "claude",
        FAKE_CLAUDE.format(
            python=sys.executable, state=str(tmp_path / "calls.jsonl"), script=script
        ),
    )
    extra = "".join(f"    {key}: {value}\n" for key, value in agent.items())
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        "completion_workflow:\n"
        '  template: "Rename {report_file} to {success_file}."\n'
        f"defaults:\n  stuck_timeout_secs: 30\n  max_wait_secs: 60\n  rate_limit_wait_secs: {wait}\n"
        f"agents:\n  painter:\n    adapter: claude\n{extra}"
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "flow")
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def calls(tmp_path: Path) -> list[list[str]]:
    return [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]


def only_run(repo: Path) -> Path:
    [run] = (repo / "flows" / "f" / "runs").iterdir()
    return run


def events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def spawn(cli: Cli, repo: Path, env: dict[str, str]) -> Any:
    return cli.main(
        "spawn", "painter", "--flow", "f", "--task", "Paint.", "--quiet", cwd=repo, env=env
    )


def test_a_usage_limit_is_waited_out_and_the_session_continued(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    env = setup(repo, tmp_path, ["limit:0.05", "done"], wait=60)
    done = spawn(cli, repo, env)
    assert done.returncode == 0, done.stdout + done.stderr
    run = only_run(repo)
    first, second = calls(tmp_path)
    assert "--resume" not in first
    assert second[second.index("--resume") + 1] == "sess-1"  # the same session, continued
    told = second[second.index("-p") + 1]
    assert "rate limit" in told and "Continue your task" in told
    # nothing lost: the work of both calls is there, and the run counts the spend of both
    assert (repo / "part-1.txt").exists() and (repo / "part-2.txt").exists()
    record = json.loads((run / "result.json").read_text())
    assert record["status"] == "succeeded" and record["run"]["outcome"] == "succeeded"
    assert record["run"]["inputTokens"] == 200 and record["run"]["costUsd"] == pytest.approx(0.03)
    # the continued attempt's end event says its own cost, not the session's $0.03
    (ended,) = [e["data"] for e in events(run) if e["type"] == "agent:complete"]
    assert ended["cost_usd"] == pytest.approx(0.02)
    # and the run's as its record has them (the console's end line): both attempts', once each
    assert ended["run_usage"]["inputTokens"] == 200
    assert ended["run_usage"]["costUsd"] == pytest.approx(0.03)
    [waiting] = [e["data"] for e in events(run) if e["type"] == "agent:waiting"]
    assert waiting["resumes"] is True and waiting["attempt"] == 1
    assert 0 < waiting["seconds"] <= 1.1 and "usage limit reached" in waiting["reason"]
    kinds = [
        e["type"]
        for e in events(run)
        if e["type"].startswith("agent:") and e["type"] != "agent:output"
    ]
    assert kinds == [
        "agent:start",
        "agent:failed",
        "agent:waiting",
        "agent:start",
        "agent:complete",
        "agent:reply",
    ]
    status = json.loads((run / "status.json").read_text())
    assert status["state"] == "succeeded" and status.get("waitingUntil") is None
    during = json.loads((tmp_path / "calls.jsonl.status").read_text())
    assert during["state"] == "running" and during["reason"] is None  # no stale "waiting until"


def test_messages_queued_meanwhile_go_with_the_continued_session_once(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    env = setup(repo, tmp_path, ["limit:0.05", "done"], wait=60, allow_env="[FAKE_QUEUE]")
    done = spawn(cli, repo, {**env, "FAKE_QUEUE": "use blue, not red"})
    assert done.returncode == 0, done.stdout + done.stderr
    run = only_run(repo)
    told = calls(tmp_path)[1]
    told_text = told[told.index("-p") + 1]
    assert "Continue your task" in told_text and "use blue, not red" in told_text
    assert not list((run / "inbox").glob("*.json"))  # given to the session: not kept
    again = cli.main("send", run.name, "now the door", cwd=repo, env=env)  # the next turn
    assert again.returncode == 0, again.stderr
    last = calls(tmp_path)[-1]
    said = last[last.index("-p") + 1]
    assert said.startswith("now the door") and "use blue" not in said  # not sent twice


def test_a_continued_session_is_held_to_the_budget_with_what_it_spent_before_the_wait(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """The session continued after a rate limit runs under the same budget (its CLI gets the
    budget's flags again) and counts what the first attempt spent (110 tokens) with what it
    streams (1,000 a call): stopped at 1,050 tokens, the figure is 110 plus whole calls."""
    env = setup(repo, tmp_path, ["limit:0.05", "stream:40"], wait=60)
    done = cli.main(
        *("spawn", "painter", "--flow", "f", "--task", "Paint.", "--quiet"),
        *("--budget-tokens", "1050"),
        cwd=repo,
        env=env,
    )
    assert done.returncode == 5, done.stdout + done.stderr
    found = re.search(r"budget: agent spent ([\d,]+) tokens of 1,050", done.stdout)
    assert found is not None, done.stdout
    assert int(found[1].replace(",", "")) % 1000 == 110  # the first attempt's 110 counted
    first, second = calls(tmp_path)
    assert "--resume" in second
    for argv in (first, second):  # the budget's stream, for the watch, both times
        assert "--include-partial-messages" in argv
    record = json.loads((only_run(repo) / "result.json").read_text())
    assert record["run"]["outcome"] == "budget"


def test_a_turn_sent_to_a_finished_session_is_held_to_the_flow_budget(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """``send`` to a finished run continues its session as a new agent run: `.flow/`'s
    ``budget.agent`` holds for it as for the first (there are no budget options on ``send``)."""
    env = setup(repo, tmp_path, ["done", "stream:40"], wait=60)
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text() + "budget:\n  agent: {tokens: 2500}\n")
    assert spawn(cli, repo, env).returncode == 0
    turn = cli.main("send", only_run(repo).name, "More, please.", "--quiet", cwd=repo, env=env)
    assert turn.returncode == 5, turn.stdout + turn.stderr
    found = re.search(r"budget: agent spent ([\d,]+) tokens of 2,500", turn.stdout)
    assert found is not None and int(found[1].replace(",", "")) < 40_000, turn.stdout


def test_after_the_total_wait_the_run_ends_rate_limited_exit_6(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    env = setup(repo, tmp_path, ["limit"], wait=1)  # no reset named: backoff, cut to 1 s
    ended = spawn(cli, repo, env)
    assert ended.returncode == 6, ended.stdout + ended.stderr
    assert len(calls(tmp_path)) == 2  # the first call, one wait, one more, then it gives up
    record = json.loads((only_run(repo) / "result.json").read_text())
    assert record["status"] == "failed" and record["run"]["outcome"] == "rate_limited"
    assert "rate_limit_error" in record["run"]["reason"]
    assert "gave up after waiting 1s" in record["run"]["reason"]
    status = json.loads((only_run(repo) / "status.json").read_text())
    assert status["state"] == "rate_limited"


def test_a_reset_beyond_the_wait_ends_at_once(repo: Path, tmp_path: Path, cli: Cli) -> None:
    env = setup(repo, tmp_path, ["limit:3600"], wait=900)
    ended = spawn(cli, repo, env)
    assert ended.returncode == 6
    assert len(calls(tmp_path)) == 1
    assert (
        "gave up without waiting"
        in json.loads((only_run(repo) / "result.json").read_text())["run"]["reason"]
    )


def test_wait_zero_never_waits(repo: Path, tmp_path: Path, cli: Cli) -> None:
    env = setup(repo, tmp_path, ["limit:0.05", "done"], wait=0)
    assert spawn(cli, repo, env).returncode == 6
    assert len(calls(tmp_path)) == 1


COMMAND = """#!{python}
import os, pathlib, sys
count = pathlib.Path({count!r})
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
if n == 1:
    sys.stderr.write("HTTP 429 Too Many Requests (retry-after: 0.2)\\n")
    sys.exit(2)
d = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
(d / "report.md").write_text("done")
os.rename(d / "report.md", d / "report.complete.md")
"""


def painter(repo: Path, tmp_path: Path, script: str) -> None:
    """The `command` agent ``painter`` running ``script`` (its ``{python}`` and ``{count}``, the
    file that counts its starts, filled in), reporting by renaming its report."""
    agent = write_executable(
        tmp_path / "agent", script.format(python=sys.executable, count=str(tmp_path / "n"))
    )
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'
        f"agents:\n  painter:\n    adapter: command\n    command: [{json.dumps(str(agent))}]\n"
    )


def test_a_cli_that_cannot_resume_is_started_again(repo: Path, tmp_path: Path, cli: Cli) -> None:
    painter(repo, tmp_path, COMMAND)
    done = spawn(cli, repo, {})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "n").read_text() == "2"
    [waiting] = [e["data"] for e in events(only_run(repo)) if e["type"] == "agent:waiting"]
    assert waiting["resumes"] is False and "start again" in waiting["reason"]


SPENDING_COMMAND = """#!{python}
import json, pathlib, sys, time
count = pathlib.Path({count!r})
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
for call in range(2 if n == 1 else 400):  # 1,000 input tokens a call, then 300, Claude-style
    usage = {{"input_tokens": 1000 if n == 1 else 300, "output_tokens": 0}}
    message = {{"id": f"m{{n}}-{{call}}", "usage": usage}}
    print(json.dumps({{"type": "assistant", "message": message}}), flush=True)
    time.sleep(0.05)
sys.stderr.write("HTTP 429 Too Many Requests (retry-after: 0.2)\\n")
sys.exit(2)
"""


def test_an_agent_started_again_counts_what_its_first_attempt_spent(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """A CLI that cannot resume is started again after the wait, under the same budget, with
    what its first attempt streamed (2,000 tokens) counted: stopped at 2,500, the figure is
    2,000 plus whole calls of 300 (without the first attempt, whole calls of 300 alone)."""
    painter(repo, tmp_path, SPENDING_COMMAND)
    done = cli.main(
        *("spawn", "painter", "--flow", "f", "--task", "Paint.", "--quiet"),
        *("--budget-tokens", "2500"),
        cwd=repo,
    )
    assert done.returncode == 5, done.stdout + done.stderr
    assert (tmp_path / "n").read_text() == "2"  # started again
    found = re.search(r"budget: agent spent ([\d,]+) tokens of 2,500", done.stdout)
    assert found is not None, done.stdout
    assert (int(found[1].replace(",", "")) - 2000) % 300 == 0, found[0]


PRICED_COMMAND = """#!{python}
import json, os, pathlib, sys
count = pathlib.Path({count!r})
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
if n == 1:  # Claude-style messages of a priced model (no cost said), then a 429
    usage = {{"input_tokens": 1000, "output_tokens": 200}}
    message = {{"id": "m1", "model": "claude-sonnet-4-5", "usage": usage}}
    print(json.dumps({{"type": "assistant", "message": message}}), flush=True)
    sys.stderr.write("HTTP 429 Too Many Requests (retry-after: 0.2)\\n")
    sys.exit(2)
d = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
(d / "report.md").write_text("done")
os.rename(d / "report.md", d / "report.complete.md")
usage = {{"input_tokens": 3000, "output_tokens": 600}}
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "done",
                  "usage": usage, "total_cost_usd": 0.12}}))
"""


def test_an_attempt_that_stated_no_cost_counts_at_its_estimate(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """Each attempt is priced on its own, then added up: the first attempt's messages named a
    priced model but no cost (estimated: 1,000 in and 200 out at $3 / $15 a million), the
    second stated $0.12; the run cost both, estimated in part, and the first attempt's
    figures are what it said before it stopped (a lower bound)."""
    painter(repo, tmp_path, PRICED_COMMAND)
    done = spawn(cli, repo, {})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "n").read_text() == "2"
    run = json.loads((only_run(repo) / "result.json").read_text())["run"]
    assert (run["inputTokens"], run["outputTokens"]) == (4000, 800)
    assert run["costUsd"] == pytest.approx(0.003 + 0.003 + 0.12)
    assert run["costEstimated"] is True and run["model"] == "claude-sonnet-4-5"
    assert run["tokensPartial"] is True and run["costPartial"] is True


def run_spent_meanwhile(repo: Path, cap: Cap, other: Spend) -> tuple[AgentRunner, Outcome]:
    """The agent ``painter`` run under a plan's limit ``cap``; when it waits out a rate limit
    (``agent:waiting``), another step's agent ends having spent ``other`` (added to the
    ledger then, in the run's own thread: no clock decides the order)."""
    config = load_flow_config(repo)
    ledger = Ledger(Budgets(plan=cap), config.prices)
    hub = EventHub()
    hub.subscribe("agent:waiting", lambda event: ledger.add(other))
    job = AgentJob(
        root=repo, config=config, agent="painter", agent_id="painter", flow_name="f",
        kind="implement", prompt_text="Paint.\n", task="Paint.", limits=limits(config),
        budget=ledger,
    )  # fmt: skip
    with ledger.scope("plan"):
        runner = AgentRunner(job, hub=hub)
        runner.prepare()
        outcome = runner.run()
        runner.record()
        runner.close()
    return runner, outcome


def test_a_scope_spent_while_a_run_waits_out_a_rate_limit_starts_no_further_attempt(
    repo: Path, tmp_path: Path
) -> None:
    """A run under a plan's $0.05 waits out a rate limit after spending $0.006 (est.), while
    another step's agent ends having spent $0.045: together that is the plan's limit, so when
    the wait ends the budget is asked again and the next attempt is not started. The run ends
    `budget` with the message of an agent a spent scope does not start, having spent its first
    attempt's figures alone."""
    painter(repo, tmp_path, PRICED_COMMAND)
    other = Spend(input_tokens=6000, output_tokens=1500, cost_usd=0.045)
    runner, outcome = run_spent_meanwhile(repo, Cap(usd=0.05), other)
    started = [e for e in events(runner.paths.run_dir) if e["type"] == "agent:start"]
    assert len(started) == 1 and (tmp_path / "n").read_text() == "1"  # no second attempt
    said = "budget: plan spent $0.051 est. of $0.05 (tokens 8,700); no further attempt started"
    assert (outcome.status, outcome.reason) == ("budget", said)
    run = json.loads((runner.paths.run_dir / "result.json").read_text())["run"]
    assert (run["outcome"], run["reason"]) == ("budget", said)
    assert (run["inputTokens"], run["outputTokens"]) == (1000, 200)  # the first attempt's
    assert run["costUsd"] == pytest.approx(0.006)
    status = json.loads((runner.paths.run_dir / "status.json").read_text())
    assert (status["state"], status["reason"]) == ("budget", said)


# A fake Gemini CLI (its usage said only when it ends: no watch reads it while it runs): its
# first call uses 1,200 tokens and is rate limited; a later one completes.
GEMINI = """#!{python}
import json, os, pathlib, sys
count = pathlib.Path({count!r})
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
if n > 1:
    d = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
    (d / "report.md").write_text("done")
    os.rename(d / "report.md", d / "report.complete.md")
stats = {{"models": {{"gemini-2.5-pro": {{"tokens": {{"prompt": 1000, "candidates": 200}}}}}}}}
print(json.dumps({{"session_id": "s1", "response": "", "stats": stats}}))
if n == 1:
    sys.stderr.write("HTTP 429 Too Many Requests (retry-after: 0.2)\\n")
    sys.exit(1)
"""


def test_a_run_without_a_watch_counts_its_earlier_attempts_before_it_starts_again(
    repo: Path, tmp_path: Path
) -> None:
    """The same for a CLI that says its usage only when it ends: the next attempt is asked with
    what the first said it spent (1,200 tokens) counted, so the plan's 3,000 are reached with
    another agent's 2,000 (which alone would have let it start)."""
    agent = write_executable(
        tmp_path / "gemini", GEMINI.format(python=sys.executable, count=str(tmp_path / "n"))
    )
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'
        "agents:\n  painter:\n    adapter: gemini\n"
        f"    options: {{executable: {json.dumps(str(agent))}}}\n"
    )
    runner, outcome = run_spent_meanwhile(repo, Cap(tokens=3000), Spend(input_tokens=2000))
    assert (tmp_path / "n").read_text() == "1"  # no second attempt
    assert outcome.status == "budget", outcome.reason
    assert outcome.reason.startswith("budget: plan spent 3,200 tokens of 3,000 (cost ")
    assert outcome.reason.endswith("); no further attempt started")
    run = json.loads((runner.paths.run_dir / "result.json").read_text())["run"]
    assert (run["inputTokens"], run["outputTokens"]) == (1000, 200)


def test_the_wait_shows_in_status_and_cancel_ends_it(repo: Path, tmp_path: Path, cli: Cli) -> None:
    env = setup(repo, tmp_path, ["limit:120"], wait=600)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gitflow_agents",
            "spawn",
            "painter",
            "--flow",
            "f",
            "--task",
            "Paint.",
            "--quiet",
        ],
        cwd=repo,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        status: dict[str, Any] = {}
        deadline = time.monotonic() + 60
        while status.get("state") != "waiting" and time.monotonic() < deadline:
            time.sleep(0.1)
            found = list((repo / "flows" / "f" / "runs").glob("*/status.json"))
            status = json.loads(found[0].read_text()) if found else {}
        assert status["state"] == "waiting", status
        assert status["waitingUntil"] > time.time() + 60
        assert status["ended"] is None  # the attempt ended, the run goes on
        (row,) = json.loads(cli.main("status", "--json", cwd=repo, env=env).stdout)
        assert row["endedAt"] is None and row["startedAt"] == status["started"]
        shown = cli.main("status", cwd=repo, env=env)
        assert "waiting" in shown.stdout and "usage limit reached" in shown.stdout
        canceled = cli.main("cancel", status["run_id"], cwd=repo, env=env)
        assert canceled.returncode == 0, canceled.stderr
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 3, out + err
    record = json.loads((only_run(repo) / "result.json").read_text())
    assert record["status"] == "canceled" and "rate limit" in record["run"]["reason"]
    assert len(calls(tmp_path)) == 1


def test_waits_follow_the_reset_else_back_off_within_the_total() -> None:
    waits = Waits(100, jitter=lambda: 1.0)
    assert waits.next(resets_at=1010.0, now=1000.0) == 10.0
    assert waits.next(resets_at=None, now=1000.0) == 60.0  # second wait: 30 s doubled
    assert waits.next(resets_at=None, now=1000.0) == 30.0  # what is left of the 100 s
    assert waits.next(resets_at=None, now=1000.0) is None
    halved = Waits(1000, jitter=lambda: 0.0)
    assert halved.next(None, 0.0) == 15.0 and halved.next(None, 0.0) == 30.0
    assert Waits(1000).next(resets_at=5000.0, now=0.0) is None  # beyond the total: no wait
    past = Waits(1000, jitter=lambda: 1.0)
    assert past.next(resets_at=1.0, now=2.0) == 30.0  # a reset already passed: back off


def test_a_wait_that_ends_on_another_day_names_its_date() -> None:
    """`waiting until 19:55:59` read as today when the usage limit resets in two days."""
    now = time.time()
    later = now + 60
    if time.localtime(later)[:3] == time.localtime(now)[:3]:  # not across midnight
        assert wait_ends(later, 60) == time.strftime("%H:%M:%S", time.localtime(later))
    in_two_days = now + 2 * 86400 + 3 * 3600
    assert wait_ends(in_two_days, 0) == time.strftime(
        "%Y-%m-%d %H:%M:%S", time.localtime(in_two_days)
    )
    assert wait_ends(1e300, 1e300).endswith(" s from now")


SPAWN = (sys.executable, "-m", "gitflow_agents", "spawn")
SLOW = """#!{python}
import json, os, pathlib, time
status = json.loads(pathlib.Path(os.environ["GITFLOW_AGENTS_RUN_DIR"], "status.json").read_text())
with open({log!r} + ".reasons", "a") as reasons:  # what `status` shows while the agent runs
    reasons.write(json.dumps([status["state"], status.get("reason")]) + "\\n")
log = os.open({log!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
os.write(log, b"+\\n")
# hold the slot until a run waits for one (so the limit is met, not timed), at most 60 s
runs, deadline = pathlib.Path(os.environ["GITFLOW_AGENTS_RUN_DIR"]).parent, time.time() + 60
while time.time() < deadline and not any(
    '"agent:waiting"' in p.read_text() for p in runs.glob("*/events.jsonl")
):
    time.sleep(0.02)
os.write(log, b"-\\n")
d = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
(d / "report.md").write_text("done")
os.rename(d / "report.md", d / "report.complete.md")
"""


def test_parallel_runs_of_one_adapter_share_max_parallel_across_processes(
    repo: Path, tmp_path: Path
) -> None:
    """Four `spawn` processes of agents with `max_parallel: 2`: never three agents at once;
    a run that waited for a slot said so. Each agent holds its slot until a run waits for one:
    the first two hold both slots until the third waits, however late it starts."""
    log = tmp_path / "log"
    agent = write_executable(tmp_path / "agent", SLOW.format(python=sys.executable, log=str(log)))
    command = json.dumps(str(agent))
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'
        "agents:\n"
        + "".join(
            f"  a{i}:\n    adapter: command\n    command: [{command}]\n    max_parallel: 2\n"
            for i in range(4)
        )
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "flow")
    procs = [
        subprocess.Popen(
            [*SPAWN, f"a{i}", "--flow", "f", "--task", "Go.", "--quiet"],
            cwd=repo,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(4)
    ]
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0, 0, 0]
    running = most = 0
    for line in log.read_text().splitlines():
        running += 1 if line == "+" else -1
        most = max(most, running)
    assert log.read_text().count("+") == 4 and most <= 2
    waits = [
        e["data"]["reason"]
        for run in (repo / "flows" / "f" / "runs").iterdir()
        for e in events(run)
        if e["type"] == "agent:waiting"
    ]
    assert waits and all(w == "waiting for a command slot (max_parallel 2)" for w in waits)
    seen = [json.loads(line) for line in (tmp_path / "log.reasons").read_text().splitlines()]
    assert seen == [["running", None]] * 4  # a run that got its slot no longer says it waits


HANG = """#!{python}
import time
time.sleep(600)
"""


def one_slot_agents(repo: Path, tmp_path: Path) -> None:
    """Two `command` agents of one slot (`max_parallel: 1`): `first` hangs, `second` completes
    at once."""
    hang = write_executable(tmp_path / "hang", HANG.format(python=sys.executable))
    done = write_executable(
        tmp_path / "done", COMMAND.format(python=sys.executable, count=str(tmp_path / "n"))
    )
    (tmp_path / "n").write_text("1")  # the COMMAND agent completes at once
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\nagents:\n'
        f"  first:\n    adapter: command\n    command: [{json.dumps(str(hang))}]\n    max_parallel: 1\n"
        f"  second:\n    adapter: command\n    command: [{json.dumps(str(done))}]\n    max_parallel: 1\n"
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "flow")


def test_a_run_canceled_while_it_waits_for_a_slot_spent_nothing_known(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """A run canceled while queued for its adapter's slot never started its CLI: its record
    says it spent 0 tokens and $0 (known), and no warning says its usage is unknown."""
    one_slot_agents(repo, tmp_path)
    first = subprocess.Popen(
        [*SPAWN, "first", "--flow", "f", "--task", "Hang.", "--quiet"],
        cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    second = None
    try:
        runs = repo / "flows" / "f" / "runs"
        wait_until(lambda: any(_state(p) == "running" for p in runs.glob("*/status.json")), 60)
        second = subprocess.Popen(
            [*SPAWN, "second", "--flow", "f", "--task", "Go.", "--budget-tokens", "100000"],
            cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_until(lambda: any(_state(p) == "queued" for p in runs.glob("*/status.json")), 60)
        [queued] = [p.parent for p in runs.glob("*/status.json") if _state(p) == "queued"]
        assert cli.main("cancel", queued.name, cwd=repo).returncode == 0
        out, err = second.communicate(timeout=60)
        assert second.returncode == 3, out + err
        assert "reported no usage" not in err, err
        run = json.loads((queued / "result.json").read_text())["run"]
        assert (run["inputTokens"], run["outputTokens"], run["costUsd"]) == (0, 0, 0.0)
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.kill()
                proc.wait()
        for path in (repo / "flows" / "f" / "runs").glob("*/status.json"):
            pid = json.loads(path.read_text()).get("pid")
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, 9)  # the orphaned hanging agent


def _state(path: Path) -> str | None:
    try:
        return json.loads(path.read_text()).get("state")
    except (OSError, ValueError):
        return None


def test_a_slot_held_by_a_supervisor_killed_with_sigkill_is_free_again(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """`max_parallel: 1`: a `spawn` killed with SIGKILL while its agent runs leaves no slot
    taken; the next run starts without waiting for one."""
    one_slot_agents(repo, tmp_path)
    proc = subprocess.Popen(
        [*SPAWN, "first", "--flow", "f", "--task", "Hang.", "--quiet"],
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    status: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + 60
        while not status.get("pid") and time.monotonic() < deadline:
            time.sleep(0.1)
            found = list((repo / "flows" / "f" / "runs").glob("*/status.json"))
            status = json.loads(found[0].read_text()) if found else {}
        assert status.get("state") == "running", status
    finally:
        proc.kill()  # SIGKILL: the supervisor cannot let its slot go itself
        proc.wait()
        if status.get("pid"):
            os.killpg(status["pid"], 9)  # the orphaned agent
    assert holders(repo / "flows" / "slots", "command", 1) == 0
    second = cli.main("spawn", "second", "--flow", "f", "--task", "Go.", "--quiet", cwd=repo)
    assert second.returncode == 0, second.stdout + second.stderr
    [run] = [r for r in (repo / "flows" / "f" / "runs").iterdir() if r.name != status["run_id"]]
    assert not [e for e in events(run) if e["type"] == "agent:waiting"]


def test_an_agent_its_killed_supervisor_left_running_keeps_its_slot_until_it_ends(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """`max_parallel: 1`: a `spawn` killed with SIGKILL leaves its agent running (the lost run
    `status` shows); the next run of the adapter waits for the slot rather than run beside it,
    and starts once `cancel` ended the orphan."""
    one_slot_agents(repo, tmp_path)
    first = subprocess.Popen(
        [*SPAWN, "first", "--flow", "f", "--task", "Hang.", "--quiet"], cwd=repo
    )
    second: subprocess.Popen[bytes] | None = None
    status: dict[str, Any] = {}

    def statuses() -> dict[str, dict[str, Any]]:
        found = (repo / "flows" / "f" / "runs").glob("*/status.json")
        return {path.parent.name: json.loads(path.read_text()) for path in found}

    try:
        wait_until(lambda: any(s.get("pid") for s in statuses().values()), timeout=60)
        (status,) = statuses().values()
        first.kill()  # SIGKILL: the supervisor is gone, its agent is not
        first.wait()
        second = subprocess.Popen(
            [*SPAWN, "second", "--flow", "f", "--task", "Go.", "--quiet"], cwd=repo
        )
        wait_until(lambda: any(s.get("state") == "queued" for s in statuses().values()), timeout=60)
        assert second.poll() is None  # waiting for the slot the orphan holds
        canceled = cli.main("cancel", status["run_id"], cwd=repo)
        assert canceled.returncode == 0, canceled.stdout + canceled.stderr
        assert second.wait(60) == 0
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        if status.get("pid"):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(status["pid"], 9)


def test_the_records_start_and_duration_span_every_attempt_and_the_wait(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """One run in the record: it started when its first attempt did, so the rate-limit wait is
    inside its duration (`history`'s DURATION), not left out of it."""
    env = setup(repo, tmp_path, ["limit:0.05", "done"], wait=60)
    done = spawn(cli, repo, env)
    assert done.returncode == 0, done.stdout + done.stderr
    run = only_run(repo)
    record = json.loads((run / "result.json").read_text())["run"]
    [waiting] = [e["data"] for e in events(run) if e["type"] == "agent:waiting"]
    wait_began = waiting["until"] - waiting["seconds"]
    assert record["startedAt"] <= wait_began <= waiting["until"] <= record["endedAt"]
    span = record["endedAt"] - record["startedAt"]
    assert record["durationMs"] == pytest.approx(span * 1000, abs=1)
    # `status` says the same: from the first attempt's start (status.json was the last's)
    (row,) = json.loads(cli.main("status", "--json", cwd=repo, env=env).stdout)
    assert row["startedAt"] <= wait_began  # the first attempt's (no tolerance load can break)


def test_a_reset_ages_away_is_given_up_at_once_without_a_traceback(
    repo: Path, tmp_path: Path
) -> None:
    """A reset time no clock can show (99,999,999,999,999 days on): past the longest total wait
    the configuration allows (365 days, decisions "Hostile and broken input" 18), the run gives
    up without waiting, exit 6, its message naming the limit (formatting that time once failed
    with an OSError, exit 2, when a total wait as long could be configured)."""
    env = setup(
        repo, tmp_path, ["say:Rate limited. Try again in 99999999999999 days."], wait=31_536_000
    )
    argv = [sys.executable, "-m", "gitflow_agents", "spawn", "painter", "--flow", "f", "--task",
            "Paint.", "--quiet"]  # fmt: skip
    done = subprocess.run(
        argv, cwd=repo, env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 6, done.stdout + done.stderr
    assert "gave up without waiting" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_sigterm_during_a_wait_leaves_no_wait_on_record(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """SIGTERM while the run waits out a rate limit: exit 130, and its status.json no longer
    names a time it waits until; its record keeps what the first attempt spent and the run's
    time from that attempt's start (it had neither: unknown spend, no duration)."""
    env = setup(repo, tmp_path, ["limit:120"], wait=600)
    argv = [*SPAWN, "painter", "--flow", "f", "--task", "Paint.", "--quiet"]
    proc = subprocess.Popen(argv, cwd=repo, env={**os.environ, **env}, stderr=subprocess.PIPE)
    try:
        path: list[Path] = []

        def waiting() -> bool:
            path[:] = list((repo / "flows" / "f" / "runs").glob("*/status.json"))
            return bool(path) and json.loads(path[0].read_text()).get("state") == "waiting"

        wait_until(waiting, timeout=60)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 130
    finally:
        proc.kill()
        proc.wait()
    assert json.loads(path[0].read_text()).get("waitingUntil") is None
    run = json.loads((only_run(repo) / "result.json").read_text())["run"]
    assert run["outcome"] == "canceled" and run["costUsd"] == pytest.approx(0.01)
    assert run["inputTokens"] == 100 and run["durationMs"] > 0
    assert "SIGTERM" in json.dumps(run) and "Ctrl-C" not in json.dumps(run)  # it was no Ctrl-C


WAITED_COMMAND = """#!{python}
import json, os, pathlib, sys, time
count = pathlib.Path({count!r})
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
def message(call):  # a Claude-style API call of a priced model, no cost said
    usage = {{"input_tokens": 1000, "output_tokens": 100}}
    body = {{"id": f"m{{n}}-{{call}}", "model": "claude-sonnet-4-5", "usage": usage}}
    print(json.dumps({{"type": "assistant", "message": body}}), flush=True)
if n == 1:  # two calls, then a 429: what it streamed is a lower bound
    message(0)
    message(1)
    sys.stderr.write("HTTP 429 Too Many Requests (retry-after: 4)\\n")
    sys.exit(2)
message(0)  # one call, then it waits for the test to let it finish
go = pathlib.Path({count!r} + ".go")
deadline = time.monotonic() + 60
while not go.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
d = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
(d / "report.md").write_text("done")
os.rename(d / "report.md", d / "report.complete.md")
"""


def test_a_budgeted_run_shows_in_status_what_its_attempts_spent_while_it_waits(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """Under a budget, `status` shows what a run waiting out a rate limit spent so far: its
    first attempt's 2,000/200, a lower bound (it streamed them before the 429), not "-"; its
    second attempt, running, adds what it streams (1,000/100) and keeps the mark, as the
    record then has them."""
    painter(repo, tmp_path, WAITED_COMMAND)
    argv = [*SPAWN, "painter", "--flow", "f", "--task", "Paint.", "--quiet"]
    proc = subprocess.Popen(
        [*argv, "--budget-tokens", "100000"], cwd=repo, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    def row_when(state: str, tokens: int) -> dict[str, Any]:
        found: list[dict[str, Any]] = []

        def there() -> bool:
            assert proc.poll() is None, proc.communicate()
            rows = json.loads(cli.main("status", "--json", cwd=repo).stdout)
            found[:] = [r for r in rows if r["state"] == state]
            return bool(found) and found[0].get("inputTokens") == tokens

        wait_until(there, timeout=30)
        return found[0]

    try:
        waiting = row_when("waiting", 2000)
        assert waiting["outputTokens"] == 200 and waiting["tokensPartial"] is True
        assert waiting["costUsd"] == pytest.approx(0.006 + 0.003)  # 2,000 in, 200 out
        assert waiting["costEstimated"] is True and waiting["costPartial"] is True
        shown = cli.main("status", cwd=repo).stdout
        assert "≥ 2,000/200" in shown and "≥ $0.0090 est." in shown, shown
        running = row_when("running", 3000)  # the second attempt's first call read
        assert running["outputTokens"] == 300 and running["tokensPartial"] is True
        assert running["costPartial"] is True
        assert "≥ 3,000/300" in cli.main("status", cwd=repo).stdout
    finally:
        (tmp_path / "n.go").touch()  # the agent ends: no process left behind
        try:
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 0, out + err
    run = json.loads((only_run(repo) / "result.json").read_text())["run"]
    assert (run["inputTokens"], run["outputTokens"], run["tokensPartial"]) == (3000, 300, True)


def test_a_run_without_a_budget_shows_in_status_what_its_attempts_spent_while_it_waits(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """Without a budget no watch reads a run as it runs, but what its attempts spent before a
    rate limit's wait is known (their outputs, as the record will have them): `status` shows
    it while the run waits (it showed "-"), and no figure once the next attempt runs unread."""
    painter(repo, tmp_path, WAITED_COMMAND)
    argv = [*SPAWN, "painter", "--flow", "f", "--task", "Paint.", "--quiet"]
    proc = subprocess.Popen(
        argv, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    rows: list[dict[str, Any]] = []

    def seen(state: str) -> bool:
        assert proc.poll() is None, proc.communicate()
        rows[:] = [
            r for r in json.loads(cli.main("status", "--json", cwd=repo).stdout)
            if r["state"] == state
        ]  # fmt: skip
        return bool(rows)

    try:
        wait_until(lambda: seen("waiting") and rows[0].get("inputTokens") == 2000, timeout=30)
        assert rows[0]["outputTokens"] == 200 and rows[0]["tokensPartial"] is True
        assert "≥ 2,000/200" in cli.main("status", cwd=repo).stdout
        wait_until(lambda: seen("running"), timeout=30)
        assert rows[0].get("inputTokens") is None  # the running attempt: nothing read of it
    finally:
        (tmp_path / "n.go").touch()  # the agent ends: no process left behind
        try:
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 0, out + err


CONTINUED_COMMAND = """#!{python}
import json, os, pathlib, sys
count = pathlib.Path({count!r})
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
for call in range(2 if n == 1 else 1):  # Claude-style calls of a priced model, no cost said
    usage = {{"input_tokens": 1000, "output_tokens": 100}}
    body = {{"id": f"m{{n}}-{{call}}", "model": "claude-sonnet-4-5", "usage": usage}}
    print(json.dumps({{"type": "assistant", "message": body}}), flush=True)
if n == 1:
    sys.stderr.write("HTTP 429 Too Many Requests (retry-after: 0.2)\\n")
    sys.exit(2)
d = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
(d / "report.md").write_text("done")
os.rename(d / "report.md", d / "report.complete.md")
"""


@pytest.mark.parametrize("budget", [(), ("--budget-tokens", "100000")], ids=["free", "budget"])
def test_the_console_end_line_of_a_continued_run_says_what_its_record_does(
    repo: Path, tmp_path: Path, cli: Cli, budget: tuple[str, ...]
) -> None:
    """The end line of a run continued after a rate limit says the run's figures, as its
    record has them (both attempts: 3,000/300, a lower bound: the first stopped at the 429),
    not its last attempt's own 1,000/100; the end event keeps the attempt's own figures (the
    live steps view adds each attempt's)."""
    painter(repo, tmp_path, CONTINUED_COMMAND)
    argv = ("spawn", "painter", "--flow", "f", "--task", "Paint.", *budget)
    done = cli.main(*argv, cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    run = json.loads((only_run(repo) / "result.json").read_text())["run"]
    assert (run["inputTokens"], run["outputTokens"], run["tokensPartial"]) == (3000, 300, True)
    assert run["costUsd"] == pytest.approx(0.0135) and run["costPartial"] is True
    [end] = [line for line in done.stderr.splitlines() if line.startswith("painter: succeeded")]
    assert "tokens ≥ 3,000/300 ≥ $0.0135 est." in end, end
    (ended,) = [e["data"] for e in events(only_run(repo)) if e["type"] == "agent:complete"]
    assert (ended["input_tokens"], ended["output_tokens"]) == (1000, 100)
