"""Chain speed: git statistics of a 2,500-file change, and 4 parallel reviewers of 2 s each.

Usage: python benchmarks/chain.py [--files 2500] [--runs 9] [--reviewers 4] [--seconds 2]
                                  [--only stats|reviewers]

1. ``stats.compute`` (one ``git diff --raw --numstat -z -M`` between two commits, the commit list
   read at the same time) against a plain ``git diff --numstat`` of the same range. Target
   (issue 5): ratio <= 1.2. The two are timed alternately, sample by sample, so a change in the
   machine's load hits both alike; the ratio is the median of the per-pair ratios. The work-tree
   variant (untracked files added intent-to-add to a throw-away index) is shown too.
2. One review round with N reviewers that each take S seconds (fake agents through the real
   supervisor, one shared work tree). Target: 4 x 2 s reviewers in <= 2.4 s wall time.

Prints a table; not an assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FAKE = ROOT / "tests" / "fakes" / "fake_flow_agent"
ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=ENV
    ).stdout


def make_repo(base: Path, files: int) -> tuple[Path, str, str]:
    repo = base / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in range(files):
        path = repo / f"pkg{i % 50}" / f"mod{i}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(f"line {j} of {i}\n" for j in range(40)))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    base_sha = git(repo, "rev-parse", "HEAD").strip()
    for i in range(files):
        path = repo / f"pkg{i % 50}" / f"mod{i}.py"
        if i % 10 == 0:
            path.rename(path.with_name(f"renamed{i}.py"))
        else:
            path.write_text(path.read_text().replace("line 3 ", "LINE 3 ") + "added\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    return repo, base_sha, git(repo, "rev-parse", "HEAD").strip()


def timed(fn: object, runs: int) -> float:
    samples = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples[1:])


def paired(a: object, b: object, runs: int) -> tuple[float, float, float]:
    """Median time of ``a``, of ``b``, and median ratio b/a, timed in alternation (a warm-up
    pair first)."""
    times_a, times_b = [], []
    for _ in range(runs + 1):
        for fn, times in ((a, times_a), (b, times_b)):
            start = time.perf_counter()
            fn()  # type: ignore[operator]
            times.append(time.perf_counter() - start)
    times_a, times_b = times_a[1:], times_b[1:]
    ratios = [y / x for x, y in zip(times_a, times_b, strict=True)]
    return statistics.median(times_a), statistics.median(times_b), statistics.median(ratios)


def bench_stats(base: Path, files: int, runs: int) -> list[tuple[str, float]]:
    from gitflow_agents.git import stats

    repo, a, b = make_repo(base, files)
    plain, ours, ratio = paired(
        lambda: git(repo, "diff", "--numstat", a, b),
        lambda: stats.compute(repo, a, b, exclude=("flows",)),
        runs,
    )
    for i in range(0, files, 7):  # uncommitted edits and untracked files
        (repo / f"pkg{i % 50}" / f"new{i}.py").write_text("new\n")
    work = timed(lambda: stats.compute(repo, a, exclude=("flows",)), runs)
    return [
        (f"git diff --numstat ({files} files)", plain),
        ("stats.compute base..head", ours),
        ("  ratio (target <= 1.2)", ratio),
        ("stats.compute work tree incl. untracked", work),
    ]


def bench_reviewers(base: Path, reviewers: int, seconds: float) -> list[tuple[str, float]]:
    from gitflow_agents import chain
    from gitflow_agents.config import load_flow_config
    from gitflow_agents.runs.events import EventHub

    repo = base / "rev"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a")
    names = [f"r{i}" for i in range(reviewers)]
    agents = "".join(
        f"  {n}:\n    adapter: command\n    command: "
        + json.dumps([sys.executable, str(FAKE), "reviewer", "approve", "--sleep", str(seconds)])
        + "\n"
        for n in names
    )
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        'completion_workflow:\n  template: "rename {report_file} to {success_file}"\n'
        "agents:\n" + agents
    )
    os.environ.update({k: v for k, v in ENV.items() if k.startswith("GIT_")})
    config = load_flow_config(repo)
    settings = chain.ChainSettings(reviewers=tuple(names), stuck_timeout=30, timeout=60)
    ctx = chain.Context(repo, config, None, "bench", settings, EventHub())
    head = git(repo, "rev-parse", "HEAD").strip()
    with chain.scratch_workspace(ctx, head, head) as ws:
        start = time.perf_counter()
        chain.review_round(ctx, ws, iteration=None, step=None, after=(), task="review")
        wall = time.perf_counter() - start
    return [
        (f"{reviewers} reviewers x {seconds:g} s, wall time", wall),
        (f"  target <= {seconds * 1.2:g} s", seconds * 1.2),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2500)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--reviewers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--only", choices=("stats", "reviewers"))
    args = parser.parse_args()
    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.only != "reviewers":
            rows += bench_stats(Path(tmp), args.files, args.runs)
        if args.only != "stats":
            rows += bench_reviewers(Path(tmp), args.reviewers, args.seconds)
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        unit = "" if "ratio" in name else " s"
        print(f"{name.ljust(width)}  {value:8.3f}{unit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
