"""A typical small commit through the builtin reviewer, against one ``git diff --numstat`` of it.

Usage: python benchmarks/small_commit.py [--files 1,2,3,4,5] [--runs N] [--python PATH]

``--python``: the Python whose installed ``git-agent-review`` and ``gitflow-agents`` are timed
(default: the one running this script), e.g. a fresh venv with the wheel installed, as a user
has it (``python -m pip wheel --no-deps -w dist .``, then ``pip install dist/*.whl`` there:
no editable-install path hook, no setuptools ``.pth`` unless that venv has one).

For each commit size (files changed, of the kinds ``review_speed.py`` uses: Python, JSON, YAML,
TOML, Markdown, JavaScript, each with two new lines) in a 200-file repository, timed alternately
pair by pair (the ratio is the median of the per-pair ratios), wall and CPU time (child git
processes included):

- ``git agent-review HEAD --no-note`` (the installed console script through git, as a user runs
  it) against ``git diff --numstat HEAD~1 HEAD``;
- the same with a ``.flow/base.yaml`` holding a ``review:`` section (row ``.flow/``, as for a
  team that tuned the gate: the layer's settings are read and checked by the first review and
  kept in the git directory, keyed by its bytes; every later one reads the layer's bytes and the
  cache, ``reviewer/settings_cache.py``, so the row times that steady state);
- the pre-commit hook's form: the same change staged, ``gitflow-agents review --hook`` (what
  ``.pre-commit-hooks.yaml`` runs) against ``git diff --cached --numstat``.

Then where the CPU time of ``git agent-review HEAD --no-note`` goes, for the middle size: Python's
own start-up (``python -c pass``), importing the modules the review imports, the review's work,
and its git processes (how many, and their CPU time).

Target (issue 20): a typical commit reviewed in <= 20x one ``git diff --numstat`` of it. Prints
tables; not an assertion. Bytecode is cached, as for an installed package.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from review_speed import ENV, _cpu_of, pair_ratios, small_commit_repo

PROBE = """\
import contextlib, io, resource, sys
sys.argv = ["git-agent-review", "HEAD", "--no-note"]
from gitflow_agents.git_agent_review import main
with contextlib.redirect_stdout(io.StringIO()):
    main()
