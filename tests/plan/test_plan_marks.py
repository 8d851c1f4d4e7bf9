"""Status marks that merge: each branch marks its own step ✅ (``set_step_status``, as a step's
mark commit does) and real ``git merge`` takes the branches together without a conflict, also
for steps whose headers are adjacent (docs/spec-plans.md, "Status marks that merge")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitflow_agents.plan import parse_plan, parse_plan_text, set_step_status
from gitflow_agents.plan.model import DONE
from tests.conftest import git, init_repo
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.pipeline import checkout, ready, run_step, seed_origin
from tests.helpers.step_pr import env
from tests.standin_pulls import play_auto_merge

__all__ = ["env", "gh"]

ADJACENT = (
    "# Plan\n\n## Implementation Steps\n\n"
    "### Status: | Step 1: schema\n\nDepends on: none\n\n"
    "### Status: | Step 2: api\n"
    "### Status: | Step 3: web\n"
    "### Status: | Step 4: cli\n"
    "### Status: | Step 5: docs\n\nDepends on: 1\n"
)


def branches(tmp_path: Path, text: str, steps: list[int]) -> Path:
    """A repository whose main has the plan ``text`` and one branch per step of ``steps``,
    each with that step marked ✅ and committed (what a step's mark commit does)."""
    repo = init_repo(tmp_path / "repo")
    (repo / "plan.md").write_text(text, encoding="utf-8")
    git(repo, "add", "plan.md")
    git(repo, "commit", "-q", "-m", "plan")
    for step in steps:
        git(repo, "switch", "-q", "-c", f"step-{step}", "main")
        set_step_status(repo / "plan.md", step, DONE)
        git(repo, "commit", "-q", "-am", f"Mark step {step} done")
    git(repo, "switch", "-q", "main")
    return repo


def merge_all(repo: Path, order: tuple[int, ...]) -> subprocess.CompletedProcess[str]:
    """Merge the step branches into main one after the other (as their pull requests merge);
    the first merge that fails, else the last."""
    proc = subprocess.CompletedProcess[str]([], 0, "", "")
    for step in order:
        proc = subprocess.run(
            ["git", "-C", str(repo), "merge", "-q", "--no-edit", f"step-{step}"],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            return proc
    return proc


def statuses(path: Path) -> dict[int, str]:
    return {s.number: s.status for s in parse_plan(path).steps}


@pytest.mark.parametrize("order", [(2, 3), (3, 2)])
def test_two_adjacent_headers_merge_in_either_order(tmp_path: Path, order: tuple[int, ...]) -> None:
    repo = branches(tmp_path, ADJACENT, [2, 3])
    proc = merge_all(repo, order)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert statuses(repo / "plan.md") == {1: "", 2: DONE, 3: DONE, 4: "", 5: ""}


ORDERS = [(1, 2, 3, 4, 5), (5, 4, 3, 2, 1), (3, 1, 5, 2, 4), (2, 4, 1, 3, 5), (4, 2, 5, 3, 1)]


def test_the_union_of_many_adjacent_steps_merges_in_any_order(tmp_path: Path) -> None:
    repo = branches(tmp_path, ADJACENT, [1, 2, 3, 4, 5])
    start = git(repo, "rev-parse", "main").strip()
    for order in ORDERS:
        git(repo, "reset", "-q", "--hard", start)
        proc = merge_all(repo, order)
        assert proc.returncode == 0, (order, proc.stdout + proc.stderr)
        assert set(statuses(repo / "plan.md").values()) == {DONE}, order


def test_a_later_wave_merges_on_top_of_marked_siblings(tmp_path: Path) -> None:
    """Steps 2 and 3 merged; step 4, branched from that target, merges with step 5's branch
    made from the same target."""
    repo = branches(tmp_path, ADJACENT, [2, 3])
    assert merge_all(repo, (2, 3)).returncode == 0
    for step in (4, 5):
        git(repo, "switch", "-q", "-c", f"step-{step}", "main")
        set_step_status(repo / "plan.md", step, DONE)
        git(repo, "commit", "-q", "-am", f"Mark step {step} done")
        git(repo, "switch", "-q", "main")
    proc = merge_all(repo, (5, 4))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert statuses(repo / "plan.md") == {1: "", 2: DONE, 3: DONE, 4: DONE, 5: DONE}


def test_the_mark_line_is_under_the_header_and_clearing_it_gives_the_bytes_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plan.md"
    path.write_bytes(ADJACENT.replace("\n", "\r\n").encode())
    original = path.read_bytes()
    set_step_status(path, 3, DONE)
    assert b"### Status: | Step 3: web\r\nStatus: \xe2\x9c\x85\r\n### Status: | Step 4" in (
        path.read_bytes()
    )
    set_step_status(path, 3, DONE)  # a second run changes nothing
    set_step_status(path, 3, "❌")
    assert statuses(path)[3] == "❌"
    set_step_status(path, 3, "")
    assert path.read_bytes() == original


def test_a_header_after_body_text_keeps_its_status_on_the_header(tmp_path: Path) -> None:
    path = tmp_path / "plan.md"
    path.write_text(ADJACENT, encoding="utf-8")
    set_step_status(path, 2, DONE)
    set_step_status(path, 1, DONE)
    text = path.read_text(encoding="utf-8")
    assert "### Status: ✅ | Step 1: schema\n" in text
    assert "### Status: ✅ | Step 2: api\n### Status: | Step 3: web\n" in text


def test_the_last_line_without_a_newline(tmp_path: Path) -> None:
    path = tmp_path / "plan.md"
    head = ADJACENT.split("\n\nDepends on: 1\n")[0]
    path.write_text(head + "\n### Status: | Step 6: end", encoding="utf-8")
    set_step_status(path, 6, DONE)
    assert path.read_text(encoding="utf-8").endswith("### Status: | Step 6: end\nStatus: ✅")
    assert statuses(path)[6] == DONE


def test_old_marks_read_as_before() -> None:
    """Statuses written on adjacent headers before mark lines existed are read from there."""
    text = ADJACENT.replace("Status: | Step 3", "Status: ✅ | Step 3").replace(
        "Status: | Step 4", "Status: 🚧 | Step 4"
    )
    steps = parse_plan_text(text, Path("p.md")).steps
    assert [s.status for s in steps] == ["", "", DONE, "🚧", ""]


def test_header_marks_of_adjacent_steps_conflict_in_git(tmp_path: Path) -> None:
    """Why mark lines exist: the same two marks written on the headers conflict."""
    repo = init_repo(tmp_path / "repo")
    (repo / "plan.md").write_text(ADJACENT, encoding="utf-8")
    git(repo, "add", "plan.md")
    git(repo, "commit", "-q", "-m", "plan")
    for step in (2, 3):
        git(repo, "switch", "-q", "-c", f"step-{step}", "main")
        text = ADJACENT.replace(f"Status: | Step {step}", f"Status: ✅ | Step {step}")
        (repo / "plan.md").write_text(text, encoding="utf-8")
        git(repo, "commit", "-q", "-am", f"step {step} on its header")
        git(repo, "switch", "-q", "main")
    assert merge_all(repo, (2, 3)).returncode != 0


PIPELINE_PLAN = (
    "# Plan: feature\n\n## Implementation Steps\n\n"
    "### Status: ✅ | Step 1: step 1\n\nCreate the schema.\n\n"
    "### Status: | Step 2: step 2\n"
    "### Status: | Step 3: step 3\n\nDepends on: 1\n\n"
    "### Status: | Step 4: step 4\n\nDepends on: 2, 3\n"
)


def test_sibling_pull_requests_with_adjacent_headers_both_merge(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """The pipeline of docs/github.md with steps 2 and 3 on adjacent headers: both run from
    the same target, GitHub merges both pull requests (a real 3-way merge for the second), and
    the target's plan has both ✅, so step 4 is ready."""
    seed_origin(tmp_path, gh, done=frozenset({1}))
    editor = checkout(tmp_path, "editor")
    (editor / "specs" / "feature.md").write_text(PIPELINE_PLAN, encoding="utf-8")
    git(editor, "commit", "-q", "-am", "steps 2 and 3 on adjacent headers")
    git(editor, "push", "-q", "origin", "HEAD:main")
    assert ready(tmp_path, "ready-2") == [2, 3]
    for step in (2, 3):
        out = run_step(tmp_path, f"step-{step}", step, "--auto-merge", "squash")
        assert out.returncode == 0, out.stdout + out.stderr
    events = play_auto_merge(gh)
    assert len(events) == 2  # the second merged on top of the first without a conflict
    plan = git(tmp_path / "origin.git", "show", "main:specs/feature.md")
    assert {s.number: s.status for s in parse_plan_text(plan, Path("feature.md")).steps} == {
        1: DONE,
        2: DONE,
        3: DONE,
        4: "",
    }
    assert ready(tmp_path, "ready-3") == [4]


def test_a_status_line_in_the_body_of_a_header_with_a_status_stays_body(tmp_path: Path) -> None:
    """A step that is not stacked keeps reading and writing its header; a ``Status: …`` line a
    person wrote under it is body text and stays as it is."""
    path = tmp_path / "plan.md"
    text = ADJACENT.replace(
        "Status: | Step 1: schema\n", "Status: ✅ | Step 1: schema\nStatus: x\n"
    )
    path.write_text(text, encoding="utf-8")
    assert statuses(path)[1] == DONE
    set_step_status(path, 1, "❌")
    assert "### Status: ❌ | Step 1: schema\nStatus: x\n" in path.read_text(encoding="utf-8")


def test_a_stacked_header_under_a_siblings_mark_line_reads_its_own_mark() -> None:
    """Step 3's mark merged under its header; step 4's header (a status a person wrote) now
    sits under that mark line, still stacked: its own mark line is its status."""
    text = ADJACENT.replace(
        "### Status: | Step 3: web\n### Status: | Step 4: cli\n",
        "### Status: | Step 3: web\nStatus: ✅\n### Status: ❌ | Step 4: cli\nStatus: ✅\n",
    )
    steps = parse_plan_text(text, Path("p.md")).steps
    assert [s.status for s in steps] == ["", "", DONE, DONE, ""]
