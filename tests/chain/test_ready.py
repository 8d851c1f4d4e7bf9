"""Step work trees ready to work in (issue 24, item 3): ``chain.setup`` runs once per new work
tree and its failure fails the step; ``chain.copy_ignored`` copies only the listed ignored
files, which are never committed and whose values are masked. Real git, real fake agents."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import psutil

from gitflow_agents.chain.ready import file_secrets
from gitflow_agents.git import queries as g
from tests.conftest import git, wait_until
from tests.helpers.chain import configure, results, run, start_run

SECRET = "s3cr3tV4lueQ9xyzW"


def add_chain_keys(repo: Path, text: str) -> None:
    """Append ``chain:`` keys to the fake agents' .flow/base.yaml."""
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text() + "chain:\n" + text)


def step_tree(repo: Path) -> Path:
    return next(p for p in g.worktrees(repo) if g.is_tool_worktree(repo, p))


def test_setup_runs_once_per_work_tree_and_again_for_a_new_command(
    repo: Path, tmp_path: Path
) -> None:
    configure(repo, reviewer="revise")
    count = tmp_path / "count"
    add_chain_keys(repo, f'  setup: "echo setting up; echo ran >> {count}"\n')
    first = run(repo, "--step", "1", "--max-iterations", "1")
    assert first.returncode == 1, first.stderr  # rejected: the work tree stays
    assert count.read_text() == "ran\n"
    setup = results(repo)[0]["chain"]["setup"]
    assert setup["ran"] is True and setup["exitCode"] == 0 and setup["log"] == "setup.log"
    log = Path(results(repo)[0]["run"]["logDirectory"]) / setup["log"]
    assert log.read_text() == "setting up\n"

    assert run(repo, "--step", "1", "--max-iterations", "1").returncode == 1
    assert count.read_text() == "ran\n"  # the work tree was set up with this command already
    assert [r["chain"]["setup"]["ran"] for r in results(repo)] == [True, False]

    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text().replace("echo setting up;", "echo again;"))
    assert run(repo, "--step", "1", "--max-iterations", "1").returncode == 1
    assert count.read_text() == "ran\nran\n"  # a changed command runs again


def test_a_failing_setup_fails_the_step_with_its_last_lines(repo: Path) -> None:
    configure(repo)
    add_chain_keys(repo, '  setup: ["sh", "-c", "echo first; echo the-last-line >&2; exit 4"]\n')
    result = run(repo, "--step", "1")
    assert result.returncode == 3, result.stderr
    assert "the-last-line" in result.stdout and "exited 4" in result.stdout
    chain = results(repo)[0]["chain"]
    assert chain["outcome"] == "failed" and chain["agents"] == []  # no agent ran
    assert chain["setup"] == {
        "command": "sh -c 'echo first; echo the-last-line >&2; exit 4'",
        "ran": True,
        "exitCode": 4,
        "log": "setup.log",
    }
    history = (repo / "flows" / "feature" / "history.md").read_text()
    assert "failed (setup)" in history
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text().replace("exit 4", "exit 0"))
    assert run(repo, "--step", "1").returncode == 0  # the same work tree, set up this time


def test_setup_killed_with_its_orchestrator_runs_again_cleanly(repo: Path, tmp_path: Path) -> None:
    configure(repo)
    started, go = tmp_path / "started", tmp_path / "go"
    script = f"if [ -f {go} ]; then echo ready; else echo $$ > {started}; sleep 60; fi"
    add_chain_keys(repo, f"  setup: {json.dumps(script)}\n")
    orchestrator = start_run(repo, "--step", "1")
    wait_until(lambda: started.exists() and started.read_text().strip(), 30)
    left = int(started.read_text())
    os.kill(orchestrator.pid, signal.SIGKILL)
    orchestrator.wait()
    assert psutil.pid_exists(left)  # the setup outlived its orchestrator
    go.touch()
    result = run(repo, "--step", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert results(repo)[-1]["chain"]["setup"]["ran"] is True
    wait_until(lambda: not psutil.pid_exists(left) or psutil.Process(left).status() == "zombie", 10)


def test_copy_ignored_copies_only_listed_ignored_files_never_commits_and_masks_them(
    repo: Path,
) -> None:
    configure(repo, implementer="unignore")
    (repo / ".gitignore").write_text(".env\n.env.local\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    (repo / ".env").write_text(f"API_TOKEN={SECRET}\nDEBUG=true\n")
    (repo / ".env.local").write_text("NOT_LISTED=1\n")
    add_chain_keys(repo, "  copy_ignored: [.env, missing.txt]\n")
    result = run(repo, "--step", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    merged = git(repo, "ls-tree", "-r", "--name-only", "main").split()
    assert ".env" not in merged and ".env.local" not in merged
    assert ".env" not in git(repo, "show", "main:.gitignore")  # the agent un-ignored it
    builder = next(
        p
        for p in (repo / "flows" / "feature" / "runs").glob("*/worker.log")
        if "API_TOKEN" in p.read_text()
    )
    assert SECRET not in builder.read_text()  # the agent printed it: masked
    every = "".join(p.read_text() for p in (repo / "flows").rglob("*") if p.is_file())
    assert SECRET not in every


def test_copy_ignored_refuses_a_tracked_path_naming_its_line(repo: Path) -> None:
    configure(repo)
    add_chain_keys(repo, "  copy_ignored:\n    - .env\n    - docs/old.md\n")
    result = run(repo, "--step", "1")
    assert result.returncode == 2
    line = (repo / ".flow" / "base.yaml").read_text().splitlines().index("    - docs/old.md") + 1
    assert f".flow/base.yaml:{line}" in result.stderr and "docs/old.md" in result.stderr


def test_file_secrets_reads_dotenv_values_but_not_plain_words(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text(
        f"# comment=ignored12345\nexport API_TOKEN='{SECRET}'\nNODE_ENV=production\nPORT=8080\n"
        "URL=postgres://u:pw9Xq2@db/x\n"
    )
    assert file_secrets(env, ".env") == {SECRET, "postgres://u:pw9Xq2@db/x"}


def test_an_agent_that_commits_a_copied_file_itself_fails_and_nothing_lands(repo: Path) -> None:
    configure(repo, implementer="unignore-commit")
    (repo / ".gitignore").write_text(".env\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    (repo / ".env").write_text(f"API_TOKEN={SECRET}\n")
    before = git(repo, "rev-parse", "main")
    add_chain_keys(repo, "  copy_ignored: [.env]\n")
    result = run(repo, "--step", "1")
    assert result.returncode == 3
    assert "it committed .env, copied in by chain.copy_ignored" in result.stdout
    assert git(repo, "rev-parse", "main") == before  # nothing landed
