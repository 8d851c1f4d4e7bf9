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
import time
from pathlib import Path

import pytest

from gitflow_agents.runs import control

from ..conftest import ROOT, run_cli
from .conftest import FLOW
from .model_standin import Say, Shell, Standin, Write
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
