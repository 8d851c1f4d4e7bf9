"""Run records: ids, directories, result shapes (validated against their JSON Schemas), exclude."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import jsonschema
import pytest

from gitflow_agents.base.fsutil import write_json_atomic
from gitflow_agents.git.queries import exclude_flow_dir
from gitflow_agents.runs import (
    RESULT_SCHEMAS,
    RunStatus,
    create_run,
    find_run,
    implement_result,
    is_run_id,
    iter_runs,
    new_run_id,
    read_status,
    research_result,
    result_status,
    review_result,
    write_result,
    write_status,
)
from tests.conftest import git


def test_run_ids_are_uuids_sorted_by_time() -> None:
    ids = [new_run_id() for _ in range(50)]
    assert len(set(ids)) == 50
    for run_id in ids:
        assert uuid.UUID(run_id).version == 7
        assert is_run_id(run_id)
    # ids made in different milliseconds sort by creation time
    assert ids[0][:13] <= ids[-1][:13]
    assert not is_run_id("not-a-run")


def test_create_run_layout_and_exclude(repo: Path) -> None:
    paths = create_run(repo, "flows", "my-flow")
    assert paths.run_dir.parent == repo / "flows" / "my-flow" / "runs"
    assert is_run_id(paths.run_dir.name)
    assert paths.events.name == "events.jsonl" and paths.worker_log.name == "worker.log"
    (paths.worker_log).write_text("log")
    exclude = repo / ".git" / "info" / "exclude"
    assert "/flows/" in exclude.read_text().splitlines()
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    create_run(repo, "flows", "my-flow")
    assert exclude.read_text().count("/flows/") == 1  # idempotent


def test_exclude_from_a_subdirectory_and_outside_git(repo: Path, tmp_path: Path) -> None:
    sub = repo / "pkg"
    sub.mkdir()
    assert exclude_flow_dir(sub, ".runs")
    assert "/pkg/.runs/" in (repo / ".git" / "info" / "exclude").read_text()
    outside = tmp_path / "plain"
    outside.mkdir()
    assert exclude_flow_dir(outside, "flows") is False


def test_exclude_in_a_worktree_uses_the_common_dir(repo: Path, tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(worktree), "-b", "side")
    assert exclude_flow_dir(worktree, "flows")
    assert "/flows/" in (repo / ".git" / "info" / "exclude").read_text()


@pytest.mark.parametrize(
    ("kind", "result"),
    [
        (
            "implement",
            implement_result(
                "succeeded",
                summary="done",
                changed_files=["a.py"],
                tests_ran=["pytest"],
                tests_passed=True,
                checked_criteria=[0, 2],
            ),
        ),
        (
            "review",
            review_result(
                "succeeded",
                findings=[
                    {"severity": "error", "file": "a.py", "line": 3, "message": "bug"},
                    {"severity": "info", "file": None, "line": None, "message": "nit"},
                ],
                overall="revise",
                summary="one bug",
            ),
        ),
        (
            "research",
            research_result(
                "failed",
                summary="s",
                bullet_points=["x"],
                sources=[{"title": "RFC", "url": "https://example.com"}],
            ),
        ),
    ],
)
def test_result_shapes_validate(tmp_path: Path, kind: str, result: dict[str, object]) -> None:
    jsonschema.validate(result, RESULT_SCHEMAS[kind])
    paths = create_run(tmp_path, "flows", "f")
    write_result(paths, {**result, "run": {"runID": paths.run_dir.name}})
    on_disk = json.loads(paths.result.read_text())
    jsonschema.validate(on_disk, RESULT_SCHEMAS[kind])
    assert set(result) <= set(on_disk)


def test_review_finding_without_file_omits_the_key() -> None:
    result = review_result("succeeded", findings=[{"severity": "warn", "message": "m"}])
    assert result["findings"] == [{"severity": "warn", "message": "m"}]


def test_result_status_maps_supervisor_outcomes() -> None:
    assert result_status("succeeded") == "succeeded"
    assert result_status("canceled") == "canceled"
    for other in ("failed", "stuck", "timeout", "crashed"):
        assert result_status(other) == "failed"


def test_status_round_trip_and_lookup(tmp_path: Path) -> None:
    first = create_run(tmp_path, "flows", "a")
    second = create_run(tmp_path, "flows", "b")
    write_status(first, RunStatus(first.run_dir.name, "a", "builder", "running", 1.0, pid=5))
    status = read_status(first)
    assert status is not None and status.pid == 5 and not status.finished
    assert read_status(second) is None
    assert [p.run_dir for p in iter_runs(tmp_path, "flows")] == [first.run_dir, second.run_dir]
    assert [p.run_dir for p in iter_runs(tmp_path, "flows", "b")] == [second.run_dir]
    assert find_run(tmp_path, "flows", second.run_dir.name) == second
    assert find_run(tmp_path, "flows", "nope") is None


def test_atomic_write_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    write_json_atomic(target, {"a": 1})
    with pytest.raises(TypeError):
        write_json_atomic(target, {1j: 1})  # unserialisable: nothing is written
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


@pytest.mark.parametrize(
    "report",
    ["## Summary\n\nDone.\n", "## Summary\n\nDone.\n\nTESTS_PASSED: yes\n"],
)
def test_no_test_ran_is_ran_empty_and_passed_false(report: str) -> None:
    """Seed 001's shape is ``tests: {ran: [String], passed: Bool}``: ``passed`` has no ``?``
    (the seed marks optional fields so: ``file: String?``), so it can be neither null nor left
    out. "No test ran" is ``ran: []``; ``passed`` is then false (a claim of passing without a
    command is not recorded as a pass), and the card's history says ``tests: none``."""
    from gitflow_agents.runs import flow_result

    result = flow_result("implement", "succeeded", report_text=report)
    assert result["tests"] == {"ran": [], "passed": False}
    jsonschema.validate(result, RESULT_SCHEMAS["implement"])
    for unknown in (None, "unknown"):
        bad = {**result, "tests": {"ran": [], "passed": unknown}}
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, RESULT_SCHEMAS["implement"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**result, "tests": {"ran": []}}, RESULT_SCHEMAS["implement"])


@pytest.mark.parametrize("state", ["queued", "running", "killing"])
def test_a_live_state_is_not_finished(state: str) -> None:
    assert not RunStatus("r", "f", "a", state, 1.0).finished


@pytest.mark.parametrize(
    "state", ["succeeded", "failed", "stuck", "timeout", "canceled", "crashed"]
)
def test_an_ended_state_is_finished(state: str) -> None:
    assert RunStatus("r", "f", "a", state, 1.0).finished
