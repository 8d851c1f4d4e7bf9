"""The control channel (issue 26, item 1): ``send`` and ``cancel`` from a second process reach an
agent a running ``spawn`` supervises, through the 0600 socket in its run folder; a CLI that
cannot take input mid-run gets the message queued; a socket left by ``kill -9`` is stale.

The agents are fakes: ``tests/fakes/fake_live_claude`` through the real claude adapter (it
takes stream-json messages on stdin) and ``fake_agent`` as a ``command`` agent."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.agents.base import LiveInput
from gitflow_agents.agents.claude import ends_turn, took_message, user_line
from gitflow_agents.runs import control
from gitflow_agents.runs.events import EventHub, JsonlChannel, MemoryChannel
from gitflow_agents.runs.lost import kill_recorded_tree
from gitflow_agents.supervisor.stdin import AgentSession
from tests.conftest import Cli, wait_until
from tests.helpers import control as live
from tests.helpers.control import listening_run, start_spawn
from tests.helpers.secrets import GH_TOKEN


@pytest.fixture
def project(repo: Path) -> Path:
    return live.write_project(repo)


@pytest.fixture
def spawned(project: Path) -> Iterator[list[subprocess.Popen[str]]]:
    with live.spawned() as procs:
        yield procs


def events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def test_send_reaches_a_running_agent_and_its_answer_is_recorded(
    project: Path, spawned: list[subprocess.Popen[str]], cli: Cli
) -> None:
    proc = start_spawn(project, "talker")
    spawned.append(proc)
    run = listening_run(project, proc)
    sock = run / control.SOCKET
    assert stat.S_ISSOCK(sock.lstat().st_mode) and stat.S_IMODE(sock.lstat().st_mode) == 0o600
    first = cli.main("send", run.name, "blue, not red", cwd=project)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"delivered to run {run.name} (talker)")
    done = cli.main("send", run.name[:12], "now finish", "--json", cwd=project)  # a prefix too
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)  # --json: what happened, as JSON
    assert said["runId"] == run.name and said["delivery"] == "now" and "delivered" in said["said"]
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    heard = (project / "flows" / "f" / "agents" / "talker" / "heard.txt").read_text()
    assert heard.splitlines() == ["blue, not red", "now finish"]
    seen = events(run)
    sent = [e["data"] for e in seen if e["type"] == "session:message"]
    assert [m["content"] for m in sent] == ["blue, not red", "now finish"]
    assert all(m["delivery"] == "now" for m in sent)
    log = (run / "worker.log").read_text()  # every answer, in the output
    assert "heard: blue, not red" in log and "heard: now finish" in log
    said = "".join(str(e["data"].get("tail", "")) for e in seen if e["type"] == "agent:output")
    assert "done: now finish" in said  # the events' tail of the output has the last answer
    record = json.loads((run / "result.json").read_text())
    assert record["status"] == "succeeded" and record["run"]["sessionId"] == "sess-live"
    assert not sock.exists()  # removed at the end, with no leftover private folder
    assert not list(run.glob(".control-*"))
    again = cli.main("send", run.name, "more", cwd=project)  # ended: its session is continued
    assert again.returncode == 0, again.stderr
    assert "delivered" not in again.stdout and "resumed: more" in again.stdout


def test_reply_to_a_running_agent_is_recorded_as_a_reply(
    project: Path, spawned: list[subprocess.Popen[str]], cli: Cli
) -> None:
    """``reply`` is ``send``'s alias that records ``session:reply``, mid-run as between turns."""
    proc = start_spawn(project, "talker")
    spawned.append(proc)
    run = listening_run(project, proc)
    said = cli.main("reply", run.name, "now finish", cwd=project)
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith(f"delivered to run {run.name} (talker)")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    kinds = [e["type"] for e in events(run) if e["type"].startswith("session:")]
    assert kinds == ["session:reply"]


