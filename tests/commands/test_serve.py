"""``gitflow-agents serve`` as a user starts it: the address it prints, Ctrl-C, a taken port, a
second start, and ``--help`` that does not load the server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.slow


def _start(repo: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    """``serve --no-open`` started in ``repo``; the address it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", "serve", "--no-open", *args],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("gitflow-agents serve: http://127.0.0.1:"), line
    return proc, line.split(": ", 1)[1].strip()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _interrupt(proc: subprocess.Popen[str]) -> tuple[int, str]:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    return proc.returncode, err


def test_serve_prints_its_address_with_the_token_and_stops_on_ctrl_c(repo: Path) -> None:
    proc, url = _start(repo)
    try:
        assert _status(url) == 200
        assert _status(url.split("?")[0]) == 403
    finally:
        code, err = _interrupt(proc)
    assert code == 130
    assert "Traceback" not in err and "interrupted" in err


def test_a_second_start_has_a_new_token_and_may_take_the_same_port(repo: Path) -> None:
    first, url = _start(repo)
    _interrupt(first)
    port = url.split(":")[2].split("/")[0]
    second, again = _start(repo, "--port", port)
    try:
        assert again.split(":")[2].split("/")[0] == port
        assert again != url
        assert _status(url) == 403  # the first start's token opens nothing now
        assert _status(again) == 200
    finally:
        _interrupt(second)


def test_a_taken_port_is_one_line_and_exit_2(repo: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("serve", "--no-open", "--port", str(port), cwd=repo)
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"gitflow-agents: error: serve: cannot listen on 127.0.0.1:{port}"
    )
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_port_out_of_range_is_refused(repo: Path) -> None:
    result = run_cli("serve", "--no-open", "--port", "70000", cwd=repo)
    assert (
        result.returncode == 2 and "--port: must be a whole number from 0 to 65535" in result.stderr
    )


def test_help_does_not_load_the_server() -> None:
    code = (
        "import sys; from gitflow_agents import cli; cli.build_parser(['--help']); "
        "cli.build_parser(['serve']); "
        "print(sorted(m for m in sys.modules if m.startswith('gitflow_agents.serve') "
        "or m in ('http.server', 'jinja2', 'webbrowser')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.stdout.strip() == "[]"
