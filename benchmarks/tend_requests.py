"""GitHub requests of ``plan tend``, by number of open step pull requests.

Usage: python benchmarks/tend_requests.py [--pulls 1,5,20]

For each N: a bare ``origin`` the stand-in from tests/ serves, a plan of N independent steps
(``Depends on: none``), ``run PLAN --all --pr`` opening N approved pull requests (an implementer
writing one file per step, the builtin reviewer), then three tends, each from a fresh clone as a
workflow job would run it: all pull requests green and up to date; after an unrelated commit on
the target, all behind (each merged, reviewed, pushed and published); and again, nothing to do.
Counts the REST and GraphQL requests of each tend (a ``git push`` or ``ls-remote`` is no API
request and is not counted). A measurement to watch, printed as a table.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import cli_main, git, init_repo  # noqa: E402
from tests.github.pr.test_pipeline import IMPLEMENTER  # noqa: E402
from tests.github_standin import GitHubStandIn  # noqa: E402
from tests.helpers.step_pr import flow_config  # noqa: E402

PLAN = "specs/feature.md"


def plan_text(steps: int) -> str:
    body = "".join(
        f"### Status: ❌ | Step {n}: Part {n}\n\nDepends on: none\n\nWrite part {n}.\n\n"
        for n in range(1, steps + 1)
    )
    return f"# Plan: Feature\n\n## Implementation Steps\n\n{body}"


def seed(box: Path, gh: GitHubStandIn, steps: int) -> Path:
    script = box / "implement.py"
    script.write_text(IMPLEMENTER)
    implementer = [sys.executable, str(script), str(box / "implementer.log")]
    work = init_repo(box / "seed")
    (work / ".flow").mkdir()
    (work / ".flow" / "base.yaml").write_text(
        flow_config(reviewer="builtin", implementer=implementer)
    )
    (work / "specs").mkdir()
    (work / PLAN).write_text(plan_text(steps))
    (work / ".gitignore").write_text("/flows/\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "plan and agents")
    origin = box / "origin.git"
    git(box, "clone", "-q", "--bare", str(work), str(origin))
    gh.state.origin = origin
    return origin


def call(cwd: Path, *args: str) -> int:
    """``gitflow-agents ARGS`` in this process (the stand-in counts its requests here)."""
    return cli_main(*args, "--quiet", cwd=cwd).returncode


def counted(gh: GitHubStandIn, box: Path, name: str) -> tuple[int, int, int]:
    """One tend from a fresh clone: its exit code, reads and writes."""
    clone = box / name
    git(box, "clone", "-q", str(box / "origin.git"), str(clone))
    start = len(gh.log)
    code = call(clone, "plan", "tend", PLAN, "--auto-merge", "squash")
    made = gh.log[start:]
    writes = sum(r.method in ("POST", "PATCH", "PUT", "DELETE") for r in made)
    return code, len(made) - writes, writes


def land_on_main(box: Path) -> None:
    human = box / "human"
    git(box, "clone", "-q", str(box / "origin.git"), str(human))
    (human / "OTHER.md").write_text("landed meanwhile\n")
    git(human, "add", "OTHER.md")
    git(human, "commit", "-q", "-m", "a teammate's commit")
    git(human, "push", "-q", "origin", "main")


def measure(steps: int) -> list[tuple[str, int, int, int, int]]:
    gh = GitHubStandIn().start()
    env = {
        "GITHUB_TOKEN": "tok-write",
        "GITHUB_REPOSITORY": gh.full_name,
        "GITHUB_API_URL": gh.base_url,
        "GITFLOW_AGENTS_GITHUB_BACKOFF": "0",
        "GITFLOW_AGENTS_GITHUB_WRITE_DELAY": "0",
    }
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        with tempfile.TemporaryDirectory(prefix="tend-bench-") as scratch:
            box = Path(scratch)
            seed(box, gh, steps)
            runner = box / "runner"
            git(box, "clone", "-q", str(box / "origin.git"), str(runner))
            assert call(runner, "run", PLAN, "--all", "--pr") == 0
            assert len(gh.state.pulls) == steps
            rows = [("all green, up to date", *counted(gh, box, "tend-1"))]
            land_on_main(box)
            rows.append(("all behind: merged, reviewed", *counted(gh, box, "tend-2")))
            rows.append(("again: nothing to do", *counted(gh, box, "tend-3")))
            return [(what, steps, code, reads, writes) for what, code, reads, writes in rows]
    finally:
        gh.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pulls", default="1,5", help="numbers of open step pull requests")
    args = parser.parse_args()
    print("| tend | pull requests | exit | reads | writes | reads per PR | writes per PR |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for steps in (int(n) for n in args.pulls.split(",")):
        for what, pulls, code, reads, writes in measure(steps):
            print(
                f"| {what} | {pulls} | {code} | {reads} | {writes} | "
                f"{reads / pulls:.1f} | {writes / pulls:.1f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