def test_send_to_an_agent_that_cannot_take_input_is_queued_and_says_so(
    project: Path, spawned: list[subprocess.Popen[str]], cli: Cli
) -> None:
    proc = start_spawn(project, "coder")  # Codex: no input mid-run, but it resumes a session
    spawned.append(proc)
    run = listening_run(project, proc)
    sent = cli.main("send", run.name, f"the token is {GH_TOKEN}", cwd=project)
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.startswith("queued: codex cannot take input mid-run; it is sent with")
    [queued] = control.queued_messages(run)
    assert queued[1] == f"the token is {GH_TOKEN}"  # kept as written: it goes to the agent
    canceled = cli.main("cancel", run.name, cwd=project)
    assert canceled.returncode == 0 and "canceled run" in canceled.stdout, canceled.stderr
    proc.communicate(timeout=30)
    assert json.loads((run / "result.json").read_text())["status"] == "canceled"
    [event] = [e["data"] for e in events(run) if e["type"] == "session:message"]
    assert event["delivery"] == "queued" and GH_TOKEN not in event["content"]  # masked
    assert json.loads((run / "status.json").read_text())["reason"] == control.CANCELED, (
        canceled.stdout + proc.communicate()[1]
    )
    assert not run.joinpath("cancel").exists()  # asked through the channel, not the file
    again = cli.main("cancel", run.name, cwd=project)  # a second cancel: nothing to do
    assert again.returncode == 0 and "already ended: canceled" in again.stdout


def test_a_message_that_could_never_reach_its_agent_is_refused(
    project: Path, spawned: list[subprocess.Popen[str]], cli: Cli
) -> None:
    proc = start_spawn(project, "plain")  # a command: no input mid-run, no session to resume
    spawned.append(proc)
    run = listening_run(project, proc)
    sent = cli.main("send", run.name, "hello?", cwd=project)
    assert sent.returncode == 2
    assert "command cannot take input mid-run, and the command adapter cannot resume" in sent.stderr
    assert "nothing was sent" in sent.stderr and not control.queued_messages(run)
    assert cli.main("cancel", run.name, cwd=project).returncode == 0


def test_a_socket_left_by_kill_9_is_stale(
    project: Path, spawned: list[subprocess.Popen[str]], cli: Cli
) -> None:
    """The orchestrator is killed; its agent (``plain``: silent, so no broken pipe ends it)
    and its socket stay. ``send`` says the run was lost and its processes run; ``cancel``
    kills them."""
    proc = start_spawn(project, "plain")
    spawned.append(proc)
    run = listening_run(project, proc)
    status = json.loads((run / "status.json").read_text())
    while not status.get("pid"):  # written as null before the agent starts
        time.sleep(0.02)
        status = json.loads((run / "status.json").read_text())
    os.kill(proc.pid, signal.SIGKILL)  # the orchestrator dies; its agent and socket stay
    proc.communicate()
    try:
        assert (run / control.SOCKET).exists()
        assert control.request(run / control.SOCKET, {"op": "ping"}) is None  # nobody answers
        sent = cli.main("send", run.name, "hello?", cwd=project)
        assert sent.returncode == 2 and f"run {run.name} was lost" in sent.stderr  # refused
        # the agent among them (a git call its supervisor had started when it was killed may
        # still be ending: it carries the run's marker too, and is listed while it lives)
        listed = re.search(r"its processes still run \(pids ([\d, ]+)\)", sent.stderr)
        assert listed is not None and str(status["pid"]) in listed[1].split(", "), sent.stderr
        assert f"end it with `gitflow-agents cancel {run.name}`" in sent.stderr
        canceled = cli.main("cancel", run.name, "--wait", "0.5", cwd=project)
        assert canceled.returncode == 0, canceled.stderr
        assert canceled.stdout.strip() == f"canceled run {run.name} (killed its process tree)"
    finally:  # a failed test leaves no agent behind
        kill_recorded_tree(status, grace=0.2)
    assert json.loads((run / "status.json").read_text())["state"] == "canceled"
    # a new listener on the same path replaces the stale socket
    hub = control.listening(EventHub([MemoryChannel()]))
    assert hub.endpoint is not None
    stop = hub.endpoint.listen(run.name, run)
    try:
        answer = control.request(run / control.SOCKET, {"op": "ping", "runId": run.name})
        assert answer is not None and answer["ok"] and answer["pid"] == os.getpid()
    finally:
        stop()
    assert not (run / control.SOCKET).exists()


