"""Several plan steps at once: ``run PLAN --all --jobs N`` (issue 24).

Usage: python benchmarks/parallel_steps.py [--seconds 2] [--runs 1] [--jobs 4]

A plan of 1 + 4 steps (steps 2 to 5 depend on step 1 only) whose implementer is a fake agent
of fixed length (``tests/fakes/fake_step_agent --sleep S``; the reviewer approves at once), run
through the real command as a process in a fresh repository: once with ``--jobs 1`` (one step
after another, today's behaviour) and once with ``--jobs N``. The reference is one step's chain
alone (``--step 1``). Targets: ``--jobs 4`` ≤ 1.4 × (one step's chain + the first step), i.e.
≤ 2.8 × one step's chain; ``--jobs 1`` about 5 ×; CPU per step (the orchestrator, git and the
agents' start-up; the fake agents sleep) about the same with and without ``--jobs``.

Prints a table; not an assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKES = ROOT / "tests" / "fakes"
ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "PYTHONPATH": str(ROOT),
}
MARKER = "<!-- gitflow-agents:git-stats -->"
STEPS = 5


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=ENV)


def plan() -> str:
    text = "# Plan: Bench\n\n## Implementation Steps\n"
    for number in range(1, STEPS + 1):
        depends = "none" if number == 1 else "1"
        text += f"\n### Status: ❌ | Step {number}: Part {number}\n\nDepends on: {depends}\n"
    return text


def make_repo(base: Path, seconds: float) -> Path:
    repo = base / "repo"
    (repo / "specs").mkdir(parents=True)
    (repo / ".flow").mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# bench\n")
    (repo / "specs" / "bench.md").write_text(plan())

    def agent(*argv: str) -> str:
        return f"    adapter: command\n    command: {json.dumps([sys.executable, *argv])}\n"

    (repo / ".flow" / "base.yaml").write_text(
        "flow_dir: flows\ndefault_branch: main\n"
        "completion_workflow:\n"
        f'  template: "Write {{report_file}}; rename it to {{success_file}} or {{failed_file}}. '
        f'Modified files: {MARKER}"\n'
        "agents:\n"
        f"  builder:\n{agent(str(FAKES / 'fake_step_agent'), '--sleep', str(seconds))}"
        f"  reviewer:\n{agent(str(FAKES / 'fake_flow_agent'), 'reviewer', 'approve')}"
        f"  fixer:\n{agent(str(FAKES / 'fake_flow_agent'), 'fixer', 'fix')}"
    )
    with (repo / ".git" / "info" / "exclude").open("a") as handle:
        handle.write("/.flow/\n")
    git(repo, "add", "README.md", "specs")
    git(repo, "commit", "-q", "-m", "plan")
    return repo


def review_rounds(repo: Path) -> int:
    """The review rounds the step runs recorded (a step the target moved under is reviewed
    again: each such round costs a reviewer process and a merge)."""
    rounds = 0
    for path in (repo / "flows" / "bench" / "runs").glob("*/result.json"):
        chain = json.loads(path.read_text()).get("chain")
        rounds += len(chain["rounds"]) if isinstance(chain, dict) else 0
    return rounds


def timed_run(seconds: float, *args: str) -> tuple[float, float, int]:
    """Wall and CPU seconds (this process's children: the command, git, the agents) of
    ``gitflow-agents run specs/bench.md ARGS`` in a fresh repository, and its review rounds."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = make_repo(base, seconds)
        env = {**ENV, "XDG_CACHE_HOME": str(base / "cache"), "HOME": str(base)}
        argv = [sys.executable, "-m", "gitflow_agents", "run", "specs/bench.md", "--quiet", *args]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise SystemExit(
                f"{' '.join(args)}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
            )
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        rounds = review_rounds(repo)
        shutil.rmtree(base / "cache", ignore_errors=True)
        return wall, cpu, rounds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="each implementer's length")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=4)
    options = parser.parse_args()
    rows: list[tuple[str, int, float, float, int]] = []
    for _ in range(options.runs):
        rows.append(("one step (--step 1)", 1, *timed_run(options.seconds, "--step", "1")))
        rows.append(("--all --jobs 1", STEPS, *timed_run(options.seconds, "--all", "--jobs", "1")))
        jobs = f"--all --jobs {options.jobs}"
        rows.append(
            (jobs, STEPS, *timed_run(options.seconds, "--all", "--jobs", str(options.jobs)))
        )
    one = min(wall for name, _, wall, _, _ in rows if name.startswith("one step"))
    print(
        f"1 + 4 steps, implementer {options.seconds:g} s, reviewer at once; one step's chain: {one:.2f} s"
    )
    header = f"{'run':<22} {'steps':>5} {'wall s':>8} {'x one step':>10} {'CPU s':>7}"
    print(f"{header} {'CPU/step':>9} {'reviews':>7} {'CPU/(step+review)':>17}")
    for name, steps, wall, cpu, rounds in rows:
        print(
            f"{name:<22} {steps:>5} {wall:>8.2f} {wall / one:>10.2f} {cpu:>7.2f} "
            f"{cpu / steps:>9.2f} {rounds:>7} {cpu / (steps + rounds):>17.3f}"
        )
    print(
        f"target: --jobs {options.jobs} <= 2.8 x one step (1.4 x (one step + the first)); "
        "--jobs 1 about 5 x; a re-review after another step landed costs a reviewer and a merge"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
