"""``gitflow-agents cancel RUN`` of one agent of a running chain (issue 26, item 1): through the
control channel of ``run``, that agent's tree alone is stopped; the other reviewer of the round
finishes; the step run records the agent ``canceled`` and ends ``canceled`` with exit 130
(docs/chains.md, "Canceling one agent"); the same command run again continues."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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


def test_cancel_of_one_reviewer_stops_it_alone_and_the_step_ends_canceled(
    repo: Path, cli: Cli
) -> None:
    configure(repo)
    base = repo / ".flow" / "base.yaml"
    base.write_text(base.read_text() + SLOW.replace("{mode}", "hang"))
    argv = [sys.executable, "-m", "gitflow_agents", *RUN_ARGS, "--step", "1"]
    proc = subprocess.Popen(
        [*argv, "--reviewers", "reviewer,slow"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline, slow = time.monotonic() + 60, None
        while slow is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            slow = agent_run(repo, "step-01-slow-1")
        assert slow is not None, proc.communicate()
        canceled = cli.main("cancel", slow.name, cwd=repo)
        assert canceled.returncode == 0, canceled.stderr
        assert f"canceled run {slow.name} (canceled)" in canceled.stdout
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
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
