"""Work trees that go away (issue 24, item 4): ``worktrees`` lists the tool's work trees with the
states their run records give, ``gc`` removes only those nobody needs (never a live one, never
one whose branch has commits found nowhere else unless --force), a lost run's tree included,
and ``run`` applies ``chain.gc`` at its end. Real git, real fake agents, real locks."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any, get_args

import psutil
import pytest

from gitflow_agents.git import queries as g
from gitflow_agents.runs import lock
from tests.conftest import git, running_agent, wait_until
from tests.helpers.chain import call, configure, run, start_run
from tests.helpers.old_git import git_refusing

REJECTED = ("--step", "1", "--max-iterations", "1")


def listed(repo: Path) -> list[dict[str, Any]]:
    result = call(repo, "worktrees", "--json")
    assert result.returncode == 0, result.stderr
    trees: list[dict[str, Any]] = json.loads(result.stdout)
    return trees


def by_step(repo: Path) -> dict[int | None, dict[str, Any]]:
    return {tree["step"]: tree for tree in listed(repo)}


def gc(repo: Path, *args: str) -> dict[str, Any]:
    result = call(repo, "gc", "--json", *args)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def rejected_and_failed(repo: Path) -> None:
    """Step 1 rejected (its branch holds the implementer's commit), step 2 failed (the
    implementer crashed: its branch has nothing of its own)."""
    configure(repo, reviewer="revise")
    assert run(repo, *REJECTED).returncode == 1
    config = repo / ".flow" / "base.yaml"
    text = config.read_text()
    config.write_text(text.replace('"implementer", "edit"', '"implementer", "crash"'))
    assert run(repo, "--step", "2").returncode == 3
    config.write_text(text)


def test_worktrees_lists_states_sizes_and_live_runs(repo: Path) -> None:
    rejected_and_failed(repo)
    trees = by_step(repo)
    assert trees[1]["state"] == "rejected" and trees[1]["unpublishedCommits"] == 1
    assert trees[2]["state"] == "failed" and trees[2]["unpublishedCommits"] == 0
    assert trees[1]["branch"] == "agents/feature/step-1" and trees[1]["live"] is False
    assert all(tree["sizeBytes"] > 0 and tree["ageSeconds"] >= 0 for tree in trees.values())
    leftover = Path(trees[1]["path"]).parent / "scratch-leftover"
    leftover.mkdir()
    with lock.hold(lock.step_lock_path(repo, "flows", "feature", 2), "a-live-run"):
        trees = by_step(repo)
    assert trees[2]["state"] == "running" and trees[2]["live"] is True
    assert trees[None]["registered"] is False and trees[None]["state"] == "unknown"
    table = call(repo, "worktrees").stdout
    assert "agents/feature/step-1" in table and "rejected" in table and "3 work trees" in table
    gone = {t["path"] for t in gc(repo)["trees"] if t["removed"]}
    assert str(leftover) in gone and not leftover.exists()  # unregistered: it goes too


def test_worktrees_gives_every_outcome_a_record_can_hold_a_state(repo: Path) -> None:
    """A step stopped by a budget showed ``unknown``, as if it had no record: every outcome
    a step run records (the whole ``StepOutcome`` vocabulary) has a state."""
    from gitflow_agents.chain.trees import STATE_OF_OUTCOME
    from gitflow_agents.runs.status import StepOutcome

    rejected_and_failed(repo)
    (record,) = [
        path
        for path in (repo / "flows" / "feature" / "runs").glob("*/result.json")
        if json.loads(path.read_text()).get("chain", {}).get("step") == 2
    ]
    data = json.loads(record.read_text())
    states = {}
    for outcome in get_args(StepOutcome):
        data["chain"]["outcome"] = outcome
        record.write_text(json.dumps(data))
        states[outcome] = by_step(repo)[2]["state"]
    assert states == {
        "approved": "approved",  # not merged: a pull request waits
        "skipped": "landed",
        "rejected": "rejected",
        "failed": "failed",
        "canceled": "failed",
        "empty": "failed",
        "budget": "failed",
    }
    assert set(STATE_OF_OUTCOME) == set(get_args(StepOutcome))


def test_gc_never_removes_a_live_or_unmerged_tree_and_a_second_gc_is_a_no_op(
    repo: Path,
) -> None:
    rejected_and_failed(repo)
    before = by_step(repo)
    dry = gc(repo, "--dry-run")
    assert sorted((t["step"], t["removed"]) for t in dry["trees"]) == [(1, False), (2, True)]
    assert {t["path"] for t in listed(repo)} == {t["path"] for t in before.values()}
    with lock.hold(lock.step_lock_path(repo, "flows", "feature", 2), "a-live-run"):
        held = {t["step"]: t for t in gc(repo)["trees"]}
    assert not any(t["removed"] for t in held.values())  # 1: unmerged; 2: live
    assert "live run" in held[2]["why"] and "--force" in held[1]["why"]
    done = gc(repo)
    assert sorted((t["step"], t["removed"], t["branchDeleted"]) for t in done["trees"]) == [
        (1, False, False),
        (2, True, True),
    ]
    assert not Path(before[2]["path"]).exists()
    assert g.branch_sha(repo, "agents/feature/step-2") is None
    assert g.branch_sha(repo, "agents/feature/step-1") is not None
    again = gc(repo)
    assert not any(t["removed"] for t in again["trees"]) and again["freedBytes"] == 0
    forced = gc(repo, "--force")
    assert [(t["step"], t["removed"]) for t in forced["trees"]] == [(1, True)]
    assert g.branch_sha(repo, "agents/feature/step-1") is None and listed(repo) == []


def test_gc_older_than_keeps_recent_trees(repo: Path) -> None:
    rejected_and_failed(repo)
    assert not any(t["removed"] for t in gc(repo, "--older-than", "1d")["trees"])
    bad = call(repo, "gc", "--older-than", "a while")
    assert bad.returncode == 2 and "--older-than 'a while'" in bad.stderr


@pytest.mark.parametrize("value", ["1" + "0" * 400 + "d", "9" * 5000, "3651d"])
def test_gc_older_than_too_long_is_a_usage_error_not_a_crash(repo: Path, value: str) -> None:
    """A 400-digit duration overflowed a float (exit 70); 5,000 digits passed int()'s limit."""
    bad = call(repo, "gc", "--older-than", value, "--dry-run")
    assert bad.returncode == 2, bad
    assert f"--older-than {value[:20]!r}"[:-1] in bad.stderr and "at most 3650d" in bad.stderr
    assert len(bad.stderr.splitlines()) == 1, bad


