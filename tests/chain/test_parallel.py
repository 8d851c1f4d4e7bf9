"""``run PLAN --all --jobs N`` (chain/parallel.py, issue 24): several steps at once on real
temporary repositories with fake agents of fixed length (tests/fakes/fake_step_agent). Overlap
is proven by the agents' own start/end records (a barrier no serial run passes), never by time.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from gitflow_agents.base.errors import ExitCode
from gitflow_agents.chain import ChainResult
from gitflow_agents.chain.parallel import run_parallel, steps_hub, worst_exit
from gitflow_agents.commands.run import open_context
from gitflow_agents.git import queries as g
from tests.conftest import FAKES, ROOT, git, wait_until
from tests.helpers.chain import FAKE, MARKER, call, main_sha, note, results

STEP_AGENT = FAKES / "fake_step_agent"
ARGS = ("run", "specs/feature.md", "--all", "--quiet", "--kill-grace", "0.2")


def plan_text(depends: dict[int, int], steps: int, touches: dict[int, str] | None = None) -> str:
    """A plan of ``steps`` steps; ``depends``: step -> the step it depends on (the others
    depend on none: without the line a step waits for the one before it)."""
    text = "# Plan: Feature\n\n## Implementation Steps\n"
    for number in range(1, steps + 1):
        text += f"\n### Status: ❌ | Step {number}: Part {number}\n\nDo part {number}.\n"
        text += f"\nDepends on: {depends.get(number, 'none')}\n"
        if touches and number in touches:
            text += f"\nTouches: {touches[number]}\n"
    return text


def write_config(repo: Path, log: Path, *builder: str, jobs: int | None = None) -> None:
    """Fake agents: the step builder (``builder`` its options), the approving reviewer and the
    conflict-resolving fixer of fake_flow_agent. Not committed: read per run."""

    def agent(argv: list[str]) -> str:
        return f"    adapter: command\n    command: {json.dumps(argv)}\n"

    text = (
        "flow_dir: flows\ndefault_branch: main\n"
        "defaults:\n  stuck_timeout_secs: 90\n  max_wait_secs: 120\n"
        "completion_workflow:\n"
        f'  template: "Write {{report_file}}; rename it to {{success_file}} or {{failed_file}}. '
        f'Modified files: {MARKER}"\n'
        "agents:\n"
        f"  builder:\n{agent([sys.executable, str(STEP_AGENT), '--log', str(log), *builder])}"
        f"  reviewer:\n{agent([sys.executable, str(FAKE), 'reviewer', 'approve'])}"
        f"  fixer:\n{agent([sys.executable, str(FAKE), 'fixer', 'resolve'])}"
    )
    if jobs is not None:
        text += f"chain:\n  jobs: {jobs}\n"
    (repo / ".flow").mkdir(exist_ok=True)
    (repo / ".flow" / "base.yaml").write_text(text)


def setup(repo: Path, plan: str) -> None:
    (repo / "specs").mkdir(exist_ok=True)
    (repo / "specs" / "feature.md").write_text(plan)
    git(repo, "add", "specs")
    git(repo, "commit", "-q", "-m", "plan")
    with (repo / ".git" / "info" / "exclude").open("a") as handle:
        handle.write("/.flow/\n")


def log_lines(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def landed_once(repo: Path, steps: range) -> None:
    """Every step's implementation and its ✅ reached main exactly once."""
    subjects = git(repo, "log", "--format=%s", "main").splitlines()
    for number in steps:
        assert subjects.count(f"[feature] Step {number}: Part {number}") == 1, subjects
        assert subjects.count(f"[feature] Mark step {number} done") == 1, subjects
        assert git(repo, "show", f"main:step-{number}.txt") == f"written by step {number}\n"


def tool_worktrees(repo: Path) -> list[str]:
    listed = git(repo, "worktree", "list", "--porcelain").splitlines()
    trees = [line.removeprefix("worktree ") for line in listed if line.startswith("worktree ")]
    return [tree for tree in trees if g.is_tool_worktree(repo, Path(tree))]


