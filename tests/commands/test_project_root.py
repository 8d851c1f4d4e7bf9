"""Every command finds the project the one documented way (docs/configuration.md: the nearest
folder, from where it runs upwards, holding ``.flow/`` or ``.git``; ``config.files.project_root``):
a project whose ``.flow/`` is in a sub-folder of its repository (a monorepo's service) is read
from there by ``plan``, ``prompt``, ``spawn``, ``status`` and ``history`` alike, and refused by
the commands whose runs, branches and work trees are the whole repository's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git
from tests.helpers.chain import call, configure


@pytest.fixture
def service(repo: Path) -> Path:
    """``repo/svc`` holding the project (``.flow/`` with the fake agents, ``specs/``); no
    ``.flow/`` at the repository's top."""
    configure(repo)
    svc = repo / "svc"
    svc.mkdir()
    (repo / ".flow").rename(svc / ".flow")
    git(repo, "mv", "specs", "docs", "svc/")
    git(repo, "commit", "-q", "-m", "the project moves into svc/")
    return svc


def test_status_and_history_read_the_flows_folder_of_the_project(service: Path) -> None:
    """``history`` read the repository top's flows/ (and its .flow/), ``status`` the
    project's: a run recorded in the project was in one and not in the other."""
    spawned = call(service, "spawn", "builder", "--flow", "f", "--task", "t", "--quiet")
    assert spawned.returncode == 0, spawned.stdout + spawned.stderr
    (run_dir,) = (service / "flows" / "f" / "runs").iterdir()
    status = json.loads(call(service, "status", "--json").stdout)
    assert [row["runId"] for row in status if row["agent"] == "builder"] == [run_dir.name]
    history = call(service, "history", "--json")
    assert history.returncode == 0, history.stderr
    assert [row["runId"] for row in json.loads(history.stdout)] == [run_dir.name]
    assert not (service.parent / "flows").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ("run", "specs/feature.md", "--step", "1", "--quiet", "--implementer", "builder"),
        ("run", "specs/feature.md", "--all", "--quiet"),
        ("flow", "implement", "--plan", "specs/feature.md", "--step", "1", "--quiet"),
        ("gc", "--dry-run"),
        ("worktrees",),
    ],
)
def test_a_project_below_the_repository_top_is_refused_by_run_and_gc(
    service: Path, argv: tuple[str, ...]
) -> None:
    """``run`` read the top's .flow/ (none: the built-in defaults, other agents than the
    project's, which it would have started) while ``plan lint`` read the project's. The
    commands whose runs, branches and work trees are the whole repository's say so, exit 2,
    before any branch, work tree or record."""
    repo = service.parent
    branches = git(repo, "branch", "--list")
    result = call(service, *argv)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(
        f"gitflow-agents: error: {service / '.flow'}: a project in a sub-folder of the "
        f"repository {repo}; runs, their branches and work trees"
    ), result.stderr
    assert "Traceback" not in result.stderr
    assert git(repo, "branch", "--list") == branches
    assert git(repo, "worktree", "list").count("\n") == 1
    assert not (service / "flows").exists() and not (repo / "flows").exists()


def test_plan_lint_reads_the_projects_settings(service: Path) -> None:
    lint = call(service, "plan", "lint", "specs/feature.md")
    assert lint.returncode == 0, lint.stdout + lint.stderr
