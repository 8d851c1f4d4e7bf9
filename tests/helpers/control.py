"""A project whose agents take messages mid-run (``tests/fakes/fake_live_claude`` through the
real claude adapter), a ``spawn`` of one of them as a process of its own, and its run folder once
its control socket listens: what the control channel's tests and the page's send test share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gitflow_agents.runs import control
from tests.conftest import FAKES, ROOT, git

LIVE = FAKES / "fake_live_claude"


def agent(mode: str, adapter: str = "claude") -> str:
    return (
        f"    adapter: {adapter}\n    options:\n      executable: {json.dumps(str(LIVE))}\n"
        f'      extra_args: ["--fake", "{mode}"]\n'
    )


def write_project(repo: Path) -> Path:
    """``repo`` with a flow ``f`` of four agents: ``talker`` (takes messages mid-run and answers
    each), ``hanger`` (claude, hangs), ``coder`` (codex: no input mid-run) and ``plain`` (a
    command)."""
    hang = json.dumps([str(FAKES / "fake_agent"), "hang"])
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        "completion_workflow:\n"
        '  template: "Rename {report_file} to {success_file}."\n'
        "defaults:\n  stuck_timeout_secs: 30\n  max_wait_secs: 60\n"
        f"agents:\n  talker:\n{agent('listen')}  hanger:\n{agent('hang')}"
        f"  coder:\n{agent('hang', 'codex')}"
        f"  plain:\n    adapter: command\n    command: {hang}\n"
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "flow")
    return repo


def start_spawn(repo: Path, name: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "gitflow_agents", "spawn", name, "--flow", "f"]
    return subprocess.Popen(
        [*argv, "--task", "Talk to me.", "--quiet", "--kill-grace", "0.2"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@contextmanager
def spawned() -> Iterator[list[subprocess.Popen[str]]]:
    """A list to put started processes in; a failed test leaves none of them running."""
    procs: list[subprocess.Popen[str]] = []
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


def listening_run(repo: Path, proc: subprocess.Popen[str]) -> Path:
    """The run folder of ``proc``'s agent once its control socket is there."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = list((repo / "flows" / "f" / "runs").glob(f"*/{control.SOCKET}"))
        if found:
            return found[0].parent
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("no control socket within 30 s")
