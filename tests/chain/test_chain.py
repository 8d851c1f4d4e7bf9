"""Full chains on real temporary repositories with fake agents (tests/fakes/fake_flow_agent).

The commands run in this process (``cli.main``, what the console script calls): real git and
real fake-agent processes, without a Python start-up per command. One test of each exit code 1,
2 and 3 runs the console script as a subprocess (``run_proc``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.conftest import CliResult, git, init_repo, isolate_home
from tests.helpers.chain import (
    FAKE,
    MARKER,
    PLAN,
    RUN_ARGS,
    _agent,
    call,
    committed_status,
    configure,
    main_sha,
    note,
    results,
    run,
    run_proc,
    step_status,
)
from tests.helpers.step_pr import paid

# --- a step approved the first time: one chain, one test per thing it did -------------------


class Approved(NamedTuple):
    repo: Path
    before: str  # main before the run
    out: CliResult

    @property
    def result(self) -> dict[str, Any]:
        return results(self.repo)[0]

    @property
    def chain(self) -> dict[str, Any]:
        return self.result["chain"]


@pytest.fixture(scope="module")
def approved(tmp_path_factory: pytest.TempPathFactory) -> Approved:
    """``run --step 1`` with a reviewer that approves the first time, run once for the tests
    below, which only read what it left (result.json, commits, notes, files)."""
    base = tmp_path_factory.mktemp("approved")
    with pytest.MonkeyPatch.context() as patch:
        isolate_home(base / "home", patch)
        repo = init_repo(base / "repo")
        configure(repo)
        before = main_sha(repo)
        return Approved(repo, before, run(repo, "--step", "1"))


def test_approved_first_time_exits_0_after_one_review(approved: Approved) -> None:
    out, repo = approved.out, approved.repo
    assert out.returncode == 0, out.stderr + out.stdout
    assert "approved" in out.stdout
    [result] = results(repo)
    chain = result["chain"]
    assert chain["outcome"] == "approved" and chain["iterations"] == 1 and chain["fixes"] == 0
    assert [a["kind"] for a in chain["agents"]] == ["implement", "review"]
    assert result["status"] == "succeeded"


def test_cancel_of_the_ended_step_run_says_it_ended_and_writes_nothing(
    approved: Approved,
) -> None:
    """`cancel STEP_RUN` said "canceled run … (None)" and left a `cancel` file in the approved
    step run's folder; it says the run ended, as for an agent run."""
    run_id = approved.result["run"]["runID"]
    folder = next(approved.repo.glob(f"flows/*/runs/{run_id}"))
    before = sorted(p.name for p in folder.iterdir())
    out = call(approved.repo, "cancel", run_id)
    assert out.returncode == 0 and out.stdout.strip() == f"run {run_id} already ended: approved"
    assert sorted(p.name for p in folder.iterdir()) == before


def test_approved_step_is_fast_forwarded_into_the_target(approved: Approved) -> None:
    """The reviewed commit, then the commit that marks the step done in the plan, so main
    itself has the ✅ committed."""
    repo, chain = approved.repo, approved.chain
    assert main_sha(repo) == chain["merged"]["sha"] != approved.before
    assert git(repo, "rev-parse", "main^").strip() == chain["headSha"]
    assert chain["merged"]["kind"] == "fast-forward"


def test_the_reviewed_commit_has_the_step_title_and_the_run_trailer(approved: Approved) -> None:
    body = git(approved.repo, "log", "-1", "--format=%B", "main^")
    assert "Gitflow-Agents-Run: " in body and "[feature] Step 1: Add the module" in body


def test_the_mark_done_commit_changes_only_the_plan(approved: Approved) -> None:
    repo = approved.repo
    mark = git(repo, "log", "-1", "--format=%B", "main")
    assert (
        mark.startswith("[feature] Mark step 1 done")
        and f"Gitflow-Agents-Run: {approved.result['run']['runID']}" in mark
    )
    assert git(repo, "diff", "--name-only", "main^", "main").split() == ["specs/feature.md"]


def test_the_step_is_done_in_the_target_and_in_the_users_copy(approved: Approved) -> None:
    repo = approved.repo
    assert committed_status(repo, "main", 1) == "✅" and committed_status(repo, "main", 2) == "❌"
    assert step_status(repo, 1) == "✅" and step_status(repo, 2) == "❌"
    assert git(repo, "status", "--porcelain", "specs") == ""  # reached the user's tree by the ff


def test_the_approval_note_is_on_the_reviewed_commit_and_on_the_tip(approved: Approved) -> None:
    repo, chain = approved.repo, approved.chain
    recorded = note(repo, chain["headSha"])
    assert recorded is not None and recorded["verdict"] == "approved"
    assert recorded["tree_sha"] == git(repo, "rev-parse", "main^^{tree}").strip()
    carried = note(repo, main_sha(repo))  # the gate hook checks the pushed tip
    assert carried is not None and carried["verdict"] == "approved"
    assert carried["reviewed_sha"] == main_sha(repo) and chain["headSha"][:12] in carried["agent"]


def test_git_stats_are_the_tools_own_and_leave_run_artifacts_out(approved: Approved) -> None:
    """New, binary and renamed files; no run artifacts (flows/) in the stats or in main."""
    files = {f["path"]: f for f in approved.result["gitStats"]["files"]}
    assert set(files) == {"src/new_module.py", "README.md", "logo.png", "docs/new.md"}
    assert files["src/new_module.py"]["status"] == "A"
    assert files["logo.png"]["binary"] is True
    assert (
        files["docs/new.md"]["status"] == "R" and files["docs/new.md"]["oldPath"] == "docs/old.md"
    )
    assert not any(p.startswith("flows") for p in files)
    assert "flows/artifact.log" not in git(approved.repo, "ls-tree", "-r", "--name-only", "main")


