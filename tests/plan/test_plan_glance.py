"""The plan at a glance: ``plan show PLAN --format mermaid`` draws the dependency graph with
each step coloured done, running, red, ready or waiting (docs/spec-plans.md)."""

from __future__ import annotations

import re
import socket
from pathlib import Path

from gitflow_agents.plan import parse_plan_text
from gitflow_agents.plan.glance import step_states
from gitflow_agents.runs.lock import hold
from tests.conftest import Cli

PLAN = (
    "# Plan\n\n## Implementation Steps\n\n"
    "### Status: ✅ | Step 1: schema\n\nDepends on: none\n\n"
    "### Status: | Step 2: api\n\nDepends on: 1\n\n"
    "### Status: ❌ rejected | Step 3: web\n\nDepends on: 1\n\n"
    "### Status: | Step 4: docs\n\nDepends on: 2, 3\n\n"
    "### Status: 🚧 | Step 5: cli\n\nDepends on: 1\n"
)


def test_states_from_the_plan_and_the_running_steps() -> None:
    plan = parse_plan_text(PLAN, Path("p.md"))
    assert step_states(plan) == {
        1: ("done", "done"),
        2: ("ready", "ready"),
        3: ("red", "red: ❌ rejected"),
        4: ("waiting", "waiting for 2, 3"),
        5: ("ready", "ready"),  # 🚧 is the user's own text: not done, not red
    }
    assert step_states(plan, {2, 1})[2] == ("running", "running")
    assert step_states(plan, {1})[1] == ("done", "done")  # done wins


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "specs").mkdir()
    (root / "specs" / "feature.md").write_text(PLAN, encoding="utf-8")
    return root


def nodes(chart: str) -> dict[str, str]:
    """Each step's ``Step N`` → its class, from the chart's node lines."""
    return dict(re.findall(r'\["Step (\d+)#58;[^"]*"\]:::(\w+)', chart))


def test_cli_draws_the_graph(cli_run: Cli, tmp_path: Path) -> None:
    root = _project(tmp_path)
    result = cli_run.main("plan", "show", "specs/feature.md", "--format", "mermaid", cwd=root)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("```mermaid\nflowchart LR\n") and result.stdout.endswith(
        "```\n"
    )
    assert nodes(result.stdout) == {"1": "ok", "2": "ready", "3": "bad", "4": "wait", "5": "ready"}
    edges = re.findall(r"^    (n\d) --> (n\d)$", result.stdout, re.M)
    assert edges == [("n1", "n2"), ("n1", "n3"), ("n2", "n4"), ("n3", "n4"), ("n1", "n5")]
    assert "waiting for 2, 3" in result.stdout
    again = cli_run.main("plan", "show", "specs/feature.md", "--format", "mermaid", cwd=root)
    assert again == result


def test_a_live_run_of_this_checkout_is_running(cli_run: Cli, tmp_path: Path) -> None:
    root = _project(tmp_path)
    locks = root / "flows" / "feature" / "locks"
    with hold(locks / "step-02.lock", "run-live"), hold(locks / "step-05.claim.lock", "run-pr"):
        result = cli_run.main("plan", "show", "specs/feature.md", "--format", "mermaid", cwd=root)
    assert nodes(result.stdout)["2"] == "warn" and nodes(result.stdout)["5"] == "warn"
    # a lock left by a run that is gone (a pid that is not running) is no running step
    (locks / "step-02.lock").write_text(
        f'{{"runId": "gone", "pid": 999999999, "host": "{socket.gethostname()}", "at": 0}}'
    )
    after = cli_run.main("plan", "show", "specs/feature.md", "--format", "mermaid", cwd=root)
    assert nodes(after.stdout)["2"] == "ready"


def test_json_and_mermaid_are_two_formats(cli_run: Cli, tmp_path: Path) -> None:
    root = _project(tmp_path)
    result = cli_run.main(
        "plan", "show", "specs/feature.md", "--json", "--format", "mermaid", cwd=root
    )
    assert result.returncode == 2 and result.stdout == ""
    assert "--json and --format mermaid" in result.stderr
    same = cli_run.main("plan", "show", "specs/feature.md", "--format", "json", cwd=root)
    assert same == cli_run.main("plan", "show", "specs/feature.md", "--json", cwd=root)
