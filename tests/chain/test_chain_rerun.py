"""Chains run a second time: real temporary repositories, real fake-agent processes (issue 11).

One source of truth for a step's state (the plan as committed on the target), no edit left in
the user's work tree, a lost run's processes killed before its work tree is reused, no approval
without a change, a target that moved on merged in and reviewed, and seed 000's one-space plan.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gitflow_agents.git import queries as g
from tests.conftest import ROOT, git, init_repo, running_agent, wait_until
from tests.helpers.chain import (
    FAKE,
    call,
    committed_status,
    configure,
    main_sha,
    note,
    results,
    run,
    step_status,
)

SEED_PLAN = """\
# Plan: Feature

Overview of the feature.

## Implementation Steps

### Status: | Step 1: Add the module

Add src/new_module.py.

### Status: | Step 2: Polish

Polish it.
"""


def seed_plan(repo: Path) -> None:
    """Seed 000's plan form: empty statuses written with one space, committed on main."""
    (repo / "specs" / "feature.md").write_text(SEED_PLAN)
    git(repo, "commit", "-q", "-am", "seed plan")


def set_agent(repo: Path, name: str, argv: list[str]) -> None:
    """Point agent ``name`` of .flow/base.yaml at ``argv`` (the config is read per run)."""
    config = repo / ".flow" / "base.yaml"
    lines = config.read_text().splitlines()
    index = lines.index(f"  {name}:")
    lines[index + 2] = f"    command: {json.dumps(argv)}"
    config.write_text("\n".join(lines) + "\n")


def fake(role: str, mode: str, *extra: str) -> list[str]:
    return [sys.executable, str(FAKE), role, mode, *extra]


def clean(repo: Path) -> bool:
    return git(repo, "status", "--porcelain") == ""


# --- re-running after a failure or a rejection -------------------------------------------


def test_a_rerun_after_a_crash_merges_and_no_edit_is_left_behind(repo: Path) -> None:
    configure(repo, implementer="crash")
    seed_plan(repo)
    first = run(repo, "--step", "1")
    assert first.returncode == 3, first.stderr + first.stdout
    assert clean(repo)  # no ❌ written into the user's copy: it would block the merge below
    set_agent(repo, "builder", fake("implementer", "edit"))
    again = run(repo, "--step", "1")
    assert again.returncode == 0, again.stderr + again.stdout
    assert committed_status(repo, "main", 1) == "✅" and step_status(repo, 1) == "✅"
    assert clean(repo)
    assert "### Status: ✅ | Step 1: Add the module\n" in (repo / "specs/feature.md").read_text()


def test_a_repository_made_again_at_the_same_path_gets_a_fresh_step_work_tree(
    repo: Path, tmp_path: Path
) -> None:
    """A failed step leaves its work tree in the cache; the repository is then deleted and
    cloned or made again at the same path (the same cache folder), so git does not know that
    work tree any more. The step still runs, and running it again does too."""
    configure(repo, implementer="crash")
    assert run(repo, "--step", "1").returncode == 3
    tree = g.tool_worktree_root(repo) / "feature" / "step-01"
    assert (tree / "flows").is_symlink()  # the failed attempt's work tree stays
    outside = tmp_path / "outside.txt"
    outside.write_text("not the tool's\n")
    (tree / "link-out").symlink_to(outside)
    shutil.rmtree(repo)
    init_repo(repo)
    configure(repo)
    assert g.tool_worktree_root(repo) / "feature" / "step-01" == tree and tree.is_dir()
    first = run(repo, "--step", "1")
    assert first.returncode == 0, first.stderr + first.stdout
    assert committed_status(repo, "main", 1) == "✅" and clean(repo)
    assert outside.read_text() == "not the tool's\n"  # symlinks in the old tree not followed
    again = run(repo, "--step", "1")
    assert again.returncode == 0 and "already ✅" in again.stdout, again.stderr + again.stdout