def test_the_implementers_report_gets_the_git_statistics(approved: Approved) -> None:
    report = (approved.repo / "flows/feature/agents/step-01-builder/report.complete.md").read_text()
    assert (
        MARKER not in report
        and "`src/new_module.py`" in report
        and "renamed from `docs/old.md`" in report
    )


def test_the_history_line_names_the_outcome_and_the_stats(approved: Approved) -> None:
    line = approved.result["run"]["historyLine"]
    assert "1 file" not in line and "4 files changed" in line
    history = (approved.repo / "flows/feature/history.md").read_text()
    assert "succeeded (implement)" in history and "approved after 1 review" in history


def test_result_json_lists_the_changed_files_and_the_tests_run(approved: Approved) -> None:
    result = approved.result
    assert result["changedFiles"] and result["tests"] == {"ran": ["pytest"], "passed": True}


def test_the_step_work_tree_is_removed_after_the_merge_the_branch_stays(
    approved: Approved,
) -> None:
    repo = approved.repo
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert git(repo, "branch", "--list", "agents/feature/step-1").strip()


# --- other chains -----------------------------------------------------------------------------


def test_revise_then_approve_ends_with_a_review(repo: Path) -> None:
    configure(repo, reviewer="until-fixed")
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    [result] = results(repo)
    chain = result["chain"]
    kinds = [a["kind"] for a in chain["agents"]]
    assert kinds == ["implement", "review", "fix", "review"]
    assert chain["iterations"] == 2 and chain["fixes"] == 1 and chain["outcome"] == "approved"
    assert [r["approved"] for r in chain["rounds"]] == [False, True]
    assert step_status(repo, 1) == "✅"
    assert (repo / "FIXED.txt").exists()  # merged into main, checked out in the user's tree
    assert note(repo, chain["rounds"][0]["reviewedSha"])["verdict"] == "revise"  # type: ignore[index]
    assert note(repo, main_sha(repo))["verdict"] == "approved"  # type: ignore[index]
    fixer_prompt = (repo / "flows/feature/agents/step-01-fixer-1/system_prompt.md").read_text()
    assert "flows/feature/agents/step-01-reviewer-1/report.complete.md" in fixer_prompt
    reviewer_prompt = (
        repo / "flows/feature/agents/step-01-reviewer-2/system_prompt.md"
    ).read_text()
    assert "REVIEW_RESULT: APPROVED" in reviewer_prompt
    assert "step-01-fixer-1/report.complete.md" in reviewer_prompt


def test_never_approves_fails_at_the_limit_and_merges_nothing(repo: Path) -> None:
    configure(repo, reviewer="revise")
    before = main_sha(repo)
    out = run_proc(repo, "--step", "1", "--max-iterations", "2")
    assert out.returncode == 1, out.stderr + out.stdout
    [result] = results(repo)
    chain = result["chain"]
    assert [a["kind"] for a in chain["agents"]] == ["implement", "review", "fix", "review"]
    assert chain["outcome"] == "rejected" and result["status"] == "failed"
    assert main_sha(repo) == before and chain["merged"] is None
    assert step_status(repo, 1) == "❌"
    assert "not approved after 2 review(s)" in chain["reason"]
    assert "failed (implement)" in result["run"]["historyLine"]
    assert committed_status(repo, "main", 1) == "❌"
    assert committed_status(repo, "agents/feature/step-1", 1) == "❌"


@pytest.mark.parametrize("mode", ["bold", "fenced"])
def test_decorated_or_fenced_marker_is_not_approved(repo: Path, mode: str) -> None:
    configure(repo, reviewer=mode)
    before = main_sha(repo)
    out = run(repo, "--step", "1", "--max-iterations", "1")
    assert out.returncode == 1, out.stderr + out.stdout
    [result] = results(repo)
    reasons = result["chain"]["rounds"][0]["reasons"]
    assert reasons and main_sha(repo) == before
    assert any("REVIEW_RESULT" in r or "verdict" in r for r in reasons), reasons
    assert [a["kind"] for a in result["chain"]["agents"]] == ["implement", "review"]


def test_a_submodule_the_implementer_adds_counts_as_a_changed_file(repo: Path) -> None:
    """The commit records a submodule (``git submodule add``) as a gitlink: the step's record,
    its history and the report count it as git does, one file, named. (A nested repository no
    ``.gitmodules`` registers is left out of the commit: tests/chain/test_nested_repositories.py.)"""
    configure(repo, implementer="submodule")
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    assert git(repo, "ls-tree", "main^", "vendor-lib").startswith("160000 commit ")
    assert "[6 files changed, +7 -0, 4 new, 1 binary, 1 commit]" in out.stdout
    [result] = results(repo)
    data = result["gitStats"]
    [stat] = [f for f in data["files"] if f["path"] == "vendor-lib"]
    assert stat["gitlink"] is True and (stat["added"], stat["deleted"]) == (1, 0)
    assert {".gitmodules", "vendor-lib"} <= set(result["changedFiles"])
    assert (
        "; git: 6 files changed, +7 -0, 4 new, 1 binary, 1 commit" in result["run"]["historyLine"]
    )
    report = (repo / "flows/feature/agents/step-01-builder/report.complete.md").read_text()
    assert "| `vendor-lib` | 1 | 0 | new, nested repository (gitlink) |" in report


def test_crashing_implementer_exits_3_and_still_writes_the_record(repo: Path) -> None:
    configure(repo, implementer="crash")
    before = main_sha(repo)
    out = run_proc(repo, "--step", "1")
    assert out.returncode == 3, out.stderr + out.stdout
    [result] = results(repo)
    assert result["chain"]["outcome"] == "failed" and result["status"] == "failed"
    assert result["chain"]["agents"][0]["status"] in ("failed", "crashed")
    assert " failed (implement);" in result["run"]["historyLine"]
    assert main_sha(repo) == before and step_status(repo, 1) == "❌"
    agent_result = Path(result["chain"]["agents"][0]["report"]).parent
    assert agent_result.name == "step-01-builder"


