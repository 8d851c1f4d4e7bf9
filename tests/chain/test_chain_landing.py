"""Landings that stop short of ✅: real temporary repositories, the CLI as a real process where
a process must die, fake agents (docs/chains.md, "The state model" and "Resuming").

* A run killed right after its merge landed the step, before it wrote ✅ into a plan the target
  does not have (so its user's copy is the one place ✅ goes): the same command again sees the
  step's work on the target and finishes the landing (✅ into the copy, the work tree removed)
  without running an agent, and every run after that finds the step done.
* A step whose approved change moves or deletes the plan: it lands and is recorded approved
  (exit 0), one note names the plan and why its ✅ was not written, and running the plan from
  its new place finds the step landed instead of running it again.

The kill comes from a ``git`` first on the orchestrator's ``PATH`` that kills its parent (the
orchestrator) right after the fast-forward it ran: the exact moment, without a sleep.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.base.errors import ExitCode
from gitflow_agents.git import queries as g
from gitflow_agents.runs import lock
from tests.conftest import git, run_cli
from tests.helpers.chain import (
    FAKE,
    PLAN,
    call,
    committed_status,
    configure,
    main_sha,
    results,
    step_status,
)

KILL_AFTER_FF = """\
#!/bin/sh
# git, then, once (the marker), kill -9 of the process that ran `git merge --ff-only`
{git} "$@"
code=$?
for arg in "$@"; do
    if [ "$arg" = "--ff-only" ] && [ ! -e {marker} ]; then
        : > {marker}
        kill -9 "$PPID"
    fi
done
exit $code
"""


def _git_that_kills_after_the_merge(tmp_path: Path) -> dict[str, str]:
    """The environment of an orchestrator that is killed right after its landing's merge."""
    return _git(tmp_path, KILL_AFTER_FF)


INTERRUPT_IN_FF = """\
#!/bin/sh
# git, then, once (the marker), Ctrl-C of the process that ran `git merge --ff-only` while git
# still runs (a slow post-merge hook): it waits until its parent has stopped it
{git} "$@"
code=$?
for arg in "$@"; do
    if [ "$arg" = "--ff-only" ] && [ ! -e {marker} ]; then
        : > {marker}
        kill -INT "$PPID"
        while kill -0 "$PPID" 2>/dev/null; do sleep 0.05; done
    fi
done
exit $code
"""