def test_a_relative_xdg_cache_home_is_ignored_not_a_folder_in_the_repository(
    repo: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``XDG_CACHE_HOME: .cache`` in a CI job: the XDG specification says to ignore a relative
    value. Taken as given, it put the step work trees inside the repository (untracked files)
    and the landing refused to remove them as not the tool's own (exit 2)."""
    monkeypatch.setenv("XDG_CACHE_HOME", ".cache")
    configure(repo)
    assert g.tool_worktree_root(repo).is_relative_to(isolated_home / ".cache" / "gitflow-agents")
    result = run(repo, "--all")
    assert result.returncode == 0, result.stderr + result.stdout
    assert [committed_status(repo, "main", step) for step in (1, 2)] == ["✅", "✅"]
    assert clean(repo) and not (repo / ".cache").exists()


def test_a_rerun_after_a_rejection_asks_the_last_reviewer_again_and_merges(repo: Path) -> None:
    configure(repo, reviewer="revise")
    seed_plan(repo)
    first = run(repo, "--step", "1", "--max-iterations", "1")
    assert first.returncode == 1, first.stderr + first.stdout
    assert clean(repo) and committed_status(repo, "main", 1) == ""
    set_agent(repo, "reviewer", fake("reviewer", "approve"))
    again = run(repo, "--step", "1", "--max-iterations", "1")
    assert again.returncode == 0, again.stderr + again.stdout
    chain = results(repo)[-1]["chain"]
    # the implementer is reused; the review that ended the first run is asked again
    assert [(a["kind"], a["reused"]) for a in chain["agents"]] == [
        ("implement", True),
        ("review", False),
    ]
    assert committed_status(repo, "main", 1) == "✅" and clean(repo)


def test_raising_max_iterations_after_a_rejection_merges(repo: Path) -> None:
    configure(repo, reviewer="until-fixed")
    seed_plan(repo)
    first = run(repo, "--step", "1", "--max-iterations", "1")
    assert first.returncode == 1, first.stderr + first.stdout
    assert clean(repo)
    again = run(repo, "--step", "1", "--max-iterations", "2")
    assert again.returncode == 0, again.stderr + again.stdout
    chain = results(repo)[-1]["chain"]
    assert [(a["agentId"], a["reused"]) for a in chain["agents"]] == [
        ("step-01-builder", True),
        ("step-01-reviewer-1", True),
        ("step-01-fixer-1", False),
        ("step-01-reviewer-2", False),
    ]
    assert committed_status(repo, "main", 1) == "✅" and (repo / "FIXED.txt").exists()


def _fix_commit(repo: Path) -> str:
    """The step branch's commit of the round-1 fixer (its tip after a first run)."""
    tip = git(repo, "rev-parse", "agents/feature/step-1").strip()
    assert git(repo, "log", "-1", "--format=%s", tip).strip().endswith("(fix 1)")
    return tip


def test_a_rerun_after_the_round_2_reviewer_failed_reuses_the_fix_and_rewrites_nothing(
    repo: Path,
) -> None:
    configure(repo, reviewer="crash-when-fixed")  # round 1 asks for a fix, round 2 crashes
    first = run(repo, "--step", "1", "--max-iterations", "2")
    assert first.returncode == 3, first.stderr + first.stdout
    fixed = _fix_commit(repo)
    set_agent(repo, "reviewer", fake("reviewer", "approve"))
    again = run(repo, "--step", "1", "--max-iterations", "2")
    assert again.returncode == 0, again.stderr + again.stdout
    agents = [(a["agentId"], a["reused"]) for a in results(repo)[-1]["chain"]["agents"]]
    assert agents[:4] == [
        ("step-01-builder", True),
        ("step-01-reviewer-1", True),
        ("step-01-fixer-1", True),  # not run again: its commit is the branch's
        ("step-01-reviewer-2", False),
    ]
    assert not any(reused for _, reused in agents[4:])  # the reviewer's whole-step review
    assert g.is_ancestor(repo, fixed, "main")  # the first run's fix landed, not a new one


def test_a_round_2_reviewer_that_failed_leaves_the_fix_in_the_steps_record(repo: Path) -> None:
    configure(repo, reviewer="crash-when-fixed")
    first = run(repo, "--step", "1", "--max-iterations", "2")
    assert first.returncode == 3, first.stderr + first.stdout
    fixed = _fix_commit(repo)
    result = results(repo)[-1]
    assert result["chain"]["headSha"] == fixed  # the fixer's commit, not round 1's head
    assert len(result["gitStats"]["commits"]) == 2
    assert "FIXED.txt" in result["changedFiles"]
    assert "2 commits" in result["run"]["historyLine"]


@pytest.mark.parametrize("raise_to", [2, 3], ids=["asked-again", "raised-max-iterations"])
def test_a_rerun_after_a_rejection_in_round_2_reuses_the_round_1_fix(
    repo: Path, raise_to: int
) -> None:
    configure(repo, reviewer="revise")
    first = run(repo, "--step", "1", "--max-iterations", "2")
    assert first.returncode == 1, first.stderr + first.stdout
    fixed = _fix_commit(repo)
    set_agent(repo, "reviewer", fake("reviewer", "approve"))
    again = run(repo, "--step", "1", "--max-iterations", str(raise_to))
    assert again.returncode == 0, again.stderr + again.stdout
    agents = [(a["agentId"], a["reused"]) for a in results(repo)[-1]["chain"]["agents"]]
    assert agents[:3] == [
        ("step-01-builder", True),
        ("step-01-reviewer-1", True),
        ("step-01-fixer-1", True),
    ]
    assert ("step-01-fixer-1", False) not in agents
    assert g.is_ancestor(repo, fixed, "main") and committed_status(repo, "main", 1) == "✅"


def test_a_step_branch_holding_a_commit_of_the_users_is_reviewed_not_reset(repo: Path) -> None:
    """A branch the user made under the step's name, with a commit found on neither the target
    nor a remote: the run used to reset it to the merge-base (the commit left only in the
    reflog) and implement from scratch. The commit is kept and reviewed as the step's work."""
    configure(repo)
    git(repo, "branch", "agents/feature/step-1")
    tree = repo.parent / f"{repo.name}-mine"
    git(repo, "worktree", "add", "-q", str(tree), "agents/feature/step-1")
    (tree / "mine.txt").write_text("my own work\n")
    git(tree, "add", "mine.txt")
    git(tree, "commit", "-qm", "my own work")
    mine = git(tree, "rev-parse", "HEAD").strip()
    git(repo, "worktree", "remove", str(tree))
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    assert "holds 1 commit gitflow-agents did not make" in out.stdout
    assert f"({mine[:7]} my own work)" in out.stdout
    assert g.is_ancestor(repo, mine, "main") and committed_status(repo, "main", 1) == "✅"
    kinds = [a["kind"] for a in results(repo)[-1]["chain"]["agents"]]
    assert kinds == ["review"]  # reviewed as it stands: no implementer ran over it


def test_a_fix_the_user_committed_after_a_rejection_is_reviewed_not_dropped(repo: Path) -> None:
    """After a rejected run the user commits a fix in the step's work tree; running the step
    again reviewed the agents' commit again and reset the branch under the fix."""
    configure(repo, reviewer="revise")
    first = run(repo, "--step", "1", "--max-iterations", "1")
    assert first.returncode == 1, first.stderr + first.stdout
    tree = g.worktree_of_branch(repo, "agents/feature/step-1")
    assert tree is not None
    (tree / "USER_FIX.txt").write_text("the user's fix\n")
    git(tree, "add", "USER_FIX.txt")
    git(tree, "commit", "-qm", "my fix")
    fix = git(tree, "rev-parse", "HEAD").strip()
    set_agent(repo, "reviewer", fake("reviewer", "approve"))
    again = run(repo, "--step", "1", "--max-iterations", "1")
    assert again.returncode == 0, again.stderr + again.stdout
    assert f"({fix[:7]} my fix)" in again.stdout
    assert g.is_ancestor(repo, fix, "main") and (repo / "USER_FIX.txt").exists()
    assert committed_status(repo, "main", 1) == "✅"


# --- a review its round discarded (the reviewer changed the work tree) ----------------------


@pytest.mark.parametrize("mode", ["meddle", "commit"])
def test_a_rerun_after_a_discarded_review_asks_the_reviewer_again(repo: Path, mode: str) -> None:
    """A reviewer that approves but edits (or commits) in the work tree is not approved, its
    change discarded; the same command again asks it again (it used to reuse the stored
    approval and land the step)."""
    configure(repo, reviewer=mode)
    first = run(repo, "--step", "1", "--max-iterations", "1")
    assert first.returncode == 1, first.stderr + first.stdout
    again = run(repo, "--step", "1", "--max-iterations", "1")
    assert again.returncode == 1, again.stderr + again.stdout
    agents = [(a["agentId"], a["reused"]) for a in results(repo)[-1]["chain"]["agents"]]
    assert agents == [("step-01-builder", True), ("step-01-reviewer-1", False)]
    assert committed_status(repo, "main", 1) == "❌"


def test_a_discarded_review_of_an_earlier_round_is_reused_not_approved(repo: Path) -> None:
    configure(repo, reviewer="meddle")
    first = run(repo, "--step", "1", "--max-iterations", "2")
    assert first.returncode == 1, first.stderr + first.stdout
    set_agent(repo, "reviewer", fake("reviewer", "approve"))
    again = run(repo, "--step", "1", "--max-iterations", "2")
    assert again.returncode == 0, again.stderr + again.stdout
    result = results(repo)[-1]
    agents = [(a["agentId"], a["reused"]) for a in result["chain"]["agents"]]
    assert agents == [
        ("step-01-builder", True),
        ("step-01-reviewer-1", True),  # reused, and not approved as before: the fix is reused
        ("step-01-fixer-1", True),
        ("step-01-reviewer-2", False),  # the last round's discarded review is asked again
    ]
    reasons = result["chain"]["rounds"][0]["reasons"]
    assert reasons == [
        "step-01-reviewer-1 (reused): a reviewer changed files during the review (README.md); "
        "discarded"
    ]


def _review_run_ids(out: str) -> list[str]:
    """The reviewers' run ids ``flow review`` prints (``  NAME: REPORT (run ID)``)."""
    return [line.rsplit("(run ", 1)[1].rstrip(")") for line in out.splitlines() if "(run " in line]


@pytest.mark.parametrize(
    ("mode", "code", "asked_again"),
    [("meddle", 1, True), ("commit", 1, True), ("approve", 0, False)],
)
def test_flow_review_again_asks_a_reviewer_whose_review_was_discarded(
    repo: Path, mode: str, code: int, asked_again: bool
) -> None:
    """The same ``flow review`` twice: a review its round discarded is asked again and stays not
    approved (it approved on the reused report); a clean approval is reused and approves."""
    configure(repo, reviewer=mode)
    review = ("flow", "review", "--range", "main~1..main", "--agent", "reviewer", "--quiet")
    first, again = call(repo, *review), call(repo, *review)
    assert first.returncode == again.returncode == code, first.stdout + again.stdout
    assert ("NOT APPROVED" in again.stdout) == bool(code)
    assert (_review_run_ids(first.stdout) != _review_run_ids(again.stdout)) == asked_again


# --- a lost run: the orchestrator killed with -9 while its agent works ----------------------


def test_kill_9_mid_agent_then_rerun_kills_the_lost_tree_and_implements_once(
    repo: Path,
) -> None:
    configure(repo)
    seed_plan(repo)
    # a slow implementer: it edits README.md only after 20 s, long after the kill below
    set_agent(repo, "builder", fake("implementer", "edit", "--sleep", "20"))
    orchestrator = subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", "run", "specs/feature.md", "--step", "1",
         "--quiet", "--kill-grace", "0.2"],
        cwd=repo, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(lambda: running_agent(repo) is not None, 30)
        lost = running_agent(repo)
        assert lost is not None
        orchestrator.send_signal(signal.SIGKILL)
        orchestrator.wait()
        agent = psutil.Process(int(lost["pid"]))  # type: ignore[call-overload]
        assert agent.is_running()
        [row] = [r for r in json.loads(call(repo, "status", "--json").stdout)
                 if r["runId"] == lost["runId"]]  # fmt: skip
        assert row["state"] == "lost" and lost["pid"] in row["processesAlive"]
        assert f"gitflow-agents cancel {lost['runId']}" in row["reason"]

        set_agent(repo, "builder", fake("implementer", "edit"))
        again = run(repo, "--step", "1")
        assert again.returncode == 0, again.stderr + again.stdout
        assert f"run {lost['runId']}" in again.stdout and "process tree was killed" in again.stdout
        wait_until(lambda: not agent.is_running() or agent.status() == psutil.STATUS_ZOMBIE, 5)
    finally:
        orchestrator.kill()
        orchestrator.wait()
    # exactly one implementation reached main: README.md got one "more" line, not two
    assert git(repo, "show", "main:README.md") == "# demo\nmore\n"
    status = json.loads(
        (repo / "flows/feature/runs" / str(lost["runId"]) / "status.json").read_text()
    )
    assert status["state"] == "canceled" and "lost" in status["reason"]
    assert [r["state"] for r in json.loads(call(repo, "status", "--json").stdout)].count(
        "lost"
    ) == 0