def test_crashing_reviewer_exits_3(repo: Path) -> None:
    configure(repo, reviewer="crash")
    before = main_sha(repo)
    out = run(repo, "--step", "1")
    assert out.returncode == 3, out.stderr + out.stdout
    assert main_sha(repo) == before
    assert results(repo)[0]["chain"]["agents"][-1]["agentId"] == "step-01-reviewer-1"
    assert " failed (review);" in results(repo)[0]["run"]["historyLine"]


def test_a_crashing_reviewer_leaves_the_one_beside_it_in_the_steps_record(repo: Path) -> None:
    """Two reviewers at once, the first crashes: exit 3, and the step's record lists both
    reviewers' runs (the second ran to its end and spent what it spent: the step's sum and
    `history` count it), not only the one that failed."""
    configure(repo, reviewer="crash", extra_reviewers={"second": "approve"})
    out = run(repo, "--step", "1", "--reviewers", "reviewer,second")
    assert out.returncode == 3, out.stderr + out.stdout
    agents = [(a["agentId"], a["status"]) for a in results(repo)[0]["chain"]["agents"]]
    assert agents[-2:] == [("step-01-reviewer-1", "failed"), ("step-01-second-1", "succeeded")]


def test_parallel_reviewers_one_revises_fixer_gets_both_reports(repo: Path) -> None:
    configure(repo, reviewer="approve", extra_reviewers={"security": "until-fixed"})
    out = run(repo, "--step", "1", "--reviewers", "reviewer,security")
    assert out.returncode == 0, out.stderr + out.stdout
    [result] = results(repo)
    chain = result["chain"]
    assert [a["agentId"] for a in chain["agents"]] == [
        "step-01-builder",
        "step-01-reviewer-1",
        "step-01-security-1",
        "step-01-fixer-1",
        "step-01-reviewer-2",
        "step-01-security-2",
    ]
    first = chain["rounds"][0]
    assert not first["approved"]
    assert [r["overall"] for r in first["reviewers"]] == ["approve", "revise"]
    prompt = (repo / "flows/feature/agents/step-01-fixer-1/system_prompt.md").read_text()
    assert "step-01-reviewer-1/report.complete.md" in prompt
    assert "step-01-security-1/report.complete.md" in prompt


STAMP = """\
import subprocess, sys, time
from pathlib import Path

out, count = Path(sys.argv[1]), int(sys.argv[2])
out.write_text(f"{time.time()!r}\\n")
# Wait until every reviewer has started (10 s at most, a bound, not a duration): run one after
# the other, the first waits in vain and ends before the next one starts.
deadline = time.monotonic() + 10
while len(list(out.parent.glob("*.times"))) < count and time.monotonic() < deadline:
    time.sleep(0.01)
code = subprocess.call(sys.argv[3:])
out.write_text(out.read_text() + f"{time.time()!r}\\n")
sys.exit(code)
"""


def test_parallel_reviewers_run_concurrently(repo: Path, tmp_path: Path) -> None:
    """Each reviewer process records when it started and ended (wall clock, outside the tool):
    all four must have been running at one moment. Run one after the other, the last would
    start only after the first had ended."""
    configure(repo)
    stamp = tmp_path / "stamp.py"
    stamp.write_text(STAMP)
    names = ["r1", "r2", "r3", "r4"]
    text = (repo / ".flow" / "base.yaml").read_text()
    for name in names:
        argv = [sys.executable, str(stamp), str(tmp_path / f"{name}.times"), str(len(names))]
        argv += [sys.executable, str(FAKE), "reviewer", "approve"]
        text += f"  {name}:\n    adapter: command\n    command: {json.dumps(argv)}\n"
    (repo / ".flow" / "base.yaml").write_text(text)
    out = run(repo, "--step", "1", "--reviewers", ",".join(names))
    assert out.returncode == 0, out.stderr + out.stdout
    reviews = [a for a in results(repo)[0]["chain"]["agents"] if a["kind"] == "review"]
    assert len(reviews) == 4
    spans = [tuple(map(float, (tmp_path / f"{n}.times").read_text().split())) for n in names]
    assert all(len(span) == 2 for span in spans), spans
    latest_start = max(start for start, _ in spans)
    earliest_end = min(end for _, end in spans)
    assert latest_start < earliest_end, spans  # every interval overlaps every other


def test_resume_reuses_the_completed_implementer(repo: Path) -> None:
    configure(repo, reviewer="crash")
    assert run(repo, "--step", "1").returncode == 3
    builder_dir = repo / "flows/feature/agents/step-01-builder"
    first_commit = json.loads((builder_dir / "chain.json").read_text())["endSha"]
    configure_reviewer(repo, "approve")
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    second = results(repo)[-1]["chain"]
    assert second["agents"][0]["reused"] is True and second["agents"][0]["endSha"] == first_commit
    assert second["agents"][1]["reused"] is False
    assert git(repo, "rev-parse", "main^").strip() == first_commit  # then "Mark step 1 done"
    # the crashed reviewer's report was set aside, not lost
    assert list((repo / "flows/feature/agents/step-01-reviewer-1/previous").iterdir())


