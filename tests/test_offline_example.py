"""``init --example`` then ``run --all``: the main job end to end with no agent CLI installed
(issue 24, item 5), as a user runs it: real processes of the CLI, in a fresh ``git init`` (no
commit yet, git's own branch name, no git identity), then again, and after ``kill -9``."""

from __future__ import annotations

import difflib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gitflow_agents.base.resources import templates_dir
from gitflow_agents.commands.init import example_config
from gitflow_agents.config import builtin_flow_dir, scaffold_files
from tests.conftest import ROOT, wait_until

PLAN = "specs/example-plan.md"
STEPS = ("Add the greeting function", "Add the greet command", "Document the command")


def _env(home: Path) -> dict[str, str]:
    """A fresh machine: no git identity anywhere (no config, no GIT_AUTHOR_*), master or main."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), GIT_CONFIG_NOSYSTEM="1")
    env["PYTHONPATH"] = str(ROOT)
    return env


def _cli(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "gitflow_agents", *args]
    return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=120)


def _git(repo: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


WHO = ("-c", "user.name=Ada", "-c", "user.email=ada@example.com")  # a machine with no identity


@pytest.fixture
def fresh(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    env = _env(tmp_path / "home")
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, env, "init", "-q", "-b", "trunk")  # not main: the example lands where the user is
    return repo, env


def _landed_once(repo: Path, env: dict[str, str]) -> None:
    """Every step implemented exactly once on the target, marked ✅, its files there."""
    subjects = _git(repo, env, "log", "--format=%s", "trunk").splitlines()
    for number, title in enumerate(STEPS, 1):
        assert subjects.count(f"[example-plan] Step {number}: {title}") == 1, subjects
    plan = _git(repo, env, "show", f"trunk:{PLAN}")
    assert plan.count("### Status: ✅ | Step") == 3
    for path in (
        "greet/greeting.py",
        "greet/__main__.py",
        "tests/test_greeting.py",
        "greet/README.md",
    ):
        _git(repo, env, "cat-file", "-e", f"trunk:{path}")


def test_the_example_lands_in_a_project_that_has_a_readme_of_its_own(
    fresh: tuple[Path, dict[str, str]],
) -> None:
    """``init --example`` in an existing project (its README.md committed): the example's
    steps add files of their own, so every step lands (step 3 wrote README.md and failed)."""
    repo, env = fresh
    (repo / "README.md").write_text("# our project\n")
    _git(repo, env, "add", "README.md")
    _git(repo, env, *WHO, "commit", "-q", "-m", "our project")
    init = _cli(repo, env, "init", "--example")
    assert init.returncode == 0, init.stderr
    if _git(repo, env, "status", "--porcelain"):
        _git(repo, env, "add", "-A")
        _git(repo, env, *WHO, "commit", "-q", "-m", "scaffold")
    run = _cli(repo, env, "run", PLAN, "--all")
    assert run.returncode == 0, run.stdout + run.stderr
    _landed_once(repo, env)
    assert _git(repo, env, "show", "trunk:README.md") == "# our project\n"


def test_init_example_then_run_lands_every_step_offline(fresh: tuple[Path, dict[str, str]]) -> None:
    repo, env = fresh
    init = _cli(repo, env, "init", "--example")
    assert init.returncode == 0, init.stderr
    assert _git(repo, env, "status", "--porcelain") == ""  # the scaffold is the first commit
    run = _cli(repo, env, "run", PLAN, "--all")
    assert run.returncode == 0, run.stdout + run.stderr
    _landed_once(repo, env)
    # the landed code works: the step's tests pass, the command prints the greeting
    greet = subprocess.run(
        [sys.executable, "-m", "greet", "Ada", "--shout"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert greet.stdout == "HELLO, ADA!\n"
    history = _cli(repo, env, "history", "--json")
    assert history.returncode == 0, history.stderr
    rows = json.loads(history.stdout)
    steps = sorted(row["what"] for row in rows if row["outcome"] == "approved")
    assert steps == ["step 1", "step 2", "step 3"], rows
    # the builtin reviewer and the patch agent call no model: spend is known to be 0, not unknown
    assert {(row["costUsd"], row["inputTokens"], row["costPartial"]) for row in rows} == {
        (0.0, 0, False)
    }
    again = _cli(repo, env, "run", PLAN, "--all")  # a second run: nothing left to do
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("skipped") == 3
    _landed_once(repo, env)


@pytest.mark.parametrize(("broken", "code", "mark"), [(False, 0, "\\u2705"), (True, 1, "\\u274c")])
def test_a_locale_without_the_result_marks_gets_them_escaped(
    fresh: tuple[Path, dict[str, str]], broken: bool, code: int, mark: str
) -> None:
    """Under an output encoding without ``✅`` / ``❌`` (cp1252: a Windows console, a locale
    that is not UTF-8), ``run`` merged an approved step, then exited 70 printing its result
    line; a rejected step exited 70 instead of 1. The marks are escaped, the codes are run's."""
    repo, env = fresh
    assert _cli(repo, env, "init", "--example").returncode == 0
    if broken:  # step 1's diff adds a syntax error: rejected, the fixer changes nothing
        plan = repo / PLAN
        text = plan.read_text(encoding="utf-8")
        plan.write_text(
            text.replace(
                "+    return text.upper() if shout else text\n",
                "+    return text.upper() if shout else text\n+def broken(:\n",
                1,
            ),
            encoding="utf-8",
        )
        _git(repo, env, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "break")
    run = _cli(repo, {**env, "PYTHONIOENCODING": "cp1252"}, "run", PLAN, "--step", "1")
    assert run.returncode == code, run.stdout + run.stderr
    assert f"{mark} step 1: " in run.stdout


