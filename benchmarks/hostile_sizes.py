"""Large and hostile inputs that must cost bounded time (issue 12): a 50,000-key config, a
50,000-step plan, alias bombs (a config layer, through the CLI to its exit 2, card frontmatter,
and a reviewed YAML file with plain and merge-key bombs and deep nesting), reviewer reports of
1 MiB in several shapes and one of 10 MB (in memory, and read from a file as a chain step does),
and a commit adding 10,000 lines that may each be a private key's body (MD5 hashes, 64-character
base64 lines) reviewed by the builtin reviewer, against a text file of the same size.

Usage: python benchmarks/hostile_sizes.py

Prints one row per input: its size and the seconds the parse took (in-process, one run each).
Targets: the alias bombs (exit 2 through the CLI included) and the 10 MB report in well under a
second; 1 MiB reports a few seconds at most, whatever their markup; 50,000 keys or steps well
under the 7-18 s they took; the hash and base64 lists about the text file's time (they took
10-20 s: each line was searched for a key's BEGIN line up to 1,000 times). The tests assert the outcomes (exit 2, the budget's message), never
the time.
"""

from __future__ import annotations

import base64
import hashlib
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


MERGE_BOMB = "m0: &m0 {x: 1, y: 2}\n" + "".join(
    f"m{i}: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * 9)}]}}\n" for i in range(1, 10)
)
YAML_BOMBS = {
    "alias bomb": BOMB,
    "merge-key bomb": MERGE_BOMB,
    "100,000 levels deep": "x: " + "[" * 100_000 + "]" * 100_000 + "\n",
}


def _cli(root: Path, *argv: str) -> None:
    import contextlib
    import io
    import os

    from gitflow_agents import cli

    cwd = Path.cwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            code = cli.main(list(argv))
    finally:
        os.chdir(cwd)
    assert code == 2, code


def _card_status(card: Path) -> None:
    from gitflow_agents.runs import cards

    cards.card_status(card)


def _yaml_check(text: str) -> None:
    from gitflow_agents.reviewer.syntax import SyntaxProblem, _yaml

    try:
        _yaml(text, "x.yaml")
    except SyntaxProblem:
        return
    raise AssertionError("not refused")


def _chain(report: Path) -> None:
    from gitflow_agents.base.fsutil import read_agent_text
    from gitflow_agents.findings import parse_review
    from gitflow_agents.findings.report import MAX_REPORT_CHARS

    review = parse_review(read_agent_text(report, MAX_REPORT_CHARS))
    assert review.overall is None, review


def _commit(root: Path, name: str, text: str) -> Callable[[], object]:
    """A repository whose HEAD commit adds ``name`` holding ``text``, and its builtin review."""
    import os
    import subprocess

    from gitflow_agents.git import queries as g
    from gitflow_agents.reviewer import builtin

    repo = root / name.replace(".", "-")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], check=True, capture_output=True, env=env
        )
        return done.stdout.decode().strip()

    repo.mkdir()
    git("init", "-q", "-b", "main")
    git("commit", "-q", "--allow-empty", "-m", "root")
    base = git("rev-parse", "HEAD")
    (repo / name).write_text(text)
    git("add", name)
    git("commit", "-q", "-m", name)
    spec = g.DiffSpec(base, git("rev-parse", "HEAD"))
    return lambda: builtin.review_diff(repo, spec)


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
        timed("config: alias bomb, `status` to exit 2", len(BOMB), lambda: _cli(root, "status"))
        card = root / "card.md"
        card.write_text("---\n" + BOMB + "---\n# Card\n")
        timed("card frontmatter: alias bomb", len(BOMB), lambda: _card_status(card))
        for name, text in YAML_BOMBS.items():
            timed(f"reviewed YAML file: {name}", len(text), lambda t=text: _yaml_check(t))
        steps = "".join(f"### Status:  | Step {i}: do {i}\n\ntext\n\n" for i in range(1, 50_001))
        plan = root / "plan.md"
        plan.write_text("# Plan\n\n## Implementation Steps\n\n" + steps)
        timed("plan: 50,000 steps, parse", plan.stat().st_size, lambda: parse_plan(plan))
        plan.write_text(plan.read_text() + "\n")  # a new text: no cached tokens
        timed("plan: 50,000 steps, lint", plan.stat().st_size, lambda: lint_plan(plan))
    lists = {  # each line of the last two may be a private key's body
        "text": [f"line {i} of ordinary text, nothing here" for i in range(10_000)],
        "MD5 hashes": [hashlib.md5(str(i).encode()).hexdigest() for i in range(10_000)],
        "64-char base64": [
            base64.b64encode(hashlib.sha384(str(i).encode()).digest()).decode()
            for i in range(10_000)
        ],
    }
    with tempfile.TemporaryDirectory() as temp:
        for name, lines in lists.items():
            text = "\n".join(lines) + "\n"
            review = _commit(Path(temp), f"{name.replace(' ', '_')}.txt", text)
            timed(f"review: a commit adding 10,000 lines of {name}", len(text), review)
    for name, unit in REPORT_SHAPES.items():
        text = "REVIEW_RESULT: APPROVED\n\n" + unit * (MiB // len(unit) - 4)
        timed(f"report: 1 MiB of {name}", len(text), lambda t=text: parse_review(t))
    big = "REVIEW_RESULT: APPROVED\n" + "x" * (10 * MiB)
    timed("report: 10 MB", len(big), lambda: parse_review(big))
    with tempfile.TemporaryDirectory() as temp:
        report = Path(temp) / "report.complete.md"
        report.write_text(big)
        timed("report: 10 MB file, read as a chain step does", len(big), lambda: _chain(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