def test_a_re_run_does_not_count_again_what_it_reused(repo: Path) -> None:
    """A step run's spend is what its agents spent; an agent run it reused was run and counted
    by the step run before it (which left a record): `history` counts it once, in that one,
    and the plan's sum is not doubled."""
    configure(repo, reviewer="crash")
    config = repo / ".flow" / "base.yaml"
    builder = _agent("implementer", "edit")
    config.write_text(
        config.read_text().replace(
            builder,
            f"    adapter: command\n    command: {json.dumps(paid('implementer', 'edit'))}\n",
        )
    )
    assert run(repo, "--step", "1").returncode == 3
    configure_reviewer(repo, "approve")
    assert run(repo, "--step", "1").returncode == 0
    assert [a["reused"] for a in results(repo)[-1]["chain"]["agents"]] == [True, False]
    shown = subprocess.run(
        [sys.executable, "-m", "gitflow_agents", "history", "--json"],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    first, second = json.loads(shown.stdout)
    assert (first["costUsd"], first["inputTokens"]) == (0.01, 1000)  # its builder (crash: ≥)
    assert second["costUsd"] is None and second["inputTokens"] is None  # its reviewer said none
    table = subprocess.run(
        [sys.executable, "-m", "gitflow_agents", "history"],
        cwd=repo, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "2 step runs, tokens ≥ 1,000/200, cost ≥ $0.0100" in table


def configure_reviewer(repo: Path, mode: str) -> None:
    config = repo / ".flow" / "base.yaml"
    lines = config.read_text().splitlines()
    index = lines.index("  reviewer:")
    lines[index + 2] = lines[index + 2].replace('"crash"', f'"{mode}"')
    config.write_text("\n".join(lines) + "\n")


def test_dirty_user_worktree_is_untouched(repo: Path) -> None:
    configure(repo, reviewer="until-fixed")
    (repo / "docs" / "keep.md").write_text("committed\n")
    git(repo, "add", "docs/keep.md")
    git(repo, "commit", "-q", "-m", "keep")
    (repo / "notes.txt").write_text("my uncommitted file\n")
    (repo / "docs" / "keep.md").write_text("my uncommitted edit\n")
    git(repo, "add", "docs/keep.md")  # staged, even
    staged_before = git(repo, "diff", "--cached")
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    assert (repo / "notes.txt").read_text() == "my uncommitted file\n"
    assert (repo / "docs" / "keep.md").read_text() == "my uncommitted edit\n"
    assert git(repo, "diff", "--cached") == staged_before
    # the agents' work reached main and the user's checkout, around the user's changes
    assert (repo / "src" / "new_module.py").exists()
    status = git(repo, "status", "--porcelain").splitlines()
    assert "?? notes.txt" in status and not any("flows" in s for s in status)


def _user_files(tree: Path) -> dict[str, str]:
    """Every file of a work tree outside .git, with its content (what must survive)."""
    return {
        str(p.relative_to(tree)): p.read_text(errors="replace")
        for p in sorted(tree.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(tree).parts[:1]
    }


def _dirty_user_tree(repo: Path, branch: str) -> dict[str, str]:
    """Check ``branch`` out in the user's own tree and leave uncommitted work in it."""
    git(repo, "checkout", "-q", "-b", branch)
    (repo / "notes.txt").write_text("mine, untracked\n")
    (repo / "README.md").write_text("my uncommitted edit\n")
    (repo / "specs" / "draft.md").write_text("an uncommitted draft\n")
    return _user_files(repo)


def test_flow_on_the_branch_checked_out_in_the_users_tree_refuses_and_touches_nothing(
    repo: Path,
) -> None:
    configure(repo)  # .flow/ stays uncommitted, as after `gitflow-agents init`
    before = _dirty_user_tree(repo, "feat")
    head = git(repo, "rev-parse", "HEAD")
    out = flow(repo, "implement", "--branch", "feat", "--task", "do it")
    assert out.returncode == 2, out.stderr + out.stdout
    assert "feat is checked out in the work tree" in out.stderr
    assert f"git -C {repo} switch main" in out.stderr
    assert _user_files(repo) == before  # .flow/, specs/, notes.txt and the edit all intact
    assert git(repo, "rev-parse", "HEAD") == head
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    # the repro of the report: no --task, so the command would also fail with a usage error
    out = flow(repo, "implement", "--branch", "feat")
    assert out.returncode == 2 and _user_files(repo) == before


def test_run_on_a_step_branch_checked_out_in_the_users_tree_refuses(repo: Path) -> None:
    configure(repo)
    before = _dirty_user_tree(repo, "work-1")
    out = run(repo, "--step", "1", "--branch-pattern", "work-{step}")
    assert out.returncode == 2, out.stderr + out.stdout
    assert "work-1 is checked out in the work tree" in out.stderr
    assert _user_files(repo) == before
    assert not (repo / "flows").exists()  # refused before anything was written
    assert git(repo, "rev-parse", "work-1") == git(repo, "rev-parse", "main")


def test_a_branch_in_a_user_made_worktree_is_refused_too(repo: Path, tmp_path: Path) -> None:
    configure(repo)
    mine = tmp_path / "my-tree"
    git(repo, "worktree", "add", "-q", "-b", "agents/feature/step-1", str(mine))
    (mine / "wip.txt").write_text("work in progress\n")
    (mine / "README.md").write_text("edited in my worktree\n")
    before = _user_files(mine)
    out = run(repo, "--step", "1")
    assert out.returncode == 2, out.stderr + out.stdout
    assert str(mine) in out.stderr and "agents/feature/step-1" in out.stderr
    assert _user_files(mine) == before and mine.exists()
    flow_out = flow(repo, "implement", "--plan", "specs/feature.md", "--step", "1")
    assert flow_out.returncode == 2 and _user_files(mine) == before


def test_merge_refused_when_it_would_overwrite_uncommitted_changes(repo: Path) -> None:
    configure(repo)
    before = main_sha(repo)
    (repo / "README.md").write_text("my uncommitted edit\n")  # the implementer changes it too
    out = run(repo, "--step", "1")
    assert out.returncode == 2, out.stderr + out.stdout
    assert "cannot update main" in out.stdout and "merge was refused" in out.stdout
    assert (repo / "README.md").read_text() == "my uncommitted edit\n"
    assert main_sha(repo) == before and step_status(repo, 1) == "❌"
    [result] = results(repo)
    assert result["chain"]["merged"] is None and result["chain"]["rounds"][0]["approved"]
    line = result["run"]["historyLine"]
    assert " failed (merge refused);" in line and "(implement)" not in line
    # the approval is not lost: ✅ is committed on the step branch, ready for the merge
    assert committed_status(repo, "agents/feature/step-1", 1) == "✅"
    assert committed_status(repo, "main", 1) == "❌"
    # once the user's edit is out of the way, running again reuses both agents and merges
    git(repo, "checkout", "README.md")
    again = run(repo, "--step", "1")
    assert again.returncode == 0, again.stderr + again.stdout
    second = results(repo)[-1]["chain"]
    assert [a["reused"] for a in second["agents"]] == [True, True]
    assert committed_status(repo, "main", 1) == "✅" and step_status(repo, 1) == "✅"
    assert git(repo, "rev-list", "--count", f"{before}..main").strip() == "2"


def test_local_edits_to_the_plan_refuse_the_merge_and_keep_them(repo: Path) -> None:
    configure(repo)
    before = main_sha(repo)
    plan = repo / "specs" / "feature.md"
    edited = plan.read_text() + "\nMy notes on the plan.\n"
    plan.write_text(edited)
    out = run(repo, "--step", "1")
    assert out.returncode == 2, out.stderr + out.stdout
    assert "merge was refused" in out.stdout and "agents/feature/step-1" in out.stdout
    assert plan.read_text() == edited and main_sha(repo) == before
    assert committed_status(repo, "agents/feature/step-1", 1) == "✅"
    [result] = results(repo)
    assert " failed (merge refused);" in result["run"]["historyLine"]


def test_target_not_checked_out_gets_the_committed_status_and_the_users_plan_stays(
    repo: Path,
) -> None:
    configure(repo)
    git(repo, "checkout", "-q", "-b", "elsewhere")
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    assert committed_status(repo, "main", 1) == "✅"
    assert git(repo, "status", "--porcelain") == ""  # the user's copy was not rewritten
    assert step_status(repo, 1) == "❌"


def test_an_uncommitted_plan_gets_the_status_in_the_users_copy(repo: Path) -> None:
    configure(repo)
    git(repo, "rm", "-q", "--cached", "specs/feature.md")
    git(repo, "commit", "-q", "-m", "the plan is not committed")
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    assert step_status(repo, 1) == "✅" and step_status(repo, 2) == "❌"
    assert "specs/feature.md" not in git(repo, "ls-tree", "-r", "--name-only", "main")


def test_step_lock_held_by_a_live_process_refuses(repo: Path) -> None:
    configure(repo)
    lock = repo / "flows" / "feature" / "locks" / "step-01.lock"
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        import psutil

        started = psutil.Process(holder.pid).create_time()
        lock.write_text(
            json.dumps(
                {
                    "runId": "other-run",
                    "pid": holder.pid,
                    "host": os.uname().nodename,
                    "pidStarted": started,
                }
            )
        )
        out = run(repo, "--step", "1")
        assert out.returncode == 2 and "other-run" in out.stderr
        assert results(repo) == []
    finally:
        holder.kill()
        holder.wait()
    out = run(repo, "--step", "1")  # the holder is dead now: the stale lock is taken over
    assert out.returncode == 0, out.stderr + out.stdout
    assert not lock.exists()


def test_all_runs_every_open_step_and_skips_done_ones(repo: Path) -> None:
    configure(repo)
    out = run(repo, "--all")
    assert out.returncode == 0, out.stderr + out.stdout
    assert step_status(repo, 1) == "✅" and step_status(repo, 2) == "✅"
    assert len(results(repo)) == 2
    again = run(repo, "--all")
    assert again.returncode == 0 and again.stdout.count("skipped") == 2


# --- single flows and history ---------------------------------------------------------------


def flow(repo: Path, *args: str) -> CliResult:
    return call(repo, "flow", *args, "--quiet", "--kill-grace", "0.2")


def test_flow_implement_commits_on_the_step_branch_with_stats(repo: Path) -> None:
    configure(repo)
    before = main_sha(repo)
    out = flow(repo, "implement", "--plan", "specs/feature.md", "--step", "1", "--json")
    assert out.returncode == 0, out.stderr + out.stdout
    result = json.loads(out.stdout)
    assert result["status"] == "succeeded" and result["run"]["chainRunID"] is None
    assert result["gitStats"]["filesChanged"] == 4
    assert main_sha(repo) == before  # nothing merged
    tip = git(repo, "rev-parse", "agents/feature/step-1").strip()
    assert tip == result["run"]["endSha"] != before
    assert f"Gitflow-Agents-Run: {result['run']['runID']}" in git(
        repo, "log", "-1", "--format=%B", tip
    )


def test_flow_implement_on_another_branch_runs_its_agent_there(repo: Path) -> None:
    """An implementer that completed on one branch is not "reused" for another branch that
    starts from the same commit: its commit is not on that branch, so the task was not done
    there (it said ``reused`` with the first branch's statistics and left the second empty)."""
    configure(repo)
    start = main_sha(repo)
    first = flow(repo, "implement", "--branch", "b2", "--task", "do it", "--json")
    assert first.returncode == 0, first.stderr + first.stdout
    second = flow(repo, "implement", "--branch", "bz", "--task", "do it", "--json")
    assert second.returncode == 0, second.stderr + second.stdout
    result = json.loads(second.stdout)
    assert result["status"] == "succeeded" and not result["run"]["reused"]
    tip = git(repo, "rev-parse", "bz").strip()
    assert tip == result["run"]["endSha"] != start
    assert git(repo, "merge-base", "--is-ancestor", start, tip) == ""
    assert git(repo, "rev-parse", "b2").strip() != tip  # each branch has its own commit


def test_flow_implement_that_fails_says_so_in_a_line_and_in_json_only_with_json(
    repo: Path,
) -> None:
    """Without ``--json`` a failed agent is one line as a completed one is (it printed its
    JSON record); with it, that record, status and spend."""
    configure(repo, implementer="crash")
    out = flow(repo, "implement", "--branch", "b2", "--task", "do it")
    assert out.returncode == 3, out.stderr + out.stdout
    assert out.stdout.startswith("builder: failed: ") and "(run " in out.stdout
    assert "{" not in out.stdout
    out = flow(repo, "implement", "--branch", "b3", "--task", "do it", "--json")
    assert out.returncode == 3, out.stderr + out.stdout
    data = json.loads(out.stdout)
    assert data["status"] == "failed" and data["agentId"] == "builder" and "costUsd" in data


def test_flow_review_fix_review_by_hand(repo: Path) -> None:
    configure(repo, reviewer="until-fixed")
    assert flow(repo, "implement", "--plan", "specs/feature.md", "--step", "1").returncode == 0
    branch = "agents/feature/step-1"
    first = flow(repo, "review", "--branch", branch, "--flow", "feature")
    assert first.returncode == 1, first.stderr + first.stdout
    assert "NOT APPROVED" in first.stdout
    missing = flow(repo, "fix", "--plan", "specs/feature.md", "--step", "1", "--after", "nobody")
    assert missing.returncode == 2
    assert "flow fix --after nobody: no completed report at flows/feature/agents/nobody/" in (
        missing.stderr
    )
    typo = flow(
        repo, "implement", "--plan", "specs/feature.md", "--step", "1", "--after", "reviewr"
    )
    assert typo.returncode == 2  # every flow, not only fix (its report is in the message)
    assert "flow implement --after reviewr: no completed report at " in typo.stderr
    assert "(agents with one: reviewer, step-01-builder; " in typo.stderr
    fix = flow(repo, "fix", "--plan", "specs/feature.md", "--step", "1", "--after", "reviewer")
    assert fix.returncode == 0, fix.stderr + fix.stdout
    second = flow(repo, "review", "--branch", branch, "--flow", "feature", "--json")
    assert second.returncode == 0, second.stderr + second.stdout
    data = json.loads(second.stdout)
    tip = git(repo, "rev-parse", branch).strip()
    assert data["approved"] and data["reviewedSha"] == tip
    assert note(repo, tip)["verdict"] == "approved"  # type: ignore[index]
    assert len(git(repo, "worktree", "list").splitlines()) == 2  # the step's; scratch removed


def test_flow_review_agent_names_the_one_reviewer(repo: Path) -> None:
    configure(repo, extra_reviewers={"strict": "revise"})
    head = ("review", "--range", "HEAD~1..HEAD", "--json")
    out = flow(repo, *head, "--agent", "strict")
    assert out.returncode == 1, out.stderr + out.stdout
    assert [r["agentId"] for r in json.loads(out.stdout)["reviewers"]] == ["strict"]
    for extra, said in (
        (("--agent", "strict", "--reviewers", "reviewer"), "give --agent or --reviewers"),
        (("--agent-name", "mine"), "--agent-name is not used for reviews"),
    ):
        refused = flow(repo, *head, *extra)
        assert refused.returncode == 2 and said in refused.stderr, refused
        assert refused.stderr.count("\n") == 1


def test_flow_review_range_focus_paths_and_threshold(repo: Path) -> None:
    configure(repo, reviewer="revise")
    base = main_sha(repo)
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("a = 1\n")
    git(repo, "add", "src")
    git(repo, "commit", "-q", "-m", "a")
    out = flow(repo, "review", "--range", f"{base}..HEAD", "--focus-paths", "src", "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["findings"] == []  # the README.md finding is outside the focus
    assert any("REVISE" in r for r in data["reasons"])


def test_flow_research_lists_sources(repo: Path) -> None:
    configure(repo)
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text() + "  researcher:\n" + _agent("researcher", "sources"))
    out = flow(repo, "research", "--task", "how do worktrees work", "--json")
    assert out.returncode == 0, out.stderr + out.stdout
    result = json.loads(out.stdout)
    assert [s["url"] for s in result["sources"]] == [
        "https://git-scm.com/docs/git-worktree",
        "https://git-scm.com/docs/git-notes",
    ]
    assert git(repo, "status", "--porcelain") == ""


def test_run_with_a_missing_reviewer_cli_stops_before_the_implementer(repo: Path) -> None:
    configure(repo)
    config = repo / ".flow/base.yaml"
    reviewer = f"  reviewer:\n{_agent('reviewer', 'approve')}"
    missing = (
        "  reviewer:\n    adapter: codex\n    options:\n      executable: /nonexistent/codex\n"
    )
    config.write_text(config.read_text().replace(reviewer, missing))
    before = main_sha(repo)
    out = run(repo, "--step", "1")
    assert out.returncode == 3
    (line,) = out.stderr.splitlines()
    assert "agent 'reviewer': the codex CLI is not installed" in line
    assert "no executable /nonexistent/codex (agents.reviewer.options.executable)" in line
    assert "`npm install -g @openai/codex`" in line
    assert main_sha(repo) == before
    assert git(repo, "branch", "--list", "agents/*") == ""  # nothing started, no step branch
    assert not (repo / "flows").exists()


def test_a_missing_target_branch_says_where_to_name_the_right_one(repo: Path) -> None:
    configure(repo)
    git(repo, "branch", "-m", "main", "master")  # what `git init` gives without init.defaultBranch
    out = run(repo, "--step", "1")
    assert out.returncode == 2
    (line,) = out.stderr.splitlines()
    assert "target branch 'main' does not exist (this checkout is on 'master')" in line
    assert "--target BRANCH" in line and "default_branch in .flow/base.yaml" in line
    # its run record is written, and git does not see it (docs/architecture.md, "Files on disk")
    assert list(repo.glob("flows/feature/runs/*/result.json"))
    assert git(repo, "status", "--porcelain") == ""


def test_a_plan_file_name_that_cannot_name_its_runs_is_refused_before_anything_is_made(
    repo: Path,
) -> None:
    """``specs/überblick.md``: it made the step branch, a work tree and flows/überblick/, then
    failed "invalid flow name"; now nothing is made, and the message names the file."""
    configure(repo)
    (repo / "specs" / "überblick.md").write_text(PLAN)
    before = main_sha(repo)
    out = call(repo, "run", "specs/überblick.md", "--step", "1", "--quiet")
    assert out.returncode == 2
    (line,) = out.stderr.splitlines()
    assert "specs/überblick.md: the plan's name 'überblick' (its file name)" in line
    assert "starting with a letter or digit; rename the file" in line
    assert main_sha(repo) == before and git(repo, "branch", "--list", "agents/*") == ""
    assert len(git(repo, "worktree", "list").splitlines()) == 1 and not (repo / "flows").exists()


def test_flow_research_runs_the_researcher_init_scaffolds(repo: Path) -> None:
    """`flow research` runs `researcher` by default, and `init` scaffolds it: only its adapter is
    swapped for a fake here; its definition and report template are the scaffolded ones."""
    assert call(repo, "init").returncode == 0
    config = repo / ".flow/base.yaml"
    text = config.read_text()
    scaffolded = "  researcher:\n    type: researcher\n    adapter: claude\n"
    assert scaffolded in text
    fake = "  researcher:\n    type: researcher\n" + _agent("researcher", "sources")
    config.write_text(text.replace(scaffolded, fake))
    out = flow(repo, "research", "--task", "how do worktrees work", "--json")
    assert out.returncode == 0, out.stderr + out.stdout
    assert len(json.loads(out.stdout)["sources"]) == 2
    (prompt,) = repo.glob("flows/*/agents/researcher/system_prompt.md")
    text = prompt.read_text(encoding="utf-8")
    assert "You are the researcher" in text  # .flow/agents/researcher.md
    assert "## Sources" in text  # .flow/templates/research-completion-workflow-template.md
    # Asked again, here with another question: a new run and a new answer, not the last one.
    again = flow(repo, "research", "--task", "what is a git note", "--json")
    assert again.returncode == 0, again.stderr + again.stdout
    first, second = json.loads(out.stdout)["run"], json.loads(again.stdout)["run"]
    assert second["runID"] != first["runID"]
    assert "what is a git note" in prompt.read_text(encoding="utf-8")
    assert len(list((prompt.parent / "previous").iterdir())) == 1  # the first answer, kept


def test_history_lists_runs_with_outcome_iterations_stats_duration(repo: Path) -> None:
    configure(repo, reviewer="until-fixed")
    assert run(repo, "--step", "1").returncode == 0
    out = call(repo, "history", "--json")
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)
    assert row["kind"] == "chain" and row["outcome"] == "approved" and row["iterations"] == 2
    assert row["git"].startswith("5 files, +") and row["durationSeconds"] > 0
    assert "approved after 2 reviews" in row["historyLine"]
    table = call(repo, "history")
    assert "approved" in table.stdout and "step 1" in table.stdout
    with_agents = json.loads(call(repo, "history", "--json", "--agents").stdout)
    assert len(with_agents) == 5


def test_builtin_reviewer_gates_offline(repo: Path) -> None:
    configure(repo)
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text() + "  offline:\n    adapter: builtin\n")
    out = run(repo, "--step", "1", "--reviewers", "offline", "--max-iterations", "1")
    [result] = results(repo)
    [reviewer] = result["chain"]["rounds"][0]["reviewers"]
    assert reviewer["agentId"] == "step-01-offline-1" and reviewer["overall"] in (
        "approve",
        "revise",
    )
    assert out.returncode == (0 if result["chain"]["rounds"][0]["approved"] else 1)
    report = repo / "flows/feature/agents/step-01-offline-1/report.complete.md"
    assert "REVIEW_RESULT:" in report.read_text()


def test_chain_config_section_gives_the_defaults_and_options_override(repo: Path) -> None:
    configure(repo, reviewer="revise", extra_reviewers={"second": "approve"})
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text()
        + "chain:\n  reviewers: [second]\n  max_iterations: 1\n"
        + '  branch_pattern: "work/{plan_name}/s{step2}"\n  merge: merge\n'
    )
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    [result] = results(repo)
    chain = result["chain"]
    assert chain["reviewers"] == ["second"] and chain["maxIterations"] == 1
    assert chain["branch"] == "work/feature/s01"
    assert chain["merged"]["kind"] == "merge-commit"
    # options win over the config: the revising reviewer, one round (from the config), rejected
    out = run(repo, "--step", "2", "--reviewers", "reviewer", "--branch-pattern", "b/{step}")
    assert out.returncode == 1, out.stderr + out.stdout
    second = next(r for r in results(repo) if r["chain"]["step"] == 2)["chain"]
    assert second["reviewers"] == ["reviewer"] and second["iterations"] == 1
    assert second["branch"] == "b/2" and second["outcome"] == "rejected"