@pytest.mark.parametrize(
    ("ended_by", "reason"),
    [
        ("lost (its supervisor died); killed by gitflow-agents gc", ""),
        ("canceled by user", "lost (its supervisor died); "),
        (None, "lost (its supervisor died); killed by a new run of its step"),
    ],
)
def test_a_lost_run_is_listed_with_what_ended_it_said_once(
    ended_by: str | None, reason: str
) -> None:
    """The step run that lists a lost run says it was lost once: `gc`'s reason says so already,
    `cancel`'s does not, and one it ended itself was still running when it found it. It is
    timed to its last sign of life, not to when it was ended."""
    from gitflow_agents.chain.agents import lost_runs
    from gitflow_agents.chain.workspace import Lost

    status = {"state": "canceled", "reason": ended_by} if ended_by else {"state": "running"}
    found = {"agent": "step-01-builder", "started": 100.0, "last_activity": 103.0, **status}
    (listed,) = lost_runs([Lost("01a2-lost", found)])
    assert listed.reason == reason + (ended_by or "")
    assert listed.duration == 3.0  # to its last sign of life, not to now
    assert (listed.agent, listed.agent_id) == ("step-01-builder", "step-01-builder")
    named = {**found, "extra": {"agent_config": "builder"}}  # its name in .flow/, as recorded
    (listed,) = lost_runs([Lost("01a2-lost", named)])
    assert (listed.agent, listed.agent_id) == ("builder", "step-01-builder")


