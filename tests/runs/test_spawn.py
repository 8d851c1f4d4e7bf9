"""spawn / status / heartbeat / cancel through the real CLI, with fake agents as `command` agents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import psutil
import pytest

from gitflow_agents.agents import get_adapter
from gitflow_agents.agents.base import AgentOutput, Invocation, LaunchSpec
from gitflow_agents.base.errors import ConfigError
from gitflow_agents.runs import RESULT_SCHEMAS
from tests.conftest import FAKES, ROOT, Cli, git, run_cli
from tests.helpers.spawn import setup_project

FAKE = FAKES / "fake_agent"


CARD = """---
title: Feature
---
# Feature

## Acceptance Criteria

- [ ] first
- [ ] second
"""


def only_run(repo: Path, flow: str = "my-flow") -> Path:
    runs = list((repo / "flows" / flow / "runs").iterdir())
    assert len(runs) == 1
    return runs[0]


def test_spawn_success_records_everything(repo: Path, cli: Cli) -> None:
    script = repo.parent / "builder"
    script.write_text(
        "#!/usr/bin/env python3\nimport os, pathlib\n"
        "pathlib.Path('new_module.py').write_text('x = 1\\n')\n"
        "d = pathlib.Path(os.environ['GITFLOW_AGENTS_AGENT_DIR'])\n"
        "(d / 'report.md').write_text('## Summary\\n\\nAdded new_module.\\n\\n"
        "CHECKED_CRITERIA: 1\\nTESTS_RAN: pytest -q\\nTESTS_PASSED: yes\\n')\n"
        "os.rename(d / 'report.md', d / 'report.complete.md')\n"
        "print('<SUMMARY>Added new_module.</SUMMARY><STATUS>completed</STATUS>')\n"
    )
    script.chmod(0o755)
    setup_project(repo, {"builder": [str(script)]})
    (repo / "card.md").write_text(CARD)
    result = cli.main(
        "spawn",
        "builder",
        "--flow",
        "my-flow",
        "--plan",
        "specs/feature.md",
        "--step",
        "1",
        "--card",
        "card.md",
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr
    assert "step-01-builder: succeeded" in result.stdout
    run_dir = only_run(repo)
    data = json.loads((run_dir / "result.json").read_text())
    jsonschema.validate(data, RESULT_SCHEMAS["implement"])
    assert data["status"] == "succeeded"
    assert data["summary"] == "Added new_module."
    assert data["changedFiles"] == ["new_module.py"]  # not the card, not flows/
    assert data["tests"] == {"ran": ["pytest -q"], "passed": True}
    assert data["checkedCriteria"] == [1]
    assert data["run"]["runID"] == run_dir.name
    assert data["run"]["replies"] == {"structured": 1, "unstructured": 0}
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [(e["type"], e["data"].get("phase")) for e in events] == [
        ("harness:start", None),
        ("phase:start", "prepare"),
        ("phase:complete", "prepare"),
        ("phase:start", "agent"),
        ("task:start", None),
        ("agent:start", None),
        ("agent:output", None),
        ("agent:complete", None),
        ("task:complete", None),
        ("phase:complete", "agent"),
        ("phase:start", "record"),
        ("agent:reply", None),
        ("phase:complete", "record"),
        ("harness:complete", None),
    ]
    assert {e["runId"] for e in events} == {run_dir.name}
    card = (repo / "card.md").read_text()
    assert "agent_flow: implement\nagent_status: succeeded\n" in card
    assert "- [ ] first\n- [x] second\n" in card
    assert f"Run {run_dir.name} queued (implement) on branch main." in card
    assert f"Run {run_dir.name} succeeded (implement); checked 1 items; tests: pass." in card
    assert (repo / "flows" / "my-flow" / "agents" / "step-01-builder" / "system_prompt.md").exists()
    # the run folder never shows up in git
    assert "flows" not in git(repo, "status", "--porcelain", "--untracked-files=all")

    status = cli.main("status", "--json", cwd=repo)
    rows = json.loads(status.stdout)
    assert rows[0]["state"] == "succeeded" and rows[0]["agent"] == "step-01-builder"
    table = cli.main("status", "--flow", "my-flow", cwd=repo)
    assert "step-01-builder" in table.stdout and "succeeded" in table.stdout


def test_spawn_failure_exit_3_and_card_failed(repo: Path, cli: Cli) -> None:
    setup_project(repo, {"builder": [str(FAKE), "exit", "--code", "0"]})
    (repo / "card.md").write_text(CARD)
    result = cli.main(
        "spawn", "builder", "--flow", "f", "--task", "do it", "--card", "card.md", cwd=repo
    )
    assert result.returncode == 3
    assert "without renaming report.md" in result.stdout
    run_dir = only_run(repo, "f")
    data = json.loads((run_dir / "result.json").read_text())
    assert data["status"] == "failed" and data["run"]["outcome"] == "failed"
    card = (repo / "card.md").read_text()
    assert "agent_status: failed" in card
    assert (
        f"Run {run_dir.name} failed (implement); see logs at flows/f/runs/{run_dir.name}." in card
    )
    # a second spawn of the same agent id refuses to clobber... nothing to clobber here (no rename)
    again = cli.main("spawn", "builder", "--flow", "f", "--task", "do it", cwd=repo)
    assert again.returncode == 3


def test_spawn_refuses_a_stale_report_unless_rerun(repo: Path, cli: Cli) -> None:
    setup_project(repo, {"builder": [str(FAKE), "succeed"]})
    args = ("spawn", "builder", "--flow", "f", "--task", "t", "--quiet")
    assert cli.main(*args, cwd=repo).returncode == 0
    refused = cli.main(*args, cwd=repo)
    assert refused.returncode == 2 and "--rerun" in refused.stderr
    assert cli.main(*args, "--rerun", cwd=repo).returncode == 0
    previous = list((repo / "flows" / "f" / "agents" / "builder" / "previous").iterdir())
    assert len(previous) == 1


def test_review_kind_result_shape(repo: Path, cli: Cli) -> None:
    script = repo.parent / "reviewer"
    script.write_text(
        "#!/usr/bin/env python3\nimport os, pathlib\n"
        "d = pathlib.Path(os.environ['GITFLOW_AGENTS_AGENT_DIR'])\n"
        "(d / 'report.md').write_text('Looks fine.\\n\\n- [warn] a.py:3: naming\\n\\n"
        "REVIEW_RESULT: APPROVED\\n')\n"
        "os.rename(d / 'report.md', d / 'report.complete.md')\n"
    )
    script.chmod(0o755)
    setup_project(repo, {"reviewer": [str(script)]})
    result = cli.main("spawn", "reviewer", "--flow", "f", "--task", "review", "--json", cwd=repo)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    jsonschema.validate(data, RESULT_SCHEMAS["review"])
    assert data["overall"] == "approve"
    assert data["findings"][0]["severity"] == "warn"


def _wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def test_cancel_kills_a_running_spawn(repo: Path, tmp_path: Path, cli: Cli) -> None:
    record = tmp_path / "rec.json"
    setup_project(repo, {"hanger": [str(FAKE), "spawn-hang", "--record", str(record)]})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    spawn = subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", "spawn", "hanger", "--flow", "f", "--task", "t"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(lambda: record.exists() and "descendants" in json.loads(record.read_text()))
        run_dir = only_run(repo, "f")
        cancel = cli.main("cancel", run_dir.name[:13], cwd=repo)
        assert cancel.returncode == 0, cancel.stderr
        assert "canceled run" in cancel.stdout
        out, _err = spawn.communicate(timeout=15)
    finally:
        if spawn.poll() is None:
            spawn.kill()
        _kill_recorded(record)
    assert spawn.returncode == 3
    assert "canceled" in out
    facts = json.loads(record.read_text())
    for pid in [facts["pid"], *facts["descendants"]]:
        _wait_for(lambda pid=pid: not _alive(pid))
    data = json.loads((run_dir / "result.json").read_text())
    assert data["status"] == "canceled"
    assert cli.main("cancel", run_dir.name, cwd=repo).stdout.startswith("run ")  # already ended


def test_cancel_without_supervisor_kills_the_recorded_tree(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """The orchestrator died (SIGKILL): cancel finds the agent by pid, group and env marker."""
    record = tmp_path / "rec.json"
    setup_project(repo, {"hanger": [str(FAKE), "spawn-hang", "--record", str(record)]})
    spawn = subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", "spawn", "hanger", "--flow", "f", "--task", "t"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Conditions, each bounded by a minute only so a broken run cannot hang the suite.
        _wait_for(lambda: record.exists() and "descendants" in json.loads(record.read_text()), 60)
        run_dir = only_run(repo, "f")
        # the agent's pid is on record (the case without it: the marker-only test below); the
        # key is there from the start, as null, until the supervisor has started the agent
        status_file = run_dir / "status.json"
        _wait_for(lambda: isinstance(json.loads(status_file.read_text()).get("pid"), int), 60)
        spawn.kill()
        spawn.wait()
        # nothing supervises the run any more: lost, and its agent still runs
        [row] = json.loads(cli.main("status", "--json", cwd=repo).stdout)
        assert row["state"] == "lost" and facts_pid(record) in row["processesAlive"]
        assert f"processes alive — `gitflow-agents cancel {run_dir.name}`" in row["reason"]
        result = cli.main("cancel", run_dir.name, "--wait", "0.2", cwd=repo)
        assert result.returncode == 0, result.stderr
        facts = json.loads(record.read_text())
        for pid in [facts["pid"], *facts["descendants"]]:
            _wait_for(lambda pid=pid: not _alive(pid), 60)
    finally:
        spawn.kill()
        spawn.wait()
        _kill_recorded(record)
    data = json.loads((run_dir / "result.json").read_text())
    assert data["status"] == "canceled"
    assert json.loads(cli.main("status", "--json", cwd=repo).stdout)[0]["state"] == "canceled"


def test_cancel_kills_a_tree_known_only_by_its_marker(repo: Path, tmp_path: Path, cli: Cli) -> None:
    """The orchestrator died after starting the agent but before recording its pid: status.json
    holds only the tree marker (written before the agent starts). cancel still kills the agent,
    its child and the grandchild that left the process group with setsid."""
    record = tmp_path / "rec.json"
    setup_project(repo, {"hanger": [str(FAKE), "spawn-hang"]})
    run_dir = repo / "flows" / "f" / "runs" / "0190aaaa-0000-7000-8000-000000000001"
    agent_dir = repo / "flows" / "f" / "agents" / "hanger"
    run_dir.mkdir(parents=True)
    agent_dir.mkdir(parents=True)
    gone = subprocess.Popen(["true"])  # a supervisor pid that no longer exists
    gone.wait()
    token = f"{run_dir.name}:0123456789abcdef"
    started = time.time()
    status = {
        "run_id": run_dir.name,
        "flow": "f",
        "agent": "hanger",
        "state": "running",
        "started": started,
        "supervisor_pid": gone.pid,
        "tree_token": token,
    }
    (run_dir / "status.json").write_text(json.dumps(status))
    agent = subprocess.Popen(
        [str(FAKE), "spawn-hang", "--record", str(record), "--agent-dir", str(agent_dir)],
        env={**os.environ, "GITFLOW_AGENTS_TREE": token},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for(lambda: record.exists() and "descendants" in json.loads(record.read_text()))
        facts = json.loads(record.read_text())
        result = cli.main("cancel", run_dir.name, "--wait", "0", cwd=repo)
        assert result.returncode == 0, result.stderr
        agent.wait(timeout=10)  # it is our child: reaped here, not a zombie
        for pid in facts["descendants"]:
            _wait_for(lambda pid=pid: not _alive(pid))
    finally:
        agent.kill()
        agent.wait()
        _kill_recorded(record)
    assert agent.returncode == -15  # SIGTERM
    data = json.loads((run_dir / "result.json").read_text())
    assert data["status"] == "canceled"


def facts_pid(record: Path) -> int:
    pid: int = json.loads(record.read_text())["pid"]
    return pid


def _kill_recorded(record: Path) -> None:
    """Cleanup after a failed assertion: SIGKILL whatever a fake recorded as its tree."""
    if not record.exists():
        return
    facts = json.loads(record.read_text())
    for pid in [facts.get("pid"), *facts.get("descendants", [])]:
        if isinstance(pid, int):
            try:
                proc = psutil.Process(pid)
                if str(FAKE) in proc.cmdline() or "while True" in " ".join(proc.cmdline()):
                    proc.kill()  # only a fake of ours, never a process that reused the pid
            except psutil.Error:
                pass


def test_heartbeat_cli_reaches_the_running_agents_run(repo: Path, cli: Cli) -> None:
    """``gitflow-agents heartbeat`` from inside a running agent touches its run's heartbeat (that
    a heartbeat keeps a quiet agent alive is the supervisor's, tested there:
    ``test_busy_agent_is_not_stuck[heartbeat-tools]``)."""
    setup_project(
        repo, {"quiet": [sys.executable, str(FAKE), "heartbeat-cli", "--seconds", "0.5"]}, stuck=1
    )
    # the agent runs `python -m gitflow_agents heartbeat`: it finds the package as run_cli's do
    env = {"PYTHONPATH": str(ROOT)}
    result = cli.main("spawn", "quiet", "--flow", "f", "--task", "t", cwd=repo, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = only_run(repo, "f")
    assert (run_dir / "heartbeat").exists()


def test_heartbeat_outside_a_run_is_a_usage_error(repo: Path) -> None:
    result = run_cli("heartbeat", cwd=repo)
    assert result.returncode == 2
    assert "no running agent run" in result.stderr


def test_heartbeat_from_the_agent_folder(repo: Path) -> None:
    agent = repo / "flows" / "f" / "agents" / "a"
    run_dir = repo / "flows" / "f" / "runs" / "r1"
    agent.mkdir(parents=True)
    run_dir.mkdir(parents=True)
    (run_dir / "status.json").write_text(
        json.dumps({"run_id": "r1", "flow": "f", "agent": "a", "state": "running", "started": 1})
    )
    result = run_cli("heartbeat", "still compiling", cwd=agent)
    assert result.returncode == 0, result.stderr
    assert "still compiling" in (run_dir / "heartbeat").read_text()


def test_heartbeat_reaches_a_run_being_killed_not_an_older_one(repo: Path, cli: Cli) -> None:
    """A run in ``killing`` has not ended (``runs.status.LIVE_STATES``): the agent's heartbeat
    is its own, never an older run's still marked running (a lost one)."""
    agent = repo / "flows" / "f" / "agents" / "a"
    agent.mkdir(parents=True)
    for run_id, state in (("r1", "running"), ("r2", "killing")):
        run_dir = repo / "flows" / "f" / "runs" / run_id
        run_dir.mkdir(parents=True)
        status = {"run_id": run_id, "flow": "f", "agent": "a", "state": state, "started": 1}
        (run_dir / "status.json").write_text(json.dumps(status))
    result = cli.main("heartbeat", "still here", cwd=agent)
    assert result.returncode == 0, result.stderr
    runs = repo / "flows" / "f" / "runs"
    assert "still here" in (runs / "r2" / "heartbeat").read_text()
    assert not (runs / "r1" / "heartbeat").exists()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_result_json_written_even_when_the_launch_raises(
    repo: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An adapter whose ``launch`` raises inside the supervised part. What the configuration
    decides is refused when it is loaded (tests/config), before a run exists; this adapter
    stands in for a refusal only the run can meet."""

    class Refusing:
        cli = get_adapter("command").cli

        def launch(self, invocation: Invocation) -> LaunchSpec:
            raise ConfigError("refused at launch", key=f"agents.{invocation.agent_id}.command")

        def parse_output(self, stdout: str, stderr: str) -> AgentOutput:
            return AgentOutput()

    setup_project(repo, {"builder": [str(FAKE), "succeed"]})
    monkeypatch.setattr("gitflow_agents.agent_run.launch.get_adapter", lambda name: Refusing())
    result = cli.main("spawn", "builder", "--flow", "f", "--task", "t", "--quiet", cwd=repo)
    assert result.returncode == 2
    assert "refused at launch" in result.stderr
    data = json.loads((only_run(repo, "f") / "result.json").read_text())
    jsonschema.validate(data, RESULT_SCHEMAS["implement"])
    assert data["status"] == "failed"
    assert data["run"]["reason"].startswith("ConfigError")
    state = json.loads(cli.main("status", "--json", cwd=repo).stdout)[0]["state"]
    assert state == "failed"


def test_spawn_and_prompt_read_task_at_file_alike(repo: Path, cli: Cli) -> None:
    """``--task @file`` is the file's text for both: the agent gets what ``prompt`` shows."""
    script = repo.parent / "copier"
    received = repo.parent / "received.md"
    script.write_text(
        "#!/usr/bin/env python3\nimport os, pathlib, shutil, sys\n"
        f"shutil.copyfile(sys.argv[1], {str(received)!r})\n"
        "d = pathlib.Path(os.environ['GITFLOW_AGENTS_AGENT_DIR'])\n"
        "(d / 'report.md').write_text('done\\n')\n"
        "os.rename(d / 'report.md', d / 'report.complete.md')\n"
    )
    script.chmod(0o755)
    setup_project(repo, {"builder": [str(script), "{system_prompt_file}"]})
    task = repo.parent / "task.md"
    task.write_text("Paint the fence green.\n")
    args = ("--flow", "f", "--task", f"@{task}")
    spawned = cli.main("spawn", "builder", *args, "--quiet", cwd=repo)
    assert spawned.returncode == 0, spawned.stdout + spawned.stderr
    shown = cli.main("prompt", "--agent", "builder", *args, cwd=repo)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.endswith("## Your Assignment\n\nPaint the fence green.\n")
    assert received.read_text() == shown.stdout


def test_spawn_of_a_missing_cli_is_one_line_naming_what_installs_it(
    repo: Path, tmp_path: Path
) -> None:
    """No 'running (pid None)', no '[Errno 2]': one line, exit 3, and nothing started."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    (repo / ".flow").mkdir()
    (repo / ".flow/base.yaml").write_text(
        'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'
        "agents:\n  builder:\n    adapter: claude\n"
        f"    options:\n      env: {{PATH: {json.dumps(str(empty))}}}\n"
    )
    result = run_cli("spawn", "builder", "--flow", "f", "--task", "t", cwd=repo)
    assert result.returncode == 3
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "the claude CLI is not installed (no 'claude' on PATH)" in line
    assert "`npm install -g @anthropic-ai/claude-code`" in line
    assert "agents.builder `adapter: command`" in line
    assert not (repo / "flows").exists()  # nothing was started, so no run to list


def test_a_missing_program_found_only_at_launch_is_a_recorded_failure(repo: Path, cli: Cli) -> None:
    """A relative command is resolved in the agent's work tree at launch: still one clear
    error (exit 3), and the run that could not start is recorded as failed."""
    setup_project(repo, {"builder": ["./bin/no-such-agent", "{task}"]})
    result = cli.main("spawn", "builder", "--flow", "f", "--task", "t", "--quiet", cwd=repo)
    assert result.returncode == 3
    assert "cannot start './bin/no-such-agent'" in result.stderr
    assert "agents.builder.command" in result.stderr
    assert "pid None" not in result.stderr + result.stdout
    data = json.loads((only_run(repo, "f") / "result.json").read_text())
    assert data["status"] == "failed"
    assert data["run"]["reason"].startswith("AgentNotInstalled")


def test_a_script_whose_interpreter_is_missing_names_it_at_launch(repo: Path, cli: Cli) -> None:
    """``./agent.sh`` is there; its ``#!`` interpreter is not: one line naming the interpreter
    (exit 3), not "[Errno 2] No such file or directory: './agent.sh'"."""
    setup_project(repo, {"sh": ["./agent.sh"]})
    (repo / "agent.sh").write_text("#!/nonexistent/pyhton3\nprint(1)\n")
    (repo / "agent.sh").chmod(0o755)
    result = cli.main("spawn", "sh", "--flow", "f", "--task", "t", "--quiet", cwd=repo)
    assert result.returncode == 3
    (line,) = result.stderr.splitlines()
    assert line == (
        "gitflow-agents: error: agent 'sh': cannot start './agent.sh': its #! interpreter "
        "'/nonexistent/pyhton3' does not exist or cannot run; check agents.sh.command"
    )


def test_a_script_whose_env_interpreter_is_not_on_path_starts_nothing(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """``#!/usr/bin/env NAME`` with no NAME on the agent's PATH: refused before anything starts."""
    script = tmp_path / "agent"
    script.write_text("#!/usr/bin/env pyhton3-nowhere\nprint(1)\n")
    script.chmod(0o755)
    setup_project(repo, {"sh": [str(script)]})
    result = cli.main("spawn", "sh", "--flow", "f", "--task", "t", "--quiet", cwd=repo)
    assert result.returncode == 3
    (line,) = result.stderr.splitlines()
    assert f"cannot start '{script}': its #! interpreter 'pyhton3-nowhere' " in line
    assert "(#!/usr/bin/env pyhton3-nowhere) is not on PATH; check agents.sh.command" in line
    assert not (repo / "flows").exists()


def test_each_cli_adapter_names_the_package_that_installs_it() -> None:
    """The install hint names the package the e2e suite pins (tests/e2e/agents.lock)."""
    from gitflow_agents.agents import ADAPTERS

    lock = (ROOT / "tests/e2e/agents.lock").read_text(encoding="utf-8")
    pinned = {
        fields[0]: fields
        for fields in (line.split() for line in lock.splitlines())
        if fields and not fields[0].startswith("#")
    }
    assert set(pinned) == set(ADAPTERS) - {"command", "patch"}  # no CLI to install
    for name, (_, registry, package, _version, program) in pinned.items():
        adapter = ADAPTERS[name]
        assert adapter.cli.program == program
        tool = {"npm": "npm install -g", "pip": "pipx install"}[registry]
        assert adapter.cli.install == f"{tool} {package}"
    assert ADAPTERS["command"].cli.install == "" and ADAPTERS["patch"].cli.install == ""