def test_gc_removes_the_tree_of_a_run_killed_with_kill_9(repo: Path) -> None:
    configure(repo, sleep=60)
    orchestrator = start_run(repo, "--step", "1")
    wait_until(lambda: running_agent(repo), 30)
    agent = running_agent(repo)
    assert agent is not None and isinstance(agent["pid"], int)
    os.kill(orchestrator.pid, signal.SIGKILL)
    orchestrator.wait()
    tree = listed(repo)[0]
    assert tree["live"] is False and tree["state"] == "unknown"  # lost: nobody supervises it
    done = gc(repo)
    assert done["trees"][0]["removed"] is True and done["trees"][0]["branchDeleted"] is True
    assert not Path(tree["path"]).exists() and listed(repo) == []
    wait_until(
        lambda: (
            not psutil.pid_exists(agent["pid"])
            or psutil.Process(agent["pid"]).status() == psutil.STATUS_ZOMBIE
        ),
        10,
    )
    assert gc(repo)["trees"] == []


def test_run_applies_chain_gc_at_its_end_and_status_shows_the_cache(repo: Path) -> None:
    rejected_and_failed(repo)
    failed = by_step(repo)[2]["path"]
    status = call(repo, "status").stdout
    assert "work-tree cache: 2 work trees" in status
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text() + "chain:\n  gc: {older_than: 0s}\n")
    result = run(repo, *REJECTED)
    assert result.returncode == 1
    assert "chain.gc removed 1 old work tree(s)" in result.stdout
    assert not Path(failed).exists() and list(by_step(repo)) == [1]  # the rejected one stays
    git(repo, "status")  # the repository is fine


def test_a_tree_removed_by_hand_while_git_knows_it_is_made_afresh_or_pruned(repo: Path) -> None:
    """The cache cleared (``rm -rf``) while git still registers the step work trees: listed,
    a run of the step makes its tree afresh, ``gc`` prunes git's stale registration."""
    rejected_and_failed(repo)
    before = by_step(repo)
    for tree in before.values():
        shutil.rmtree(tree["path"])
    after = by_step(repo)
    assert after[1]["registered"] is False and after[1]["branch"] == "agents/feature/step-1"
    table = call(repo, "worktrees")
    assert table.returncode == 0 and "agents/feature/step-2" in table.stdout, table.stderr
    again = run(repo, *REJECTED)  # the reviewer still rejects: the tree stays, as a real one
    assert again.returncode == 1, again.stderr + again.stdout
    assert (Path(before[1]["path"]) / ".git").is_file() and by_step(repo)[1]["registered"]
    assert 2 not in by_step(repo)  # its stale registration pruned along the way
    assert before[2]["path"] not in git(repo, "worktree", "list")
    shutil.rmtree(before[1]["path"])  # and once more: gc (even plain) copes with it
    assert [t["removed"] for t in gc(repo)["trees"]] == [False]  # its commit: --force
    (forced,) = gc(repo, "--force")["trees"]
    assert forced["removed"] is True and listed(repo) == []
    assert before[1]["path"] not in git(repo, "worktree", "list")


def test_a_git_before_2_36_is_one_line_and_exit_2(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_refusing("-z", tmp_path, monkeypatch, within="worktree", version="2.34.1")
    for command in ("worktrees", "gc"):
        result = call(repo, command)
        assert result.returncode == 2
        assert result.stderr.strip().splitlines() == [
            "gitflow-agents: error: finding the work trees of the repository needs git 2.36 "
            "or newer (`git "
            "worktree list --porcelain -z`); this is git 2.34.1: install a newer git (README, "
            '"Requirements")'
        ]
