"""What accepting findings costs a builtin review (docs/review.md, "Accepting a finding").

Usage: python benchmarks/accept.py [--runs N] [--files N]

In a scratch repository, one commit adds FILES files with a secret each; ``git agent-review``
(``python -m gitflow_agents.git_agent_review``, a real process each run) reviews it with
nothing to accept, with a ``review:`` section in ``.flow/base.yaml`` (a glob per file, so every
finding is matched against them), with every finding in the baseline, and with a marker on
every line. Prints median and p90 wall time over N runs and the ratio to the first row. Not an
assertion: a measurement to watch (the review of a small commit is dominated by start-up, which
the ``.flow/``-less row must keep).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEY = "AKIA" + "Z3X7Q2LMN4PQ"
WHO = ("-c", "user.name=bench", "-c", "user.email=bench@example.invalid")


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def review(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "gitflow_agents.git_agent_review", "--no-note", *args]
    return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, check=False)


def timed(repo: Path, runs: int, *args: str) -> list[float]:
    review(repo, *args)  # warm-up
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        review(repo, *args)
        samples.append(time.perf_counter() - start)
    return samples


def make_repo(path: Path, files: int, marker: str) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, *WHO, "commit", "-q", "--allow-empty", "-m", "initial")
    git(path, "checkout", "-q", "-b", "feature")
    for index in range(files):
        (path / f"m{index:04d}.py").write_text(f'KEY = "{KEY}{index:08d}"{marker}\n')
    git(path, "add", "-A")
    git(path, *WHO, "commit", "-q", "-m", "keys")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        plain = make_repo(Path(scratch) / "plain", args.files, "")
        marked = make_repo(Path(scratch) / "marked", args.files, "  # gitleaks:allow")
        settings = make_repo(Path(scratch) / "settings", args.files, "")
        globs = "".join(f"    - other/{index}/**\n" for index in range(args.files))
        (settings / ".flow").mkdir()
        (settings / ".flow" / "base.yaml").write_text(f"review:\n  exclude:\n{globs}    - m*.py\n")
        baseline = make_repo(Path(scratch) / "baseline", args.files, "")
        review(baseline, "--write-baseline")
        rows = [
            ("nothing to accept", timed(plain, args.runs)),
            (f"review: {args.files + 1} globs", timed(settings, args.runs)),
            (f"baseline of {args.files}", timed(baseline, args.runs)),
            (f"{args.files} gitleaks:allow markers", timed(marked, args.runs)),
        ]
    first = statistics.median(rows[0][1])
    print(f"builtin review of one commit adding {args.files} secrets, {args.runs} runs")
    print(f"{'case':<32} {'median':>9} {'p90':>9} {'ratio':>6}")
    for name, samples in rows:
        median = statistics.median(samples)
        p90 = sorted(samples)[int(0.9 * (len(samples) - 1))]
        print(f"{name:<32} {median * 1000:8.0f}ms {p90 * 1000:8.0f}ms {median / first:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
