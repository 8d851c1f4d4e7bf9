"""Review at the speed of git: the builtin review and the git statistics of big changes.

Usage: python benchmarks/review_speed.py [--sizes 50,500,2500,10000] [--runs N]
                                         [--no-baseline]

For each size N it builds a repository whose last commit changes N files (Python, JSON, YAML,
TOML, Markdown and JavaScript; every file gets two new lines, one file in 100 a TODO) and times:

1. ``git agent-review BASE..HEAD --no-note --format json`` (``python -m gitflow_agents review``,
   the whole command: start-up, diff, blob reads, checks, fingerprints), median of ``--runs``;
   milliseconds per changed file. Target (issue 10): <= 1 ms per file, linear.
2. The same checks done the usual way, by pre-commit-hooks and detect-secrets over the same files
   in the checked-out work tree, run the way pre-commit runs hooks: one hook after the other,
   each hook's files split over as many parallel processes as there are CPUs (check-ast,
   check-json, check-yaml, check-toml, check-merge-conflict, detect-private-key,
   debug-statement-hook, check-added-large-files, end-of-file-fixer, detect-secrets-hook).
   Needs ``pip install pre-commit-hooks detect-secrets`` in this Python's environment; without
   them the column is skipped (or skip it with ``--no-baseline``).
3. ``stats.compute`` (in process) against one ``git diff --numstat`` subprocess of the same range,
   timed alternately pair by pair; the ratio is the median of the per-pair ratios. Target:
   <= 1.2.

4. A typical commit (``--commit-files``, default 1, 3 and 5 files of the same kinds, each with two
   new lines) in a 200-file repository: ``git agent-review HEAD --no-note`` (the installed
   console script through git, as a user and the hook run it) against one
   ``git diff --numstat HEAD~1 HEAD``, timed alternately pair by pair; the ratio is the median
   of the per-pair ratios of wall time, and of CPU time (the review's git processes included).
   Target (issue 20): <= 20.

Prints a table; not an assertion. The checkout comes first on ``sys.path`` / ``PYTHONPATH``, so
it measures the code next to it. Bytecode is cached (in a temporary ``PYTHONPYCACHEPREFIX``), as
it is for an installed package.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "PYTHONPATH": str(ROOT),
}
INSTALL_HINT = "pip install pre-commit-hooks detect-secrets"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=ENV
    ).stdout


# --- the repository -------------------------------------------------------------------------


def _content(kind: str, i: int) -> str:
    body = {
        "py": "".join(f"def f{j}(x):\n    return x + {j}\n\n" for j in range(12)),
        "json": '{\n  "items": [\n' + ",\n".join(f'    {{"id": {j}}}' for j in range(30)) + "\n  ]",
        "yaml": "items:\n" + "".join(f"  - id: {j}\n    name: item {j}\n" for j in range(15)),
        "toml": "".join(f"[section{j}]\nkey = {j}\n" for j in range(15)),
        "md": "# Notes\n\n" + "".join(f"Paragraph {j} of file {i}.\n\n" for j in range(15)),
        "js": "".join(f"export function f{j}(x) {{\n  return x + {j};\n}}\n" for j in range(10)),
    }[kind]
    return body if kind != "json" else body + "\n}\n"


def _changed(kind: str, i: int, text: str) -> str:
    """``text`` with two new lines (JSON: one new item); one file in 100 gets a TODO."""
    if kind == "json":
        return text.replace('    {"id": 0}', f'    {{"id": 0}},\n    {{"id": "new {i}"}}')
    todo = i % 100 == 7
    lines = {
        "py": f"NEW_{i} = {i}{'  # TODO: check' if todo else ''}\nOTHER_{i} = {i + 1}\n",
        "yaml": f"extra_{i}: {i}{'  # TODO: check' if todo else ''}\nother_{i}: {i + 1}\n",
        "toml": f'[extra]\nvalue = {i}\nnote = "{"TODO" if todo else "ok"}"\n',
        "md": f"A new paragraph {i}{' (TODO)' if todo else ''}.\nAnd another.\n",
        "js": f"export const NEW_{i} = {i};{' // TODO' if todo else ''}\nexport const B = 1;\n",
    }[kind]
    return text + lines


KINDS = ("py",) * 4 + ("json",) * 2 + ("yaml",) * 2 + ("toml", "md", "js")


def make_repo(base: Path, files: int) -> tuple[Path, str, str, list[str]]:
    """A repository whose HEAD commit changes ``files`` files; (repo, base sha, head sha, paths)."""
    repo = base / f"repo-{files}"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    # no background `gc --auto` while timing: every size keeps its objects loose, as fresh
    # commits are before a push
    git(repo, "config", "gc.auto", "0")
    paths = []
    for i in range(files):
        kind = KINDS[i % len(KINDS)]
        path = Path(f"pkg{i // 100:03d}") / f"mod{i:05d}.{kind}"
        (repo / path).parent.mkdir(exist_ok=True)
        (repo / path).write_text(_content(kind, i))
        paths.append(str(path))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base_sha = git(repo, "rev-parse", "HEAD").strip()
    for i, path in enumerate(paths):
        kind = KINDS[i % len(KINDS)]
        (repo / path).write_text(_changed(kind, i, (repo / path).read_text()))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    return repo, base_sha, git(repo, "rev-parse", "HEAD").strip(), paths


# --- what is timed --------------------------------------------------------------------------


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_builtin_review(repo: Path, base: str, head: str, runs: int) -> tuple[float, float]:
    """Median wall time of the review command, and its median CPU time (git included)."""
    argv = [sys.executable, "-m", "gitflow_agents", "review", f"{base}..{head}", "--no-note"]
    argv += ["--format", "json"]
    samples, cpu = [], []
    for _ in range(runs):
        start, used = time.perf_counter(), _children_cpu()
        result = subprocess.run(argv, cwd=repo, env=ENV, capture_output=True, text=True)
        samples.append(time.perf_counter() - start)
        cpu.append(_children_cpu() - used)
        if result.returncode not in (0, 1):
            raise SystemExit(f"review failed ({result.returncode}): {result.stderr[-2000:]}")
    return statistics.median(samples), statistics.median(cpu)


# hook console script, its arguments, which files it takes (by suffix; None: every file)
HOOKS: tuple[tuple[str, tuple[str, ...], tuple[str, ...] | None], ...] = (
    ("check-ast", (), (".py",)),
    ("check-json", (), (".json",)),
    ("check-yaml", ("--allow-multiple-documents",), (".yaml",)),
    ("check-toml", (), (".toml",)),
    ("check-merge-conflict", ("--assume-in-merge",), None),
    ("detect-private-key", (), None),
    ("debug-statement-hook", (), (".py",)),
    ("check-added-large-files", ("--enforce-all", "--maxkb=1024"), None),
    ("end-of-file-fixer", (), None),
    ("detect-secrets-hook", (), None),
)


def baseline_scripts() -> dict[str, str] | None:
    """The hooks' console scripts (next to this Python first), or None when any is missing."""
    here = Path(sys.executable).parent
    found = {}
    for name, _, _ in HOOKS:
        local = here / name
        where = str(local) if local.exists() else shutil.which(name)
        if where is None:
            return None
        found[name] = where
    return found


