"""Scope by path (issue 25, item 2) as ``git agent-review`` users see it: ``review.exclude``
keeps vendored, generated and lock files out of every review (no builtin finding, not in an
agent reviewer's diff, counted in the summary), ``review.paths`` gates a path at its own
threshold, and an ``.agents-flow`` instruction whose ``applyTo`` matches a changed path reaches
the agent reviewer's prompt."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.commands.test_review_cli import run
from tests.conftest import FAKES, Cli, git
from tests.helpers.files import commit_files
from tests.helpers.flow_config import command_agents

__all__ = ["run"]

BROKEN = "def f(:\n    return 1\n"
DEBUGGER = "breakpoint()\n"


def review_json(run: Cli, repo: Path, *args: str) -> tuple[int, dict[str, object]]:
    result = run.review("main..HEAD", "--format", "json", "--no-note", *args, cwd=repo)
    return result.returncode, json.loads(result.stdout)


def feature(repo: Path, files: dict[str, str]) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    commit_files(repo, files, "feature")


def flow(repo: Path, text: str) -> None:
    (repo / ".flow").mkdir(exist_ok=True)
    (repo / ".flow" / "base.yaml").write_text(text)
    git(repo, "add", ".flow")
    git(repo, "commit", "-q", "-m", "configure")


def test_the_default_list_leaves_vendored_minified_and_lock_files_out(run: Cli, repo: Path) -> None:
    feature(
        repo,
        {
            "vendor/github.com/x/y.py": BROKEN,
            "web/node_modules/pkg/index.json": "{",
            "web/app.min.js": "x" * 10,
            "package-lock.json": "{",
            "rust/Cargo.lock": "[[package]\n",
            "go.sum": "x\n",
            "src/app.py": DEBUGGER,
        },
    )
    code, data = review_json(run, repo)
    assert code == 0  # the debugger call is a warning; nothing excluded is read
    assert [f["file"] for f in data["findings"]] == ["src/app.py"]  # type: ignore[attr-defined, index]
    assert data["excludedFiles"] == 6 and data["accepted"] == []
    assert "6 files excluded by review.exclude" in str(data["summary"])
    terminal = run.review("main..HEAD", "--no-note", cwd=repo).stdout
    assert "6 files excluded by review.exclude" in terminal.splitlines()[-1]
    sarif = run.review("main..HEAD", "--no-note", "--format", "sarif", cwd=repo).stdout
    assert json.loads(sarif)["runs"][0]["properties"]["excludedFiles"] == 6
    # a vendor/ folder deeper down is the project's own code: only the top one is vendored
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-q", "-D", "feature")
    feature(repo, {"src/vendor/own.py": BROKEN})
    code, data = review_json(run, repo)
    assert code == 1 and data["excludedFiles"] == 0


def test_an_explicit_list_replaces_the_defaults_and_an_empty_one_turns_them_off(
    run: Cli, repo: Path
) -> None:
    flow(repo, "review:\n  exclude: [third_party/]\n")
    feature(repo, {"third_party/lib/x.py": BROKEN, "vendor/y.py": BROKEN})
    code, data = review_json(run, repo)
    assert code == 1
    assert [f["file"] for f in data["findings"]] == ["vendor/y.py"]  # type: ignore[attr-defined, index]
    assert data["excludedFiles"] == 1
    (repo / ".flow" / "base.yaml").write_text("review:\n  exclude: []\n")
    code, data = review_json(run, repo)
    files = sorted(f["file"] for f in data["findings"])  # type: ignore[attr-defined]
    assert code == 1 and files == ["third_party/lib/x.py", "vendor/y.py"]
    assert data["excludedFiles"] == 0
    assert "excluded" not in str(data["summary"])


def test_a_secret_in_an_excluded_path_is_not_read_in_any_commit(run: Cli, repo: Path) -> None:
    """Excluded means not read: neither the net diff nor a commit of the range."""
    key = "AKIA" + "Q7HZ4M2XK9PLR3VB"
    feature(repo, {"vendor/creds.py": f'KEY = "{key}"\n'})
    commit_files(repo, {"vendor/creds.py": "KEY = None\n"}, "drop it")
    code, data = review_json(run, repo)
    assert code == 0 and data["findings"] == [] and data["excludedFiles"] == 1


def test_a_path_threshold_gates_its_findings_at_their_own_level(run: Cli, repo: Path) -> None:
    flow(
        repo,
        "review:\n"
        "  paths:\n"
        "    'docs/**': {severity_threshold: error}\n"
        "    'src/**': {severity_threshold: warn}\n"
        "    'src/legacy/**': {severity_threshold: error}\n",
    )
    feature(repo, {"docs/tool.py": DEBUGGER, "src/legacy/old.py": DEBUGGER})
    code, data = review_json(run, repo)
    assert code == 0, data  # warnings under docs/ and src/legacy/ (the last glob wins) pass
    assert data["overall"] == "approve" and len(data["findings"]) == 2  # type: ignore[arg-type]
    commit_files(repo, {"src/new.py": DEBUGGER}, "a warning under src/")
    code, data = review_json(run, repo)
    assert code == 1 and data["overall"] == "revise"
    gate = data["gate"]
    assert isinstance(gate, dict) and "review.paths" in " ".join(gate["reasons"])
    # the command line's threshold still applies everywhere else
    commit_files(repo, {"tool.py": DEBUGGER}, "a warning elsewhere")
    git(repo, "rm", "-q", "src/new.py")
    git(repo, "commit", "-q", "-m", "rm")
    assert review_json(run, repo)[0] == 0
    assert review_json(run, repo, "--severity-threshold", "warn")[0] == 1


@pytest.fixture
def scope_log(tmp_path: Path) -> Path:
    log = tmp_path / "scope-log"
    log.mkdir()
    return log


def agent_flow(repo: Path, review: str = "") -> None:
    agents = {"scope": [sys.executable, str(FAKES / "fake_scope_reviewer")]}
    flow(repo, command_agents(agents, allow_env={"scope": ["FAKE_SCOPE_LOG"]}) + review)


def test_an_agent_reviewer_gets_a_diff_without_the_excluded_files(
    run: Cli, repo: Path, scope_log: Path
) -> None:
    agent_flow(repo, "review:\n  exclude: [vendor/**, '*.lock', 'gen/']\n")
    feature(
        repo,
        {
            "vendor/lib/big.py": "VENDORED = 1\n",
            "web/yarn.lock": "LOCKED\n",
            "gen/out.txt": "GENERATED\n",
            "src/app.py": "OWN = 1\n",
        },
    )
    env = {"FAKE_SCOPE_LOG": str(scope_log)}
    result = run.review("main..HEAD", "--agent", "scope", "--format", "json", cwd=repo, env=env)
    assert result.returncode == 0, result.stderr
    diff = (scope_log / "diff.txt").read_text()
    assert "OWN = 1" in diff
    assert "VENDORED" not in diff and "LOCKED" not in diff and "GENERATED" not in diff
    prompt = (scope_log / "prompt.md").read_text()
    assert "3 files excluded by review.exclude" in prompt
    assert json.loads(result.stdout)["excludedFiles"] == 3
    # nothing excluded: the diff command and the task are as before
    git(repo, "checkout", "-q", "main")
    feature_two = {"src/other.py": "OTHER = 1\n"}
    git(repo, "checkout", "-q", "-b", "two")
    commit_files(repo, feature_two, "two")
    result = run.review("main..HEAD", "--agent", "scope", cwd=repo, env=env)
    assert result.returncode == 0, result.stderr
    prompt = (scope_log / "prompt.md").read_text()
    assert "excluded" not in prompt and ":(exclude" not in prompt


def test_an_agent_reviewer_gets_the_files_the_hook_is_handed_and_no_others(
    run: Cli, repo: Path, scope_log: Path
) -> None:
    """``pre-commit run --all-files`` / ``--files`` with ``args: [--agent, NAME]``: the agent's
    diff is the whole content of those files (as staged), excluded ones still left out."""
    agent_flow(repo, "review:\n  exclude: [vendor/**]\n")
    commit_files(
        repo,
        {"src/a.py": "A = 1\n", "src/b.py": "B = 1\n", "vendor/v.py": "VENDORED = 1\n"},
        "files",
    )
    env = {"FAKE_SCOPE_LOG": str(scope_log), "PRE_COMMIT": "1"}
    files = ("src/a.py", "vendor/v.py")
    result = run.main("review", "--hook", "--agent", "scope", *files, cwd=repo, env=env)
    assert result.returncode == 0, result.stderr
    diff = (scope_log / "diff.txt").read_text()
    assert "A = 1" in diff
    assert "B = 1" not in diff and "VENDORED" not in diff
    assert "':(literal)src/a.py'" in (scope_log / "prompt.md").read_text()


def test_an_agent_reviewer_gets_the_staged_change_of_the_files_a_commit_hands_over(
    run: Cli, repo: Path, scope_log: Path
) -> None:
    """A commit whose hook ``exclude:`` leaves tests/ out: the agent's diff is the staged change
    of the files pre-commit hands over, a renamed one as a move from its old path (not its
    whole content as added), and nothing of the excluded file."""
    agent_flow(repo)
    commit_files(repo, {"src/old.py": "MOVED = 1\n"}, "old")
    git(repo, "mv", "src/old.py", "src/new.py")
    (repo / "src" / "a.py").write_text("A = 1\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "fixture.py").write_text("EXCLUDED = 1\n")
    git(repo, "add", "-A")
    env = {"FAKE_SCOPE_LOG": str(scope_log), "PRE_COMMIT": "1"}
    files = ("src/a.py", "src/new.py")
    result = run.main("review", "--hook", "--agent", "scope", *files, cwd=repo, env=env)
    assert result.returncode == 0, result.stderr
    diff = (scope_log / "diff.txt").read_text()
    assert "A = 1" in diff and "EXCLUDED" not in diff
    assert "rename from src/old.py" in diff and "MOVED" not in diff


def test_an_apply_to_instruction_reaches_the_reviewer_only_for_changes_under_its_glob(
    run: Cli, repo: Path, scope_log: Path
) -> None:
    instructions = repo / ".agents-flow" / "instructions"
    instructions.mkdir(parents=True)
    (instructions / "frontend.instructions.md").write_text(
        "---\nname: frontend-rules\ndescription: React rules\napplyTo: 'frontend/**'\n---\n"
        "FRONTEND RULES: hooks only.\n"
    )
    agent_flow(repo)
    env = {"FAKE_SCOPE_LOG": str(scope_log)}
    feature(repo, {"backend/api.py": "X = 1\n"})
    assert run.review("main..HEAD", "--agent", "scope", cwd=repo, env=env).returncode == 0
    assert "FRONTEND RULES" not in (scope_log / "prompt.md").read_text()
    commit_files(repo, {"frontend/App.tsx": "export {}\n"}, "frontend")
    assert run.review("main..HEAD", "--agent", "scope", cwd=repo, env=env).returncode == 0
    assert "FRONTEND RULES: hooks only." in (scope_log / "prompt.md").read_text()
