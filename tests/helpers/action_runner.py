"""A runner-shaped environment for ``gitflow-agents action`` against the GitHub stand-in: a real
git checkout with the PR's base and head commits, the webhook payload at GITHUB_EVENT_PATH, the
GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files, GITHUB_API_URL pointing at the stand-in (as GitHub
Enterprise would), the outputs read back the way the runner reads them. ``Runner`` calls the CLI
in this process (``cli_main``: the same parsing, dispatch and exit codes, without a Python
start-up per run). A test module using the ``runner`` fixture imports it (and ``gh``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import FAKES, ROOT, CliResult, cli_main, git
from tests.github_events import (
    issue_comment_event,
    pull_request_event,
    write_event,
)
from tests.github_standin import GitHubStandIn, Pull
from tests.helpers.flow_config import command_agents

BROKEN = "def ok():\n    return 1\n\n\ndef broken(:\n    pass\n"
FINE = "def ok():\n    return 1\n"


def make_pr(repo: Path, files: dict[str, str]) -> tuple[str, str]:
    """Commit ``files`` on a feature branch off main; (base sha, head sha)."""
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "feature")
    for name, text in files.items():
        (repo / name).write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", "feature work")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    return base, head


def pr_files(repo: Path, base: str, head: str) -> list[dict[str, Any]]:
    """The PR's files as GitHub lists them: the unified diff from the first hunk on."""
    out = []
    for line in git(repo, "diff", "--name-status", base, head).splitlines():
        status, name = line.split("\t", 1)
        diff = git(repo, "diff", "--no-color", base, head, "--", name)
        patch = diff[diff.index("@@") :].rstrip("\n") if "@@" in diff else None
        out.append(
            {
                "filename": name,
                "status": {"A": "added", "M": "modified", "D": "removed"}[status[0]],
                "patch": patch,
            }
        )
    return out


def add_pull(gh: GitHubStandIn, repo: Path, files: dict[str, str], **kwargs: Any) -> Pull:
    base, head = make_pr(repo, files)
    return gh.add_pull(Pull(7, head, base, pr_files(repo, base, head), **kwargs))


def pr_event(gh: GitHubStandIn, pull: Pull, action: str = "opened", **extra: Any) -> dict[str, Any]:
    """The ``pull_request`` payload GitHub sends for ``pull`` (tests/github_events.py)."""
    event = pull_request_event(
        gh.full_name,
        pull.number,
        pull.head_sha,
        pull.base_sha,
        action=action,
        title=pull.title,
        draft=pull.draft,
        author=pull.author,
        head_repo=pull.head_repo,
    )
    return {**event, **extra}


def comment_event(gh: GitHubStandIn, number: int, login: str, body: str) -> dict[str, Any]:
    """The ``issue_comment`` payload of a new comment on pull request ``number``."""
    return issue_comment_event(gh.full_name, number, login, body)


class Runner:
    """The files and variables a runner gives one step."""

    def __init__(self, tmp_path: Path, gh: GitHubStandIn, repo: Path) -> None:
        self.tmp = tmp_path / "runner"
        self.tmp.mkdir(exist_ok=True)
        self.gh = gh
        self.repo = repo
        self.output = self.tmp / "output"
        self.summary = self.tmp / "step_summary.md"

    def env(self, event_name: str, event: Any, token: str) -> dict[str, str]:
        event_path = self.tmp / "event.json"
        if isinstance(event, str):  # a test about a malformed payload: its bytes as given
            event_path.write_text(event)
        else:  # held to GitHub's webhook schema first
            write_event(event_path, event_name, event)
        self.output.write_text("")
        self.summary.write_text("")
        return {
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_REPOSITORY": self.gh.full_name,
            "GITHUB_OUTPUT": str(self.output),
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "GITHUB_WORKSPACE": str(self.repo),
            "GITHUB_API_URL": self.gh.base_url,
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_RUN_ID": "4242",
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_TOKEN": token,
            "RUNNER_TEMP": str(self.tmp),
            "GITFLOW_AGENTS_GITHUB_WRITE_DELAY": "0",
            "GITFLOW_AGENTS_GITHUB_BACKOFF": "0",
            "GITFLOW_AGENTS_GITHUB_RETRIES": "2",
            "GITFLOW_AGENTS_GITHUB_MAX_WAIT": "0.05",  # rate-limit waits: tiny in tests
        }

    def run(self, event_name: str, event: Any, token: str = "tok-actions", *args: str) -> CliResult:
        return self.run_with({}, event_name, event, *args, token=token)

    def run_with(
        self,
        extra_env: dict[str, str],
        event_name: str,
        event: Any,
        *args: str,
        token: str = "tok-actions",
        command: tuple[str, ...] = ("action",),
    ) -> CliResult:
        """``gitflow-agents action ARGS`` in this process (``cli_main``)."""
        env = {**self.env(event_name, event, token), **extra_env}
        return cli_main(*command, *args, cwd=self.repo, env=env)

    def outputs(self) -> dict[str, str]:
        return read_outputs(self.output.read_text())


