"""The agent-run engine: every agent run leaves the same records, whoever starts it.

In-process (fast): the engine's steps on a shared hub as a caller running several agents at once
uses them, and the agent reviewer of ``git agent-review --agent X`` against ``spawn``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gitflow_agents.agent_run.run import AgentJob, AgentRunner
from gitflow_agents.config import load_flow_config
from gitflow_agents.runs import RESULT_SCHEMAS
from gitflow_agents.runs.events import EventHub, MemoryChannel
from gitflow_agents.supervisor import Limits, Status
from tests.conftest import FAKES, Cli, git
from tests.helpers.chain import MARKER, configure
from tests.helpers.review import configure_reviewers

FAKE = FAKES / "fake_agent"


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(monkeypatch, capsys)


def read_records(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """result.json, events.jsonl and status.json of one run folder."""
    result = json.loads((run_dir / "result.json").read_text())
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    status = json.loads((run_dir / "status.json").read_text())
    return result, events, status


def test_an_agent_review_records_like_a_spawn(repo: Path, run: Cli) -> None:
    configure_reviewers(repo)
    reviewed = run.review("HEAD", "--agent", "approver", cwd=repo)
    assert reviewed.returncode == 0, reviewed.stdout + reviewed.stderr
    spawned = run.main(
        "spawn", "approver", "--kind", "review", "--task", "Review HEAD.", "--flow", "f",
        "--quiet", cwd=repo,
    )  # fmt: skip
    assert spawned.returncode == 0, spawned.stdout + spawned.stderr

    [review_dir] = (repo / "flows" / "review" / "runs").iterdir()
    [spawn_dir] = (repo / "flows" / "f" / "runs").iterdir()
    review, review_events, review_status = read_records(review_dir)
    spawn, spawn_events, spawn_status = read_records(spawn_dir)
    jsonschema.validate(review, RESULT_SCHEMAS["review"])
    assert review["status"] == spawn["status"] == "succeeded"
    assert review["overall"] == "approve"
    assert sorted(review) == sorted(spawn)
    assert sorted(review["run"]) == sorted(spawn["run"])
    assert review["run"]["runID"] == review_dir.name and review["run"]["kind"] == "review"
    assert review["run"]["agent"] == "review-approver"
    assert [e["type"] for e in review_events] == [e["type"] for e in spawn_events]
    assert review_events[0]["type"] == "harness:start"
    assert review_events[-1]["type"] == "harness:complete"
    assert {e["runId"] for e in review_events} == {review_dir.name}
    assert review_status["state"] == spawn_status["state"] == "succeeded"
    assert (review_dir / "worker.log").exists() and (spawn_dir / "worker.log").exists()
    assert "flows" not in git(repo, "status", "--porcelain", "--untracked-files=all")


def test_runs_on_a_shared_hub_keep_their_own_records(repo: Path) -> None:
    """Two agents prepared first, supervised at once on one hub with one cancel switch: each
    run's events.jsonl holds its own events only; each writes its result.json once."""
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        "completion_workflow:\n"
        '  template: "Rename {report_file} to {success_file}."\n'
        "agents:\n"
        f"  quick:\n    adapter: command\n    command: [{json.dumps(str(FAKE))}, succeed]\n"
        f"  stuck:\n    adapter: command\n    command: [{json.dumps(str(FAKE))}, hang]\n"
    )
    config = load_flow_config(repo)
    memory = MemoryChannel()
    hub = EventHub([memory])
    runners = [
        AgentRunner(
            AgentJob(
                root=repo, config=config, agent=name, agent_id=name, flow_name="shared",
                kind="implement", prompt_text=f"You are {name}.\n",
                limits=Limits(stuck_timeout=60, timeout=60, kill_grace=0.5),
            ),
            hub=hub,
        )
        for name in ("quick", "stuck")
    ]  # fmt: skip
    for runner in runners:
        runner.prepare()
        runner.start_task()  # every agent announced before any starts
    cancel = threading.Event()
    outcomes: dict[str, str] = {}

    def supervise(runner: AgentRunner) -> None:
        outcomes[runner.job.agent_id] = runner.run(cancel).status

    threads = [threading.Thread(target=supervise, args=(r,)) for r in runners]
    for thread in threads:
        thread.start()
    threads[0].join(timeout=30)
    cancel.set()  # the other agent is still hanging: its tree is killed
    threads[1].join(timeout=30)
    results = [runner.record(run_extra={"chainRunID": "c1"}) for runner in runners]
    for runner in runners:
        runner.close()

    assert outcomes == {"quick": "succeeded", "stuck": "canceled"}
    assert [r["status"] for r in results] == ["succeeded", "canceled"]
    assert runners[0].record() is results[0]  # recorded once
    for runner, result in zip(runners, results, strict=True):
        on_disk, events, status = read_records(runner.paths.run_dir)
        assert on_disk == result
        assert status["state"] == result["run"]["outcome"]
        assert {e["runId"] for e in events} == {runner.run_id}
        kinds = [e["type"] for e in events]
        assert kinds[0] == "task:start" and "agent:start" in kinds
        assert kinds[-1] == ("task:complete" if result["status"] == "succeeded" else "task:failed")
    assert {e.run_id for e in memory.events} == {r.run_id for r in runners}
    kinds = [e.type for e in memory.events]
    assert kinds.count("task:start") == 2
    assert max(i for i, k in enumerate(kinds) if k == "task:start") < kinds.index("agent:start")
    assert [r["run"]["chainRunID"] for r in results] == ["c1", "c1"]


