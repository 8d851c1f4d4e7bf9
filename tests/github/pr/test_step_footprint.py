"""``run PLAN --step N --pr`` waits, as ``plan matrix --ready`` does, while its footprint
(``Touches:``) overlaps that of a started step (its branch on origin): exit 0 with one line
in ``--ready``'s words, no claim, no agent; ``--force`` runs it anyway (issue 22)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.step_pr import env, implementer_runs, origin_sha, run_pr, setup_repo

__all__ = ["env", "gh"]

PLAN = """\
# Plan: Feature

## Implementation Steps

### Status: ❌ | Step 1: Add the module
Depends on: none
Touches: src/**

Add src/new_module.py.

### Status: ❌ | Step 2: Polish
Depends on: none
Touches: src/new_module.py, docs/

Polish it.

### Status: ❌ | Step 3: Elsewhere
Depends on: none
Touches: web/**

Elsewhere.
"""


def plan_with_touches(tmp_path: Path, gh: GitHubStandIn) -> Path:
    repo = setup_repo(tmp_path, gh)
    (repo / "specs" / "feature.md").write_text(PLAN)
    git(repo, "commit", "-q", "-am", "footprints")
    git(repo, "push", "-q", "origin", "HEAD:main")
    return repo


def test_a_step_whose_footprint_overlaps_a_started_step_waits_and_force_runs_it(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = plan_with_touches(tmp_path, gh)
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/agents/feature/step-1")  # started
    for _ in range(2):  # the second run says the same, and still claims nothing
        out = run_pr(repo, "--step", "2")
        assert out.returncode == 0, out.stdout + out.stderr
        assert "step 2 waits: touches src/new_module.py like 1 (started): src/**" in out.stdout
        assert origin_sha(gh, "refs/heads/agents/feature/step-2") is None
        assert implementer_runs(repo) == 0 and gh.state.pulls == {}
    other = run_pr(repo, "--step", "3")  # a footprint of its own: it runs
    assert other.returncode == 0 and "waits" not in other.stdout, other.stdout + other.stderr
    forced = run_pr(repo, "--step", "2", "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert origin_sha(gh, "refs/heads/agents/feature/step-2") is not None
    assert len(gh.state.pulls) == 2


def test_a_started_step_that_is_done_on_the_target_does_not_hold_a_step_back(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = plan_with_touches(tmp_path, gh)
    path = repo / "specs" / "feature.md"
    path.write_text(path.read_text().replace("❌ | Step 1", "✅ | Step 1"))
    git(repo, "commit", "-q", "-am", "step 1 merged")
    git(repo, "push", "-q", "origin", "HEAD:main", "HEAD:refs/heads/agents/feature/step-1")
    out = run_pr(repo, "--step", "2")
    assert out.returncode == 0 and "waits" not in out.stdout, out.stdout + out.stderr
    assert len(gh.state.pulls) == 1
