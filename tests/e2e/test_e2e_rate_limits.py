"""Rate limits with the real CLIs against the stand-in (issue 23, "Done when"): a 429 in the
middle of a run is waited out and the same session continued, nothing lost (Claude Code, Codex,
Gemini CLI, opencode);
eight parallel Claude Code reviewers under ``max_parallel: 2`` never send the stand-in more than
two requests at once.
Through the installed command (``gitflow-agents spawn``, a process of its own) and the real
supervisor, slots and waits. Claude retries a refused request itself (``CLAUDE_CODE_MAX_RETRIES``
1 here: two requests), then prints ``API Error: Request rejected (429)`` with
``api_error_status: 429`` (the shape ``tests/agents/test_limits.py`` pins)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..conftest import git, run_cli
from .conftest import FLOW, GREETING_V1, implement_script, require_cli
from .model_standin import AGENT_DIR, Say, Shell, Standin, Write
from .projects import PROJECTS

pytestmark = pytest.mark.e2e

SPAWN = (sys.executable, "-m", "gitflow_agents", "spawn")
# CLIs that continue a session, and how each is made to give up a refused request quickly (the
# tool's wait starts only when the CLI gives up): Claude CLAUDE_CODE_MAX_RETRIES 1 and Codex
# request_max_retries 1 (projects.py); Gemini CLI its setting general.maxAttempts 1 (10 by
# default, 5 s to 30 s apart); opencode retries a 429 by itself, after the stand-in's
# retry-after (1 s) when there is one (docs/decisions.md, "Spend (issue 23)").
RESUMING = ("claude", "codex", "gemini", "opencode")
REFUSALS = {"claude": 2, "codex": 1, "gemini": 1, "opencode": 6}
RETRY_AFTER = {"opencode": 1.0}
OPTIONS: dict[str, dict[str, Any]] = {"gemini": {"settings": {"general": {"maxAttempts": 1}}}}


def _project(
    tmp_path: Path, standin: Standin, agents: dict[str, str], wait: int
) -> tuple[Path, dict[str, str]]:
    """A repository whose .flow/ runs ``agents`` (name -> extra YAML lines) on the real Claude
    Code pointed at ``standin``; the environment ``spawn`` needs."""
    claude = require_cli("claude")
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# demo\n")
    entries = "".join(
        f"  {name}:\n    adapter: claude\n    model: claude-sonnet-4-5\n"
        f"    options:\n      executable: {json.dumps(str(claude))}\n      max_turns: 10\n{extra}"
        for name, extra in agents.items()
    )
    (root / ".flow").mkdir()
    (root / ".flow" / "base.yaml").write_text(
        'completion_workflow:\n  template: "Write {report_file}, then rename it to {success_file}."\n'
        f"defaults:\n  stuck_timeout_secs: 30\n  max_wait_secs: 90\n  rate_limit_wait_secs: {wait}\n"
        f"agents:\n{entries}"
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    env = {
        "ANTHROPIC_BASE_URL": standin.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-standin",
        "CLAUDE_CODE_MAX_RETRIES": "1",
    }
    return root, env


def _events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def _cli_project(
    tmp_path: Path, standin: Standin, cli: str, wait: int
) -> tuple[Path, dict[str, str]]:
    """A repository whose .flow/ runs ``builder`` on ``cli`` pointed at ``standin``, as
    ``projects.py`` configures that CLI; the environment ``spawn`` needs."""
    made = PROJECTS[cli](tmp_path / "made", standin)
    options = {"executable": str(made.executable), **made.options, **OPTIONS.get(cli, {})}
    lines = [f"  builder:\n    adapter: {cli}\n", f"    options: {json.dumps(options)}\n"]
    if made.model:
        lines.append(f"    model: {made.model}\n")
    root = made.root
    (root / ".flow").mkdir()
    (root / ".flow" / "base.yaml").write_text(
        'completion_workflow:\n  template: "Write {report_file}, then rename it to {success_file}."\n'
        f"defaults:\n  stuck_timeout_secs: 40\n  max_wait_secs: 120\n  rate_limit_wait_secs: {wait}\n"
        "agents:\n" + "".join(lines)
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "flow")
    env = {key: value for key, value in made.env.items() if os.environ.get(key) != value}
    return root, env


@pytest.mark.parametrize("cli", RESUMING)
def test_a_429_mid_run_is_waited_out_and_the_session_continued(
    tmp_path: Path, standin: Standin, cli: str
) -> None:
    (tmp_path / "made").mkdir()
    root, env = _cli_project(tmp_path, standin, cli, wait=3)
    standin.load(implement_script(root, "builder"))
    # greeting.py is written (turn 0); from the next request on, 429 until the CLI gives up
    standin.refuse(429, times=REFUSALS[cli], from_turn=1, retry_after=RETRY_AFTER.get(cli))
    done = run_cli(
        "spawn",
        "builder",
        "--flow",
        FLOW,
        "--agent-name",
        "builder",
        "--task",
        "Add it.",
        "--quiet",
        cwd=root,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(standin.refused) == REFUSALS[cli]
    # nothing lost: the file written before the limit, the report after it
    assert (root / "greeting.py").read_text() == GREETING_V1
    assert (root / FLOW_DIR / "agents" / "builder" / "report.complete.md").exists()
    [run] = (root / FLOW_DIR / "runs").iterdir()
    [waiting] = [e["data"] for e in _events(run) if e["type"] == "agent:waiting"]
    assert waiting["resumes"] is True
    # the same session continued: the first request after the wait carries the continue
    # message and the turns before the limit (greeting.py is not written again)
    last_refused = standin.refused[-1].at
    after = [r for r in standin.main_requests() if r.at > last_refused]
    assert after and "(a rate limit)" in after[0].all_text()
    assert str(root / "greeting.py") in after[0].all_text()
    record = json.loads((run / "result.json").read_text())
    assert record["status"] == "succeeded" and record["run"]["outcome"] == "succeeded"
    if cli == "claude":  # after --resume its total_cost_usd is the session's so far: each
        # attempt's cost counted once, the run's is the last result's total
        results = [
            line
            for line in map(_json_line, (run / "worker.log").read_text().splitlines())
            if line.get("type") == "result"
        ]
        assert len(results) >= 2 and record["run"]["costUsd"] == pytest.approx(
            results[-1]["total_cost_usd"]
        )


def _json_line(text: str) -> dict[str, Any]:
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


FLOW_DIR = "flows/" + FLOW


def test_eight_parallel_reviewers_under_max_parallel_2_send_at_most_2_requests(
    tmp_path: Path,
) -> None:
    review = [
        Write(f"{AGENT_DIR}/report.md", "# Review\n\nREVIEW_RESULT: APPROVED\n"),
        Shell(f"mv {AGENT_DIR}/report.md {AGENT_DIR}/report.complete.md"),
        Say("REVIEW_RESULT: APPROVED"),
    ]
    with Standin(review, hold=0.5) as standin:
        names = [f"reviewer{i}" for i in range(8)]
        root, env = _project(tmp_path, standin, {n: "    max_parallel: 2\n" for n in names}, wait=0)
        procs = [
            subprocess.Popen(
                [
                    *SPAWN,
                    name,
                    "--flow",
                    FLOW,
                    "--agent-name",
                    name,
                    "--task",
                    "Review.",
                    "--quiet",
                ],
                cwd=root,
                env={**os.environ, **env},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for name in names
        ]
        outputs = [proc.communicate(timeout=600)[0] for proc in procs]
        assert [proc.returncode for proc in procs] == [0] * 8, outputs
        assert len(standin.main_requests()) >= 24  # three turns each
        assert standin.most_in_flight <= 2
    waited = [
        e["data"]["reason"]
        for run in (root / FLOW_DIR / "runs").iterdir()
        for e in _events(run)
        if e["type"] == "agent:waiting"
    ]
    assert "waiting for a claude slot (max_parallel 2)" in waited


def test_a_codex_turn_sent_to_its_session_records_its_own_usage(
    tmp_path: Path, standin: Standin
) -> None:
    """Codex's `turn.completed` after `exec resume` holds the session's totals so far: a turn
    `send` adds records only its own calls (the stand-in says 120 input and 30 output tokens a
    call), so the session's runs sum to what it used."""
    (tmp_path / "made").mkdir()
    root, env = _cli_project(tmp_path, standin, "codex", wait=3)
    standin.load([*implement_script(root, "builder"), Say("Nothing more to do.")])
    done = run_cli(
        *("spawn", "builder", "--flow", FLOW, "--agent-name", "builder", "--task", "Add it."),
        "--quiet",
        cwd=root,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    first_calls = len(standin.main_requests())
    [first] = (root / FLOW_DIR / "runs").iterdir()
    run_cli("send", first.name, "One more thing.", "--quiet", cwd=root, env=env)
    turn_calls = len(standin.main_requests()) - first_calls
    [turn] = [run for run in (root / FLOW_DIR / "runs").iterdir() if run != first]
    records = [json.loads((run / "result.json").read_text())["run"] for run in (first, turn)]
    assert [(r["inputTokens"], r["outputTokens"]) for r in records] == [
        (120 * first_calls, 30 * first_calls),
        (120 * turn_calls, 30 * turn_calls),
    ]