def run_baseline(repo: Path, paths: list[str], scripts: dict[str, str]) -> None:
    """Every hook over ``paths``, one hook after the other, each split over the CPUs."""
    jobs = os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, args, suffixes in HOOKS:
            chosen = [p for p in paths if suffixes is None or p.endswith(suffixes)]
            if not chosen:
                continue
            size = -(-len(chosen) // jobs)
            argvs = [
                [scripts[name], *args, *chosen[i : i + size]] for i in range(0, len(chosen), size)
            ]
            list(pool.map(lambda argv: subprocess.run(argv, cwd=repo, capture_output=True), argvs))


def time_baseline(repo: Path, paths: list[str], scripts: dict[str, str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        run_baseline(repo, paths, scripts)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def paired(
    a: Callable[[], object], b: Callable[[], object], runs: int
) -> tuple[float, float, float]:
    """Median time of ``a``, of ``b``, and the median ratio b/a, timed alternately (after one
    warm-up pair)."""
    times_a: list[float] = []
    times_b: list[float] = []
    for _ in range(runs + 1):
        for fn, times in ((a, times_a), (b, times_b)):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    times_a, times_b = times_a[1:], times_b[1:]
    ratios = [y / x for x, y in zip(times_a, times_b, strict=True)]
    return statistics.median(times_a), statistics.median(times_b), statistics.median(ratios)


def time_stats(repo: Path, base: str, head: str, runs: int) -> tuple[float, float, float]:
    from gitflow_agents.git import stats

    return paired(
        lambda: git(repo, "diff", "--numstat", base, head),
        lambda: stats.compute(repo, base, head, exclude=("flows",)),
        runs,
    )


def _cpu_of(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU time (its child processes included) of one run of ``argv``."""
    start, used = time.perf_counter(), _children_cpu()
    subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, check=False)
    return time.perf_counter() - start, _children_cpu() - used


# A `.flow/base.yaml` with review settings, as a team that tuned the gate has (the `.flow/` row)
FLOW_REVIEW = """\
# review settings of the builtin reviewer (docs/review.md, "Accepting a finding")
review:
  exclude: [vendor/, "tests/fixtures/**"]
  rules:
    todo: {enabled: false}
    high-entropy-secret: {exclude: ["**/*.lock"]}
"""


def small_commit_repo(base: Path, files: int, *, staged: bool, flow: bool = False) -> Path:
    """A 200-file repository whose last commit (or, ``staged``, whose index) changes ``files``;
    ``flow``: with a committed ``.flow/base.yaml`` holding a ``review:`` section."""
    repo = base / f"{'staged' if staged else 'commit'}{'-flow' if flow else ''}-{files}"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "gc.auto", "0")
    if flow:
        (repo / ".flow").mkdir()
        (repo / ".flow" / "base.yaml").write_text(FLOW_REVIEW)
    paths = []
    for i in range(200):
        kind = KINDS[i % len(KINDS)]
        path = Path(f"pkg{i // 50}") / f"mod{i:03d}.{kind}"
        (repo / path).parent.mkdir(exist_ok=True)
        (repo / path).write_text(_content(kind, i))
        paths.append(path)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    for i, path in enumerate(paths[:files]):
        kind = KINDS[i % len(KINDS)]
        (repo / path).write_text(_changed(kind, i, (repo / path).read_text()))
    git(repo, "add", "-A")
    if not staged:
        git(repo, "commit", "-q", "-m", "change")
    return repo


def pair_ratios(repo: Path, review: list[str], numstat: list[str], runs: int) -> tuple[float, ...]:
    """Median wall ms of the review and of numstat, median per-pair wall and CPU ratios."""
    timed = [(_cpu_of(numstat, repo), _cpu_of(review, repo)) for _ in range(runs + 2)][2:]
    return (
        statistics.median(r[0] for _, r in timed) * 1000,
        statistics.median(n[0] for n, _ in timed) * 1000,
        statistics.median(r[0] / n[0] for n, r in timed),
        statistics.median(r[1] / max(n[1], 1e-4) for n, r in timed),
    )


def time_small_commit(base: Path, files: int, runs: int) -> tuple[float, ...]:
    """A commit changing ``files`` files of a 200-file repository: median wall ms of
    ``git agent-review HEAD --no-note`` and of ``git diff --numstat``, and the median per-pair
    ratios of wall and of CPU time."""
    review = ["git", "agent-review", "HEAD", "--no-note"]
    numstat = ["git", "diff", "--numstat", "HEAD~1", "HEAD"]
    return pair_ratios(small_commit_repo(base, files, staged=False), review, numstat, runs)


def small_commit_table(tmp: Path, sizes: list[int], runs: int) -> None:
    script = Path(sys.executable).parent / "git-agent-review"
    if script.exists():  # git finds git-agent-review on PATH: the one next to this Python
        ENV["PATH"] = f"{script.parent}{os.pathsep}{ENV.get('PATH', '')}"
    elif shutil.which("git-agent-review") is None:
        print("git-agent-review is not installed: `pip install -e .` for the commit table")
        return
    print(f"\na typical commit: git agent-review HEAD against git diff --numstat, {runs} pairs")
    print(f"{'files':>6} {'review ms':>10} {'numstat ms':>11} {'wall ratio':>11} {'cpu ratio':>10}")
    for files in sizes:
        review, numstat, wall, cpu = time_small_commit(tmp, files, runs)
        print(f"{files:6d} {review:10.1f} {numstat:11.1f} {wall:10.1f}x {cpu:9.1f}x")


# --- the table ------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,500,2500,10000")
    parser.add_argument("--runs", type=int, default=3, help="review runs per size (median)")
    parser.add_argument("--stats-runs", type=int, default=15)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--commit-files", default="1,3,5", help="typical commits ('' for none)")
    parser.add_argument("--commit-runs", type=int, default=21)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    scripts = None if args.no_baseline else baseline_scripts()
    if scripts is None and not args.no_baseline:
        print(f"pre-commit-hooks / detect-secrets not found: `{INSTALL_HINT}` for that column")

    rows = []
    with tempfile.TemporaryDirectory(prefix="gitflow-agents-speed-") as tmp:
        ENV["HOME"] = tmp
        # bytecode cached, as in an installed wheel (else every run compiles the sources)
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        ENV["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        compile_all = [sys.executable, "-m", "compileall", "-q", str(ROOT / "gitflow_agents")]
        subprocess.run(compile_all, env=ENV, check=True, capture_output=True)
        for n in sizes:
            repo, base, head, paths = make_repo(Path(tmp), n)
            review, cpu = time_builtin_review(repo, base, head, args.runs)
            hooks = time_baseline(repo, paths, scripts, 1) if scripts else None
            plain, ours, ratio = time_stats(repo, base, head, args.stats_runs)
            rows.append((n, review, cpu, hooks, plain, ours, ratio))
            shutil.rmtree(repo)
        commits = [int(s) for s in args.commit_files.split(",") if s]
        if commits:
            small_commit_table(Path(tmp), commits, args.commit_runs)

    if not rows:
        return 0
    print(f"{os.cpu_count()} CPUs; review: median of {args.runs}; stats: {args.stats_runs} pairs")
    header = (
        f"{'files':>6} {'review s':>9} {'ms/file':>8} {'cpu s':>6} {'hooks s':>8} {'vs hooks':>9} "
        f"{'numstat ms':>11} {'stats ms':>9} {'stats/numstat':>14}"
    )
    print(header)
    for n, review, cpu, hooks, plain, ours, ratio in rows:
        hooks_s = f"{hooks:8.2f}" if hooks is not None else f"{'-':>8}"
        versus = f"{review / hooks:8.2f}x" if hooks else f"{'-':>9}"
        print(
            f"{n:6d} {review:9.2f} {review / n * 1000:8.2f} {cpu:6.2f} {hooks_s} {versus} "
            f"{plain * 1000:11.1f} {ours * 1000:9.1f} {ratio:14.2f}"
        )
    print("cpu s: CPU time of the review command and its git processes (less noisy than wall)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