def test_flow_implement_uses_the_configured_implementer(repo: Path) -> None:
    configure(repo)
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text()
        + "  maker:\n"
        + _agent("implementer", "edit")
        + "chain:\n  implementer: maker\n"
    )
    out = flow(repo, "implement", "--plan", "specs/feature.md", "--step", "1", "--json")
    assert out.returncode == 0, out.stderr + out.stdout
    assert json.loads(out.stdout)["run"]["agentId"] == "step-01-maker"


def test_bad_branch_pattern_option_is_a_usage_error(repo: Path) -> None:
    configure(repo)
    out = run_proc(repo, "--step", "1", "--branch-pattern", "agents/{plan}/{nope}-{step}")
    assert out.returncode == 2
    assert "--branch-pattern 'agents/{plan}/{nope}-{step}': unknown placeholder {nope}" in (
        out.stderr
    )
    assert not (repo / "flows").exists()


def _review_context(repo: Path, agents: dict[str, str]) -> Any:
    """A chain Context with the given agents (name -> YAML body) and an event-recording hub."""
    from gitflow_agents import chain
    from gitflow_agents.config import load_flow_config
    from gitflow_agents.runs.events import EventHub

    configure(repo)
    text = (repo / ".flow" / "base.yaml").read_text()
    text += "".join(f"  {name}:\n{body}" for name, body in agents.items())
    (repo / ".flow" / "base.yaml").write_text(text)
    settings = chain.ChainSettings(reviewers=tuple(agents), stuck_timeout=20, timeout=30)
    return chain.Context(repo, load_flow_config(repo), None, "round", settings, EventHub())


