"""``send`` to a running real Claude Code (issue 26, item 1): ``gitflow-agents spawn`` listens on
its control channel, so Claude Code runs with ``--input-format stream-json``; a message sent from
a second process while the agent runs a tool reaches it, and the stand-in sees it in the next
request; the run then completes as usual (its stdin closed once the turn that took the message
ends)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gitflow_agents.chain import ChainResult, ChainSettings, Context, run_step
from gitflow_agents.config import load_flow_config
from gitflow_agents.plan import parse_plan
from gitflow_agents.runs import control, read_json
from gitflow_agents.runs.control import listening
from gitflow_agents.runs.events import EventHub, MemoryChannel

from ..conftest import ROOT, git, run_cli
from .conftest import FLOW
from .model_standin import Say, Shell, Standin, Write
from .projects import claude_project
from .test_e2e_chain import configure
from .test_e2e_rate_limits import _project

pytestmark = pytest.mark.e2e

MESSAGE = "Also: the colour is teal-4711."


def test_send_reaches_a_running_claude_code(tmp_path: Path, standin: Standin) -> None:
    root, env = _project(tmp_path, standin, {"builder": ""}, wait=3)
    report = root / "flows" / FLOW / "agents" / "builder" / "report.md"
    standin.load(
        [
            Shell("sleep 4"),  # the agent is busy with a tool when the message arrives
            Write(str(report), "# Done\n\nAdded nothing.\n"),
            Shell(f"mv {report} {report.with_name('report.complete.md')}"),
            Say("<SUMMARY>Done</SUMMARY>\n<STATUS>completed</STATUS>"),
        ]
    )
    argv = [sys.executable, "-m", "gitflow_agents", "spawn", "builder", "--flow", FLOW]
    proc = subprocess.Popen(
        [*argv, "--agent-name", "builder", "--task", "Do it.", "--quiet"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        runs = root / "flows" / FLOW / "runs"
        deadline, sock = time.monotonic() + 60, None
        while sock is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            sock = next(runs.glob(f"*/{control.SOCKET}"), None) if runs.is_dir() else None
            if sock is not None and not standin.main_requests():
                sock = None  # wait until the CLI has asked the model (it runs its tool)
        assert sock is not None, proc.communicate()
        sent = run_cli("send", sock.parent.name, MESSAGE, cwd=root, env=env)
        assert sent.returncode == 0, sent.stderr
        assert sent.stdout.startswith(f"delivered to run {sock.parent.name}")
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out + err
    first = standin.main_requests()[0]
    assert MESSAGE not in first.all_text()
    assert any(MESSAGE in r.all_text() for r in standin.main_requests()[1:])
    run = sock.parent
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    [message] = [e["data"] for e in events if e["type"] == "session:message"]
    assert message["content"] == MESSAGE and message["delivery"] == "now"
    record = json.loads((run / "result.json").read_text())
    assert record["status"] == "succeeded", record
    assert not sock.exists()


def test_cancel_of_one_chain_agent_from_a_second_terminal(tmp_path: Path, standin: Standin) -> None:
    """A chain's real Claude Code implementer, busy in a long tool call, is canceled by
    ``gitflow-agents cancel RUN`` from another process: its tree is stopped (the run ends long
    before the tool would), the chain records the agent ``canceled`` and the step ends
    ``canceled``, exit 130 (docs/chains.md, "Canceling one agent"); nothing is merged."""
    project = claude_project(tmp_path, standin)
    root = project.root
    configure(project, {"permission_mode": "bypassPermissions"})  # the long tool runs unasked
    config = load_flow_config(root)
    plan = parse_plan(root / "specs" / "greeting.md", config.spec_plan)
    hub = listening(EventHub([MemoryChannel()]))  # as `run` makes it
    busy = Shell("python3 -c 'import time; time.sleep(120)'")  # Claude blocks a bare sleep
    standin.load([busy, Say("<STATUS>completed</STATUS>")])
    settings = ChainSettings(stuck_timeout=300.0, timeout=300.0, kill_grace=2.0)
    env = {**project.env, "IS_SANDBOX": "1"}  # as root Claude bypasses permissions only so
    ctx = Context(root, config, plan, FLOW, settings, hub, env=env)
    done: list[ChainResult] = []
    worker = threading.Thread(target=lambda: done.append(run_step(ctx, 1)), daemon=True)
    started = time.monotonic()
    worker.start()
    try:
        runs = root / "flows" / FLOW / "runs"
        deadline, sock = time.monotonic() + 60, None
        while sock is None and time.monotonic() < deadline and worker.is_alive():
            time.sleep(0.1)
            sock = next(runs.glob(f"*/{control.SOCKET}"), None) if runs.is_dir() else None
            log = sock.parent / "worker.log" if sock is not None else None
            said = log.read_text(errors="replace") if log is not None and log.exists() else ""
            if "task_started" not in said:
                sock = None  # wait until the CLI runs its tool
        assert sock is not None, "the implementer never started its tool"
        canceled = run_cli("cancel", sock.parent.name, cwd=root, env=project.env)
        assert canceled.returncode == 0, canceled.stderr
        assert f"canceled run {sock.parent.name}" in canceled.stdout
        worker.join(90)
    finally:
        hub.close()
    assert not worker.is_alive() and done, "the chain did not end after the cancel"
    assert time.monotonic() - started < 100  # the tool's 120 s did not run out
    [result] = done
    assert result.outcome == "canceled" and result.exit_code == 130, result.reason
    record = read_json(result.result_path) if result.result_path else None
    assert record is not None
    [builder] = record["chain"]["agents"]
    assert builder["kind"] == "implement" and builder["status"] == "canceled"
    agent_record = read_json(sock.parent / "result.json")
    assert agent_record is not None and agent_record["status"] == "canceled"
    assert not sock.exists()
    assert git(root, "show", "main:specs/greeting.md").count("✅") == 0  # nothing landed