def test_independent_steps_run_at_once_and_each_lands_reviewed(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "agents.log"
    setup(repo, plan_text({}, 4))
    # each builder waits until four have started: only four at once get past it
    write_config(repo, log, "--barrier", "4")
    out = call(repo, *ARGS, "--jobs", "4")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = log_lines(log)
    assert not [line for line in lines if line[0] == "barrier-timeout"], lines
    first_end = next(i for i, line in enumerate(lines) if line[0] == "end")
    assert sum(1 for line in lines[:first_end] if line[0] == "start") == 4
    landed_once(repo, range(1, 5))
    assert note(repo, main_sha(repo))["verdict"] == "approved"  # type: ignore[index]
    for result in results(repo):  # every landed tree is the one its last round reviewed
        chain = result["chain"]
        assert chain["outcome"] == "approved"
        merged, reviewed = chain["merged"]["sha"], chain["rounds"][-1]["reviewedSha"]
        # what landed is the reviewed commit plus only the ✅ mark
        assert git(repo, "diff", "--name-only", reviewed, merged) == "specs/feature.md\n"
    assert tool_worktrees(repo) == []


def test_a_step_starts_when_its_own_dependency_lands(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "agents.log"
    # 1 runs long; 2 is short and 3 depends on 2 only: 3 starts while 1 still works
    setup(repo, plan_text({3: 2}, 3))
    write_config(repo, log, "--wait", "1:step-3", jobs=3)
    out = call(repo, *ARGS)  # chain.jobs: 3
    assert out.returncode == 0, out.stdout + out.stderr
    lines = log_lines(log)
    assert not [line for line in lines if line[0] == "barrier-timeout"], lines
    order = [" ".join(line[:2]) for line in lines]
    assert order.index("end step-2") < order.index("start step-3") < order.index("end step-1")
    landed_once(repo, range(1, 4))


def test_two_steps_editing_the_same_lines_both_land_the_second_reviewed_after_the_merge(
    repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "agents.log"
    setup(repo, plan_text({}, 2))
    write_config(repo, log, "--barrier", "2", "--same-lines")
    out = call(repo, *ARGS, "--jobs", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    shared = git(repo, "show", "main:shared.txt")
    assert sorted(shared.splitlines()) == ["step 1", "step 2"]
    one, two = (r["chain"] for r in results(repo))
    assert one["outcome"] == two["outcome"] == "approved"
    first, second = (
        (one, two)
        if g.is_ancestor(repo, one["merged"]["sha"], two["merged"]["sha"])
        else (two, one)
    )
    # the second was merged with the target the first moved (the fixer resolved the conflict)
    # and its last review, the one that let it land, reviewed that merge
    assert any(a["agentId"].endswith("-merge") for a in second["agents"])
    last = second["rounds"][-1]["reviewedSha"]
    assert g.is_ancestor(repo, first["merged"]["sha"], last)
    tip = main_sha(repo)
    assert git(repo, "diff", "--name-only", last, tip) == "specs/feature.md\n"
    assert note(repo, tip)["verdict"] == "approved"  # type: ignore[index]


def test_the_exit_code_is_the_worst_and_no_step_starts_after_a_failure(
    repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "agents.log"
    setup(repo, plan_text({3: 2}, 3))
    # 2 fails while 1 runs (1 waits until 2 started); 3 waits for 2 and never starts
    write_config(repo, log, "--wait", "1:step-2", "--crash", "2")
    out = call(repo, *ARGS, "--jobs", "2")
    assert out.returncode == ExitCode.AGENT_FAILED, out.stdout + out.stderr
    outcomes = {r["chain"]["step"]: r["chain"]["outcome"] for r in results(repo)}
    assert outcomes == {1: "approved", 2: "failed"}
    assert "not started (a step ended without landing): 3" in out.stdout
    assert not any(line[:2] == ["start", "step-3"] for line in log_lines(log))


def test_json_stdout_is_the_documents_alone_and_the_lines_go_to_stderr(
    repo: Path, tmp_path: Path
) -> None:
    """`run --all --jobs 2 --json`: stdout is a stream of JSON documents `jq` reads (docs/
    chains.md); "not started" and a skipped step's line went there too. A skipped step's
    document names its step."""
    log = tmp_path / "agents.log"
    setup(repo, plan_text({3: 2}, 3).replace("❌ | Step 1:", "✅ | Step 1:"))
    write_config(repo, log, "--crash", "2")
    out = call(repo, *ARGS, "--jobs", "2", "--json")
    assert out.returncode == ExitCode.AGENT_FAILED, out.stdout + out.stderr
    decoder, text, docs = json.JSONDecoder(), out.stdout.strip(), []
    while text:
        doc, end = decoder.raw_decode(text)
        docs.append(doc)
        text = text[end:].strip()
    steps = {doc.get("step", doc.get("chain", {}).get("step")) for doc in docs}
    assert steps == {1, 2}
    assert "not started (a step ended without landing): 3" in out.stderr


def test_chain_gc_applies_after_a_run_of_several_jobs(repo: Path, tmp_path: Path) -> None:
    """`chain.gc` removed old work trees at the end of `--jobs 1` only (`--jobs 2` returned
    before it): a failed step of another plan left its tree, which the wave's end removes."""
    log = tmp_path / "agents.log"
    setup(repo, plan_text({}, 2))
    (repo / "specs" / "other.md").write_text(plan_text({}, 1))
    git(repo, "add", "specs")
    git(repo, "commit", "-q", "-m", "another plan")
    write_config(repo, log, "--crash", "1")
    failed = call(repo, "run", "specs/other.md", "--step", "1", "--quiet")
    assert failed.returncode == ExitCode.AGENT_FAILED, failed.stdout + failed.stderr
    write_config(repo, log)
    with (repo / ".flow" / "base.yaml").open("a") as config:
        config.write("chain:\n  gc: {older_than: 0s}\n")
    out = call(repo, *ARGS, "--jobs", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "chain.gc removed 1 old work tree(s)" in out.stdout, out.stdout


def test_steps_already_done_are_skipped_at_once_taking_no_job(repo: Path, tmp_path: Path) -> None:
    """Steps 1 and 3 are ✅ already (3 after 2, which fails): each is said skipped at once, none
    holds a job a ready step waits for, and 3 is not named among the steps never started."""
    log = tmp_path / "agents.log"
    plan = plan_text({2: 1, 3: 2}, 4).replace("❌ | Step 1:", "✅ | Step 1:")
    setup(repo, plan.replace("❌ | Step 3:", "✅ | Step 3:"))
    write_config(repo, log, "--crash", "2")
    out = call(repo, *ARGS, "--jobs", "2")
    assert out.returncode == ExitCode.AGENT_FAILED, out.stdout + out.stderr
    assert "waits" not in out.stdout and "not started" not in out.stdout, out.stdout
    for step in (1, 3):
        assert f"step {step}: skipped - step {step} is already ✅" in out.stdout
    started = {line[1] for line in log_lines(log) if line[0] == "start"}
    assert started == {"step-2", "step-4"}


def test_a_plan_that_no_longer_parses_starts_nothing_more_and_every_running_step_is_reported(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "agents.log"
    setup(repo, plan_text({3: 2}, 3))
    write_config(repo, log, "--barrier", "2")
    monkeypatch.chdir(repo)
    args = argparse.Namespace(flow_type=None, variant=None, quiet=True, all=True, jobs=2)
    ctx = open_context(args, plan_path=Path("specs/feature.md"))
    reported: list[int] = []

    def report(result: ChainResult) -> None:  # the plan is deleted as the first step ends
        reported.append(result.step)
        (repo / "specs" / "feature.md").unlink(missing_ok=True)

    with contextlib.closing(ctx.hub):
        code = run_parallel(ctx, [1, 2, 3], 2, report, say=lambda line: None)
    assert sorted(reported) == [1, 2]  # the one still running when the plan went, too
    assert not any(line[:2] == ["start", "step-3"] for line in log_lines(log))
    assert code == ExitCode.USAGE


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_step_taken_out_of_the_plan_meanwhile_is_dropped_and_the_others_land(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """Step 3 is taken out of the plan (committed on main) as step 1 lands: `--jobs 2` stopped
    the wave (a pending step gone was taken for a plan that no longer parses: exit 2, step 2
    never started), `--jobs 1` ran step 3 into a `failed` record. Both drop it with one line."""
    from gitflow_agents.commands import run as run_command

    log = tmp_path / "agents.log"
    plan = plan_text({2: 1, 3: 1}, 3)
    setup(repo, plan)
    write_config(repo, log)
    reported = run_command.report

    def report(result: ChainResult, *, as_json: bool) -> None:
        reported(result, as_json=as_json)
        if result.step == 1:
            (repo / "specs" / "feature.md").write_text(
                plan[: plan.index("\n### Status: ❌ | Step 3")]
            )
            git(repo, "commit", "-q", "-am", "drop step 3")

    monkeypatch.setattr(run_command, "report", report)
    out = call(repo, *ARGS, "--jobs", jobs)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "step 3: no longer in specs/feature.md, not run" in out.stdout
    assert "not started" not in out.stdout and "error" not in out.stderr, out.stdout + out.stderr
    assert {r["chain"]["step"]: r["chain"]["outcome"] for r in results(repo)} == {
        1: "approved",
        2: "approved",
    }
    assert not any(line[:2] == ["start", "step-3"] for line in log_lines(log))


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_dependency_added_meanwhile_is_waited_for(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """Step 2 is made to depend on step 3 (committed on main) as step 1 lands: `--jobs 1`
    kept the order it computed at the start and landed 2 before 3; both wait for 3 now."""
    from gitflow_agents.commands import run as run_command

    log = tmp_path / "agents.log"
    setup(repo, plan_text({2: 1, 3: 1}, 3))
    write_config(repo, log)
    reported = run_command.report

    def report(result: ChainResult, *, as_json: bool) -> None:
        reported(result, as_json=as_json)
        if result.step == 1:
            path = repo / "specs" / "feature.md"
            path.write_text(
                path.read_text().replace("part 2.\n\nDepends on: 1", "part 2.\n\nDepends on: 1, 3")
            )
            git(repo, "commit", "-q", "-am", "step 2 waits for step 3")

    monkeypatch.setattr(run_command, "report", report)
    out = call(repo, *ARGS, "--jobs", jobs)
    assert out.returncode == 0, out.stdout + out.stderr
    subjects = git(repo, "log", "--reverse", "--format=%s", "main").splitlines()
    landed = [s for s in subjects if s.startswith("[feature] Step ")]
    assert landed == [f"[feature] Step {n}: Part {n}" for n in (1, 3, 2)], subjects


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_step_added_to_the_plan_meanwhile_joins_the_run(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """Step 3 is added to the plan (committed on main) as step 1 lands: it was never run, with
    either `--jobs`, and the run exited 0 without naming it. `--all` is every step not ✅: it
    joins the run, with one line, and lands."""
    from gitflow_agents.commands import run as run_command

    log = tmp_path / "agents.log"
    plan = plan_text({2: 1}, 3)
    setup(repo, plan[: plan.index("\n### Status: ❌ | Step 3")])
    write_config(repo, log)
    reported = run_command.report

    def report(result: ChainResult, *, as_json: bool) -> None:
        reported(result, as_json=as_json)
        if result.step == 1:
            (repo / "specs" / "feature.md").write_text(plan)
            git(repo, "commit", "-q", "-am", "add step 3")

    monkeypatch.setattr(run_command, "report", report)
    out = call(repo, *ARGS, "--jobs", jobs)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "step 3: new in specs/feature.md, joins the run" in out.stdout
    landed_once(repo, range(1, 4))


STEP_9 = "\n### Status: ❌ | Step 9: Part 9\n\nDo part 9.\n\nDepends on: none\n"


@pytest.mark.parametrize(
    ("added", "said", "code"),
    [
        ("", ["not started (after the error above): 2, 3"], ExitCode.USAGE),  # no step 9
        (STEP_9, ["step 9: new in specs/feature.md, joins the run"], ExitCode.OK),
    ],
    ids=["no-step-9", "step-9-added"],
)
def test_a_step_made_to_wait_for_a_step_added_meanwhile_runs_after_it(
    repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    added: str,
    said: list[str],
    code: int,
) -> None:
    """Step 3 is made to depend on a step 9 while step 1 runs: with no step 9 the plan's
    dependencies cannot be met (refused as before the run, no further step starts); with a
    step 9 added, 9 joins the run and 3 runs after it (before: 3 was named as waiting for a
    step outside the run, exit 2, and 9 never ran)."""
    log = tmp_path / "agents.log"
    setup(repo, plan_text({2: 1, 3: 1}, 3))
    write_config(repo, log)
    monkeypatch.chdir(repo)
    args = argparse.Namespace(flow_type=None, variant=None, quiet=True, all=True, jobs=2)
    ctx = open_context(args, plan_path=Path("specs/feature.md"))
    lines: list[str] = []

    def report(result: ChainResult) -> None:
        if result.step != 1:
            return
        path = repo / "specs" / "feature.md"
        text = path.read_text().replace(
            "Do part 3.\n\nDepends on: 1", "Do part 3.\n\nDepends on: 9"
        )
        path.write_text(text + added)
        git(repo, "commit", "-q", "-am", "step 3 waits for step 9")

    with contextlib.closing(ctx.hub):
        assert run_parallel(ctx, [1, 2, 3], 2, report, say=lines.append) == code
    assert lines == said
    if added:
        order = [" ".join(line[:2]) for line in log_lines(log)]
        assert order.index("end step-9") < order.index("start step-3")


def test_overlapping_footprints_keep_the_later_step_waiting(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "agents.log"
    setup(repo, plan_text({}, 3, {1: "src/**", 2: "src/api.py", 3: "docs/**"}))
    # 1 waits for 3 to start: 3 runs beside 1, 2 only after 1 ended
    write_config(repo, log, "--wait", "1:step-3")
    out = call(repo, *ARGS, "--jobs", "3")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "step 2 waits: touches src/api.py like 1: src/**" in out.stdout
    order = [" ".join(line[:2]) for line in log_lines(log)]
    assert order.index("end step-1") < order.index("start step-2")
    assert order.index("start step-3") < order.index("end step-1")
    landed_once(repo, range(1, 4))


def test_a_step_waiting_for_a_job_is_said_once_while_the_steps_in_flight_change(
    repo: Path, tmp_path: Path
) -> None:
    """Step 4 waits behind 1 and 2, then behind 2 and 3 (3 starts when 1 lands): its line was
    printed again for each new text; once per step and kind of wait (docs/chains.md)."""
    log = tmp_path / "agents.log"
    setup(repo, plan_text({3: 1}, 4))
    write_config(repo, log, "--wait", "2:step-3")  # 2 runs until 3 started, after 1 landed
    out = call(repo, *ARGS, "--jobs", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    assert [line for line in out.stdout.splitlines() if "waits" in line] == [
        "step 4 waits: --jobs 2: 1, 2 in flight"
    ]
    landed_once(repo, range(1, 5))


def test_off_a_terminal_the_steps_are_plain_lines_one_per_change(
    repo: Path, tmp_path: Path
) -> None:
    setup(repo, plan_text({}, 2))
    write_config(repo, tmp_path / "agents.log", "--barrier", "2")
    args = [arg for arg in ARGS if arg != "--quiet"]
    out = call(repo, *args, "--jobs", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stderr.splitlines()
    for step in (1, 2):
        assert f"step {step}: started" in lines
        assert f"step {step}: implement: step-0{step}-builder running" in lines
        assert f"step {step}: review-1: step-0{step}-reviewer-1 succeeded" in lines
        assert any(line.startswith(f"step {step}: approved after ") for line in lines)
    assert "\x1b[" not in out.stderr  # no redraws
    assert "✅ step 1: approved" in out.stdout and "✅ step 2: approved" in out.stdout


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("stdout", "stderr", "ci", "redrawn"),
    [
        (True, True, "", True),
        (False, True, "", False),  # piped to a file or tee: a line per change
        (True, False, "", False),
        (True, True, "true", False),
    ],
)
def test_the_table_is_redrawn_only_on_a_terminal_outside_ci(
    monkeypatch: pytest.MonkeyPatch, stdout: bool, stderr: bool, ci: str, redrawn: bool
) -> None:
    monkeypatch.setattr(sys, "stdout", _Stream(stdout))
    monkeypatch.setattr(sys, "stderr", _Stream(stderr))
    monkeypatch.setenv("CI", ci)
    hub = steps_hub(quiet=False)
    hub.emit("harness:start", {"step": 1, "runID": "r"})
    written = sys.stderr.getvalue()  # type: ignore[attr-defined]
    hub.close()
    assert (written == "step 1: started\n") is not redrawn
    monkeypatch.setattr(sys, "stderr", _Stream(stderr))
    quiet = steps_hub(quiet=True)
    quiet.emit("harness:start", {"step": 1, "runID": "r"})
    quiet.close()
    assert sys.stderr.getvalue() == ""  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("codes", "worst"),
    [
        ((), 0),
        ((0, 1, 0), 1),
        ((1, 3), 3),
        ((3, 4), 4),
        ((3, 6), 6),  # rate limited beats a failed agent
        ((6, 4), 4),
        ((4, 5), 5),  # a spent budget needs a person
        ((5, 2), 2),
        ((4, 2, 3), 2),
        ((2, 70), 70),
        ((70, 130, 0), 130),
        ((0, 99), 70),  # unknown: a bug
    ],
)
def test_worst_exit_orders_the_documented_codes(codes: tuple[int, ...], worst: int) -> None:
    assert worst_exit(codes) == worst


def test_jobs_goes_with_all_and_not_with_pr(repo: Path, tmp_path: Path) -> None:
    setup(repo, plan_text({}, 1))
    write_config(repo, tmp_path / "log")
    for extra in (("--step", "1", "--jobs", "2"), ("--all", "--pr", "--jobs", "2")):
        args = ("run", "specs/feature.md", "--quiet", *extra)
        out = call(repo, *args)
        assert out.returncode == ExitCode.USAGE
        assert "--jobs goes with --all" in out.stderr


# --- a run stopped in the middle of a wave, then the same command again ----------------------


def _start_wave(repo: Path, log: Path) -> subprocess.Popen[bytes]:
    """``run --all --jobs 4`` of four independent steps whose builders stay long, as a
    process; returns once all four builders run."""
    setup(repo, plan_text({}, 4))
    write_config(repo, log, "--barrier", "4", "--sleep", "60")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", *ARGS, "--jobs", "4"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until(lambda: sum(1 for line in log_lines(log) if line[0] == "start") == 4, 60)
    return proc


def _agent_pids(log: Path) -> list[int]:
    return [int(line[2]) for line in log_lines(log) if line[0] == "start"]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _again(repo: Path, log: Path) -> None:
    """The same command with fast builders: every step lands exactly once, no agent of the
    stopped run is left, no work tree is left behind."""
    write_config(repo, log)
    out = call(repo, *ARGS, "--jobs", "4")
    assert out.returncode == 0, out.stdout + out.stderr
    landed_once(repo, range(1, 5))
    assert tool_worktrees(repo) == []
    assert [
        r for r in json.loads(call(repo, "status", "--json").stdout) if r["state"] == "lost"
    ] == []


def test_kill_9_mid_wave_then_the_same_command_lands_every_step_once(
    repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "agents.log"
    proc = _start_wave(repo, log)
    try:
        pids = _agent_pids(log)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert all(not _gone(pid) for pid in pids)  # lost: their supervisor died
        _again(repo, log)
        wait_until(lambda: all(_gone(pid) for pid in pids), 10)  # killed by the second run
    finally:
        proc.kill()
        proc.wait()


def _reasons(repo: Path) -> set[str]:
    """Why each step run of the wave and each of its agents ended, as recorded."""
    steps = {r["chain"]["reason"] for r in results(repo)}
    agents = {a.get("reason") for r in results(repo) for a in r["chain"]["agents"]}
    return steps | agents


def test_sigterm_mid_wave_is_recorded_as_sigterm_by_every_step_and_agent(
    repo: Path, tmp_path: Path
) -> None:
    """With `--jobs` the agents were recorded "canceled by request" and the steps
    "interrupted", where one step's run says "interrupted (SIGTERM)"."""
    log = tmp_path / "agents.log"
    proc = _start_wave(repo, log)
    try:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == ExitCode.INTERRUPTED
        assert _reasons(repo) == {"interrupted (SIGTERM)"}
    finally:
        proc.kill()
        proc.wait()


def test_one_step_interrupted_prints_its_line_as_a_wave_does(repo: Path, tmp_path: Path) -> None:
    """`run --step N` stopped by SIGTERM printed no step line (its record said canceled);
    `--jobs` printed `⏹ step N: canceled`. Both print it now."""
    log = tmp_path / "agents.log"
    setup(repo, plan_text({}, 1))
    write_config(repo, log, "--sleep", "60")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", "run", "specs/feature.md", "--step", "1"],
        cwd=repo, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        wait_until(lambda: any(line[0] == "start" for line in log_lines(log)), 60)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == ExitCode.INTERRUPTED
        assert "⏹ step 1: canceled - interrupted (SIGTERM)" in out, out
    finally:
        proc.kill()
        proc.wait()


def test_ctrl_c_mid_wave_stops_every_agent_records_each_step_and_the_rerun_continues(
    repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "agents.log"
    proc = _start_wave(repo, log)
    try:
        pids = _agent_pids(log)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == ExitCode.INTERRUPTED
        assert all(_gone(pid) for pid in pids)
        chains = [r["chain"] for r in results(repo)]
        assert sorted(c["step"] for c in chains) == [1, 2, 3, 4]
        assert {c["outcome"] for c in chains} == {"canceled"}
        assert _reasons(repo) == {"interrupted (Ctrl-C)"}
        assert tool_worktrees(repo) != []  # kept for the next run, which takes them over
        _again(repo, log)
    finally:
        proc.kill()
        proc.wait()
