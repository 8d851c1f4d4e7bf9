"""Latency of the review entry points: the pre-push gate hook and ``git agent-review -h``.

Usage: python benchmarks/review_hooks.py [--runs N] [--files N]

Builds a temporary repository with N files (default 5,000) and one approved, recorded review,
then times (median and p90 over N runs, after warm-up):
  - ``python -c pass`` (the floor),
  - the gate hook (``gitflow-agents hook gate``), approved and refused,
  - ``git agent-review -h`` start-up,
  - a builtin review of a 50-file change.
Target (issue 4): the gate within 80 ms on a 5,000-file repository. A measurement, not a test.

Bytecode is cached (in a temporary PYTHONPYCACHEPREFIX, even when PYTHONDONTWRITEBYTECODE is set
in the calling environment), because an installed package has its .pyc files from pip; without
them every run would also compile the sources. Also printed: how many git processes one gate
run starts (GIT_TRACE).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def sh(cwd: Path, *argv: str, env: dict[str, str]) -> None:
    subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True)


def make_repo(path: Path, files: int, env: dict[str, str]) -> None:
    sh(path, "git", "init", "-q", "-b", "main", env=env)
    for i in range(files):
        sub = path / f"pkg{i // 100:03d}"
        sub.mkdir(exist_ok=True)
        (sub / f"mod{i % 100:03d}.py").write_text(f"VALUE_{i} = {i}\n")
    sh(path, "git", "add", "-A", env=env)
    sh(path, "git", "commit", "-q", "-m", "base", env=env)
    sh(path, "git", "checkout", "-q", "-b", "feature", env=env)
    for i in range(50):
        (path / f"pkg000/mod{i:03d}.py").write_text(f"VALUE_{i} = {i}\nNEW_{i} = {i * 2}\n")
    sh(path, "git", "commit", "-q", "-am", "change 50 files", env=env)


def time_command(argv: list[str], cwd: Path, env: dict[str, str], runs: int) -> list[float]:
    for _ in range(3):
        subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
        samples.append(time.perf_counter() - start)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--files", type=int, default=5000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="gitflow-agents-bench-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = {**os.environ, **GIT_ENV, "HOME": str(home), "PYTHONPATH": str(ROOT)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        repo = Path(tmp) / "repo"
        repo.mkdir()
        make_repo(repo, args.files, env)
        py = sys.executable
        # record an approved review on HEAD (the feature commit)
        subprocess.run(
            [py, "-m", "gitflow_agents", "review", "main..HEAD"],
            cwd=repo,
            env=env,
            check=True,
            capture_output=True,
        )
        commands: list[tuple[str, list[str], dict[str, str]]] = [
            ("python -c pass", [py, "-c", "pass"], env),
            ("gate hook, approved (python -m)", [py, "-m", "gitflow_agents", "hook", "gate"], env),
            (
                "gate hook, refused (python -m)",
                [py, "-m", "gitflow_agents", "hook", "gate", "main"],
                env,
            ),
            (
                "git agent-review -h (python -m)",
                [py, "-m", "gitflow_agents.git_agent_review", "-h"],
                env,
            ),
            (
                "builtin review, 50 files",
                [py, "-m", "gitflow_agents", "review", "main..HEAD", "--no-note"],
                env,
            ),
        ]
        script = shutil.which("gitflow-agents")
        if script:
            commands.insert(2, ("gate hook (gitflow-agents script)", [script, "hook", "gate"], env))
        if shutil.which("git-agent-review"):
            commands.insert(
                -1, ("git agent-review -h (via git)", ["git", "agent-review", "-h"], env)
            )

        rows = []
        for label, argv, cmd_env in commands:
            runs = max(3, args.runs // 4) if "review, 50" in label else args.runs
            samples = time_command(argv, repo, cmd_env, runs)
            rows.append((label, statistics.median(samples), _p90(samples)))
        git_calls = count_git_calls(
            [py, "-m", "gitflow_agents", "hook", "gate"], repo, env, Path(tmp) / "trace"
        )

    print(f"repository: {args.files} files; runs: {args.runs}")
    print(f"{'command':42} {'median ms':>10} {'p90 ms':>8}")
    for label, median, p90 in rows:
        print(f"{label:42} {median * 1000:10.1f} {p90 * 1000:8.1f}")
    print(f"git processes per gate run: {git_calls}")
    return 0


def count_git_calls(argv: list[str], cwd: Path, env: dict[str, str], trace: Path) -> int:
    """How many git commands one run of ``argv`` starts (git's own trace, one line each)."""
    subprocess.run(argv, cwd=cwd, env={**env, "GIT_TRACE": str(trace)}, capture_output=True)
    return sum("trace: built-in: git" in line for line in trace.read_text().splitlines())


def _p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]


if __name__ == "__main__":
    raise SystemExit(main())