def read_outputs(text: str) -> dict[str, str]:
    """Parse a GITHUB_OUTPUT file the way the runner does (``k=v`` and ``k<<DELIM`` blocks)."""
    values: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        eq, heredoc = line.find("="), line.find("<<")
        if heredoc != -1 and (eq == -1 or heredoc < eq):
            name, delimiter = line[:heredoc], line[heredoc + 2 :]
            body = []
            while lines[i] != delimiter:
                body.append(lines[i])
                i += 1
            i += 1
            values[name] = "\n".join(body)
        else:
            values[line[:eq]] = line[eq + 1 :]
    return values


@pytest.fixture
def runner(tmp_path: Path, gh: GitHubStandIn, repo: Path) -> Runner:
    return Runner(tmp_path, gh, repo)


def states(gh: GitHubStandIn, sha: str) -> list[str]:
    return [s["state"] for s in gh.statuses_for(sha) if s["context"] == "gitflow-agents/review"]


def flow_config(reviewer_mode: str, extra_agent: str | None = None) -> str:
    agents = {"gate": [sys.executable, str(FAKES / "fake_reviewer"), reviewer_mode]}
    if extra_agent:
        agents[extra_agent] = [sys.executable, str(FAKES / "fake_reviewer"), "approve"]
    return command_agents(agents, allow_env={"gate": ["FAKE_REVIEWER_LOG"]})


def has(root: Path, sha: str) -> bool:
    found = subprocess.run(["git", "-C", str(root), "cat-file", "-e", f"{sha}^{{commit}}"])
    return found.returncode == 0


def review_step(tmp_path: Path, inputs: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """action.yml's review step: its ``run:`` script written out, and its env with the inputs
    (defaults, then ``inputs``) mapped through ``env:`` exactly as written there."""
    data = yaml.safe_load((ROOT / "action.yml").read_text())
    values = {name: str(spec.get("default", "")) for name, spec in data["inputs"].items()}
    values.update(inputs)
    step = next(s for s in action_steps() if s.get("id") == "review")
    # GITFLOW_AGENTS_BIN is the install step's output (tests/test_github_workflows.py): set below
    step_env = {
        k: _evaluate(str(v), values) for k, v in step["env"].items() if k != "GITFLOW_AGENTS_BIN"
    }
    wrapper = tmp_path / "gitflow-agents"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gitflow_agents "$@"\n')
    wrapper.chmod(0o755)
    script = tmp_path / "step.sh"
    script.write_text(step["run"])
    return script, {**step_env, "GITFLOW_AGENTS_BIN": str(wrapper), "PYTHONPATH": str(ROOT)}


def action_steps() -> list[dict[str, Any]]:
    data = yaml.safe_load((ROOT / "action.yml").read_text())
    steps: list[dict[str, Any]] = data["runs"]["steps"]
    return steps


def _evaluate(expression: str, inputs: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        key = match.group(1).strip()
        assert key.startswith("inputs."), key
        return inputs[key.removeprefix("inputs.")]

    return re.sub(r"\$\{\{(.*?)\}\}", value, expression)
