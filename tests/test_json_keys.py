"""One JSON key style, camelCase, across every JSON output (docs/decisions.md, "CLI conventions").

Each output is produced the way a user gets it (the commands, in this process, with real git
and fake agents) and every key of every object in it is checked. Keys that are data rather than
names (none today) would be listed in DATA_KEYS by their path.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cli, git
from tests.helpers.chain import _agent, call, configure
from tests.helpers.session import setup as session_setup

CAMEL = re.compile(r"[a-z][a-zA-Z0-9]*")
DATA_KEYS: set[str] = set()  # paths like "$.chain.byFile" whose keys are data, not names


def bad_keys(value: Any, path: str = "$") -> list[str]:
    """Every key path under ``value`` whose key is not camelCase."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if path not in DATA_KEYS and not CAMEL.fullmatch(key):
                found.append(f"{path}.{key}")
            found += bad_keys(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            found += bad_keys(item, f"{path}[]")
    return found


def parsed(result: Any, name: str) -> Any:
    assert result.returncode in (0, 1), f"{name}: {result.stderr}{result.stdout}"
    return json.loads(result.stdout)


def test_the_check_can_fail() -> None:
    assert bad_keys({"runId": 1, "steps": [{"depends_on": []}], "gate": {"exit_code": 0}}) == [
        "$.steps[].depends_on",
        "$.gate.exit_code",
    ]


def test_chain_plan_prompt_review_outputs_are_camel_case(repo: Path) -> None:
    configure(repo)
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text() + "  researcher:\n" + _agent("researcher", "sources"))
    (repo / "a.py").write_text("def run(:\n")
    git(repo, "add", "a.py")
    git(repo, "commit", "-q", "-m", "a defect for the builtin reviewer")
    agent = ("--quiet", "--kill-grace", "0.2")
    plan = ("--plan", "specs/feature.md")
    outputs = {
        "run --json": call(repo, "run", "specs/feature.md", "--step", "1", *agent, "--json"),
        "flow implement --json": call(repo, "flow", "implement", *plan, "--step", "2", *agent,
                                      "--json"),
        "flow review --json": call(repo, "flow", "review", "--branch", "agents/feature/step-2",
                                   "--flow", "feature", *agent, "--json"),
        "flow fix --json": call(repo, "flow", "fix", *plan, "--step", "2", "--after", "reviewer",
                                *agent, "--json"),
        "flow research --json": call(repo, "flow", "research", "--task", "worktrees", *agent,
                                     "--json"),
        "status --json": call(repo, "status", "--json"),
        "history --json": call(repo, "history", "--json"),
        "history --format json --agents": call(repo, "history", "--format", "json", "--agents"),
        "worktrees --json": call(repo, "worktrees", "--json"),
        "gc --dry-run --json": call(repo, "gc", "--dry-run", "--json"),
        "plan show --json": call(repo, "plan", "show", "specs/feature.md", "--json"),
        "plan matrix": call(repo, "plan", "matrix", "specs/feature.md"),
        "plan matrix --pending-only": call(repo, "plan", "matrix", "specs/feature.md",
                                           "--pending-only"),
        "prompt --json": call(repo, "prompt", "--agent", "builder", *plan, "--step", "1",
                              "--json"),
        "prompt --segments --json": call(repo, "prompt", "--agent", "builder", *plan, "--step",
                                         "1", "--segments", "--json"),
        "review --format json": call(repo, "review", "HEAD", "--no-note", "--format", "json",
                                     "--output", str(repo.parent / "review.json")),
    }  # fmt: skip
    found = {name: bad_keys(parsed(result, name)) for name, result in outputs.items()}
    found["review --output"] = bad_keys(json.loads((repo.parent / "review.json").read_text()))
    assert found == {key: [] for key in found}


def test_agent_session_outputs_are_camel_case(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CLI that reports a session, tokens and cost (a fake ``claude``): spawn, send, status,
    history all show them."""
    env, _ = session_setup(repo, tmp_path)
    cli = Cli(monkeypatch, capsys)
    spawned = cli.main("spawn", "painter", "--flow", "f", "--task", "paint", "--json", cwd=repo,
                       env=env)  # fmt: skip
    first = parsed(spawned, "spawn --json")
    assert first["run"]["sessionId"] == "sess-1" and first["run"]["costUsd"] == 0.25
    sent = cli.main("send", first["run"]["runID"], "again", "--json", cwd=repo, env=env)
    status = cli.main("status", "--json", cwd=repo, env=env)
    history = cli.main("history", "--json", cwd=repo, env=env)
    found = {
        "spawn --json": bad_keys(first),
        "send --json": bad_keys(parsed(sent, "send --json")),
        "status --json": bad_keys(parsed(status, "status --json")),
        "history --json": bad_keys(parsed(history, "history --json")),
    }
    assert found == {key: [] for key in found}
    assert parsed(status, "status")[0]["inputTokens"] == 10


def test_action_findings_file_is_camel_case(tmp_path: Path) -> None:
    """The Action's ``findings-file`` output: the review JSON plus the run-history rows."""
    from gitflow_agents.findings import Finding, Overall, Review, Severity, gate
    from gitflow_agents.github.action.comment import RunRow
    from gitflow_agents.github.action.publish import load_findings, write_result_files

    review = Review(
        Overall.REVISE,
        findings=(Finding(Severity.ERROR, "broken", "a.py", 1, 2, rule="python-syntax"),),
        reviewed_sha="a" * 40,
        base_sha="b" * 40,
        unreviewed_files=("big.bin",),
    )
    row = RunRow("review", "builtin", "revise", None, None, 1, 2, 3, 1.5, 10, 0.5)
    findings_file, _ = write_result_files(
        tmp_path, review, gate(review, threshold=Severity.ERROR, head_sha="a" * 40), [row]
    )
    assert bad_keys(json.loads(findings_file.read_text())) == []
    back, rows = load_findings(findings_file)  # what the posting job reads
    assert back.findings[0].end_line == 2 and back.unreviewed_files == ("big.bin",)
    assert rows == [row]