def test_parallel_reviewers_are_all_prepared_before_any_starts(repo: Path) -> None:
    from gitflow_agents import chain

    ctx = _review_context(repo, {f"r{i}": _agent("reviewer", "approve") for i in range(3)})
    with chain.scratch_workspace(ctx, "HEAD", "HEAD~1") as ws:
        review = chain.review_round(ctx, ws, iteration=None, step=None, after=())
    assert review.gate.approved, review.gate.reasons
    kinds = [(e.type, e.data.get("node") or e.data.get("agent")) for e in ctx.hub.events]
    starts = [i for i, (kind, _) in enumerate(kinds) if kind == "task:start"]
    launched = [i for i, (kind, _) in enumerate(kinds) if kind == "agent:start"]
    assert len(starts) == len(launched) == 3
    assert max(starts) < min(launched)  # every prompt and launch spec first, then the processes
    for agent in review.agents:
        assert (repo / "flows/round/agents" / agent.agent_id / "system_prompt.md").exists()


def test_a_reviewer_that_cannot_be_prepared_starts_none(repo: Path) -> None:
    from gitflow_agents import chain
    from gitflow_agents.base.errors import ConfigError

    # installed (any executable file passes the PATH check), but an option the adapter refuses
    # at launch: loading the config refuses it too (tests/config), so it is put in afterwards
    broken = f"    adapter: claude\n    options:\n      executable: {sys.executable}\n"
    ctx = _review_context(repo, {"good": _agent("reviewer", "approve", 5), "broken": broken})
    agent = ctx.config.agent("broken")
    agents = {**ctx.config.agents, "broken": replace(agent, options={**agent.options, "bogus": 1})}
    ctx = replace(ctx, config=replace(ctx.config, agents=agents))
    with chain.scratch_workspace(ctx, "HEAD", "HEAD~1") as ws, pytest.raises(ConfigError):
        chain.review_round(ctx, ws, iteration=None, step=None, after=())
    assert not [e for e in ctx.hub.events if e.type == "agent:start"]
    records = [json.loads(p.read_text()) for p in (repo / "flows/round/runs").glob("*/result.json")]
    assert sorted(r["run"]["agentId"] for r in records) == ["broken", "good"]
    assert {r["run"]["status"] for r in records} == {"failed"}


