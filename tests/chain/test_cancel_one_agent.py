"""``gitflow-agents cancel RUN`` of one agent of a running chain (issue 26, item 1): through the
control channel of ``run``, that agent's tree alone is stopped; the other reviewer of the round
finishes; the step run records the agent ``canceled`` and ends ``canceled`` with exit 130
(docs/chains.md, "Canceling one agent"); the same command run again continues."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from gitflow_agents.runs import control
from tests.conftest import FAKES, ROOT, Cli
from tests.helpers.chain import RUN_ARGS, configure, results

SLOW = (
    "  slow:\n    adapter: claude\n    options:\n"
    f"      executable: {json.dumps(str(FAKES / 'fake_live_claude'))}\n"
    '      extra_args: ["--fake", "{mode}"]\n'
)


def agent_run(repo: Path, agent_id: str) -> Path | None:
    """The run folder of ``agent_id``'s agent run whose control socket is there."""
    for status in (repo / "flows" / "feature" / "runs").glob("*/status.json"):
        mine = json.loads(status.read_text()).get("agent") == agent_id  # a round's: -1
        if mine and (status.parent / control.SOCKET).exists():
            return status.parent
    return None


@contextlib.contextmanager
def running_step(repo: Path, reviewers: str, *agents: str) -> Iterator[subprocess.Popen[str]]:
    """``run --step 1 --reviewers REVIEWERS`` as a process of its own, once each of ``agents``
    runs with its control socket there; killed at the end of the block if still running."""
    argv = [sys.executable, "-m", "gitflow_agents", *RUN_ARGS, "--step", "1"]
    proc = subprocess.Popen(
        [*argv, "--reviewers", reviewers],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not all(agent_run(repo, agent) for agent in agents):
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_cancel_of_one_reviewer_stops_it_alone_and_the_step_ends_canceled(
    repo: Path, cli: Cli
) -> None:
    configure(repo)
    base = repo / ".flow" / "base.yaml"
    base.write_text(base.read_text() + SLOW.replace("{mode}", "hang"))
    with running_step(repo, "reviewer,slow", "step-01-slow-1") as proc:
        slow = agent_run(repo, "step-01-slow-1")
        assert slow is not None
        canceled = cli.main("cancel", slow.name, cwd=repo)
        assert canceled.returncode == 0, canceled.stderr
        assert f"canceled run {slow.name} (canceled)" in canceled.stdout
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "step 1: canceled - step-01-slow-1 canceled" in out
    [step] = results(repo)
    assert step["chain"]["outcome"] == "canceled"
    agents = {a["agentId"]: a for a in step["chain"]["agents"]}
    assert agents["step-01-slow-1"]["status"] == "canceled"
    slow_record = json.loads((slow / "result.json").read_text())
    assert slow_record["status"] == "canceled"
    assert slow_record["run"]["reason"] == control.CANCELED
    # the other reviewer of the round was not killed: it finished and approved
    reviewer = repo / "flows" / "feature" / "agents" / "step-01-reviewer-1" / "report.complete.md"
    assert "REVIEW_RESULT: APPROVED" in reviewer.read_text()

    # run again with the slow reviewer answering: the step continues and lands
    base.write_text(base.read_text().replace('"hang"', '"approve"'))
    again = cli.main(*RUN_ARGS, "--step", "1", "--reviewers", "reviewer,slow", cwd=repo)
    assert again.returncode == 0, again.stdout + again.stderr
    assert results(repo)[-1]["chain"]["outcome"] == "approved"


def test_the_step_run_a_second_run_is_refused_with_is_listed_and_canceled_by_its_id(
    repo: Path, cli: Cli
) -> None:
    """A second ``run`` of the step is refused naming the running step run's id, "or cancel
    it"; ``cancel`` said there was no such run (its folder is written when it ends) and
    ``status`` did not list it. Now ``status`` lists it running and ``cancel`` of its id stops
    every agent it runs (both hanging reviewers): the step ends canceled, 130."""
    configure(repo)
    base = repo / ".flow" / "base.yaml"
    base.write_text(
        base.read_text()
        + SLOW.replace("{mode}", "hang")
        + SLOW.replace("slow", "slow2").replace("{mode}", "hang")
    )
    with running_step(repo, "slow,slow2", "step-01-slow-1", "step-01-slow2-1") as proc:
        second = cli.main(*RUN_ARGS, "--step", "1", cwd=repo)
        assert second.returncode == 2
        step_id = second.stderr.split("held by run ")[1].split()[0]
        assert f"or cancel it (`gitflow-agents cancel {step_id}`)" in second.stderr
        rows = json.loads(cli.main("status", "--json", cwd=repo).stdout)
        (row,) = [r for r in rows if r["runId"] == step_id]
        assert (row["state"], row["reason"], row["agent"]) == ("running", "step 1", None)
        assert [r["runId"] for r in rows] == sorted(r["runId"] for r in rows)
        canceled = cli.main("cancel", step_id[:13], cwd=repo)
        assert canceled.returncode == 0, canceled.stderr
        assert canceled.stdout.startswith(f"canceled step run {step_id} (step 1 of feature): ")
        assert canceled.stdout.count("(canceled)") == 2, canceled.stdout
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    [step] = results(repo)
    assert step["run"]["runID"] == step_id and step["chain"]["outcome"] == "canceled"
    statuses = {a["agentId"]: a["status"] for a in step["chain"]["agents"]}
    assert statuses["step-01-slow-1"] == statuses["step-01-slow2-1"] == "canceled"
    assert (
        cli.main("cancel", step_id, cwd=repo).stdout == f"run {step_id} already ended: canceled\n"
    )
