"""A plan of waves on a bare origin the GitHub stand-in serves: seeding it, a checkout per runner, what is ready, `run --pr` of one step, and which steps were implemented."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import CliResult, git
from tests.github_standin import GitHubStandIn
from tests.helpers.chain import call
from tests.helpers.origin_commit import seeded_origin
from tests.helpers.step_pr import flow_config
from tests.helpers.waves import PLAN, plan_text


def seed_origin(tmp_path: Path, gh: GitHubStandIn, done: frozenset[int] = frozenset()) -> Path:
    """The bare origin the stand-in serves: main holds the plan and the agents' configuration
    (the implementer above, approving reviewers)."""
    script = tmp_path / "implement.py"
    script.write_text(IMPLEMENTER)
    implementer = [sys.executable, str(script), str(tmp_path / "implementer.log")]
    files = {
        ".flow/base.yaml": flow_config(implementer=implementer),
        PLAN: plan_text(done),
        ".gitignore": "/flows/\n",
    }
    origin = seeded_origin(tmp_path / "origin.git", files)
    gh.state.origin = origin
    return origin


def checkout(tmp_path: Path, name: str, sha: str | None = None) -> Path:
    """A runner's ``actions/checkout``: a fresh clone of origin (at ``sha``, the event's)."""
    path = tmp_path / name
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(path))
    if sha is not None:
        git(path, "checkout", "-q", "--detach", sha)
    return path


def ready(tmp_path: Path, name: str, sha: str | None = None) -> list[int]:
    """The workflow's ``ready`` job: ``plan matrix --ready`` in a fresh checkout."""
    out = call(checkout(tmp_path, name, sha), "plan", "matrix", PLAN, "--ready")
    assert out.returncode == 0, out.stderr
    return [entry["step"] for entry in json.loads(out.stdout)["include"]]


def run_step(tmp_path: Path, name: str, step: int, *args: str) -> CliResult:
    """A ``step`` job, in-process (where nothing races)."""
    return call(
        checkout(tmp_path, name), "run", PLAN, "--quiet", "--pr", "--step", str(step), *args
    )


def implemented(tmp_path: Path) -> list[str]:
    log = tmp_path / "implementer.log"
    return sorted(log.read_text().split()) if log.exists() else []


IMPLEMENTER = """\
import os, subprocess, sys
from pathlib import Path

branch = subprocess.run(
    ["git", "rev-parse", "--abbrev-ref", "HEAD"], capture_output=True, text=True, check=True
).stdout.strip()
step = branch.rsplit("-", 1)[1]
with open(sys.argv[1], "a") as log:  # one line per run: the count the pipeline asserts
    log.write(step + "\\n")
Path("src").mkdir(exist_ok=True)
Path("src", f"step_{step}.py").write_text(f"STEP = {step}\\n")
agent_dir = Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
report = agent_dir / "report.md"
report.write_text(f"# Step status: Completed\\n\\n## Summary\\n\\n- src/step_{step}.py\\n")
report.rename(agent_dir / "report.complete.md")
"""
