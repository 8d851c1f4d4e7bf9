"""Secrets a change adds and a reviewer that leaks them into its report, with the checks that no output or record shows them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.conftest import FAKES, git
from tests.helpers.flow_config import command_agents

AWS_KEY = "AKIA" + "Q7HZ4M2XK9PLR3VB"


GH_TOKEN = "ghp_" + "Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6"


ENV_PASSWORD = "pR7xQ9mZ2kL5wN8vT4sY"


SECRETS = (AWS_KEY, GH_TOKEN, ENV_PASSWORD)


CHANGE = {
    "config.py": f'AWS_ACCESS_KEY_ID = "{AWS_KEY}"\n',
    "deploy.sh": f"export GH_TOKEN={GH_TOKEN}\n",
    ".env": f"DB_PASSWORD={ENV_PASSWORD}\n",
}


def leaky_report(reviewed: str | None = None) -> str:
    """A report that quotes every secret in every field (the password bare, as prose)."""
    quoted = f"{AWS_KEY} / {GH_TOKEN} / the password {ENV_PASSWORD}"
    block: dict[str, Any] = {
        "overall": "revise",
        "summary": f"Leaks: {quoted}.",
        "findings": [
            {
                "severity": "error",
                "file": "config.py",
                "line": 1,
                "message": f"hard-coded credentials: {quoted}",
                "suggestion": f"```suggestion\nAWS_ACCESS_KEY_ID = os.environ['K']  # not {AWS_KEY}\n```",
                "rule": f"leak-{ENV_PASSWORD}",
            },
            {
                "severity": "warn",
                "file": "notes/rotation.txt",
                "message": f"the .env password {ENV_PASSWORD} again",
                "suggestion": f"rotate {GH_TOKEN} and {ENV_PASSWORD}",
            },
        ],
        "unreviewed_files": ["vault/keys.bin"],
        "run": {"questions": [f"May I rotate {GH_TOKEN}?"], "nested": {"deep": [quoted]}},
    }
    if reviewed:
        block["reviewed_sha"] = reviewed
    return (
        f"# Review\n\nI found {quoted}.\n\n```json\n{json.dumps(block, indent=2)}\n```\n\n"
        "REVIEW_RESULT: REVISE\n"
    )


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret} in {where}"


def assert_no_secret_in_records(repo: Path) -> None:
    """Every file the tool wrote for the review (its run folders: result.json, status.json,
    events.jsonl, and the worker.log of this agent, which prints nothing) and every file under
    .git (refs, logs, index, config, notes as git shows them). The agent's own folder is left
    out: report.complete.md is the agent's own writing (docs/security.md)."""
    runs = sorted((repo / "flows").glob("*/runs/*/*"))
    assert any(p.name == "result.json" for p in runs), runs
    for path in runs:
        assert_no_secret(path.read_bytes().decode("utf-8", "replace"), str(path))
    for path in (repo / ".git").rglob("*"):
        if path.is_file():
            assert_no_secret(path.read_bytes().decode("utf-8", "replace"), str(path))
    notes = git(repo, "log", "--all", "--notes=*", "--format=%H%n%N")
    assert_no_secret(notes, "git notes")


def reviewer_config(report: Path) -> str:
    command = [sys.executable, str(FAKES / "fake_report_reviewer"), str(report)]
    return command_agents({"leaky": command})