# --- done is read from the target ------------------------------------------------------------


def test_a_step_done_on_the_target_is_skipped_from_any_branch(repo: Path) -> None:
    configure(repo)
    seed_plan(repo)
    git(repo, "checkout", "-q", "-b", "elsewhere")
    assert run(repo, "--step", "1").returncode == 0
    merged = main_sha(repo)
    assert step_status(repo, 1) == "" and committed_status(repo, "main", 1) == "✅"
    again = run(repo, "--step", "1")
    assert again.returncode == 0 and "skipped" in again.stdout
    assert "already ✅ on main" in again.stdout and "--force" in again.stdout
    assert main_sha(repo) == merged and len(results(repo)) == 1
    every = run(repo, "--all")
    assert every.returncode == 0, every.stderr + every.stdout
    assert every.stdout.count("skipped") == 1 and committed_status(repo, "main", 2) == "✅"
    assert clean(repo)
    forced = run(repo, "--step", "1", "--force")
    assert forced.returncode == 0 and "approved" in forced.stdout, forced.stdout


def test_force_runs_a_landed_step_again_from_the_targets_tip(repo: Path) -> None:
    configure(repo)
    assert run(repo, "--step", "1").returncode == 0
    (repo / "later.txt").write_text("a later step's work\n")
    git(repo, "add", "later.txt")
    git(repo, "commit", "-q", "-m", "later work on main")
    tip = main_sha(repo)
    forced = run(repo, "--step", "1", "--force")
    assert forced.returncode == 0 and "approved" in forced.stdout, forced.stderr + forced.stdout
    chain = results(repo)[-1]["chain"]
    builder = next(a for a in chain["agents"] if a["kind"] == "implement")
    assert (builder["startSha"], builder["reused"]) == (tip, False)
    assert chain["baseSha"] == tip
    assert not any("moved on" in notice for notice in chain["notices"])
    assert git(repo, "merge-base", "--is-ancestor", tip, "main") == ""
    assert (repo / "later.txt").exists() and committed_status(repo, "main", 1) == "✅"
    landed = main_sha(repo)
    again = run(repo, "--step", "1", "--force")  # and once more: from where that one landed
    assert again.returncode == 0, again.stderr + again.stdout
    builder = next(a for a in results(repo)[-1]["chain"]["agents"] if a["kind"] == "implement")
    assert builder["startSha"] == landed != tip


# --- no approval without a change ------------------------------------------------------------


