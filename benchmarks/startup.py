"""Start-up time of ``gitflow-agents --help`` against ``python -c pass``, run in the same benchmark.

Usage: python benchmarks/startup.py [--runs N]

Prints a table: median and p90 wall time of each command over N runs (after warm-up), and the
ratio of each to ``python -c pass``. Target (issue 2): ``gitflow-agents --help`` within 60 ms on a
2-core machine, where ``python -c pass`` is ~15 ms. Not an assertion: a measurement to watch.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def time_command(argv: list[str], runs: int) -> list[float]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    for _ in range(3):  # warm-up: byte-code caches and the page cache
        subprocess.run(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False
        )
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False
        )
        samples.append(time.perf_counter() - start)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    # The console script next to this interpreter (a venv's bin/), else the first on PATH.
    # (A pyenv shim on PATH is a bash script that would be timed instead of ours.)
    beside = Path(sys.executable).parent / "gitflow-agents"
    script = str(beside) if beside.exists() else shutil.which("gitflow-agents")
    commands: list[tuple[str, list[str]]] = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("python -m gitflow_agents --help", [sys.executable, "-m", "gitflow_agents", "--help"]),
    ]
    if script:
        commands.append(("gitflow-agents --help", [script, "--help"]))
        commands.append(("gitflow-agents --version", [script, "--version"]))
    beside = Path(sys.executable).parent / "pre-commit"
    pre_commit = str(beside) if beside.exists() else shutil.which("pre-commit")
    if pre_commit:
        commands.append(("pre-commit --version (reference)", [pre_commit, "--version"]))

    results = [(label, time_command(argv, args.runs)) for label, argv in commands]
    baseline = statistics.median(results[0][1])

    print(
        f"start-up time, {args.runs} runs each, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
    )
    print(f"{'command':<36} {'median ms':>10} {'p90 ms':>8} {'x python -c pass':>17}")
    for label, samples in results:
        median = statistics.median(samples)
        p90 = statistics.quantiles(samples, n=10)[-1]
        print(f"{label:<36} {median * 1000:>10.1f} {p90 * 1000:>8.1f} {median / baseline:>17.2f}")
    if not script:
        print("(gitflow-agents is not on PATH: `pip install .` to time the console script)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
