"""Large and hostile inputs that must cost bounded time (issue 12): a 50,000-key config, a
50,000-step plan, an alias bomb, reviewer reports of 1 MiB in several shapes and one of 10 MB.

Usage: python benchmarks/hostile_sizes.py

Prints one row per input: its size and the seconds the parse took (in-process, one run each).
Targets: the alias bomb and the 10 MB report in well under a second; 1 MiB reports a few seconds
at most, whatever their markup; 50,000 keys or steps well under the 7-18 s they took.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MINIMAL = 'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'
BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)
MiB = 1024 * 1024
REPORT_SHAPES = {
    "prose": "Some prose line with words and more words.\n",
    "finding lines": "- [warn] src/a.py:12: something is off here    \n",
    "indented code blocks": "para\n\n    code\n\n",
    "fences": "```\ncode\n```\n",
    "open HTML comments": "x <!-- a\n",
    "XML tags": "<SUMMARY>\n",
    "near-miss markers": "review_result maybe\n",
}


def timed(label: str, size: int, work: Callable[[], object]) -> None:
    started = time.perf_counter()
    try:
        work()
        outcome = "ok"
    except Exception as exc:  # an expected refusal (GitflowError) is the result here
        outcome = type(exc).__name__
    took = time.perf_counter() - started
    print(f"{label:<44} {size / MiB:>8.2f} {took:>9.2f}  {outcome}", flush=True)


def main() -> int:
    from gitflow_agents.config import load_flow_config
    from gitflow_agents.findings import parse_review
    from gitflow_agents.plan import lint_plan, parse_plan

    print(f"{'input':<44} {'MiB':>8} {'seconds':>9}  outcome")
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        (root / ".flow").mkdir()
        keys = "".join(f"      k{i}: v{i}\n" for i in range(50_000))
        config = MINIMAL + "agents:\n  a:\n    adapter: command\n    command: [x]\n    options:\n"
        (root / ".flow" / "base.yaml").write_text(config + keys)
        size = (root / ".flow" / "base.yaml").stat().st_size
        timed("config: 50,000 option keys", size, lambda: load_flow_config(root))
        (root / ".flow" / "base.yaml").write_text(MINIMAL + BOMB)
        timed("config: alias bomb (billion laughs)", len(BOMB), lambda: load_flow_config(root))
        steps = "".join(f"### Status:  | Step {i}: do {i}\n\ntext\n\n" for i in range(1, 50_001))
        plan = root / "plan.md"
        plan.write_text("# Plan\n\n## Implementation Steps\n\n" + steps)
        timed("plan: 50,000 steps, parse", plan.stat().st_size, lambda: parse_plan(plan))
        plan.write_text(plan.read_text() + "\n")  # a new text: no cached tokens
        timed("plan: 50,000 steps, lint", plan.stat().st_size, lambda: lint_plan(plan))
    for name, unit in REPORT_SHAPES.items():
        text = "REVIEW_RESULT: APPROVED\n\n" + unit * (MiB // len(unit) - 4)
        timed(f"report: 1 MiB of {name}", len(text), lambda t=text: parse_review(t))
    big = "REVIEW_RESULT: APPROVED\n" + "x" * (10 * MiB)
    timed("report: 10 MB", len(big), lambda: parse_review(big))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