def test_an_empty_change_writes_no_note_and_the_gate_refuses(repo: Path) -> None:
    configure(repo, implementer="noop")
    before = main_sha(repo)
    out = run(repo, "--step", "1")
    assert out.returncode == 1, out.stderr + out.stdout
    [result] = results(repo)
    chain = result["chain"]
    assert chain["outcome"] == "empty" and "nothing to review" in chain["reason"]
    assert [a["kind"] for a in chain["agents"]] == ["implement"] and chain["rounds"] == []
    assert " failed (nothing to review);" in result["run"]["historyLine"]
    assert main_sha(repo) == before and note(repo, before) is None
    assert git(repo, "notes", f"--ref={g.NOTES_REF}", "list") == ""
    gate = call(repo, "hook", "gate")
    assert gate.returncode == 1 and "no recorded review" in gate.stdout + gate.stderr


def test_an_empty_implementer_is_asked_again_when_the_step_runs_again(repo: Path) -> None:
    """An implementer that completed without changing anything (``empty``) is not reused: its
    run was reused by every later run (``--force`` too) with the same output, so a step whose
    agent gave up once could never be retried. The re-run starts it again, its earlier report
    set aside, and once it does the work the step lands."""
    configure(repo, implementer="noop")
    assert run(repo, "--step", "1").returncode == 1
    first = results(repo)[-1]["chain"]["agents"][0]
    out = run(repo, "--step", "1")
    assert out.returncode == 1, out.stderr + out.stdout
    again = results(repo)[-1]["chain"]
    assert again["outcome"] == "empty"
    builder = again["agents"][0]
    assert (builder["kind"], builder["reused"]) == ("implement", False)
    assert builder["runID"] != first["runID"]
    assert list((repo / "flows/feature/agents/step-01-builder/previous").iterdir())
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text().replace('"implementer", "noop"', '"implementer", "edit"'))
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    chain = results(repo)[-1]["chain"]
    assert chain["outcome"] == "approved" and not chain["agents"][0]["reused"]


def test_an_empty_fixer_is_asked_again_and_the_agents_before_it_are_reused(repo: Path) -> None:
    """A fixer that changed nothing is run again too; the implementer and the reviewer before
    it (a review changes nothing either, by design) are still reused."""
    configure(repo, reviewer="revise", fixer="noop")
    assert run(repo, "--step", "1").returncode == 1
    assert results(repo)[-1]["chain"]["outcome"] == "empty"
    out = run(repo, "--step", "1")
    assert out.returncode == 1, out.stderr + out.stdout
    chain = results(repo)[-1]["chain"]
    assert chain["outcome"] == "empty", chain["reason"]
    assert [(a["kind"], a["reused"]) for a in chain["agents"]] == [
        ("implement", True),
        ("review", True),
        ("fix", False),
    ]


def test_an_implementer_that_commits_its_own_work_is_reviewed_and_merged(repo: Path) -> None:
    """The completion template lets an agent commit when its definition says so (and Aider
    can auto-commit): a clean work tree with new commits is work, not `empty`."""
    configure(repo, implementer="commit")
    before = main_sha(repo)
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    [result] = results(repo)
    chain = result["chain"]
    assert chain["outcome"] == "approved", chain["reason"]
    builder = chain["agents"][0]
    assert builder["endSha"] != builder["startSha"] == before
    assert "agent's own" in git(repo, "log", "--format=%s", "main")
    assert "src/new_module.py" in result["gitStats"]["newFiles"]