def test_a_commit_git_cannot_sign_says_why(fresh: tuple[Path, dict[str, str]]) -> None:
    """With ``commit.gpgsign`` and no gpg, the step failed with git's last line alone, "fatal:
    failed to write commit object"; the line before it says why (gpg), and is shown too."""
    repo, env = fresh
    assert _cli(repo, env, "init", "--example").returncode == 0
    _git(repo, env, "config", "commit.gpgsign", "true")
    _git(repo, env, "config", "gpg.program", str(repo / "no-such-gpg"))
    run = _cli(repo, env, "run", PLAN, "--step", "1")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "cannot commit the agent's changes: " in run.stdout
    assert "error: gpg failed to sign the data; fatal: failed to write commit object" in run.stdout


def test_kill_9_mid_plan_then_the_same_command_lands_each_step_once(
    fresh: tuple[Path, dict[str, str]],
) -> None:
    repo, env = fresh
    assert _cli(repo, env, "init", "--example").returncode == 0
    argv = [sys.executable, "-m", "gitflow_agents", "run", PLAN, "--all", "--quiet"]
    orchestrator = subprocess.Popen(
        argv, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(lambda: (repo / "flows/example-plan/agents/step-02-builder").exists(), 60)
        orchestrator.send_signal(signal.SIGKILL)
    finally:
        orchestrator.wait()
    again = _cli(repo, env, "run", PLAN, "--all")
    assert again.returncode == 0, again.stdout + again.stderr
    _landed_once(repo, env)


def test_init_example_twice_keeps_the_users_files_and_plain_init_is_unchanged(
    fresh: tuple[Path, dict[str, str]],
) -> None:
    repo, env = fresh
    assert _cli(repo, env, "init", "--example").returncode == 0
    base = (repo / ".flow/base.yaml").read_text(encoding="utf-8")
    assert "default_branch: trunk\n" in base and "adapter: patch" in base
    (repo / PLAN).write_text("my plan\n", encoding="utf-8")
    second = _cli(repo, env, "init", "--example")
    assert second.returncode == 0, second.stderr
    assert f"skip {PLAN} (exists)" in second.stdout.splitlines()
    assert (repo / PLAN).read_text(encoding="utf-8") == "my plan\n"
    # the user's plan kept: the example is not set up, and it says so instead of "next: run"
    assert f"kept the existing {PLAN}," in second.stderr and "next:" not in second.stdout
    third = _cli(repo, env, "init", "--example", "--force")
    assert third.returncode == 0 and "next:" in third.stdout
    again = _cli(repo, env, "init", "--example")  # the example's own files: nothing to say
    assert again.returncode == 0 and "warning" not in again.stderr and "next:" in again.stdout
    assert len(_git(repo, env, "log", "--format=%s").splitlines()) == 1  # no second commit
    # plain init writes the sample plan of prose steps and agent CLIs, as before
    plain = {file.dest: file.source for file in scaffold_files()}
    assert plain[PLAN] == builtin_flow_dir() / PLAN
    example = {file.dest: file.source for file in scaffold_files(example=True)}
    assert example[PLAN] == templates_dir() / "example" / PLAN
    assert set(example) == set(plain)


def test_the_example_config_is_the_shipped_one_with_offline_agents() -> None:
    """One file to keep: the example's base.yaml is made from the shipped one when written."""
    shipped = (builtin_flow_dir() / "base.yaml").read_bytes()
    example = example_config(shipped).decode().splitlines()
    changes = [
        line
        for line in difflib.unified_diff(shipped.decode().splitlines(), example, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---", "+#"))
    ]
    assert changes == [
        "-    adapter: claude",
        "+    adapter: patch",
        "-    adapter: claude",
        "+    adapter: builtin",
        "-    adapter: claude",
        "+    adapter: patch",
    ]


def test_a_budget_over_the_offline_agents_warns_of_nothing(
    fresh: tuple[Path, dict[str, str]],
) -> None:
    """The patch implementer and the builtin reviewer call no model: under a budget, even one
    of 0, the step lands as without one, and no warning says their usage could not be watched
    or counted."""
    repo, env = fresh
    assert _cli(repo, env, "init", "--example").returncode == 0
    run = _cli(repo, env, "run", PLAN, "--step", "1", "--budget-usd", "0", "--budget-tokens", "9")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "warning" not in run.stderr, run.stderr


@pytest.mark.parametrize(
    ("budget", "jobs"),
    [("plan: {usd: 0}", "1"), ("agent: {tokens: 0}", "2"), ("step: {usd: 0}", "2")],
)
def test_a_budget_of_0_in_flow_holds_back_no_step_of_offline_agents(
    fresh: tuple[Path, dict[str, str]], budget: str, jobs: str
) -> None:
    """A limit of 0 set in ``.flow/`` (nothing may be spent) starts no agent that calls a
    model, but the plan's steps, one after the other or several at once, are run by the patch
    implementer and the builtin reviewer, which spend nothing: each lands."""
    repo, env = fresh
    assert _cli(repo, env, "init", "--example").returncode == 0
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text() + f"budget:\n  {budget}\n")
    run = _cli(repo, env, "run", PLAN, "--all", "--jobs", jobs)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "budget" not in run.stdout + run.stderr
    assert _git(repo, env, "log", "--format=%s", "HEAD").count("Mark step") == 3


@pytest.mark.parametrize("how", ["option", "flow"])
def test_a_review_budget_of_0_still_runs_an_agent_that_is_the_builtin_reviewer(
    fresh: tuple[Path, dict[str, str]], how: str
) -> None:
    """``review --agent reviewer`` where ``reviewer`` is the builtin adapter calls no model:
    a review budget of 0 (the option, or ``.flow/``'s) does not refuse it."""
    repo, env = fresh
    assert _cli(repo, env, "init", "--example").returncode == 0  # committed
    (repo / "b.py").write_text("y = 2\n")
    _git(repo, env, "add", "b.py")
    budget: tuple[str, ...] = ("--budget-usd", "0")
    if how == "flow":
        config = repo / ".flow" / "base.yaml"
        config.write_text(config.read_text() + "budget:\n  review: {tokens: 0}\n")
        budget = ()
    review = _cli(repo, env, "review", "--staged", "--agent", "reviewer", "--no-note", *budget)
    assert review.returncode == 0, review.stdout + review.stderr
    assert "APPROVED" in review.stdout and "budget" not in review.stderr