def test_a_lost_run_with_nothing_left_alive_is_refused_by_send_and_ended_by_cancel(
    project: Path, cli: Cli
) -> None:
    """A chain's agent run whose orchestrator was killed and whose agent has ended since:
    ``send`` says it was lost (not "wait for it": it never finishes) and what to do; ``cancel``
    has nothing left to kill, says so, and ends it."""
    run = project / "flows" / "f" / "runs" / "01a2195c-a913-7cf7-97aa-93589fd183b4"
    run.mkdir(parents=True)
    status = {
        "state": "running",
        "flow": "f",
        "agent": "step-01-builder",
        "kind": "implement",
        "started": 1_700_000_000.0,
        "supervisor_pid": 2**22 + 1,  # above any pid: no such process
        "pid": 2**22 + 2,
        "create_time": 1_700_000_000.0,
        "tree_token": f"{run.name}:0123456789abcdef",
        "extra": {"chainRunID": "01a2195c-a913-7cf7-97aa-93589fd183b5"},
    }
    (run / "status.json").write_text(json.dumps(status))
    sent = cli.main("send", run.name, "are you there?", cwd=project)
    assert sent.returncode == 2 and "has not finished" not in sent.stderr
    assert f"run {run.name} was lost" in sent.stderr and "nothing of it still runs" in sent.stderr
    assert f"end it with `gitflow-agents cancel {run.name}` and run its step again" in sent.stderr
    assert not control.queued_messages(run)
    canceled = cli.main("cancel", run.name, cwd=project)
    assert canceled.returncode == 0, canceled.stderr
    assert canceled.stdout.strip() == (
        f"canceled run {run.name} (it was lost: neither supervisor nor agent alive, "
        "nothing left to kill)"
    )
    assert json.loads((run / "status.json").read_text())["state"] == "canceled"
    assert json.loads((run / "result.json").read_text())["run"]["lost"] is True
    again = cli.main("cancel", run.name, cwd=project)
    assert "already ended: canceled" in again.stdout


