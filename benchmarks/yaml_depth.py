"""Deeply nested YAML through every YAML surface, with libyaml and without it (issue 19).

Usage: python benchmarks/yaml_depth.py [--runs N]

A file ``x: [[[…]]]`` nested 1,000 to 100,000 levels (the last is a 200 KB file) as a `.flow/`
config layer, as card frontmatter, as a file the builtin reviewer checks, and committed and
reviewed by the whole ``git agent-review`` command (a process of its own, start-up included).
Context rows follow: 1 MiB files that are accepted (a config layer with 36,000 option keys; a
reviewed flat file, API spec, and file of lines each nested 60 levels, ``k: [[…[1]…]]``, the
most parser events a MiB can hold within the 64-level bound). Each row runs twice, in a
process that has libyaml and in one that cannot import it (``yaml._yaml`` blocked: what a
machine without libyaml runs). Prints wall-clock and CPU seconds (the best of --runs) and the
outcome. Target: every nested row refused, naming file and line, in well under a second either
way.

PyYAML 6.0.4's libyaml (0.2.6) stops at 1,000 levels of its own; the reader used to parse the
text again with PyYAML's pure-Python parser after such an error to word the message, which is
quadratic in this nesting: 280 s for the 200 KB file through ``git agent-review``. Before that
fix, PyYAML 6.0.4 with libyaml took 0.7 / 2.0 / 7.4 / 21.7 s for 1k / 2k / 4k / 8k levels.

The reviewed-file check then built every value a second time with PyYAML's safe loader after
the bounded walk; it is one walk now (gitflow_agents/reviewer/yaml_build.py). The same rows with
the code before that change (CPU seconds, libyaml / no libyaml, ``--runs 1``):

reviewed file    1 MiB flat                  1049   0.38 / 2.92
reviewed file    1 MiB API spec              1049   1.51 / 5.94
reviewed file    1 MiB, 60 levels a line     1049   7.04 / 32.43

Measured on the shared 2-core development machine (wall-clock seconds, CPU seconds in
brackets, best of 2: ``--runs 2``), after it. libyaml alone hands out the million events of
the 60-level file in ~0.5 s. Without libyaml a 1 MiB file takes seconds whatever its nesting:
PyYAML's own parser is linear but five to eight times slower, and nothing here can change that.

PyYAML 6.0.4, libyaml 0.2.6
surface          input                         KB       libyaml    no libyaml  outcome
config layer     1k                             2   0.00 (0.00)   0.13 (0.13)  [1]
config layer     2k                             4   0.00 (0.00)   0.14 (0.14)  [1]
config layer     4k                             8   0.00 (0.00)   0.15 (0.15)  [1]
config layer     8k                            16   0.00 (0.00)   0.14 (0.14)  [1]
config layer     200 KB                       200   0.00 (0.00)   0.14 (0.14)  [1]
card frontmatter 1k                             2   0.00 (0.00)   0.14 (0.14)  [2]
card frontmatter 2k                             4   0.00 (0.00)   0.14 (0.14)  [2]
card frontmatter 4k                             8   0.00 (0.00)   0.14 (0.14)  [2]
card frontmatter 8k                            16   0.00 (0.00)   0.14 (0.14)  [2]
card frontmatter 200 KB                       200   0.00 (0.00)   0.14 (0.14)  [2]
reviewed file    1k                             2   0.00 (0.00)   0.14 (0.14)  [3]
reviewed file    2k                             4   0.00 (0.00)   0.14 (0.14)  [3]
reviewed file    4k                             8   0.00 (0.00)   0.15 (0.15)  [3]
reviewed file    8k                            16   0.00 (0.00)   0.16 (0.16)  [3]
reviewed file    200 KB                       200   0.00 (0.00)   0.15 (0.15)  [3]
config layer     1 MiB, 36,000 option keys   1238   0.49 (0.49)   1.99 (1.97)  [4]
reviewed file    1 MiB flat                  1049   0.19 (0.19)   1.72 (1.69)  [4]
reviewed file    1 MiB API spec              1049   0.42 (0.42)   2.97 (2.95)  [4]
reviewed file    1 MiB, 60 levels a line     1049   1.48 (1.48)  12.06 (12.06)  [4]
git agent-review 1k                             2   0.14 (0.15)   0.30 (0.30)  [3]
git agent-review 2k                             4   0.12 (0.13)   0.30 (0.30)  [3]
git agent-review 4k                             8   0.13 (0.13)   0.29 (0.29)  [3]
git agent-review 8k                            16   0.14 (0.14)   0.29 (0.29)  [3]
git agent-review 200 KB                       200   0.15 (0.16)   0.34 (0.32)  [3]
[1] .flow/base.yaml:3: invalid YAML: nested more than 64 levels deep
[2] card.md:3: invalid YAML in frontmatter: nested more than 64 levels deep
[3] deep.yaml:1: invalid YAML: nested more than 64 levels deep
[4] accepted

Before the one-pass check (the depth rows are the same since):

PyYAML 6.0.3, libyaml 0.2.5
surface          input                         KB       libyaml    no libyaml  outcome
config layer     1k                             2   0.00 (0.00)   0.15 (0.13)  [1]
config layer     2k                             4   0.00 (0.00)   0.20 (0.14)  [1]
config layer     4k                             8   0.00 (0.00)   0.24 (0.14)  [1]
config layer     8k                            16   0.00 (0.00)   0.23 (0.14)  [1]
config layer     200 KB                       200   0.00 (0.00)   0.20 (0.14)  [1]
card frontmatter 1k                             2   0.00 (0.00)   0.20 (0.13)  [2]
card frontmatter 2k                             4   0.00 (0.00)   0.18 (0.14)  [2]
card frontmatter 4k                             8   0.00 (0.00)   0.23 (0.14)  [2]
card frontmatter 8k                            16   0.00 (0.00)   0.21 (0.14)  [2]
card frontmatter 200 KB                       200   0.00 (0.00)   0.20 (0.14)  [2]
reviewed file    1k                             2   0.00 (0.00)   0.19 (0.13)  [3]
reviewed file    2k                             4   0.00 (0.00)   0.23 (0.14)  [3]
reviewed file    4k                             8   0.00 (0.00)   0.17 (0.14)  [3]
reviewed file    8k                            16   0.00 (0.00)   0.27 (0.14)  [3]
reviewed file    200 KB                       200   0.00 (0.00)   0.19 (0.14)  [3]
config layer     1 MiB, 36,000 option keys   1238   0.63 (0.41)   2.08 (1.76)  [4]
reviewed file    1 MiB API spec              1014   1.78 (1.25)   5.64 (5.28)  [4]
git agent-review 1k                             2   0.25 (0.15)   0.27 (0.27)  [3]
git agent-review 2k                             4   0.27 (0.16)   0.28 (0.28)  [3]
git agent-review 4k                             8   0.25 (0.15)   0.29 (0.29)  [3]
git agent-review 8k                            16   0.26 (0.15)   0.28 (0.29)  [3]
git agent-review 200 KB                       200   0.33 (0.17)   0.29 (0.30)  [3]
[1] .flow/base.yaml:3: invalid YAML: nested more than 64 levels deep
[2] card.md:3: invalid YAML in frontmatter: nested more than 64 levels deep
[3] deep.yaml:1: invalid YAML: nested more than 64 levels deep
[4] accepted
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MINIMAL = 'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'
DEPTHS = {"1k": 1000, "2k": 2000, "4k": 4000, "8k": 8000, "200 KB": 100_000}
API_PATH = """\
  /p:
    get:
      summary: Get a thing
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        '200':
          description: ok
          content: {application/json: {schema: {type: object, properties: {a: {type: string}}}}}
