"""Deeply nested YAML through every YAML surface, with libyaml and without it (issue 19).

Usage: python benchmarks/yaml_depth.py [--runs N]

A file ``x: [[[…]]]`` nested 1,000 to 100,000 levels (the last is a 200 KB file) as a `.flow/`
config layer, as card frontmatter, as a file the builtin reviewer checks, and committed and
reviewed by the whole ``git agent-review`` command (a process of its own, start-up included).
Two context rows follow: 1 MiB files that are accepted (a config layer with 36,000 option
keys; a reviewed API spec). Each row runs twice, in a process that has libyaml and in
one that cannot import it (``yaml._yaml`` blocked: what a machine without libyaml runs). Prints
wall-clock and CPU seconds (the best of --runs) and the outcome. Target: every nested row
refused, naming file and line, in well under a second either way.

PyYAML 6.0.4's libyaml (0.2.6) stops at 1,000 levels of its own; the reader used to parse the
text again with PyYAML's pure-Python parser after such an error to word the message, which is
quadratic in this nesting: 280 s for the 200 KB file through ``git agent-review``.

Measured on the 2-core development machine under load (figures move ±50 %), wall (CPU) seconds:

PyYAML 6.0.4 (libyaml 0.2.6), after the fix — see docs/decisions.md for the 6.0.3 table:
FIGURES-6.0.4

PyYAML 6.0.3 (libyaml 0.2.5):
FIGURES-6.0.3
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


def _outcome(work: Callable[[], object]) -> str:
    try:
        work()
    except Exception as exc:  # the refusal is the result here
        return str(exc).splitlines()[0]
    return "accepted"


def _surfaces(root: Path) -> dict[str, Callable[[str], str]]:
    from gitflow_agents.config import load_flow_config
    from gitflow_agents.frontmatter import split_frontmatter
    from gitflow_agents.reviewer.checks import _yaml

    (root / ".flow").mkdir(exist_ok=True)

    def config(text: str) -> str:
        (root / ".flow" / "base.yaml").write_text(MINIMAL + text)
        return _outcome(lambda: load_flow_config(root))

    def frontmatter(text: str) -> str:
        card = "---\ntitle: deep\n" + text + "---\n# Card\n"
        return _outcome(lambda: split_frontmatter(card, path="card.md"))

    def reviewed(text: str) -> str:
        return _outcome(lambda: _yaml(text, "deep.yaml"))

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


def measure(runs: int, libyaml: bool) -> list[dict[str, object]]:
    """Every row in this process (started with or without libyaml)."""
    rows: list[dict[str, object]] = []
    options = "agents:\n  a:\n    adapter: command\n    command: [x]\n    options:\n"
    options += "".join(f"      key{i}: value number {i}\n" for i in range(36_000))
    context = {
        "config layer": ("1 MiB, 36,000 option keys", options),
        "reviewed file": (
            "1 MiB API spec",
            "paths:\n" + "".join(API_PATH.replace("/p:", f"/p{i}:") for i in range(3600)),
        ),
    }
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        surfaces = _surfaces(root)
        cases = [(name, label, deep(d)) for name in surfaces for label, d in DEPTHS.items()]
        cases += [(name, label, text) for name, (label, text) in context.items()]
        for name, label, text in cases:
            best = (float("inf"), 0.0, "")
            for _ in range(runs):
                wall, cpu = time.perf_counter(), time.process_time()
                outcome = surfaces[name](text)
                took = (time.perf_counter() - wall, time.process_time() - cpu, outcome)
                best = min(best, took)
            rows.append({"surface": name, "input": label, "size": len(text), "best": best})
        repo = root / "repo"
        repo.mkdir()
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
        for label, depth in DEPTHS.items():
            runs_of = [_agent_review(repo, deep(depth), libyaml) for _ in range(runs)]
            row = {"surface": "git agent-review", "input": label, "best": min(runs_of)}
            rows.append({**row, "size": len(deep(depth))})
    return rows


def _child(mode: str, runs: int) -> list[dict[str, object]]:
    code = (NO_LIBYAML if mode == "pure" else "") + (
        f"import sys, json; sys.path.insert(0, {str(ROOT)!r}); "
        "from benchmarks.yaml_depth import measure, versions; "
        f"print(json.dumps([versions(), measure({runs}, {mode == 'libyaml'})]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    head, rows = json.loads(done.stdout)
    print(head if mode == "libyaml" else "", end="")
    return list(rows)


def versions() -> str:
    import yaml

    libyaml = yaml._yaml.get_version_string() if yaml.__with_libyaml__ else "not installed"
    return f"PyYAML {yaml.__version__}, libyaml {libyaml}\n"


def _cell(best: list[object]) -> str:
    return f"{best[0]:6.2f} ({best[1]:5.2f})"


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
    print(
        f"{'surface':<17} {'input':<24} {'KB':>6} {'libyaml s (CPU)':>16} {'no libyaml':>15}  outcome"
    )
    for c, pure in zip(with_c, without, strict=True):
        outcome = str(c["best"][2])  # type: ignore[index]
        other = str(pure["best"][2])  # type: ignore[index]
        said = outcome if outcome == other else f"{outcome} | without libyaml: {other}"
        print(
            f"{c['surface']!s:<17} {c['input']!s:<24} {int(c['size']) / 1000:>6.0f} "  # type: ignore[call-overload]
            f"{_cell(c['best']):>16} {_cell(pure['best']):>15}  {said[:90]}",  # type: ignore[arg-type]
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
