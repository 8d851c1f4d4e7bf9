"""Two checkouts of one repository (the main one and a ``git worktree add``) share the step work
trees of the tool's cache (keyed by the common git dir): one run per step across both, and
``worktrees`` / ``gc`` of either see the other's live run. Real git, real fake-agent processes,
real locks."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git, running_agent, wait_until
from tests.helpers.chain import call, configure, release, results, run, start_run


@pytest.fixture
def linked(repo: Path, tmp_path: Path) -> Path:
    """A linked checkout of ``repo`` on a branch of its own, with the same (untracked) config."""
    configure(repo, hold=tmp_path / "hold")
    other = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(other), "-b", "side")
    shutil.copytree(repo / ".flow", other / ".flow")
    return other


@pytest.fixture
def live_run(repo: Path, linked: Path, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Step 1 run from the main checkout, its implementer held until the test releases it."""
    orchestrator = start_run(repo, "--step", "1")
    try:
        wait_until(lambda: running_agent(repo), 30)
        yield orchestrator
    finally:
        release(tmp_path / "hold", "implementer")
        release(tmp_path / "hold", "reviewer")
        orchestrator.wait(timeout=60)


def _trees(checkout: Path, *args: str) -> list[dict[str, Any]]:
    out = call(checkout, *args, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    return data["trees"] if isinstance(data, dict) else data


def test_a_second_checkout_is_refused_the_step_another_checkout_runs(
    repo: Path, linked: Path, live_run: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    tree = _trees(repo, "worktrees")[0]["path"]
    second = run(linked, "--step", "1", "--target", "main")
    assert second.returncode == 2, second.stderr + second.stdout
    assert "another checkout" in second.stderr and "held by run" in second.stderr
    assert results(linked) == [] and Path(tree).is_dir()
    release(tmp_path / "hold", "implementer")
    release(tmp_path / "hold", "reviewer")
    assert live_run.wait(timeout=60) == 0
    assert [r["chain"]["outcome"] for r in results(repo)] == ["approved"]


def test_worktrees_and_gc_of_a_linked_checkout_see_the_main_checkouts_live_run(
    repo: Path, linked: Path, live_run: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    (tree,) = _trees(linked, "worktrees")
    assert tree["live"] is True and tree["state"] == "running", tree
    for args in ((), ("--force",)):
        (kept,) = _trees(linked, "gc", *args)
        assert kept["removed"] is False and "live run" in kept["why"], kept
    assert Path(tree["path"]).is_dir()
    release(tmp_path / "hold", "implementer")
    release(tmp_path / "hold", "reviewer")
    assert live_run.wait(timeout=60) == 0
    # a rejected step's tree stays: its state is its record's in the main checkout, whichever
    # checkout asks
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text().replace('"reviewer", "approve"', '"reviewer", "revise"'))
    assert run(repo, "--step", "2", "--max-iterations", "1").returncode == 1
    (mine,), (theirs,) = _trees(repo, "worktrees"), _trees(linked, "worktrees")
    assert mine["state"] == theirs["state"] == "rejected" and theirs["live"] is False
    assert theirs["runId"] == mine["runId"] is not None
