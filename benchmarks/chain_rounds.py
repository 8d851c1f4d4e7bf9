"""A chain's review rounds: what an agent reviewer reads per round, fix rounds incremental
against every round reviewed whole (issue 25, chain/increment.py).

Usage: python benchmarks/chain_rounds.py [--functions N]

A realistic step in a temporary repository, run as a user runs it (``python -m gitflow_agents
run PLAN --step 1``): the implementer adds a module of N small functions (default 600, about
20 KB of diff, ``tests/helpers/incremental.py``); the reviewer
(``tests/fakes/fake_measuring_reviewer``, which reads its prompt and runs the diff command it
names, as a real agent does) asks for a fix of one line in rounds 1 and 2 and approves in round
3; each fix changes that one line. The step runs twice: as configured (fix rounds review the fix
commits) and with ``review.incremental: false`` (every round reviews the whole step).

Prints, per round, the reviewer's input bytes (prompt + diff) both ways and the share; target
(issue 25's figure for the Action): a fix round <= 30 % of a full review's input.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers import incremental  # noqa: E402 - after the checkout is on sys.path
from tests.helpers.incremental import FAKES, finding  # noqa: E402

PLAN = (
    "# Plan: Calc\n\n## Implementation Steps\n\n### Status: ❌ | Step 1: Add calc.py\n\nAdd it.\n"
)

# The implementer writes the module; fix K changes scale_0's line (the one the review names).
AGENT = """\
import os, pathlib, sys
fixes = pathlib.Path(sys.argv[2])
k = int(fixes.read_text()) if fixes.exists() else 0
text = pathlib.Path(sys.argv[1]).read_text()
if sys.argv[3] == "fix":
    k += 1
    fixes.write_text(str(k))
pathlib.Path("calc.py").write_text(text.replace("return x * 0\\n", f"return x * 0 + {k}\\n", 1))
folder = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
(folder / "report.md").write_text("# Done\\n")
(folder / "report.md").rename(folder / "report.complete.md")
"""


def run_step(temp: Path, name: str, functions: int, incremental_on: bool) -> list[dict[str, Any]]:
    """One chain run of the step; what the reviewer read in each round."""
    repo, work = temp / name, temp / f"{name}-work"
    repo.mkdir()
    work.mkdir()
    module, fixes, script = work / "module.py", work / "fixes", work / "agent.py"
    incremental.FUNCTIONS = functions
    module.write_text(incremental.module())
    script.write_text(AGENT)
    rounds = [[finding(0)], [finding(0, message="still off by one")], []]
    findings, log = work / "findings.json", work / "reads.jsonl"
    findings.write_text(json.dumps({"rounds": rounds}))

    def agent(role: str) -> str:
        argv = [sys.executable, str(script), str(module), str(fixes), role]
        return f"    adapter: command\n    command: {json.dumps(argv)}\n"

    reviewer = [sys.executable, str(FAKES / "fake_measuring_reviewer"), str(findings), str(log)]
    config = (
        "flow_dir: flows\ndefault_branch: main\n"
        'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'
        f"agents:\n  builder:\n{agent('implement')}  fixer:\n{agent('fix')}"
        f"  reviewer:\n    adapter: command\n    command: {json.dumps(reviewer)}\n"
        "chain:\n  implementer: builder\n  fixer: fixer\n  reviewers: [reviewer]\n"
        "  max_iterations: 3\n"
    )
    if not incremental_on:
        config += "review:\n  incremental: false\n"
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(config)
    (repo / "specs").mkdir()
    (repo / "specs" / "calc.md").write_text(PLAN)
    (repo / "README.md").write_text("A calculator.\n")
    (repo / ".gitignore").write_text(".flow/\nflows/\n")
    for command in (
        ["init", "-q", "-b", "main"],
        ["config", "user.email", "bench@example.com"],
        ["config", "user.name", "bench"],
        ["add", "-A"],
        ["commit", "-q", "-m", "plan"],
    ):
        subprocess.run(["git", *command], cwd=repo, check=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    argv = [sys.executable, "-m", "gitflow_agents", "run", "specs/calc.md", "--step", "1"]
    done = subprocess.run([*argv, "--quiet"], cwd=repo, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the step failed ({done.returncode}): {done.stdout}{done.stderr}")
    return [json.loads(line) for line in log.read_text().splitlines()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--functions", type=int, default=incremental.FUNCTIONS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chain-rounds-") as name:
        temp = Path(name)
        step = run_step(temp, "incremental", args.functions, True)
        whole = run_step(temp, "full", args.functions, False)
    print(f"one plan step adding a {args.functions}-function module, three review rounds\n")
    print(
        "| round | kind | prompt bytes | diff bytes | input bytes | full review's input | share |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for number, (read, full) in enumerate(zip(step, whole, strict=True), start=1):
        kind = "incremental" if " -- " in read["command"] else "full"
        print(
            f"| {number} | {kind} | {read['prompt']:,} | {read['diff']:,} | {read['input']:,} "
            f"| {full['input']:,} | {read['input'] / full['input']:.0%} |"
        )
    print("\ntarget: fix rounds (2, 3) <= 30 % of a full review's input")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
