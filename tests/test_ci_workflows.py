"""CI's own set-up (issue 19): every job has a timeout, every pip install in CI uses
.ci/constraints.txt (but the weekly newest-versions run), and the agent CLIs install on one
Python of ci.yml, from a cache; .ci/run's switches for both."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers.project import (
    WORKFLOWS,
    action_steps,
    load,
    load_yaml,
    supported_pythons,
    write_examples,
)


def readme_workflows() -> list[str]:
    """The README's ```yaml blocks that are whole workflows."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(.*?)^```", readme, re.M | re.S)
    return [b for b in blocks if re.search(r"^on:", b, re.M) and re.search(r"^jobs:", b, re.M)]


def test_every_job_of_every_workflow_has_a_timeout(tmp_path: Path) -> None:
    """Without timeout-minutes a stuck job holds a runner for GitHub's default of 360 minutes."""
    readme = tmp_path / "readme"
    readme.mkdir()
    for index, text in enumerate(readme_workflows()):
        (readme / f"readme-example-{index}.yml").write_text(text, encoding="utf-8")
    files = [*WORKFLOWS, *write_examples(tmp_path), *sorted(readme.glob("*.yml"))]
    jobs = 0
    for path in files:
        for name, job in load_yaml(path)["jobs"].items():
            jobs += 1
            minutes = job.get("timeout-minutes")
            assert isinstance(minutes, int) and 0 < minutes <= 120, f"{path.name}: job {name}"
    assert jobs >= 15


CONSTRAINTS_FLAG = re.compile(
    r"(^|\s)-c \S*\.ci/constraints\.txt\b|-c constraints/constraints\.txt"
)


def pip_install_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if re.search(r"\bpip install\b", line)]


def test_every_pip_install_in_ci_uses_the_constraints_file() -> None:
    """action.yml, every workflow step and the README's and CONTRIBUTING's set-up commands
    install with -c .ci/constraints.txt (.ci/run: see the next test)."""
    scripts = [str(s.get("run", "")) for s in action_steps()]
    for path in WORKFLOWS:
        for job in load_yaml(path)["jobs"].values():
            scripts += [str(s.get("run", "")) for s in job.get("steps", [])]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    set_up = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    scripts += [set_up, contributing.split("## Set up", 1)[1].split("\n## ", 1)[0]]
    lines = [line for text in scripts for line in pip_install_lines(text)]
    assert len(lines) >= 6  # action, release build and verify, README 1 and 2, CONTRIBUTING
    for line in lines:
        assert CONSTRAINTS_FLAG.search(line), line
    assert len(re.findall(r"^```sh\n", set_up, re.M)) == 2  # the README keeps two commands


def test_ci_script_installs_pinned_unless_asked_for_the_newest() -> None:
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "constraints=.ci/constraints.txt" in text
    head, rest = text.split('if [ "$deps" = pinned ]; then\n', 1)
    pinned, rest = rest.split("\nelse\n", 1)
    newest, tail = rest.split("\nfi\n", 1)
    assert pip_install_lines(head) == pip_install_lines(tail) == []
    assert len(pip_install_lines(pinned)) == 2
    for line in pip_install_lines(pinned):
        assert '-c "$constraints"' in line, line
    assert "--build-constraint" in pinned  # the build backend of the editable install too
    assert 'python .ci/dependency_drift.py --check "$constraints"' in pinned
    assert 'python .ci/dependency_drift.py "$constraints"' in newest
    assert "-c " not in newest


def test_only_the_newest_versions_workflow_installs_without_the_constraints() -> None:
    for path in WORKFLOWS:
        if path.name != "newest-deps.yml":
            assert "GITFLOW_AGENTS_CI_DEPS" not in path.read_text(encoding="utf-8"), path.name
    flow = load("newest-deps.yml")
    assert flow[True]["schedule"] and "workflow_dispatch" in flow[True]
    assert flow["permissions"] == {"contents": "read"}
    (job,) = flow["jobs"].values()
    assert job["strategy"]["matrix"]["python"] == supported_pythons()
    (run, report) = [s for s in job["steps"] if "run" in s]
    assert run["run"] == "bash .ci/run"
    assert run["env"] == {
        "GITFLOW_AGENTS_CI_DEPS": "newest",
        "GITFLOW_AGENTS_CI_AGENT_CLIS": "skip",
    }
    assert report["if"] == "always()"  # which dependency moved, also when the suite failed
    assert ".ci/dependency_drift.py" in report["run"] and "GITHUB_STEP_SUMMARY" in report["run"]


def test_ci_installs_the_agent_clis_on_one_python_from_a_cache() -> None:
    job = load("ci.yml")["jobs"]["test"]
    matrix = job["strategy"]["matrix"]
    (e2e,) = matrix["include"]
    assert e2e["agent-clis"] == "install" and e2e["python"] in supported_pythons()
    cache, run = [s for s in job["steps"] if s.get("name", "").startswith(("Restore", ".ci/run"))]
    assert cache["uses"].startswith("actions/cache@")
    assert cache["if"] == "matrix.agent-clis == 'install'"
    installer = (ROOT / "tests" / "e2e" / "install_agents.sh").read_text(encoding="utf-8")
    assert cache["with"]["path"] == "~/.cache/gitflow-agents-e2e"
    assert "${GITFLOW_AGENTS_E2E_CACHE:-$HOME/.cache/gitflow-agents-e2e}" in installer
    key = cache["with"]["key"]
    assert "hashFiles('tests/e2e/agents.lock'" in key
    assert "steps.python.outputs.python-version" in key  # Aider's venv is tied to its Python
    assert run["env"] == {"GITFLOW_AGENTS_CI_AGENT_CLIS": "${{ matrix.agent-clis || 'skip' }}"}


@pytest.mark.parametrize(
    ("variable", "value"),
    [("GITFLOW_AGENTS_CI_DEPS", "latest"), ("GITFLOW_AGENTS_CI_AGENT_CLIS", "no")],
)
def test_ci_script_refuses_an_unknown_switch_value(
    variable: str, value: str, tmp_path: Path
) -> None:
    result = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")],
        env={**os.environ, variable: value, "GITFLOW_AGENTS_CI_VENV": str(tmp_path / "venv")},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f".ci/run: {variable} must be ")
    assert result.stdout == "" and not (tmp_path / "venv").exists()  # refused before anything ran
