"""Incremental review: what an agent reviewer reads, full against incremental (issue 25).

Usage: python benchmarks/incremental_review.py [--functions N]

Builds the three-push scenario of ``tests/helpers/incremental.py`` in a temporary repository: a
pull request that adds a module of N small functions (default 600, about 20 KB of diff), then
one one-line fix per push. After each push it runs ``git agent-review BASE..HEAD --agent
measurer`` (``python -m gitflow_agents review``, the whole command) as a user would, and for
pushes 2 and 3 also ``--full --no-note`` on the same head. The reviewer is
``tests/fakes/fake_measuring_reviewer``: it reads its system prompt and runs the diff command
its task names, as a real agent does, and records the bytes of both.

Prints a table of input bytes (prompt + diff) per review and the incremental review's share of
the full one; target: <= 30 % for pushes 2 and 3. Tokens are not measured here: counting them
needs a model's tokenizer (the end-to-end model stand-in does not count them either).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers import incremental  # noqa: E402 - after the checkout is on sys.path
from tests.helpers.incremental import AGENT, Scenario, finding  # noqa: E402


def review(scene: Scenario, *extra: str) -> dict[str, int | str]:
    """One review of the range; what the reviewer read."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    for name in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"):
        env.pop(name, None)
    argv = [sys.executable, "-m", "gitflow_agents", "review", f"{scene.base}..HEAD"]
    argv += ["--agent", AGENT, "--format", "json", *extra]
    done = subprocess.run(argv, cwd=scene.repo, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"review failed ({done.returncode}): {done.stderr}")
    return {**scene.reads()[-1], "kind": json.loads(done.stdout)["kind"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--functions", type=int, default=incremental.FUNCTIONS)
    args = parser.parse_args()
    incremental.FUNCTIONS = args.functions
    with tempfile.TemporaryDirectory(prefix="incremental-review-") as temp:
        repo = Path(temp) / "repo"
        repo.mkdir()
        for command in (
            ["init", "-q", "-b", "main"],
            ["config", "user.email", "bench@example.com"],
            ["config", "user.name", "bench"],
        ):
            subprocess.run(["git", *command], cwd=repo, check=True)
        scene = Scenario(repo, Path(temp) / "work")
        rows = []
        scene.push(0, "push 1: the module")
        scene.say([finding(0), finding(args.functions - 1, "warn")])
        first = review(scene)
        rows.append(("1", first, first))
        scene.say([])
        for push in (2, 3):
            scene.push(push - 1, f"push {push}: one fix")
            step = review(scene)
            whole = review(scene, "--full", "--no-note")
            rows.append((str(push), step, whole))
    print(f"three pushes, a {args.functions}-function module, one one-line fix per push\n")
    print("| push | kind | prompt bytes | diff bytes | input bytes | full review's input | share |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for push, read, whole in rows:
        share = int(read["input"]) / int(whole["input"])
        print(
            f"| {push} | {read['kind']} | {int(read['prompt']):,} | {int(read['diff']):,} "
            f"| {int(read['input']):,} | {int(whole['input']):,} | {share:.0%} |"
        )
    print("\ntarget: pushes 2 and 3 <= 30 % of a full review's input")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
