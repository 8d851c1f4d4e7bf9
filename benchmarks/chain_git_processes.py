"""How many git processes one chain step starts (issue 21, item 7): every git call costs a
process start, and a chain test runs many steps.

Usage: python benchmarks/chain_git_processes.py [--reviewer approve|until-fixed]

A one-step run in a temporary repository, as a user runs it (``python -m gitflow_agents run PLAN
--step 1``), with the fake agents of the chain tests (``tests/helpers/chain.configure``:
implementer, reviewer and fixer of ``tests/fakes/fake_flow_agent``). A ``git`` first on
``PATH`` counts every git process the command starts (the agents start none). ``until-fixed``:
the reviewer asks for one fix, then approves (two review rounds).

Prints the git subcommands by count and the total.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import GIT_ENV  # noqa: E402 - after the checkout is on sys.path
from tests.helpers import chain  # noqa: E402

SHIM = """#!/bin/sh
printf '%s\\n' "$*" >> {log}
exec {git} "$@"
"""


def _subcommand(line: str) -> str:
    """``rev-parse --verify`` from ``--no-pager -c color.ui=never -C DIR rev-parse --verify …``."""
    words, i = line.split(), 0
    while i < len(words) and words[i] in ("--no-pager", "-c", "-C"):
        i += 1 if words[i] == "--no-pager" else 2
    return " ".join(words[i : i + 2])


def count(reviewer: str) -> tuple[int, collections.Counter[str]]:
    git = shutil.which("git")
    assert git is not None, "git is not on PATH"
    with tempfile.TemporaryDirectory(prefix="gitflow-agents-bench-") as box_name:
        box = Path(box_name)
        home, repo, shim, log = box / "home", box / "repo", box / "bin", box / "git.log"
        for folder in (home, repo, shim):
            folder.mkdir()
        (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
        env = {**os.environ, **GIT_ENV, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".c")}
        env.pop("XDG_CACHE_HOME", None)
        os.environ.update(env)  # configure() runs git in this process
        (repo / "README.md").write_text("# demo\n")
        for args in (("init", "-q", "-b", "main"), ("add", "."), ("commit", "-qm", "initial")):
            subprocess.run([git, *args], cwd=repo, env=env, check=True)
        chain.configure(repo, reviewer=reviewer)
        (shim / "git").write_text(SHIM.format(log=log, git=git))
        (shim / "git").chmod(0o755)
        env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
        env["PYTHONPATH"] = str(ROOT)
        argv = [sys.executable, "-m", "gitflow_agents", *chain.RUN_ARGS, "--step", "1"]
        done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"the run failed (exit {done.returncode}): {done.stderr.strip()}")
        lines = log.read_text().splitlines()
    return len(lines), collections.Counter(_subcommand(line) for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviewer", choices=("approve", "until-fixed"), default="approve")
    args = parser.parse_args()
    total, by_command = count(args.reviewer)
    print(f"git processes of one `run --step 1` (reviewer: {args.reviewer})")
    print(f"{'count':>5}  git subcommand")
    for name, number in by_command.most_common():
        print(f"{number:>5}  {name}")
    print(f"{total:>5}  total")


if __name__ == "__main__":
    main()