def test_all_runs_a_step_after_the_step_it_depends_on_even_when_it_comes_later(
    repo: Path,
) -> None:
    configure(repo)
    plan = repo / "specs" / "feature.md"
    plan.write_text(
        PLAN.replace("Add src/new_module.py.", "Depends on: 2\n\nAdd src/new_module.py.").replace(
            "Polish it.", "Depends on: none\n\nPolish it."
        )
    )
    git(repo, "commit", "-qam", "step 1 waits for step 2")
    out = run(repo, "--all")
    assert out.returncode == 0, out.stderr + out.stdout
    assert [r["chain"]["step"] for r in results(repo)] == [2, 1]
    assert step_status(repo, 1) == "✅" and step_status(repo, 2) == "✅"


def test_plan_problems_are_named_alike_by_run_and_plan_lint_from_any_folder(repo: Path) -> None:
    """`run --all` and `plan lint` name a plan's problem the same way, relative to the
    repository (`specs/feature.md:13`), also when started from a subfolder; so do the parse
    errors `run --step` stops at."""
    configure(repo)
    plan = repo / "specs" / "feature.md"
    plan.write_text(PLAN.replace("Polish it.", "Depends on: 7\n\nPolish it."))
    git(repo, "commit", "-qam", "step 2 waits for a step the plan lacks")
    expected = "specs/feature.md:13: step 2 depends on step 7, which the plan does not have"
    sub = repo / "docs"
    lint = call(sub, "plan", "lint", "../specs/feature.md")
    assert lint.returncode == 2 and lint.stdout.splitlines() == [expected]
    out = call(sub, *RUN_ARGS[:1], "../specs/feature.md", *RUN_ARGS[2:], "--all")
    assert out.returncode == 2
    assert out.stderr.splitlines() == [f"gitflow-agents: error: {expected}"]
    plan.write_text(PLAN.replace("Polish it.", "Depends on: two\n\nPolish it."))
    out = call(sub, *RUN_ARGS[:1], "../specs/feature.md", *RUN_ARGS[2:], "--step", "1")
    assert out.returncode == 2
    assert out.stderr.startswith("gitflow-agents: error: specs/feature.md:13: ")