own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime)
print(" ".join(m for m in sys.modules if m.startswith("gitflow_agents")))
"""

IMPORTS = """\
import resource
from gitflow_agents.git_agent_review import fewer_collections
fewer_collections()  # as the entry point does before it imports the review
import {modules}
own = resource.getrusage(resource.RUSAGE_SELF)
print(own.ru_utime + own.ru_stime)
"""


def where_the_time_goes(repo: Path, runs: int, interpreter: str) -> None:
    """CPU ms: start-up, imports, the review's own work, its git processes."""
    python = [interpreter, "-c"]
    numstat = [
        _cpu_of(["git", "diff", "--numstat", "HEAD~1", "HEAD"], repo)[1] for _ in range(runs)
    ]
    start = [_cpu_of([*python, "pass"], repo)[1] for _ in range(runs)]
    probes = []
    for _ in range(runs):
        done = subprocess.run([*python, PROBE], cwd=repo, env=ENV, capture_output=True, text=True)
        times, modules = done.stdout.splitlines()[:2]
        probes.append(tuple(float(t) for t in times.split()))
    imports_code = IMPORTS.format(modules=", ".join(modules.split()))
    imported = []
    for _ in range(runs):
        done = subprocess.run([*python, imports_code], cwd=repo, env=ENV, capture_output=True)
        imported.append(float(done.stdout))
    trace = repo.parent / "trace"
    subprocess.run(
        [*python, PROBE], cwd=repo, env={**ENV, "GIT_TRACE": str(trace)}, capture_output=True
    )
    calls = sum("trace: built-in: git" in line for line in trace.read_text().splitlines())
    base = statistics.median(numstat) * 1000
    startup = statistics.median(start) * 1000
    imports = statistics.median(imported) * 1000 - startup
    own = statistics.median(p[0] for p in probes) * 1000
    gits = statistics.median(p[1] for p in probes) * 1000
    rows = [
        ("python start-up (python -c pass)", startup),
        (f"imports ({len(modules.split())} gitflow_agents modules and their stdlib)", imports),
        ("the review's own work", own - startup - imports),
        (f"{calls} git processes", gits),
        ("total", own + gits),
    ]
    print(f"\nwhere the CPU time goes: git agent-review HEAD --no-note, median of {runs}")
    print(f"{'':58} {'cpu ms':>7} {'x numstat':>10}")
    for name, ms in rows:
        print(f"{name:58} {ms:7.1f} {ms / base:9.1f}x")
    print(f"{'git diff --numstat HEAD~1 HEAD':58} {base:7.1f} {1:9.1f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="1,2,3,4,5", help="files per commit")
    parser.add_argument("--runs", type=int, default=21, help="pairs per size")
    parser.add_argument(
        "--python", default=sys.executable, help="the Python whose scripts are timed"
    )
    args = parser.parse_args()
    scripts = Path(args.python).parent
    if not (scripts / "git-agent-review").exists():
        print(f"git-agent-review is not installed next to {args.python}: `pip install -e .` first")
        return 1
    where = [
        args.python,
        "-c",
        "import gitflow_agents as g, os; print(os.path.dirname(g.__file__))",
    ]
    # from / (``-c`` puts the current directory first on sys.path: not the work tree's package)
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    found = subprocess.run(where, cwd="/", env=env, capture_output=True)
    package = found.stdout.decode().strip()
    ENV["PATH"] = f"{scripts}{os.pathsep}{ENV.get('PATH', '')}"  # git finds git-agent-review
    sizes = [int(s) for s in args.files.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="gitflow-agents-small-") as tmp:
        ENV["HOME"] = tmp
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        # the installed scripts find their package as a user's do: review_speed's PYTHONPATH
        # would put the work tree first on sys.path, and every import would look there first
        ENV.pop("PYTHONPATH", None)
        ENV["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        compile_all = [args.python, "-m", "compileall", "-q", package]
        subprocess.run(compile_all, env=ENV, check=True, capture_output=True)
        print(f"{os.cpu_count()} CPUs; {args.runs} pairs per row; ratio: median of the pairs'")
        print(f"{args.python}: gitflow_agents from {package}")
        print(
            f"{'form':>6} {'files':>6} {'review ms':>10} {'numstat ms':>11} {'wall':>7} {'cpu':>7}"
        )
        for files in sizes:
            repo = small_commit_repo(Path(tmp), files, staged=False)
            review = ["git", "agent-review", "HEAD", "--no-note"]
            numstat = ["git", "diff", "--numstat", "HEAD~1", "HEAD"]
            row = pair_ratios(repo, review, numstat, args.runs)
            print(
                f"{'commit':>6} {files:6d} {row[0]:10.1f} {row[1]:11.1f} {row[2]:6.1f}x {row[3]:6.1f}x"
            )
            flow = small_commit_repo(Path(tmp), files, staged=False, flow=True)
            row = pair_ratios(flow, review, numstat, args.runs)
            print(
                f"{'.flow/':>6} {files:6d} {row[0]:10.1f} {row[1]:11.1f} {row[2]:6.1f}x {row[3]:6.1f}x"
            )
            shutil.rmtree(flow)
            staged = small_commit_repo(Path(tmp), files, staged=True)
            hook = [str(scripts / "gitflow-agents"), "review", "--hook"]
            row = pair_ratios(staged, hook, ["git", "diff", "--cached", "--numstat"], args.runs)
            print(
                f"{'hook':>6} {files:6d} {row[0]:10.1f} {row[1]:11.1f} {row[2]:6.1f}x {row[3]:6.1f}x"
            )
            shutil.rmtree(staged)
            if files == sizes[len(sizes) // 2]:
                middle = repo
            else:
                shutil.rmtree(repo)
        where_the_time_goes(middle, args.runs, args.python)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
