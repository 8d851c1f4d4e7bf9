"""A plan step as a pull request on a real bare origin the GitHub stand-in serves: the seeded
origin and checkout (``setup_repo``), the token and API environment (the ``env`` fixture: a test
module using it imports it), ``run --pr`` in this process, and readers of what landed on the
origin and on GitHub."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.git import lease as git_lease
from tests.conftest import CliResult, git
from tests.github_standin import GitHubStandIn
from tests.helpers.chain import FAKE, PLAN, call
from tests.helpers.origin_commit import commit_on_origin, seeded_origin

BRANCH = "agents/feature/step-1"


def agent(role: str, mode: str, argv: list[str] | None = None) -> str:
    command = argv or [sys.executable, str(FAKE), role, mode]
    return f"    adapter: command\n    command: {json.dumps(command)}\n"


def paid(role: str, mode: str) -> list[str]:
    """The argv of a fake agent (``FAKE role mode``) that then says what it spent, as Claude
    Code's result line does: $0.01, 1,000 input and 200 output tokens."""
    script = (
        "import json, subprocess, sys\n"
        f"code = subprocess.call([sys.executable, {str(FAKE)!r}, {role!r}, {mode!r}])\n"
        "usage = {'input_tokens': 1000, 'output_tokens': 200}\n"
        "print(json.dumps({'type': 'result', 'usage': usage, 'total_cost_usd': 0.01}))\n"
        "sys.exit(code)\n"
    )
    return [sys.executable, "-c", script]


def flow_config(
    reviewer: str = "approve",
    implementer: list[str] | None = None,
    fixer: list[str] | None = None,
    reviewer_argv: list[str] | None = None,
) -> str:
    review = agent("reviewer", reviewer, reviewer_argv)
    if reviewer == "builtin":
        review = "    adapter: builtin\n"
    return (
        "flow_dir: flows\ndefault_branch: main\n"
        "defaults:\n  stuck_timeout_secs: 20\n  max_wait_secs: 30\n"
        "completion_workflow:\n"
        '  template: "Write {report_file}; rename it to {success_file} or {failed_file}."\n'
        "agents:\n"
        f"  builder:\n{agent('implementer', 'edit', implementer)}"
        f"  fixer:\n{agent('fixer', 'fix', fixer)}"
        f"  reviewer:\n{review}"
    )


def setup_repo(tmp_path: Path, gh: GitHubStandIn, name: str = "repo", **config: Any) -> Path:
    """A checkout whose ``origin`` is the bare repository the stand-in serves; the plan and the
    agents' configuration committed on main (the action reads .flow/ from the base commit)."""
    origin = tmp_path / "origin.git"
    if not origin.exists():
        files = {
            ".flow/base.yaml": flow_config(**config),
            ".gitignore": "/flows/\n",
            "docs/old.md": "a document\nwith lines\n",
            "specs/feature.md": PLAN,
        }
        seeded_origin(origin, files)
        gh.state.origin = origin
    repo = tmp_path / name
    git(tmp_path, "clone", "-q", str(origin), str(repo))
    return repo


def independent_steps_runner(tmp_path: Path, gh: GitHubStandIn) -> Path:
    """A fresh runner checkout of origin (``setup_repo``'s) whose plan's step 2 depends on
    nothing, pushed to main by another checkout, so steps 1 and 2 can run in one wave."""
    setup_repo(tmp_path, gh)
    origin, plan = tmp_path / "origin.git", "specs/feature.md"
    text = git(origin, "show", f"main:{plan}")
    text = text.replace("Polish it.", "Depends on: none\n\nPolish it.")
    commit_on_origin(origin, "main", plan, text, "step 2 depends on nothing")
    repo = tmp_path / "runner"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(repo))
    return repo


def standin_env(gh: GitHubStandIn) -> dict[str, str]:
    """The token and API environment of ``run --pr`` against ``gh``, with no waits."""
    return {
        "GITHUB_TOKEN": "tok-write",
        "GITHUB_REPOSITORY": gh.full_name,
        "GITHUB_API_URL": gh.base_url,
        "GITFLOW_AGENTS_GITHUB_BACKOFF": "0",
        "GITFLOW_AGENTS_GITHUB_WRITE_DELAY": "0",
        "GITFLOW_AGENTS_GITHUB_RETRIES": "2",
    }


@pytest.fixture
def env(gh: GitHubStandIn, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = standin_env(gh)
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    return values


def run_pr(repo: Path, *args: str) -> CliResult:
    return call(repo, "run", "specs/feature.md", "--quiet", "--kill-grace", "0.2", "--pr", *args)


def origin_sha(gh: GitHubStandIn, ref: str) -> str | None:
    assert gh.state.origin is not None
    proc = subprocess.run(
        ["git", "-C", str(gh.state.origin), "rev-parse", "--verify", "--quiet", ref],
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() or None


def statuses(gh: GitHubStandIn, sha: str) -> list[str]:
    return [s["state"] for s in gh.statuses_for(sha) if s["context"] == "gitflow-agents/review"]


def summaries(gh: GitHubStandIn, number: int) -> list[str]:
    from gitflow_agents.github.action.comment import MARKER

    return [c["body"] for c in gh.comments_on(number) if c["body"].startswith(MARKER)]


def plan_status(text: str, step: int) -> str:
    line = next(ln for ln in text.splitlines() if f"Step {step}:" in ln)
    return line.split("|")[0].removeprefix("### Status:").strip()


def implementer_runs(repo: Path) -> int:
    found = 0
    for path in (repo / "flows" / "feature" / "runs").glob("*/result.json"):
        run = json.loads(path.read_text()).get("run", {})
        found += run.get("kind") == "implement" and run.get("agent", "").startswith("builder")
    return found


def kill_9_between_the_push_and_the_pull_request(
    repo: Path, gh: GitHubStandIn, env: dict[str, str], *which: str
) -> str:
    """Run ``run --pr --step 1`` (or ``run --pr *which``: step 1 first) until it asks GitHub
    for the pull request, ``kill -9`` its process group there; step 1's branch's pushed commit
    (no pull request was opened)."""
    held = gh.hold("POST", r"/pulls$")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", "run", "specs/feature.md", "--quiet", "--pr",
         *(which or ("--step", "1"))],
        cwd=repo, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert held.arrived.wait(120), proc.communicate(timeout=5)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        held.release()
    pushed = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert pushed is not None and gh.state.pulls == {}
    return pushed


def lease_on_origin(gh: GitHubStandIn) -> dict[str, object]:
    assert gh.state.origin is not None
    text = git(gh.state.origin, "log", "-1", "--format=%B", git_lease.lease_ref(BRANCH))
    found: dict[str, object] = json.loads(text)
    return found
