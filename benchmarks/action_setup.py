"""The GitHub Action's set-up: uncached (install into a fresh venv) against cached (venv restored).

Usage: python benchmarks/action_setup.py [--runs 3] [--wheelhouse DIR]

Runs the real ``Install gitflow-agents`` step of action.yml with bash, as the runner would, with
GITHUB_ACTION_PATH = this checkout:

1. **uncached** (``CACHE_HIT`` empty): ``python -m venv`` and ``pip install`` of the action's
   package with its dependencies. With ``--wheelhouse DIR`` pip installs offline from DIR (the
   wheels the tests build, ``/tmp/gitflow-agents-test-wheelhouse-*``); without it pip uses the
   configured index, so download time is measured too.
2. **cached** (``CACHE_HIT=true``, the venv left by 1.): the step only checks that the restored
   venv's ``gitflow-agents --version`` runs.
3. **restore proxy**: what ``actions/cache`` does locally on a hit, unpacking the venv from a
   zstd tar (``tar --zstd``, as the cache action does where zstd is installed); the archive size
   is printed. Downloading the archive from GitHub's cache service cannot be measured here.

Prints a table (median of the runs); not an assertion.
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
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def install_script() -> str:
    steps = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["runs"]["steps"]
    (step,) = [s for s in steps if s.get("id") == "install"]
    return str(step["run"])


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system of the child processes) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def run_step(script: str, env: dict[str, str], cache_hit: str) -> tuple[float, float]:
    return timed(["bash", "-e", "-c", script], {**env, "CACHE_HIT": cache_hit})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--wheelhouse", type=Path, help="install offline from this wheel folder")
    args = parser.parse_args()
    script = install_script()
    uncached: list[tuple[float, float]] = []
    cached: list[tuple[float, float]] = []
    restore: list[tuple[float, float]] = []
    size = 0
    with tempfile.TemporaryDirectory(prefix="action-setup-") as tmp:
        base = Path(tmp)
        python_dir = base / "python-bin"  # setup-python's `python` on PATH
        python_dir.mkdir()
        (python_dir / "python").symlink_to(sys.executable)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
        env.update(
            PATH=f"{python_dir}{os.pathsep}{os.environ['PATH']}",
            RUNNER_TEMP=str(base),
            GITHUB_ACTION_PATH=str(ROOT),
            GITHUB_OUTPUT=str(base / "github-output"),
            PIP_NO_CACHE_DIR="1",  # a fresh runner has no pip cache
        )
        if args.wheelhouse:
            env.update(
                PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(args.wheelhouse)
            )
        venv = base / "gitflow-agents-venv"
        archive = base / "venv.tar.zst"
        for _ in range(args.runs):
            shutil.rmtree(venv, ignore_errors=True)
            uncached.append(run_step(script, env, ""))
            cached.append(run_step(script, env, "true"))
            subprocess.run(["tar", "--zstd", "-cf", str(archive), "-C", tmp, venv.name], check=True)
            size = archive.stat().st_size
            shutil.rmtree(venv)
            restore.append(timed(["tar", "--zstd", "-xf", str(archive), "-C", tmp]))
    source = f"offline from {args.wheelhouse}" if args.wheelhouse else "from the package index"
    print(f"action set-up, median of {args.runs} runs (uncached install {source})")
    print("| set-up | wall s | CPU s |")
    print("| --- | --- | --- |")
    rows = [
        ("uncached: venv + pip install", uncached),
        ("cached: restored venv checked", cached),
        (f"restore proxy: untar the zstd archive ({size / 1e6:.0f} MB)", restore),
    ]
    for label, samples in rows:
        wall = statistics.median(s[0] for s in samples)
        cpu = statistics.median(s[1] for s in samples)
        print(f"| {label} | {wall:.2f} | {cpu:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