def test_all_refuses_a_plan_whose_dependencies_cannot_be_met(repo: Path) -> None:
    configure(repo)
    plan = repo / "specs" / "feature.md"
    plan.write_text(PLAN.replace("Polish it.", "Depends on: 7\n\nPolish it."))
    git(repo, "commit", "-qam", "step 2 waits for a step the plan lacks")
    out = run(repo, "--all")
    assert out.returncode == 2
    assert "step 2 depends on step 7, which the plan does not have" in out.stderr
    assert results(repo) == []


def test_each_agent_run_records_its_start_commit_and_the_files_it_changed(
    approved: Approved,
) -> None:
    """The implementer starts from the step's base and changed what it committed (a rename by
    its new name; its flow dir link and run records are no change of its); the reviewer starts
    from the reviewed commit."""
    runs = approved.repo / "flows" / "feature" / "runs"
    agents = {a["agentId"]: a for a in approved.chain["agents"]}
    builder, reviewer = (
        json.loads((runs / agents[name]["runID"] / "result.json").read_text())
        for name in ("step-01-builder", "step-01-reviewer-1")
    )
    assert builder["run"]["baseSha"] == approved.before
    assert builder["changedFiles"] == ["README.md", "docs/new.md", "logo.png", "src/new_module.py"]
    assert reviewer["run"]["baseSha"] == approved.chain["headSha"]