def test_an_agent_run_in_process_records_like_any_other(repo: Path) -> None:
    """The offline reviewer is a function, not a process: the same steps, the same records."""
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        'completion_workflow:\n  template: "Rename {report_file}."\n'
        "agents:\n  offline:\n    adapter: builtin\n"
    )
    config = load_flow_config(repo)

    def review() -> tuple[Status, str]:
        runner.files.success.write_text("All good.\n\nREVIEW_RESULT: APPROVED\n")
        return "succeeded", "builtin reviewer finished"

    job = AgentJob(
        root=repo, config=config, agent="offline", agent_id="offline", flow_name="solo",
        kind="review", prompt_text="Review.\n", limits=Limits(stuck_timeout=60, timeout=60),
        quiet=True, in_process=review,
    )  # fmt: skip
    runner = AgentRunner(job)
    runner.prepare()
    assert runner.run().ok
    result = runner.record(extra={"gitStats": {"files": 0}})
    runner.close()
    on_disk, events, status = read_records(runner.paths.run_dir)
    jsonschema.validate(on_disk, RESULT_SCHEMAS["review"])
    assert on_disk == result and result["overall"] == "approve"
    assert result["gitStats"] == {"files": 0}
    assert result["run"]["watcher"] == "in-process"
    assert result["run"]["report"] == str(runner.facts.files.success)
    assert status["state"] == "succeeded"
    assert [e["type"] for e in events] == ["task:start", "task:complete"]
    assert (runner.agent_dir / "system_prompt.md").read_text() == "Review.\n"


def test_a_spawned_implementer_gets_the_tools_git_statistics(repo: Path, run: Cli) -> None:
    """``spawn`` of an implementer fills its report's git-stats marker as the chain does: its
    work tree, untracked files included, against the merge-base with the target, so a commit
    already on the branch counts too and the run records under flows/ do not."""
    configure(repo)
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "early.txt").write_text("committed on the branch before the run\n")
    git(repo, "add", "early.txt")
    git(repo, "commit", "-q", "-m", "early")
    spawned = run.main(
        "spawn", "builder", "--plan", "specs/feature.md", "--step", "1", "--quiet", cwd=repo
    )
    assert spawned.returncode == 0, spawned.stdout + spawned.stderr
    report = (repo / "flows/feature/agents/step-01-builder/report.complete.md").read_text()
    assert MARKER not in report
    section = report.split("## Modified files", 1)[1]
    for name in ("early.txt", "README.md", "src/new_module.py", "logo.png", "docs/new.md"):
        assert f"| `{name}` |" in section
    assert "flows/" not in section
    assert "work tree" in section


def test_spawn_after_an_agent_with_no_completed_report_starts_nothing(repo: Path, run: Cli) -> None:
    """``spawn --after`` a mistyped id: exit 2, one line, and no agent folder or run made."""
    configure(repo)
    spawned = run.main(
        "spawn", "reviewer", "--plan", "specs/feature.md", "--step", "1",
        "--after", "step-01-buildr", "--quiet", cwd=repo,
    )  # fmt: skip
    assert spawned.returncode == 2
    assert spawned.stderr.count("\n") == 1, spawned.stderr
    assert "spawn --after step-01-buildr: no completed report at " in spawned.stderr
    assert "no agent of flow feature has one yet" in spawned.stderr
    assert not (repo / "flows" / "feature").exists()