def test_flow_review_of_no_change_runs_no_reviewer_and_records_nothing(repo: Path) -> None:
    """As ``git agent-review``: exit 0, not approved, nothing recorded."""
    configure(repo)
    head = main_sha(repo)
    out = call(repo, "flow", "review", "--range", f"{head}..{head}", "--quiet", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert not data["approved"] and data["overall"] is None
    assert data["reasons"][0].startswith(f"nothing to review between {head[:12]} and ")
    assert data["reviewers"] == [] and note(repo, head) is None


def test_flow_review_of_a_reverse_range_refuses_as_git_agent_review_does(repo: Path) -> None:
    """``flow review --range Y..X`` with X already contained in Y reviews nothing: no reviewer,
    no approval note on X (the pre-push gate then refuses X), the line and exit code of
    ``git agent-review Y..X``."""
    configure(repo)
    older = main_sha(repo)
    (repo / "y.txt").write_text("y\n")
    git(repo, "add", "y.txt")
    git(repo, "commit", "-q", "-m", "Y")
    newer = main_sha(repo)
    flow = call(repo, "flow", "review", "--range", f"{newer}..{older}", "--agent", "reviewer")
    agent_review = call(repo, "review", f"{newer}..{older}")
    assert flow.returncode == agent_review.returncode == 0, flow.stderr
    assert flow.stdout == agent_review.stdout
    assert "is already contained in" in flow.stdout and "no review is recorded" in flow.stdout
    assert note(repo, older) is None
    assert call(repo, "hook", "gate", older).returncode == 1


# --- a target that moved on while the step ran -------------------------------------------------

LAND = """\
import subprocess, sys
from pathlib import Path

# Land a commit on main from a second work tree, once, then run the real agent.
tree, name, text, marker = Path(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
if not marker.exists():
    marker.write_text("landed")
    (tree / name).write_text(text)
    subprocess.run(["git", "-C", str(tree), "add", name], check=True)
    subprocess.run(["git", "-C", str(tree), "commit", "-q", "-m", "landed meanwhile"], check=True)
sys.exit(subprocess.call(sys.argv[5:]))
"""


def _land_during(repo: Path, tmp_path: Path, agent: str, name: str, text: str, *argv: str) -> Path:
    """Make ``agent`` land a commit on main (checked out in a second work tree) as it starts."""
    other = tmp_path / "second"
    git(repo, "worktree", "add", "-q", "--detach", str(other))
    git(repo, "checkout", "-q", "-b", "elsewhere")  # main is now checked out in the second tree
    git(other, "checkout", "-q", "main")
    script = tmp_path / "land.py"
    script.write_text(LAND)
    set_agent(
        repo,
        agent,
        [sys.executable, str(script), str(other), name, text, str(tmp_path / "landed"), *argv],
    )
    return other


def test_a_target_that_moved_lands_with_the_other_commit_and_the_note_on_both(
    repo: Path, tmp_path: Path
) -> None:
    configure(repo)
    seed_plan(repo)
    _land_during(repo, tmp_path, "reviewer", "OTHER.md", "landed by a teammate\n",
                 *fake("reviewer", "approve"))  # fmt: skip
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    other = git(repo, "log", "-1", "--format=%H", "--grep", "landed meanwhile", "main").strip()
    chain = results(repo)[-1]["chain"]
    tip = main_sha(repo)
    assert chain["merged"]["sha"] == tip and chain["iterations"] == 2
    reviewed = chain["rounds"][-1]["reviewedSha"]
    for sha in (other, chain["agents"][0]["endSha"]):
        assert g.is_ancestor(repo, sha, reviewed)  # the approval is of a commit with both
    landed = note(repo, tip)
    assert landed is not None and landed["verdict"] == "approved"
    assert landed["reviewed_sha"] == tip and landed["base_sha"] != tip
    assert note(repo, reviewed)["verdict"] == "approved"  # type: ignore[index]
    assert "moved on" in out.stdout


def test_a_review_the_target_moved_during_does_not_count_towards_max_iterations(
    repo: Path, tmp_path: Path
) -> None:
    configure(repo)
    seed_plan(repo)
    _land_during(repo, tmp_path, "reviewer", "OTHER.md", "landed by a teammate\n",
                 *fake("reviewer", "approve"))  # fmt: skip
    out = run(repo, "--step", "1", "--max-iterations", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    chain = results(repo)[-1]["chain"]
    assert chain["outcome"] == "approved" and len(chain["rounds"]) == 2
    assert g.is_ancestor(repo, chain["rounds"][-1]["reviewedSha"], main_sha(repo))


def test_a_conflicting_target_goes_to_the_fixer_and_lands(repo: Path, tmp_path: Path) -> None:
    configure(repo, fixer="resolve")
    seed_plan(repo)
    # the teammate's commit changes README.md, which the implementer appends to as well
    _land_during(repo, tmp_path, "builder", "README.md", "# demo\nby a teammate\n",
                 *fake("implementer", "edit"))  # fmt: skip
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    chain = results(repo)[-1]["chain"]
    assert "step-01-fixer-1-merge" in [a["agentId"] for a in chain["agents"]]
    readme = git(repo, "show", "main:README.md")
    assert "by a teammate" in readme and "more" in readme and "<<<<<<<" not in readme
    assert note(repo, main_sha(repo))["verdict"] == "approved"  # type: ignore[index]
    # the fixer's statistics are its resolution's (docs/chains.md, "Git statistics"): README.md's
    # three conflict markers gone and its "fixed" line, FIXED.txt; not the teammate's commit
    (fixer,) = [a for a in chain["agents"] if a["agentId"] == "step-01-fixer-1-merge"]
    record = repo / "flows/feature/runs" / fixer["runID"] / "result.json"
    own = json.loads(record.read_text())["gitStats"]
    assert [(f["path"], f["added"], f["deleted"]) for f in own["files"]] == [
        ("FIXED.txt", 1, 0),
        ("README.md", 1, 3),
    ]
    assert [c["sha"] for c in own["commits"]] == [fixer["endSha"]]
    report = (repo / "flows/feature/agents/step-01-fixer-1-merge/report.complete.md").read_text()
    assert "conflict resolution only" in report and "| `README.md` | 1 | 3 |" in report


# --- seed 000's plan form, end to end --------------------------------------------------------


def test_the_seeds_one_space_plan_runs_end_to_end(repo: Path) -> None:
    configure(repo)
    seed_plan(repo)
    out = run(repo, "--all")
    assert out.returncode == 0, out.stderr + out.stdout
    text = git(repo, "show", "main:specs/feature.md")
    assert "### Status: ✅ | Step 1: Add the module\n" in text
    assert "### Status: ✅ | Step 2: Polish\n" in text
    assert clean(repo) and (repo / "specs/feature.md").read_text() == text


# --- the small things ----------------------------------------------------------------------------


def test_several_reviewers_the_reason_names_the_one_that_asked_for_changes(repo: Path) -> None:
    configure(repo, reviewer="approve", extra_reviewers={"security": "revise"})
    out = run(repo, "--step", "1", "--reviewers", "reviewer,security", "--max-iterations", "1")
    assert out.returncode == 1, out.stderr + out.stdout
    reason = results(repo)[-1]["chain"]["reason"]
    assert "security: the reviewer asks for changes" in reason
    assert "reviewer: " not in reason


def test_a_refused_merge_names_the_file_and_the_next_step(repo: Path) -> None:
    configure(repo)
    (repo / "README.md").write_text("my uncommitted edit\n")
    out = run(repo, "--step", "1")
    assert out.returncode == 2, out.stderr + out.stdout
    assert "Your uncommitted changes to README.md in" in out.stdout
    assert "`gitflow-agents run specs/feature.md --step 1` again" in out.stdout


def test_the_command_a_refused_merge_prints_repeats_the_run_and_merges_its_mark(
    repo: Path,
) -> None:
    """The printed command dropped the run's options: run as printed, it used the configured
    reviewer (which rejects here) on another branch, and the approved mark commit it named
    was reset away. Now it repeats them, runs no agent, and lands that very commit."""
    configure(repo, reviewer="revise", extra_reviewers={"picky": "approve"})
    options = (
        "--reviewers",
        "picky",
        "--max-iterations",
        "1",
        "--branch-pattern",
        "w/{plan}(s{step})",
    )
    (repo / "README.md").write_text("my uncommitted edit\n")
    first = run(repo, "--step", "1", *options)
    assert first.returncode == 2, first.stderr + first.stdout
    printed = first.stdout.split("then run `", 1)[1].split("`", 1)[0]
    assert printed == (
        "gitflow-agents run specs/feature.md --step 1 --reviewers picky --max-iterations 1 "
        "--branch-pattern 'w/{plan}(s{step})'"
    )
    tip = git(repo, "rev-parse", "w/feature(s1)").strip()
    git(repo, "checkout", "-q", "README.md")
    again = call(repo, *shlex.split(printed)[1:], "--quiet")
    assert again.returncode == 0, again.stderr + again.stdout
    assert all(agent["reused"] for agent in results(repo)[-1]["chain"]["agents"])
    assert g.is_ancestor(repo, tip, "main") and committed_status(repo, "main", 1) == "✅"


def test_a_renumbered_step_is_implemented_not_given_the_old_steps_work(repo: Path) -> None:
    """Step 1 was approved, its merge refused (its branch and records kept); the team drops it
    and renumbers step 2 as step 1. The run implements the new step 1 from its own text: the
    old step's implementer (same id, same start) was reused and its work landed as step 1."""
    configure(repo)
    (repo / "README.md").write_text("my uncommitted edit\n")
    first = run(repo, "--step", "1")
    assert first.returncode == 2, first.stderr + first.stdout
    old = git(repo, "rev-parse", "agents/feature/step-1").strip()
    git(repo, "checkout", "-q", "README.md")
    plan = repo / "specs" / "feature.md"
    text = plan.read_text()
    plan.write_text(
        text[: text.index("### Status: ❌ | Step 1")]
        + "### Status: ❌ | Step 1: Polish\n\nPolish it.\n"
    )
    git(repo, "commit", "-q", "-am", "drop step 1; step 2 is step 1 now")
    again = run(repo, "--step", "1")
    assert again.returncode == 0, again.stderr + again.stdout
    builder = next(a for a in results(repo)[-1]["chain"]["agents"] if a["kind"] == "implement")
    assert not builder["reused"]
    assert "holds the work of another step 1 ('Add the module'" in again.stdout
    subjects = git(repo, "log", "--format=%s", "main").splitlines()
    assert "[feature] Step 1: Polish" in subjects
    assert "[feature] Step 1: Add the module" not in subjects
    assert git(repo, "cat-file", "-t", old).strip() == "commit"  # named in the note, still there


def test_the_empty_per_plan_folder_of_the_work_tree_cache_goes_after_a_merge(repo: Path) -> None:
    configure(repo)
    assert run(repo, "--step", "1").returncode == 0
    assert not (g.tool_worktree_root(repo) / "feature").exists()
    assert "1 file changed" not in call(repo, "history").stdout  # several files: plural


def test_singular_counts_in_flow_and_history(repo: Path) -> None:
    configure(repo, reviewer="until-fixed")
    assert run(repo, "--step", "1", "--max-iterations", "1").returncode == 1
    out = call(repo, "flow", "fix", "--plan", "specs/feature.md", "--step", "1",
                "--after", "step-01-reviewer-1", "--quiet")  # fmt: skip
    assert out.returncode == 0, out.stderr + out.stdout
    assert "[2 files changed," in out.stdout
    rows = json.loads(call(repo, "history", "--json").stdout)
    assert any(row["git"].endswith(", 1 commit") for row in rows), rows


# --- stuck: the grace re-checked, then one retry -------------------------------------------


def _stuck_config(repo: Path, stuck: int, grace: int) -> None:
    config = repo / ".flow" / "base.yaml"
    text = config.read_text().replace(
        "defaults:\n  stuck_timeout_secs: 20\n",
        f"defaults:\n  stuck_timeout_secs: {stuck}\n  stuck_retry_grace_secs: {grace}\n",
    )
    config.write_text(text)


def test_a_stuck_agent_is_killed_after_the_grace_and_retried_once(
    repo: Path, tmp_path: Path
) -> None:
    """The implementer hangs silently the first time: idle for stuck_timeout, then the grace,
    re-checked; its tree is killed and it runs once more. Both attempts are on record."""
    configure(repo)
    _stuck_config(repo, stuck=1, grace=1)
    hang_once = 'if [ ! -f "$0" ]; then : > "$0"; exec sleep 60; fi; exec "$@"'
    marker = str(tmp_path / "hung-once")
    set_agent(repo, "builder", ["sh", "-c", hang_once, marker, *fake("implementer", "edit")])
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    agents = results(repo)[-1]["chain"]["agents"]
    first, second = agents[0], agents[1]
    assert (first["agentId"], first["status"], first["attempt"]) == ("step-01-builder", "stuck", 1)
    assert "then 1s grace" in first["reason"]
    assert (second["agentId"], second["status"], second["attempt"]) == (
        "step-01-builder", "succeeded", 2,
    )  # fmt: skip
    assert [a["kind"] for a in agents] == ["implement", "implement", "review"]
    records = [
        json.loads((repo / "flows/feature/runs" / a["runID"] / "result.json").read_text())
        for a in (first, second)
    ]
    assert [r["run"]["outcome"] for r in records] == ["stuck", "succeeded"]
    assert git(repo, "show", "main:README.md") == "# demo\nmore\n"


def test_activity_within_the_grace_is_not_stuck(repo: Path) -> None:
    """Silent for longer than stuck_timeout but active again within the grace: no retry."""
    configure(repo)
    _stuck_config(repo, stuck=1, grace=3)
    slow_start = 'sleep 1.6; exec "$@"'
    set_agent(repo, "builder", ["sh", "-c", slow_start, "sh", *fake("implementer", "edit")])
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    agents = results(repo)[-1]["chain"]["agents"]
    assert [(a["kind"], a["status"], a["attempt"]) for a in agents] == [
        ("implement", "succeeded", 1),
        ("review", "succeeded", 1),
    ]


def _lost_run(repo: Path, number: int) -> tuple[Path, Path]:
    """A lost run of step 1's builder in the step's work tree, its supervisor and its agent
    gone: its run folder and the work tree."""
    from gitflow_agents.chain import worktree_path

    configure(repo)
    tree = worktree_path(repo, "feature", "step-01")
    gone = subprocess.Popen(["true"])
    gone.wait()
    run_dir = repo / "flows" / "feature" / "runs" / f"0190aaaa-0000-7000-8000-00000000000{number}"
    run_dir.mkdir(parents=True)
    status = {
        "run_id": run_dir.name, "flow": "feature", "agent": "step-01-builder",
        "state": "running", "started": time.time(), "supervisor_pid": gone.pid,
        "pid": gone.pid, "create_time": 1.0, "tree_token": f"gfa-tree-gone-{number}",
        "extra": {"workdir": str(tree)},
    }  # fmt: skip
    (run_dir / "status.json").write_text(json.dumps(status))
    return run_dir, tree


def test_a_lost_run_whose_processes_survive_the_kill_stops_the_new_run(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never two agents in one work tree: when a lost run's tree cannot be killed, the new run
    stops (exit 2) before it touches the work tree and says how to end the lost run."""
    from gitflow_agents.runs import lost as lost_runs

    run_dir, tree = _lost_run(repo, 2)
    monkeypatch.setattr(lost_runs, "kill_recorded_tree", lambda status, grace=3.0: (4242,))
    out = run(repo, "--step", "1")
    assert out.returncode == 2, out.stderr + out.stdout
    assert f"the lost run {run_dir.name} (step-01-builder)" in out.stderr
    assert f"`gitflow-agents cancel {run_dir.name}`" in out.stderr and "4242" in out.stderr
    assert not tree.exists() and not git(repo, "branch", "--list", "agents/*").strip()


def test_a_lost_run_whose_agent_had_ended_is_not_said_to_have_still_worked(repo: Path) -> None:
    """`kill -9` of `run` just after its agent completed: the re-run's note said the lost run
    "still worked ... its process tree was killed", though nothing of it ran any more."""
    run_dir, tree = _lost_run(repo, 3)
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    assert "process tree was killed" not in out.stdout and "still worked" not in out.stdout
    assert (
        f"run {run_dir.name} (step-01-builder) was lost (its supervisor died) after its agent "
        f"had ended in {tree}, before its work was committed and recorded: nothing was left to "
        "kill, and the agent runs again"
    ) in out.stdout


SPENDS_THEN_REVIEWS = """\
import json, subprocess, sys
usage = {"input_tokens": 1000, "output_tokens": 200}
message = {"id": "m-" + sys.argv[1], "model": "claude-sonnet-4-5", "usage": usage}
print(json.dumps({"type": "assistant", "message": message}), flush=True)
sys.exit(subprocess.call(sys.argv[2:]))
"""


def test_a_review_a_budget_stopped_after_the_moved_target_was_merged_records_the_steps_work(
    repo: Path, tmp_path: Path
) -> None:
    """Review 1 approves while a teammate lands a commit on main; the target is merged into
    the step branch and review 2, of that merge, is stopped by the step's budget. The step's
    git statistics are its own work against the new base (what `git diff main branch` shows),
    not the teammate's commit counted as removed."""
    configure(repo)
    seed_plan(repo)
    spender = tmp_path / "spends.py"
    spender.write_text(SPENDS_THEN_REVIEWS)
    reviewer = [sys.executable, str(spender), str(tmp_path / "n"), *fake("reviewer", "approve")]
    _land_during(repo, tmp_path, "reviewer", "OTHER.md", "landed by a teammate\n", *reviewer)
    out = run(repo, "--step", "1", "--budget-tokens", "2000")
    assert out.returncode == 5, out.stderr + out.stdout
    assert "moved on" in out.stdout
    step = results(repo)[-1]
    assert step["chain"]["outcome"] == "budget"
    branch = "agents/feature/step-1"
    expected = sorted(git(repo, "diff", "--name-only", "main", branch).split())
    assert "OTHER.md" not in expected
    assert sorted(step["changedFiles"]) == expected
    assert step["gitStats"]["headSha"] == git(repo, "rev-parse", branch).strip()