"""
NO_LIBYAML = "import sys; sys.modules['yaml._yaml'] = None  # cyaml cannot load: no libyaml\n"


def deep(depth: int) -> str:
    return "x: " + "[" * depth + "]" * depth + "\n"


def _mib(line: Callable[[int], str]) -> str:
    """Lines ``line(0)``, ``line(1)``, … up to 1 MiB (the reviewer reads files up to 1 MiB)."""
    lines, size = [], len(line(0))
    while size <= 1 << 20:
        lines.append(line(len(lines)))
        size += len(line(len(lines)))
    return "".join(lines)


def _outcome(work: Callable[[], object]) -> str:
    try:
        work()
    except Exception as exc:  # the refusal is the result here
        return str(exc).splitlines()[0]
    return "accepted"


def _surfaces(root: Path) -> dict[str, Callable[[str], str]]:
    from gitflow_agents.base.frontmatter import split_frontmatter
    from gitflow_agents.config import load_flow_config
    from gitflow_agents.reviewer.syntax import SyntaxProblem, _yaml

    (root / ".flow").mkdir(exist_ok=True)

    def config(text: str) -> str:
        (root / ".flow" / "base.yaml").write_text(MINIMAL + text)
        return _outcome(lambda: load_flow_config(root))

    def frontmatter(text: str) -> str:
        card = "---\ntitle: deep\n" + text + "---\n# Card\n"
        return _outcome(lambda: split_frontmatter(card, path="card.md"))

    def reviewed(text: str) -> str:
        try:
            _yaml(text, "deep.yaml")
        except SyntaxProblem as exc:  # what becomes the finding
            return f"deep.yaml:{exc.line}: {exc.message}"
        return "accepted"

    return {"config layer": config, "card frontmatter": frontmatter, "reviewed file": reviewed}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _agent_review(repo: Path, text: str, libyaml: bool) -> tuple[float, float, str]:
    """``git agent-review HEAD~1..HEAD`` on a commit adding ``deep.yaml``, as a process."""
    (repo / "deep.yaml").unlink(missing_ok=True)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "no deep.yaml")
    (repo / "deep.yaml").write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "deep")
    code = ("" if libyaml else NO_LIBYAML) + (
        "from gitflow_agents.git_agent_review import main; raise SystemExit(main())"
    )
    argv = [sys.executable, "-c", code, "HEAD~1..HEAD", "--format", "json", "--fail-on", "never"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    found = [f for f in json.loads(done.stdout)["findings"] if f["file"] == "deep.yaml"]
    outcome = f"{found[0]['file']}:{found[0]['line']}: {found[0]['message']}" if found else "ok"
    return wall, cpu, outcome


Row = tuple[str, str, int, float, float, str]  # surface, input, size, wall s, CPU s, outcome


def measure(runs: int, libyaml: bool) -> list[Row]:
    """Every row in this process (started with or without libyaml): the best of ``runs``."""
    rows: list[Row] = []
    options = "agents:\n  a:\n    adapter: command\n    command: [x]\n    options:\n"
    options += "".join(f"      key{i}: value number {i}\n" for i in range(36_000))
    context = [
        ("config layer", "1 MiB, 36,000 option keys", options),
        ("reviewed file", "1 MiB flat", _mib(lambda i: f"key{i}: value number {i}\n")),
        (
            "reviewed file",
            "1 MiB API spec",
            "paths:\n" + _mib(lambda i: API_PATH.replace("/p:", f"/p{i}:")),
        ),
        (
            "reviewed file",
            "1 MiB, 60 levels a line",
            _mib(lambda i: f"k{i}: " + "[" * 59 + "1" + "]" * 59 + "\n"),
        ),
    ]
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        surfaces = _surfaces(root)
        cases = [(name, label, deep(d)) for name in surfaces for label, d in DEPTHS.items()]
        cases += context
        for name, label, text in cases:
            best = (float("inf"), 0.0, "")
            for _ in range(runs):
                wall, cpu = time.perf_counter(), time.process_time()
                outcome = surfaces[name](text)
                took = (time.perf_counter() - wall, time.process_time() - cpu, outcome)
                best = min(best, took)
            rows.append((name, label, len(text), *best))
        repo = root / "repo"
        repo.mkdir()
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
        for label, depth in DEPTHS.items():
            runs_of = [_agent_review(repo, deep(depth), libyaml) for _ in range(runs)]
            rows.append(("git agent-review", label, len(deep(depth)), *min(runs_of)))
    return rows


def _child(mode: str, runs: int) -> list[Row]:
    code = (NO_LIBYAML if mode == "pure" else "") + (
        f"import sys, json; sys.path.insert(0, {str(ROOT)!r}); "
        "from benchmarks.yaml_depth import measure, versions; "
        f"print(json.dumps([versions(), measure({runs}, {mode == 'libyaml'})]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    head, rows = json.loads(done.stdout)
    print(head if mode == "libyaml" else "", end="")
    return [tuple(row) for row in rows]


def versions() -> str:
    import yaml

    libyaml = yaml._yaml.get_version_string() if yaml.__with_libyaml__ else "not installed"
    return f"PyYAML {yaml.__version__}, libyaml {libyaml}\n"


def _number(said: list[str], outcome: str) -> int:
    if outcome not in said:
        said.append(outcome)
    return said.index(outcome) + 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs per row (the best is shown)")
    args = parser.parse_args()
    os.environ.update(
        {
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.com",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
    )
    with_c = _child("libyaml", args.runs)
    without = _child("pure", args.runs)
    print(f"{'surface':<17}{'input':<27}{'KB':>5}  {'libyaml':>12}  {'no libyaml':>12}  outcome")
    said: list[str] = []
    for (surface, label, size, *c), (*_, wall, cpu, other) in zip(with_c, without, strict=True):
        numbers = sorted({_number(said, str(c[2])), _number(said, other)})
        print(
            f"{surface:<17}{label:<27}{size / 1000:>5.0f}  {c[0]:5.2f} ({c[1]:4.2f})  "
            f"{wall:5.2f} ({cpu:4.2f})  " + ", ".join(f"[{n}]" for n in numbers),
            flush=True,
        )
    for number, outcome in enumerate(said, 1):
        print(f"[{number}] {outcome}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