def test_cancel_of_a_run_that_ends_meanwhile_keeps_its_ending(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = project / "flows" / "f" / "runs" / "01a2195c-a913-7cf7-97aa-93589fd183b3"
    run.mkdir(parents=True)
    supervisor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    status = {"state": "running", "supervisor_pid": supervisor.pid, "agent": "talker"}
    (run / "status.json").write_text(json.dumps(status))

    def supervisor_ends_and_exits(path: Path, data: object, **_: object) -> dict[str, Any]:
        ended = {**status, "state": "canceled", "reason": control.CANCELED}
        (run / "status.json").write_text(json.dumps(ended))
        supervisor.kill()  # it records the ending, then its process is gone at once
        supervisor.wait()
        return {"ok": True}

    monkeypatch.setattr(control, "request", supervisor_ends_and_exits)
    said = control.cancel_run(project, run.name, flow_dir="flows")
    assert said == f"canceled run {run.name} (canceled)"
    assert json.loads((run / "status.json").read_text())["reason"] == control.CANCELED
    assert not (run / "result.json").exists()  # the supervisor's to write, not marked here


def test_cancel_gives_a_supervisor_that_does_not_answer_no_more_than_its_wait(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A supervisor alive but not answering (stopped with SIGSTOP, hung): its socket takes the
    connection and says nothing. `cancel --wait 0` read for the channel's 10 s TIMEOUT before
    its wait began; now it asks for no longer than the wait (CANCEL_ANSWER at least), then
    ends the run itself, with the reason the supervisor would have recorded."""
    run = project / "flows" / "f" / "runs" / "01a2195c-a913-7cf7-97aa-93589fd183b4"
    run.mkdir(parents=True)
    status = {"state": "running", "supervisor_pid": os.getpid(), "agent": "talker"}
    (run / "status.json").write_text(json.dumps(status))
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with monkeypatch.context() as here:  # a socket's path is at most 107 bytes
        here.chdir(run)
        silent.bind(control.SOCKET)
    silent.listen(1)  # the connection is taken into the backlog; nobody ever reads it
    asked: list[float] = []
    real = control.request

    def timed(path: Path, data: Any, *, timeout: float = control.TIMEOUT) -> Any:
        asked.append(timeout)
        return real(path, data, timeout=timeout)

    monkeypatch.setattr(control, "request", timed)
    try:
        said = control.cancel_run(project, run.name, flow_dir="flows", wait=0)
    finally:
        silent.close()
    assert asked == [control.CANCEL_ANSWER]
    assert said == (
        f"canceled run {run.name} (its supervisor did not answer, nothing left to kill)"
    )
    ended = json.loads((run / "status.json").read_text())
    assert (ended["state"], ended["reason"]) == ("canceled", control.CANCELED)
    assert (run / "cancel").read_text().endswith(f" {control.CANCELED}\n")
    record = json.loads((run / "result.json").read_text())["run"]
    assert record["reason"].startswith(control.CANCELED)


def test_a_live_socket_or_a_file_in_the_way_is_never_replaced(tmp_path: Path) -> None:
    path = tmp_path / control.SOCKET
    bound = control.bind_socket(path)
    bound.sock.listen(1)
    try:
        with pytest.raises(OSError, match="another process listens"):
            control.bind_socket(path)
    finally:
        bound.sock.close()
    path.unlink()
    path.write_text("not a socket")
    with pytest.raises(OSError, match="not a socket"):
        control.bind_socket(path)
    assert path.read_text() == "not a socket"


def test_a_socket_in_a_folder_deeper_than_a_socket_path_allows(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    hub = control.listening(EventHub([MemoryChannel()]))
    assert hub.endpoint is not None
    stop = hub.endpoint.listen("r1", deep)
    try:
        assert len(os.fsencode(deep / control.SOCKET)) > 108
        answer = control.request(deep / control.SOCKET, {"op": "ping", "runId": "r1"})
        assert answer is not None and answer["ok"]
        assert control.request(deep / control.SOCKET, {"op": "send", "runId": "r1", "text": "x"})
    finally:
        stop()


def test_requests_are_answered_one_line_each(tmp_path: Path) -> None:
    hub = control.listening(EventHub([MemoryChannel()]))
    assert hub.endpoint is not None
    stop = hub.endpoint.listen("r1", tmp_path)
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(tmp_path / control.SOCKET))
            stream = sock.makefile("rwb")
            for line in (b"not json\n", b'{"op": "dance"}\n', b'{"op": "send", "runId": "r2"}\n'):
                stream.write(line)
                stream.flush()
                assert json.loads(stream.readline())["ok"] is False
            stream.write(b'{"op": "cancel"}\n')  # no agent of r1 runs under this hub
            stream.flush()
            assert json.loads(stream.readline()) == {
                "ok": False,
                "error": "run r1 is not running here",
                "ended": True,
            }
    finally:
        stop()


def test_send_to_a_supervisor_that_does_not_answer_is_not_confirmed_and_never_queued(
    project: Path, cli: Cli
) -> None:
    """A supervisor alive but not answering (stopped, hung): its socket takes the connection
    and says nothing. `send` waited the channel's 10 s TIMEOUT, then queued the message as if
    nobody listened, though the supervisor reads it when it goes on (the agent got it twice:
    now, and again with its next turn). Now it waits `--wait` and says the message is not
    confirmed (exit 75), queues nothing, and the same `send` again asks with the same id."""
    run = project / "flows" / "f" / "runs" / "01a2195c-a913-7cf7-97aa-93589fd183b4"
    run.mkdir(parents=True)
    status = {"state": "running", "supervisor_pid": os.getpid(), "agent": "talker"}
    (run / "status.json").write_text(json.dumps(status))
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with pytest.MonkeyPatch.context() as here:  # a socket's path is at most 107 bytes
        here.chdir(run)
        silent.bind(control.SOCKET)
    silent.listen(4)  # the connections wait in the backlog; nobody reads them (yet)
    try:
        said = [cli.main("send", run.name, "use blue", "--wait", "0", cwd=project)]
        said.append(cli.main("send", run.name, "use blue", "--wait", "0", cwd=project))
        for sent in said:
            assert sent.returncode == 75, sent.stdout + sent.stderr
            assert f"send: run {run.name}: its orchestrator (pid {os.getpid()})" in sent.stderr
            assert "NOT CONFIRMED" in sent.stderr and "Run the same command again" in sent.stderr
            assert "Traceback" not in sent.stderr
        assert not control.queued_messages(run)  # nothing for a next turn: it may arrive now
        silent.settimeout(5)
        asked = []  # what the supervisor reads when it goes on: the same message, one id
        for _ in said:
            conn, _address = silent.accept()
            with conn, conn.makefile("rb") as stream:
                asked.append(json.loads(stream.readline()))
        assert [a["text"] for a in asked] == ["use blue", "use blue"]
        assert asked[0]["id"] == asked[1]["id"] and len(asked[0]["id"]) == 32
        [note] = (run / control.SENDING).iterdir()
        assert note.name == f"{asked[0]['id']}.json"
    finally:
        silent.close()


def test_a_message_sent_again_after_no_answer_reaches_a_busy_agent_once(project: Path) -> None:
    """The supervisor is busy (its live CLI is still starting: a send waits for it) while two
    sends of the same message give up waiting. When it goes on, the agent gets the message
    once: the second request has the first's id, and the supervisor answers a known id with
    its first answer. A third send learns it was delivered and sends nothing."""
    run = project / "flows" / "f" / "runs" / "01a2195c-a913-7cf7-97aa-93589fd183b4"
    run.mkdir(parents=True)
    status = {"state": "running", "supervisor_pid": os.getpid(), "agent": "talker"}
    (run / "status.json").write_text(json.dumps(status))
    hub = control.listening(EventHub([JsonlChannel(run / "events.jsonl")], run_id=run.name))
    session = AgentSession("claude", lambda kind, data: hub.emit(kind, data), frozenset())
    session.join(hub, run.name, run, live=True)  # listening; its CLI not started yet
    read, write = os.pipe()
    with os.fdopen(read, "rb") as stdin, os.fdopen(write, "wb") as pipe:
        try:
            for _ in range(2):
                with pytest.raises(control.Unconfirmed, match="NOT CONFIRMED"):
                    control.send_message(project, run.name, "use blue", flow_dir="flows", wait=0)
            session.start(LiveInput("the task", user_line, ends_turn, took_message), pipe)
            wait_until(lambda: control.recorded_delivery(run / "events.jsonl", _id(run)), 10)
            sent = control.send_message(project, run.name, "use blue", flow_dir="flows", wait=0)
            assert sent.delivery == "now"
            assert sent.line == (
                f"already delivered to run {run.name} by an earlier send of this message; "
                "not sent again"
            )
            assert not (run / control.SENDING).exists()  # no note left, nor its folder
        finally:
            session.leave()
        got = [json.loads(line)["message"]["content"] for line in stdin.read().splitlines()]
    assert got == ["the task", "use blue"]
    hub.close()
    recorded = [e["data"] for e in events(run) if e["type"] == "session:message"]
    assert [(m["content"], m["delivery"]) for m in recorded] == [("use blue", "now")]
    assert not control.queued_messages(run)


def _id(run: Path) -> str:
    """The id of the one unconfirmed send to ``run``."""
    [note] = (run / control.SENDING).iterdir()
    return note.stem


def test_a_send_again_after_its_run_ended_does_not_repeat_what_it_got(
    project: Path, spawned: list[subprocess.Popen[str]], cli: Cli
) -> None:
    """A send whose answer never came was read by the supervisor later, and the agent finished
    with it. The same `send` again, once the run has ended, continued its session with the
    message a second time (a new turn, paid for); now it says it was delivered."""
    proc = start_spawn(project, "talker")
    spawned.append(proc)
    run = listening_run(project, proc)
    message_id = "0123456789abcdef0123456789abcdef"
    note = run / control.SENDING / f"{message_id}.json"  # what the unconfirmed send left
    note.parent.mkdir()
    note.write_text(json.dumps({"id": message_id, "text": "now finish", "at": 0}))
    asked = {"op": "send", "runId": run.name, "text": "now finish", "id": message_id}
    # read late: its answer went nowhere (the orchestrator holds it until the live CLI has
    # started, which a loaded machine makes slower than the default idle timeout)
    answer = control.request(run / control.SOCKET, asked, timeout=120)
    assert answer == {"ok": True, "delivery": "now"}
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    runs = sorted(p.name for p in run.parent.iterdir())
    again = cli.main("send", run.name, "now finish", cwd=project)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == (
        f"already delivered to run {run.name} by an earlier send of this message; not sent again"
    )
    assert sorted(p.name for p in run.parent.iterdir()) == runs  # no new turn
    assert not note.exists()
    heard = (project / "flows" / "f" / "agents" / "talker" / "heard.txt").read_text()
    assert heard.splitlines() == ["now finish"]