def _killed_right_after_the_merge(repo: Path, tmp_path: Path) -> None:
    """Step 1 run by an orchestrator that is killed (-9) right after its landing's merge."""
    killed = run_cli(
        "run", "specs/feature.md", "--step", "1", "--quiet", "--kill-grace", "0.2",
        cwd=repo, env=_git_that_kills_after_the_merge(tmp_path),
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr + killed.stdout


def _git(tmp_path: Path, template: str) -> dict[str, str]:
    """The environment of an orchestrator whose git is ``template`` around the real one."""
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "wrapped-git"
    folder.mkdir()
    script = folder / "git"
    marker = tmp_path / "git-did-it"
    script.write_text(template.format(git=json.dumps(real), marker=json.dumps(str(marker))))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def _agent_runs(repo: Path) -> set[str]:
    """The agent runs (not step runs) that ever started in the repository."""
    return {p.parent.name for p in repo.glob("flows/*/runs/*/status.json")}


def _step_tree(repo: Path, step: int = 1) -> Path:
    return g.tool_worktree_root(repo) / "feature" / f"step-{step:02d}"


def _landing_record(repo: Path, step: int = 1) -> dict[str, Any]:
    """The one record of a step run of ``step`` (the killed run's, written by the run that
    finished its landing), checked to be as a landing records it and listed by ``history``."""
    (record,) = [r for r in results(repo) if r["chain"]["step"] == step]
    chain = record["chain"]
    assert chain["outcome"] == "approved" and chain["exitCode"] == 0
    assert "ended after its merge landed" in chain["reason"]
    agents = [a["agentId"] for a in chain["agents"]]
    assert agents == [f"step-{step:02d}-builder", f"step-{step:02d}-reviewer-1"]
    for agent in chain["agents"]:  # the killed run's own agent runs, whose spend it counts
        ran = json.loads((repo / "flows/feature/runs" / agent["runID"] / "result.json").read_text())
        assert ran["run"]["chainRunID"] == record["run"]["runID"]
    assert not (repo / "flows/feature/runs" / record["run"]["runID"] / "landing.json").exists()
    rows = json.loads(call(repo, "history", "--json").stdout)
    assert [r["outcome"] for r in rows if r["what"] == f"step {step}"] == ["approved"]
    lines = (repo / "flows/feature/history.md").read_text().splitlines()
    assert sum(record["run"]["runID"] in line for line in lines) == 1
    return record


def _uncommitted_plan(repo: Path) -> None:
    """The plan is the user's alone: in their work tree, not committed on main."""
    git(repo, "rm", "-q", "--cached", "specs/feature.md")
    git(repo, "commit", "-q", "-m", "the plan is not committed")


# --- Ctrl-C while git lands the step ----------------------------------------------------------


def test_ctrl_c_while_the_merge_runs_its_hook_records_the_landed_step_approved(
    repo: Path, tmp_path: Path
) -> None:
    """Ctrl-C reaches the orchestrator while ``git merge --ff-only`` into the checked-out
    target still runs (its post-merge hook: an ``npm install``), after it moved the target:
    the step landed, so it is recorded approved with its merge, and the landing is finished."""
    configure(repo)
    interrupted = run_cli(
        "run", "specs/feature.md", "--step", "1", "--quiet", "--kill-grace", "0.2",
        cwd=repo, env=_git(tmp_path, INTERRUPT_IN_FF),
    )  # fmt: skip
    assert interrupted.returncode == ExitCode.INTERRUPTED, interrupted.stderr + interrupted.stdout
    landed = main_sha(repo)
    assert g.is_ancestor(repo, git(repo, "rev-parse", "agents/feature/step-1").strip(), landed)
    (result,) = results(repo)
    chain = result["chain"]
    assert chain["outcome"] == "approved" and chain["exitCode"] == 0, chain
    assert chain["merged"] is not None and chain["merged"]["sha"] == landed
    assert "interrupted" in chain["reason"] and " approved " in result["run"]["historyLine"]
    assert not _step_tree(repo).exists()  # the landing was finished
    assert step_status(repo, 1) == "✅"

    again = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert again.returncode == 0 and "already ✅" in again.stdout, again.stderr + again.stdout
    assert main_sha(repo) == landed and len(results(repo)) == 1


# --- a plan that cannot take its ✅ --------------------------------------------------------------


def test_a_plan_symlinked_out_of_the_repository_is_refused_before_anything_runs(
    repo: Path, tmp_path: Path
) -> None:
    """Its ✅ could never be written (docs/spec-plans.md): refused up front, exit 2, naming the
    file, not after the step merged; its real path, outside the repository, runs."""
    configure(repo)
    before = main_sha(repo)
    outside = tmp_path / "outside.md"
    outside.write_text(PLAN)
    (repo / "specs" / "link.md").symlink_to(outside)
    for _ in range(2):  # and the same the next time: nothing was left to finish
        refused = call(repo, "run", "specs/link.md", "--step", "1", "--quiet")
        assert refused.returncode == 2, refused.stderr + refused.stdout
        assert "specs/link.md" in refused.stderr and "out of the repository" in refused.stderr
        assert str(outside) in refused.stderr  # the path that runs
        assert main_sha(repo) == before and _agent_runs(repo) == set()
        assert git(repo, "branch", "--list", "agents/*") == ""
    assert outside.read_text() == PLAN
    real = call(repo, "run", str(outside), "--step", "1", "--quiet")
    assert real.returncode == 0, real.stderr + real.stdout
    assert "### Status: ✅ | Step 1:" in outside.read_text()


# --- killed between the merge and ✅ in the user's copy ---------------------------------------


def test_a_run_killed_right_after_its_merge_is_finished_by_the_same_command(
    repo: Path, tmp_path: Path
) -> None:
    configure(repo)
    _uncommitted_plan(repo)
    base = main_sha(repo)
    _killed_right_after_the_merge(repo, tmp_path)
    landed = main_sha(repo)
    assert landed == git(repo, "rev-parse", "agents/feature/step-1").strip()
    assert results(repo) == []  # killed before its record
    assert step_status(repo, 1) == "❌"  # the merge landed; the ✅ never came
    assert _step_tree(repo).exists()
    agents = _agent_runs(repo)

    again = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert again.returncode == 0, again.stderr + again.stdout
    assert "on main already" in again.stdout and "written into specs/feature.md" in again.stdout
    assert step_status(repo, 1) == "✅" and step_status(repo, 2) == "❌"
    assert _agent_runs(repo) == agents  # no agent ran
    assert main_sha(repo) == landed and not _step_tree(repo).exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    # the killed run's record, from what it kept before its merge (the tip is its agent's
    # commit: the plan is not on the branch)
    assert "before it wrote its record: written now" in again.stdout
    record = _landing_record(repo)
    assert record["chain"]["merged"] == {"sha": landed, "previous": base, "kind": "fast-forward"}

    every = call(repo, "run", "specs/feature.md", "--all", "--quiet")
    assert every.returncode == 0, every.stderr + every.stdout
    assert "step 1 is already ✅ in specs/feature.md" in every.stdout
    assert step_status(repo, 2) == "✅"
    # step 1 was implemented once, and recorded once
    builders = [r["chain"]["agents"][0]["agentId"] for r in results(repo)]
    assert builders == ["step-01-builder", "step-02-builder"]
    assert _landing_record(repo) == record
    assert git(repo, "show", "main:README.md") == "# demo\nmore\nmore\n"


def test_a_run_killed_right_after_its_merge_of_a_committed_plan_is_finished_too(
    repo: Path, tmp_path: Path
) -> None:
    """The plan committed on the target: the merge brought its ✅ along, so the step is done,
    but its work tree was still to go. The same command finishes that (no agent runs, nothing
    is merged), and every run after that only finds the step done."""
    configure(repo)
    _killed_right_after_the_merge(repo, tmp_path)
    landed = main_sha(repo)
    assert committed_status(repo, "main", 1) == "✅" and _step_tree(repo).exists()
    agents = _agent_runs(repo)
    with lock.hold_step(repo, g.git_common_dir(repo), "flows", "feature", 1, "a-live-run"):
        held = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert held.returncode == 0, held.stderr + held.stdout  # the live run's tree: left alone
    assert "already ✅ on main" in held.stdout and _step_tree(repo).exists()
    assert results(repo) == []  # a live run holds the step: its record is its own to write

    again = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert again.returncode == 0, again.stderr + again.stdout
    assert "step 1 is already ✅ on main" in again.stdout
    assert "its work tree is removed now" in again.stdout
    assert not _step_tree(repo).exists()
    assert json.loads(call(repo, "worktrees", "--json").stdout) == []
    assert _agent_runs(repo) == agents and main_sha(repo) == landed
    # the killed run's record (named by the mark commit's trailer), written once
    assert "before it wrote its record: written now" in again.stdout
    record = _landing_record(repo)
    assert record["chain"]["merged"]["sha"] == landed
    assert record["chain"]["headSha"] == git(repo, "rev-parse", f"{landed}^").strip()

    same = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert same.returncode == 0, same.stderr + same.stdout
    assert "step 1 is already ✅ on main" in same.stdout and "work tree" not in same.stdout
    assert "record" not in same.stdout and _landing_record(repo) == record
    assert _agent_runs(repo) == agents and main_sha(repo) == landed


def test_all_after_the_kill_finishes_the_landed_step_and_runs_the_next(
    repo: Path, tmp_path: Path
) -> None:
    """``run --all`` takes the landed step as the first of its steps: finished, then the next
    runs (with ``--jobs``: a step that depends on it starts once it is finished)."""
    configure(repo)
    plan = repo / "specs" / "feature.md"
    plan.write_text(PLAN.replace("Polish it.\n", "Depends on: 1\n\nPolish it.\n"))
    _uncommitted_plan(repo)
    _killed_right_after_the_merge(repo, tmp_path)
    every = call(repo, "run", "specs/feature.md", "--all", "--jobs", "2", "--quiet")
    assert every.returncode == 0, every.stderr + every.stdout
    assert step_status(repo, 1) == "✅" and step_status(repo, 2) == "✅"
    assert [r["chain"]["step"] for r in results(repo)] == [1, 2]  # step 1's: the killed run's
    _landing_record(repo)
    assert list(repo.glob("flows/*/runs/*/landing.json")) == []  # step 2's went with its record


def test_the_users_copy_gone_during_the_run_is_a_note_not_a_failure(repo: Path) -> None:
    """The landing of a plan the target does not have writes ✅ into the user's copy: when that
    cannot be (the copy was deleted meanwhile), the step still landed: exit 0, one note."""
    configure(repo)
    _uncommitted_plan(repo)
    remover = repo.parent / "remove-plan.py"
    remover.write_text(
        "import os, subprocess, sys\n"
        f"os.remove({str(repo / 'specs' / 'feature.md')!r})\n"
        "sys.exit(subprocess.call(sys.argv[1:]))\n"
    )
    _set_command(repo, "reviewer", [sys.executable, str(remover), *_fake("reviewer", "approve")])
    out = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert out.returncode == 0, out.stderr + out.stdout
    [note] = [line for line in out.stdout.splitlines() if line.startswith("  note:")]
    assert "specs/feature.md" in note and "not marked ✅" in note and "no such file" in note
    [result] = results(repo)
    assert result["chain"]["outcome"] == "approved" and result["chain"]["merged"]
    assert result["chain"]["notices"] == [note.removeprefix("  note: ")]
    assert not _step_tree(repo).exists()


UNMARKABLE = r"""spec_plan:
  step_header_pattern: '^## \[([ x])\] (\d+)\. (.+)$'
"""


def test_a_committed_plan_whose_header_cannot_take_the_mark_lands_with_a_note(
    repo: Path,
) -> None:
    """A ``step_header_pattern`` whose status group cannot hold ✅ (``[ x]``): the step lands
    (exit 0) unmarked, and one note names the plan's header line and why, as for a plan the
    target does not have; the same command again runs no agent and changes nothing."""
    configure(repo)
    with (repo / ".flow" / "base.yaml").open("a") as config:
        config.write(UNMARKABLE)
    plan = "# Plan: Feature\n\n## [ ] 1. Add the module\n\nAdd src/new_module.py.\n"
    (repo / "specs" / "feature.md").write_text(plan)
    git(repo, "commit", "-q", "-am", "a plan of its own layout")
    out = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert out.returncode == 0, out.stderr + out.stdout
    [note] = [line for line in out.stdout.splitlines() if line.startswith("  note:")]
    assert note.startswith("  note: step 1 is not marked ✅ in specs/feature.md:3: "), note
    assert "step_header_pattern" in note
    [result] = results(repo)
    assert result["chain"]["outcome"] == "approved" and result["chain"]["merged"]
    assert result["chain"]["notices"] == [note.removeprefix("  note: ")]
    landed = main_sha(repo)
    assert git(repo, "show", "main:specs/feature.md") == plan
    assert not _step_tree(repo).exists()
    agents = _agent_runs(repo)

    again = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert again.returncode == 0, again.stderr + again.stdout
    assert "does not mark it ✅; --force runs it again" in again.stdout
    assert main_sha(repo) == landed and _agent_runs(repo) == agents and len(results(repo)) == 1


# --- a step that moves or deletes its plan ------------------------------------------------------

MOVER = """\
import os, subprocess, sys
from pathlib import Path

# step 1 moves (or deletes) the plan; every step adds a file of its own; then the report
agent_dir = Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
if Path("specs/feature.md").exists():
    if sys.argv[1] == "move":  # to docs/feature.md, or the path given
        to = sys.argv[2] if len(sys.argv) > 2 else "docs/feature.md"
        subprocess.run(["git", "mv", "specs/feature.md", to], check=True)
    else:
        subprocess.run(["git", "rm", "-q", "specs/feature.md"], check=True)
Path(agent_dir.name + ".txt").write_text("work\\n")
report = "# Done\\n\\n## Modified files\\n\\n<!-- gitflow-agents:git-stats -->\\n"
(agent_dir / "report.md").write_text(report)
(agent_dir / "report.md").rename(agent_dir / "report.complete.md")
"""


def _fake(role: str, mode: str) -> list[str]:
    return [sys.executable, str(FAKE), role, mode]


def _set_command(repo: Path, name: str, argv: list[str]) -> None:
    """Point agent ``name`` of .flow/base.yaml at ``argv`` (the config is read per run)."""
    config = repo / ".flow" / "base.yaml"
    lines = config.read_text().splitlines()
    index = lines.index(f"  {name}:")
    lines[index + 2] = f"    command: {json.dumps(argv)}"
    config.write_text("\n".join(lines) + "\n")


def _moving_builder(repo: Path, how: str, *to: str) -> None:
    configure(repo)
    plan = repo / "specs" / "feature.md"
    plan.write_text(PLAN.replace("Polish it.\n", "Depends on: 1\n\nPolish it.\n"))
    git(repo, "commit", "-q", "-am", "step 2 depends on step 1")
    script = repo.parent / "mover.py"
    script.write_text(MOVER)
    _set_command(repo, "builder", [sys.executable, str(script), how, *to])


def test_a_step_that_moves_its_plan_lands_with_a_note_and_is_not_run_again(repo: Path) -> None:
    _moving_builder(repo, "move")
    before = main_sha(repo)
    out = run_cli("run", "specs/feature.md", "--step", "1", "--quiet", cwd=repo)
    assert out.returncode == 0, out.stderr + out.stdout
    assert "error" not in out.stderr
    [note] = [line for line in out.stdout.splitlines() if line.startswith("  note:")]
    assert "specs/feature.md" in note and "not marked ✅" in note
    assert "moved it to docs/feature.md" in note
    [result] = results(repo)
    chain = result["chain"]
    assert chain["outcome"] == "approved" and chain["exitCode"] == 0
    assert chain["merged"]["sha"] == main_sha(repo) != before
    assert chain["notices"] == [note.removeprefix("  note: ")]
    assert "approved" in result["run"]["historyLine"]
    [row] = json.loads(call(repo, "history", "--json").stdout)
    assert row["outcome"] == "approved"
    assert not _step_tree(repo).exists()  # landed: its work tree goes
    assert json.loads(call(repo, "worktrees", "--json").stdout) == []
    assert git(repo, "ls-tree", "--name-only", "main", "specs/", "docs/").split() == [
        "docs/feature.md",
        "docs/old.md",
    ]
    assert git(repo, "status", "--porcelain") == ""
    agents = _agent_runs(repo)

    # the same command: the plan is not there any more; the error says where it went
    same = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert same.returncode == 2, same.stderr + same.stdout
    assert "specs/feature.md: no such file" in same.stderr
    assert "moved it to docs/feature.md" in same.stderr
    # the plan where it is now: step 1 landed already (skipped, no agent), step 2 runs after it
    moved = call(repo, "run", "docs/feature.md", "--step", "1", "--quiet")
    assert moved.returncode == 0, moved.stderr + moved.stdout
    assert "skipped" in moved.stdout and "on main already" in moved.stdout
    assert "--force runs it again" in moved.stdout
    assert _agent_runs(repo) == agents
    every = call(repo, "run", "docs/feature.md", "--all", "--jobs", "2", "--quiet")
    assert every.returncode == 0, every.stderr + every.stdout
    assert [r["chain"]["step"] for r in results(repo)] == [1, 2]
    assert git(repo, "show", "main:step-02-builder.txt") == "work\n"
    assert "step-01-builder.txt" in git(repo, "ls-tree", "--name-only", "main")


def test_a_step_landed_by_another_implementer_is_not_run_again(repo: Path) -> None:
    """Whether a step's work landed does not depend on the implementer named now: a step that
    ``--implementer mover`` ran (it moved the plan, so no ✅ came) is skipped from the plan's
    new place with the configured implementer too, run after run, and runs no agent; also once
    the agent that landed it is gone from the config."""
    configure(repo)
    script = repo.parent / "mover.py"
    script.write_text(MOVER)
    argv = json.dumps([sys.executable, str(script), "move"])
    config = repo / ".flow" / "base.yaml"
    without = config.read_text()
    config.write_text(f"{without}  mover:\n    adapter: command\n    command: {argv}\n")
    out = call(repo, "run", "specs/feature.md", "--step", "1", "--implementer", "mover", "--quiet")
    assert out.returncode == 0, out.stderr + out.stdout
    assert "moved it to docs/feature.md" in out.stdout
    landed, agents = main_sha(repo), _agent_runs(repo)
    for configured in (True, False):  # and the same again: nothing changes
        if not configured:
            config.write_text(without)
        again = call(repo, "run", "docs/feature.md", "--step", "1", "--quiet")
        assert again.returncode == 0, again.stderr + again.stdout
        assert "skipped" in again.stdout and "on main already" in again.stdout
        assert "--force runs it again" in again.stdout
        assert main_sha(repo) == landed and _agent_runs(repo) == agents
    assert [r["chain"]["agents"][0]["agentId"] for r in results(repo)] == ["step-01-mover"]


def test_a_step_that_deletes_its_plan_leaves_the_users_own_copy_alone(repo: Path) -> None:
    """The target is not checked out here: the user's branch keeps its copy of the plan, which
    the landing must not take for an uncommitted plan and write ✅ into."""
    _moving_builder(repo, "delete")
    git(repo, "checkout", "-q", "-b", "elsewhere")
    out = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert out.returncode == 0, out.stderr + out.stdout
    [note] = [line for line in out.stdout.splitlines() if line.startswith("  note:")]
    assert "specs/feature.md" in note and "the step deleted it" in note
    assert step_status(repo, 1) == "❌" and git(repo, "status", "--porcelain") == ""
    assert "specs/feature.md" not in git(repo, "ls-tree", "-r", "--name-only", "main")
    [result] = results(repo)
    assert result["chain"]["outcome"] == "approved" and not _step_tree(repo).exists()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_all_stops_after_the_step_that_moved_the_plan_and_says_where_it_is(
    repo: Path, jobs: str
) -> None:
    """`--jobs 2` said only `specs/feature.md: no such file`, not where the plan went."""
    _moving_builder(repo, "move")
    out = call(repo, "run", "specs/feature.md", "--all", "--jobs", jobs, "--quiet")
    assert out.returncode == 2, out.stderr + out.stdout
    assert "step 1: approved" in out.stdout and "step 2" not in out.stdout
    assert "specs/feature.md: no such file; main's commit" in out.stderr
    assert "moved it to docs/feature.md" in out.stderr
    assert [r["chain"]["outcome"] for r in results(repo)] == ["approved"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_step_that_renamed_its_plan_is_landed_under_the_new_name_too(
    repo: Path, jobs: str
) -> None:
    """Step 1 moves specs/feature.md to docs/plan.md, a new file name: step branches and
    agent records go by the plan's name (`feature`, now `plan`), so `run docs/plan.md --all`
    ran step 1's implementer again (it found nothing to do: `empty`, exit 1, step 2 never ran).
    The step's branch under the name the target's history renamed the plan from is found
    landed: step 1 is skipped, no agent runs for it, and step 2 lands."""
    _moving_builder(repo, "move", "docs/plan.md")
    first = call(repo, "run", "specs/feature.md", "--all", "--jobs", jobs, "--quiet")
    assert first.returncode == 2, first.stderr + first.stdout
    assert "moved it to docs/plan.md" in first.stderr
    agents = _agent_runs(repo)
    out = call(repo, "run", "docs/plan.md", "--all", "--jobs", jobs, "--quiet")
    assert out.returncode == 0, out.stderr + out.stdout
    assert "step 1: skipped - step 1's work is on main already (agents/feature/step-1" in out.stdout
    assert agents < _agent_runs(repo)  # step 2's agents
    assert list(repo.glob("flows/plan/agents/step-02-*"))
    assert not list(repo.glob("flows/plan/agents/step-01-*")), out.stdout  # none of step 1
    assert git(repo, "show", "main:step-02-builder.txt") == "work\n"
    assert "[plan] Mark step 2 done" in git(repo, "log", "--format=%s", "main")


# --- killed between a merge commit and its approval (--merge merge) ---------------------------


def _gate(repo: Path) -> int:
    return call(repo, "hook", "gate", "main").returncode


def test_a_merge_commit_left_without_its_approval_gets_it_from_the_next_run(
    repo: Path, tmp_path: Path
) -> None:
    """``--merge merge`` carries the approval to the merge commit after it landed; a run killed
    in between left the target's tip failing the pre-push gate, and the next run found the step
    done and did nothing. Now that run carries it (one note), and the run after says nothing."""
    configure(repo)
    killed = run_cli(
        "run", "specs/feature.md", "--step", "1", "--merge", "merge", "--quiet",
        "--kill-grace", "0.2", cwd=repo, env=_git_that_kills_after_the_merge(tmp_path),
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr + killed.stdout
    merge = main_sha(repo)
    assert len(g.parents(repo, merge)) == 2 and step_status(repo, 1) == "✅"
    assert g.read_note(repo, merge) is None and _gate(repo) == 1

    again = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert again.returncode == 0, again.stderr + again.stdout
    assert f"carried to its merge commit {merge[:12]}" in again.stdout
    assert _gate(repo) == 0 and main_sha(repo) == merge
    note = json.loads(g.read_note(repo, merge) or "{}")
    assert note["verdict"] == "approved" and note["reviewed_sha"] == merge
    merged = _landing_record(repo)["chain"]["merged"]
    assert (merged["sha"], merged["kind"]) == (merge, "merge-commit")
    assert merged["previous"] == g.parents(repo, merge)[0]

    quiet = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert quiet.returncode == 0 and "carried" not in quiet.stdout


def test_finishing_a_landing_also_carries_the_merge_commits_approval(
    repo: Path, tmp_path: Path
) -> None:
    """The same kill with a plan the target does not have: the next run writes the ✅ into the
    user's copy and carries the approval to the merge commit."""
    configure(repo)
    _uncommitted_plan(repo)
    killed = run_cli(
        "run", "specs/feature.md", "--step", "1", "--merge", "merge", "--quiet",
        "--kill-grace", "0.2", cwd=repo, env=_git_that_kills_after_the_merge(tmp_path),
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr + killed.stdout
    assert _gate(repo) == 1
    again = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert again.returncode == 0, again.stderr + again.stdout
    assert "written into specs/feature.md" in again.stdout and "carried" in again.stdout
    assert step_status(repo, 1) == "✅" and _gate(repo) == 0


def test_a_merge_commit_of_another_tree_gets_no_approval(repo: Path) -> None:
    """A merge of the step branch whose tree is not the approved one (the target moved on, so
    the merge brings more than was reviewed) is never given the step's approval."""
    configure(repo)
    done = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert done.returncode == 0, done.stderr + done.stdout
    tip = git(repo, "rev-parse", "agents/feature/step-1").strip()
    git(repo, "reset", "-q", "--hard", f"{tip}~2")  # main before the step landed
    (repo / "other.txt").write_text("moved on\n")
    git(repo, "add", "other.txt")
    git(repo, "commit", "-q", "-m", "main moved on")
    git(repo, "merge", "-q", "--no-ff", "-m", "a person's merge", tip)
    assert _gate(repo) == 1
    again = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert again.returncode == 0 and "carried" not in again.stdout
    assert _gate(repo) == 1
