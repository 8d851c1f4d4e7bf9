"""The control channel of a running orchestrator: ``send`` and ``cancel`` reach a running agent.

An orchestrator (``run``, ``spawn``, ``flow``, ``send``, the Action's fixer) whose event hub has a
:class:`Control` listens, for each agent it runs, on a Unix socket in that agent's run folder,
``<flow_dir>/<flow>/runs/<runID>/control.sock`` (mode 0600, made in a private folder and moved
into place, so it is never open to others; removed when the agent's run ends). A request is one
JSON line, its answer one JSON line (docs/protocol.md, "Control channel")::

    {"op": "send", "runId": ID, "text": "..."}  -> {"ok": true, "delivery": "now"}
                                                 | {"ok": true, "delivery": "queued", "reason": "..."}
    {"op": "cancel", "runId": ID}               -> {"ok": true}
    {"op": "ping", "runId": ID}                 -> {"ok": true, "pid": N}
    anything else                               -> {"ok": false, "error": "..."}

The hub routes a request to the agent's supervisor (``runs/events.EventHub.send`` / ``abort``).
A message the agent's CLI cannot take mid-run is queued in the run folder (``inbox/``, one file a
message) and goes with the next turn of its session (``send`` once the run has ended).

The client side is two plain functions, :func:`send_message` and :func:`cancel_run`, used by the
``send`` and ``cancel`` commands (and any other front end). A socket nobody answers on (left by
an orchestrator killed with ``kill -9``) is stale: ignored by a client, replaced by a listener.

A message has an id (``"id"`` in the request, ``messageId`` in its ``session:message`` event):
a ``send`` whose answer does not come within its wait leaves a note of it in ``sending/`` (its
id and text), and the same ``send`` again reuses that id, so the orchestrator, which answers a
repeated id with its first answer, never gives the agent a message twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import socket
import socketserver
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from gitflow_agents.agents import ADAPTERS
from gitflow_agents.agents.base import cannot_resume
from gitflow_agents.base.errors import ExitCode, GitflowError, UsageError
from gitflow_agents.base.fsutil import write_json_atomic, write_text_atomic
from gitflow_agents.base.jsondata import JsonProblem, loads
from gitflow_agents.base.redact import redact_text
from gitflow_agents.config import load_flow_config
from gitflow_agents.config.values import FlowConfig
from gitflow_agents.runs import RunPaths, iter_runs, named_run, read_json
from gitflow_agents.runs.events import EventHub, NoSession
from gitflow_agents.runs.fields import mapping
from gitflow_agents.runs.liveness import supervisor_alive
from gitflow_agents.runs.lock import LiveStep, live_steps
from gitflow_agents.runs.lost import kill_recorded_tree, mark_ended, tree_pids
from gitflow_agents.runs.status import is_live

SOCKET = "control.sock"
INBOX = "inbox"
SENDING = "sending"  # the sends whose answer never came (their id and text), for a retry
MAX_REQUEST = 1024 * 1024  # bytes of one request line (a message is text a person typed)
TIMEOUT = 10.0  # seconds a connection may sit idle, either side
CANCELED = "canceled by gitflow-agents cancel"
CANCEL_ANSWER = 0.5
"""Seconds ``cancel`` and ``send`` give a supervisor to answer at least (``--wait 0`` too); with
a longer ``--wait``, the wait: a supervisor alive but not answering (stopped, hung) held the
cancel for ``TIMEOUT`` before the wait began, and a send for ``TIMEOUT``."""
SEND_WAIT = 5.0
"""Seconds ``send`` waits for a running agent's orchestrator to answer (``send --wait``)."""
_MESSAGE_ID = re.compile(r"[0-9a-f]{16,64}")
SESSION_EVENTS = ("session:message", "session:reply")  # what a sent text is recorded as


class NotRunning(UsageError):
    """The run is not running (ended, or lost): ``send`` continues its session instead."""


class Unconfirmed(GitflowError):
    """``send``: the orchestrator took the message and gave no answer within the wait (exit
    75): it may act on it later; the same ``send`` again says what became of it, never giving
    the agent the message twice."""

    exit_code = ExitCode.NOT_CONFIRMED


# --- the server ---------------------------------------------------------------------------------


class Control:
    """An orchestrator's control channel (the hub's ``Endpoint``): one listening socket per
    running agent, each served by a thread of its own, until the agent's run ends."""

    def __init__(self, hub: EventHub) -> None:
        self.hub = hub
        hub.endpoint = self

    def listen(self, run_id: str, run_dir: Path) -> Callable[[], None]:
        """Listen on ``run_dir/control.sock`` for ``run_id``; returns the stop (the socket
        removed). A socket that cannot be made (a file in the way) leaves the run without
        a channel, said once on stderr: the run itself goes on."""
        try:
            server = _Server(bind_socket(run_dir / SOCKET), self.hub, run_id, run_dir)
        except OSError as exc:
            print(
                f"gitflow-agents: warning: no control channel for run {run_id}: {exc}",
                file=sys.stderr,
            )
            return lambda: None
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"control-{run_id[:8]}",
            daemon=True,
        )
        thread.start()

        def stop() -> None:
            server.remove()  # no new client from now on
            # the serving loop notices within its poll interval: not worth the agent's end
            # waiting for, so it is let go in the background
            threading.Thread(target=_close, args=(server,), daemon=True).start()

        return stop


def _close(server: _Server) -> None:
    server.shutdown()
    server.server_close()


def listening(hub: EventHub) -> EventHub:
    """``hub`` with a control channel (the orchestrator's agents reachable by ``send``/``cancel``)."""
    Control(hub)
    return hub


class Answered:
    """The sends a channel has answered, by message id: a repeat (a ``send`` run again after
    its answer did not come in time, or its first request read late) gets the first answer,
    and the agent gets the message once. One send at a time (a repeat waits for the first)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_id: dict[str, dict[str, Any]] = {}


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, bound: Bound, hub: EventHub, run_id: str, run_dir: Path) -> None:
        self.hub, self.run_id, self.run_dir, self.bound = hub, run_id, run_dir, bound
        self.answered = Answered()
        super().__init__(str(bound.path), _Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = bound.sock
        self.server_activate()

    def remove(self) -> None:
        """Unlink the socket file, if it is still this server's (not a later listener's)."""
        with contextlib.suppress(OSError):
            if os.lstat(self.bound.path).st_ino == self.bound.inode:
                self.bound.path.unlink()


class _Handler(socketserver.StreamRequestHandler):
    timeout = TIMEOUT
    server: _Server

    def handle(self) -> None:
        while True:
            try:
                line = self.rfile.readline(MAX_REQUEST + 1)
            except OSError:  # the client went quiet past the timeout
                return
            if not line:
                return
            if len(line) > MAX_REQUEST:
                self._answer({"ok": False, "error": f"request over {MAX_REQUEST} bytes"})
                return
            server = self.server
            self._answer(answer(server.hub, server.run_id, server.run_dir, line, server.answered))

    def _answer(self, data: Mapping[str, Any]) -> None:
        with contextlib.suppress(OSError):
            self.wfile.write(json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n")
            self.wfile.flush()


def answer(
    hub: EventHub, run_id: str, run_dir: Path, line: bytes, answered: Answered | None = None
) -> dict[str, Any]:
    """The answer to one request line, for the agent run ``run_id`` (in ``run_dir``); a send
    whose id ``answered`` knows gets its first answer again (``"again": true``), unsent."""
    try:
        request = loads(line.decode("utf-8", errors="replace"))
    except JsonProblem as exc:
        return {"ok": False, "error": f"not a JSON request: {exc}"}
    op, target = request.get("op"), request.get("runId", run_id)
    if target != run_id:
        return {"ok": False, "error": f"this socket is run {run_id}'s, not {target!r}'s"}
    try:
        if op == "ping":
            return {"ok": True, "runId": run_id, "pid": os.getpid()}
        if op == "cancel":
            hub.abort(run_id, CANCELED)
            return {"ok": True}
        if op == "send":
            text = request.get("text")
            if not isinstance(text, str) or not text.strip():
                return {"ok": False, "error": "send: 'text' must be a non-empty string"}
            event = request.get("event", "session:message")
            if event not in SESSION_EVENTS:
                return {"ok": False, "error": f"send: 'event' must be one of {SESSION_EVENTS}"}
            message_id = request.get("id")
            if message_id is not None and not (
                isinstance(message_id, str) and _MESSAGE_ID.fullmatch(message_id)
            ):
                return {"ok": False, "error": "send: 'id' must be 16 to 64 hex digits"}
            answered = answered or Answered()
            with answered.lock:
                if message_id in answered.by_id:
                    return {**answered.by_id[message_id], "again": True}
                got = _deliver(hub, run_id, run_dir, text, event, message_id)
                if message_id is not None and got.get("ok"):
                    answered.by_id[message_id] = got
                return got
    except NoSession:
        return {"ok": False, "error": f"run {run_id} is not running here", "ended": True}
    return {"ok": False, "error": f"unknown op {op!r} (send, cancel, ping)"}


def _deliver(
    hub: EventHub, run_id: str, run_dir: Path, text: str, event: str, message_id: str | None
) -> dict[str, Any]:
    """A send's answer: delivered now, else queued for the next turn, else refused."""
    why = hub.send(run_id, text, event, message_id)
    if why is None:
        return {"ok": True, "delivery": "now"}
    never = unreachable(read_json(RunPaths(run_dir).status) or {})
    if never is not None:
        return {"ok": False, "error": f"{why}, and {never}; nothing was sent"}
    queue_message(run_dir, text, message_id)
    data = {"content": redact_text(text), "delivery": "queued", "reason": why}
    if message_id is not None:
        data["messageId"] = message_id
    hub.emit(event, data, run_id=run_id)
    return {"ok": True, "delivery": "queued", "reason": why}


# --- the socket: made private, stale ones replaced --------------------------------------------


class Bound:
    """A listening-ready socket bound at ``path`` (its inode: whose file it is)."""

    def __init__(self, sock: socket.socket, path: Path, inode: int) -> None:
        self.sock, self.path, self.inode = sock, path, inode


def bind_socket(path: Path) -> Bound:
    """A Unix socket bound at ``path``, mode 0600 from the start: bound in a private (0700)
    folder beside it, then renamed into place. What is at ``path`` already: a socket nobody
    answers on (stale) is replaced; a live one is an OSError (another orchestrator has it);
    anything else (a file, a link) is an OSError too: it is not ours to remove."""
    with contextlib.suppress(FileNotFoundError):
        mode = os.lstat(path).st_mode
        if not stat.S_ISSOCK(mode):
            raise OSError(f"{path} exists and is not a socket")
        if _connect(path, timeout=1.0) is not None:
            raise OSError(f"{path}: another process listens on it")
    private = path.parent / f".control-{secrets.token_hex(6)}"
    private.mkdir(mode=0o700)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with _short(private / "s") as address:
            sock.bind(address)
        (private / "s").chmod(0o600)
        (private / "s").replace(path)  # a stale socket at path goes in the same step
        return Bound(sock, path, os.lstat(path).st_ino)
    except BaseException:
        sock.close()
        raise
    finally:
        with contextlib.suppress(OSError):
            (private / "s").unlink()
        with contextlib.suppress(OSError):
            private.rmdir()


@contextlib.contextmanager
def _short(path: Path) -> Iterator[str]:
    """An address for ``path`` a socket call takes: a Unix socket path is at most 107 bytes,
    and a run folder in a deep checkout is longer; then the folder is reached through an open
    descriptor of it (``/proc/self/fd/N/name``, Linux)."""
    if len(os.fsencode(path)) < 100 or not Path("/proc/self/fd").is_dir():
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def _connect(path: Path, *, timeout: float) -> socket.socket | None:
    """A connection to the socket at ``path``; None when nobody listens (missing or stale)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with _short(path) as address:
            sock.connect(address)
    except OSError:
        sock.close()
        return None
    return sock


def request(
    path: Path, data: Mapping[str, Any], *, timeout: float = TIMEOUT
) -> dict[str, Any] | None:
    """Send one request to the socket at ``path`` and read its answer; None when nobody
    listens there (no socket, a stale one, or it closed without answering)."""
    return ask(path, data, timeout=timeout).answer


class Asked(NamedTuple):
    """What became of a request: ``reached`` a listener (which may act on it even when no
    ``answer`` came in time: one whose backlog is full, stopped, counts too), and its answer
    (None: none)."""

    reached: bool
    answer: dict[str, Any] | None


def ask(path: Path, data: Mapping[str, Any], *, timeout: float = TIMEOUT) -> Asked:
    """Send one request to the socket at ``path`` and read its answer within ``timeout``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    with sock:
        try:
            with _short(path) as address:
                sock.connect(address)
        except TimeoutError:  # a listener that accepts nobody (its backlog full): alive
            return Asked(True, None)
        except OSError:  # nobody listens: no socket, or a stale one
            return Asked(False, None)
        with sock.makefile("rwb") as stream:
            try:
                stream.write(json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n")
                stream.flush()
                line = stream.readline(MAX_REQUEST)
            except OSError:
                return Asked(True, None)
    try:
        return Asked(True, loads(line.decode("utf-8", errors="replace")) if line else None)
    except JsonProblem:
        return Asked(True, None)


# --- the queue: messages for the agent's next turn --------------------------------------------


def queue_message(run_dir: Path, text: str, message_id: str | None = None) -> Path:
    """Keep ``text`` for the next turn of the run's session: one file a message (written
    atomically, named in arrival order), so concurrent senders never share a file."""
    name = f"{time.time_ns():020d}-{os.getpid()}-{threading.get_ident()}.json"
    path = run_dir / INBOX / name
    data: dict[str, Any] = {"text": text, "queuedAt": time.time()}
    if message_id is not None:
        data["id"] = message_id
    write_json_atomic(path, data)
    return path


def queued_messages(run_dir: Path) -> list[tuple[Path, str]]:
    """The messages queued for the run's next turn, oldest first (a file that is not one of
    ours, or that an agent damaged, is skipped)."""
    folder = run_dir / INBOX
    if folder.is_symlink() or not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.json")):
        text = (read_json(path) or {}).get("text")
        if isinstance(text, str) and text:
            found.append((path, text))
    return found


def unreachable(status: Mapping[str, Any]) -> str | None:
    """Why a queued message could never reach the run's agent (its CLI cannot resume a session,
    so there is no next turn to send it with); None when it can."""
    adapter = mapping(status, "extra").get("adapter")
    if isinstance(adapter, str) and adapter in ADAPTERS and not ADAPTERS[adapter].cli.resumes:
        return cannot_resume(adapter)
    return None


# --- the client: what ``send`` and ``cancel`` call ----------------------------------------------


class Sent(NamedTuple):
    """What ``send_message`` did: the run, ``delivery`` (``now`` or ``queued``), the line to show."""

    run_id: str
    delivery: str
    line: str


def send_message(
    root: Path,
    run_id: str,
    text: str,
    *,
    flow_dir: str | None = None,
    event: str = "session:message",
    wait: float = SEND_WAIT,
) -> Sent:
    """Give ``text`` to the running agent run ``run_id`` (or a unique prefix): delivered now
    when its CLI takes input mid-run, else queued for its next turn (what happened: ``Sent``).
    Its orchestrator has ``wait`` seconds to answer (``CANCEL_ANSWER`` at least): Unconfirmed
    when it took the message and did not (busy, stopped, hung); the same call again reuses the
    message's id (``earlier_send``), so the agent never gets it twice. NotRunning when the run
    is not running (ended or lost: its session is continued instead, ``earlier_send`` first);
    UsageError when there is no such run."""
    paths, status = _live_run(root, run_id, flow_dir, "send")
    run_id = paths.run_dir.name
    earlier = earlier_send(paths.run_dir, text)
    if earlier is not None and earlier.delivery is not None:  # it arrived after all
        settled(earlier.note)
        return Sent(run_id, earlier.delivery, already_sent(run_id, earlier.delivery))
    if earlier is not None:
        message_id, note = earlier.message_id, earlier.note
    else:
        message_id = secrets.token_hex(16)
        note = paths.run_dir / SENDING / f"{message_id}.json"
        write_json_atomic(note, {"id": message_id, "text": text, "at": time.time()})
    asked = {"op": "send", "runId": run_id, "text": text, "event": event, "id": message_id}
    reached, got = ask(paths.run_dir / SOCKET, asked, timeout=max(wait, CANCEL_ANSWER))
    if got is not None and got.get("ok"):
        settled(note)
        delivery = "now" if got.get("delivery") == "now" else "queued"
        if got.get("again"):  # an earlier send of it was answered meanwhile
            return Sent(run_id, delivery, already_sent(run_id, delivery))
        if delivery == "now":
            agent = status.get("agent", "agent")
            return Sent(run_id, "now", f"delivered to run {run_id} ({agent}): it reads it now")
        return Sent(
            run_id, "queued", f"queued: {got.get('reason')}; {_NEXT_TURN.format(run_id=run_id)}"
        )
    if got is not None and not got.get("ended"):
        settled(note)
        raise UsageError(f"send: run {run_id}: {got.get('error')}")
    if reached and got is None:
        recorded = recorded_delivery(paths.events, message_id)
        if recorded is not None:  # recorded, though its answer did not come
            settled(note)
            return Sent(run_id, recorded, already_sent(run_id, recorded))
        pid = status.get("supervisor_pid", "?")
        raise Unconfirmed(
            f"send: run {run_id}: its orchestrator (pid {pid}) took the message but did not "
            f"answer within {max(wait, CANCEL_ANSWER):g}s (busy, stopped or hung): NOT CONFIRMED "
            "as delivered; it gets the message when it reads it, unless the run ends first. "
            "Run the same command again to learn what became of it: the agent never gets the "
            "message twice"
        )
    status = read_json(paths.status) or status  # it may have ended meanwhile
    if not is_live(status.get("state")) or not supervisor_alive(status):
        raise NotRunning(f"send: run {run_id} is not running")  # the note: for what continues
    never = unreachable(status)
    if never is not None:
        settled(note)
        raise UsageError(f"send: run {run_id} is not listening, and {never}; nothing was sent")
    queue_message(paths.run_dir, text, message_id)  # not started yet, or no channel
    settled(note)
    line = f"queued: run {run_id} is not listening; {_NEXT_TURN.format(run_id=run_id)}"
    return Sent(run_id, "queued", line)


_NEXT_TURN = "it is sent with the next turn of its session (`gitflow-agents send {run_id} ...`)"


def already_sent(run_id: str, delivery: str) -> str:
    """The line of a ``send`` whose message an earlier, unconfirmed send of it got through."""
    how = {"now": "delivered to", "queued": "queued for the next turn of"}.get(
        delivery, "sent with a later turn of the session of"
    )
    return f"already {how} run {run_id} by an earlier send of this message; not sent again"


def settled(note: Path) -> None:
    """The send ``note`` tells of is answered: the note goes (its folder too, once empty)."""
    note.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        note.parent.rmdir()


class Earlier(NamedTuple):
    """An earlier ``send`` of the same text to a run whose answer never came: its note (in
    ``sending/``), its message id, and how the run's events record it (``now``, ``queued``;
    None: not recorded, so not delivered so far)."""

    note: Path
    message_id: str
    delivery: str | None


def earlier_send(run_dir: Path, text: str) -> Earlier | None:
    """The unconfirmed earlier send of ``text`` to the run in ``run_dir``, if any."""
    folder = run_dir / SENDING
    if folder.is_symlink() or not folder.is_dir():
        return None
    for note in sorted(folder.glob("*.json")):
        data = read_json(note) or {}
        message_id = data.get("id")
        if (
            data.get("text") == text
            and isinstance(message_id, str)
            and _MESSAGE_ID.fullmatch(message_id)
            and note.stem == message_id
        ):
            return Earlier(
                note, message_id, recorded_delivery(RunPaths(run_dir).events, message_id)
            )
    return None


def recorded_delivery(events: Path, message_id: str) -> str | None:
    """How the run's events record the message ``message_id`` (``now``, ``queued``), if they do."""
    needle = message_id.encode("ascii")
    try:
        with events.open("rb") as handle:
            for line in handle:
                if needle not in line:
                    continue
                with contextlib.suppress(JsonProblem):
                    event = loads(line.decode("utf-8", errors="replace"))
                    data = event.get("data")
                    if (
                        event.get("type") in SESSION_EVENTS
                        and isinstance(data, dict)
                        and data.get("messageId") == message_id
                        and data.get("delivery") in ("now", "queued")
                    ):
                        return str(data["delivery"])
    except OSError:
        return None
    return None


def queued_ids(run_dir: Path) -> set[str]:
    """The message ids of the messages queued for the run's next turn."""
    folder = run_dir / INBOX
    if folder.is_symlink() or not folder.is_dir():
        return set()
    found = set()
    for path in folder.glob("*.json"):
        message_id = (read_json(path) or {}).get("id")
        if isinstance(message_id, str):
            found.add(message_id)
    return found


def cancel_run(
    root: Path,
    run_id: str,
    *,
    flow_dir: str | None = None,
    wait: float = 5.0,
    config: FlowConfig | None = None,
) -> str:
    """Stop the agent run ``run_id`` (or a unique prefix): its tree only, the run ends
    canceled. Through its orchestrator's control channel, else the file ``<run dir>/cancel``
    a supervisor watches; when no supervisor ends it within ``wait`` seconds (or none is
    alive), its recorded tree is killed here and the run marked canceled (what it spent
    priced with ``config``'s prices: ``lost.mark_ended``). Returns the line to show (which says
    so when nothing of the tree was left to kill); UsageError when there is no such run. A
    step run in progress (the id a second ``run`` of its step is refused with) is canceled
    through its agents: :func:`cancel_step_run`."""
    if flow_dir is None:
        flow_dir = load_flow_config(root).flow_dir
    step = next((s for s in live_steps(root, flow_dir) if s.names(run_id)), None)
    if step is not None:
        return cancel_step_run(root, step, flow_dir=flow_dir, wait=wait, config=config)
    paths = _find(root, run_id, flow_dir, "cancel")
    status = read_json(paths.status) or {}
    if status.get("state") is not None and not is_live(status.get("state")):
        return f"run {paths.run_dir.name} already ended: {status.get('state')}"
    if not paths.status.exists():  # no agent's run: a step run's folder (its agents have theirs)
        return _not_an_agent_run(paths)
    deadline = time.monotonic() + wait
    asked = {"op": "cancel", "runId": paths.run_dir.name}
    answer = min(TIMEOUT, max(wait, CANCEL_ANSWER))
    got = request(paths.run_dir / SOCKET, asked, timeout=answer)
    if got is None or not got.get("ok"):  # no channel: the file the supervisor watches
        write_text_atomic(paths.cancel, f"{time.time():.3f} {CANCELED}\n")
    while True:
        # Read again: what the supervisor recorded after we first looked (its ending, or the
        # agent's pid or tree marker when it died right after starting the agent) counts.
        status = read_json(paths.status) or status
        if not is_live(status.get("state")):  # it ended (a supervisor may be gone already)
            return f"canceled run {paths.run_dir.name} ({status.get('state')})"
        if time.monotonic() >= deadline or not supervisor_alive(status):
            break
        time.sleep(0.05)
    found = tree_pids(status)  # what there is to kill: a lost run's agent may have ended too
    left = kill_recorded_tree(status)
    mark_ended(paths, status, CANCELED, config)  # what the supervisor records it with too
    if found or left:
        note = f"; processes left: {list(left)}" if left else ""
        return f"canceled run {paths.run_dir.name} (killed its process tree{note})"
    why = (
        "its supervisor did not answer"
        if supervisor_alive(status)
        else "it was lost: neither supervisor nor agent alive"
    )
    return f"canceled run {paths.run_dir.name} ({why}, nothing left to kill)"


def cancel_step_run(
    root: Path, step: LiveStep, *, flow_dir: str, wait: float, config: FlowConfig | None
) -> str:
    """Cancel every agent the step run ``step`` runs now, each as ``cancel`` of its own id
    does; the step then ends ``canceled`` (exit 130), its branch and work tree kept, as after
    canceling one of its agents (docs/chains.md, "Canceling one agent"). Between two agents
    (its work tree set up, a merge) it waits up to ``wait`` seconds for the next to start;
    UsageError when none does."""
    run_id = step.holder.run_id
    deadline = time.monotonic() + wait
    while not (agents := _agents_of(root, flow_dir, step)):
        if time.monotonic() >= deadline:
            raise UsageError(
                f"cancel: step run {run_id} (step {step.step} of {step.flow}) has no agent "
                "running right now (between two agents: setting up its work tree, merging); "
                "run the same command again in a moment, or stop its `run` with Ctrl-C"
            )
        if not any(s.holder == step.holder for s in live_steps(root, flow_dir)):
            return f"run {run_id} already ended"
        time.sleep(0.05)
    done = [
        cancel_run(root, agent, flow_dir=flow_dir, wait=wait, config=config) for agent in agents
    ]
    return (
        f"canceled step run {run_id} (step {step.step} of {step.flow}): "
        + "; ".join(done)
        + "; the step ends canceled"
    )


def _agents_of(root: Path, flow_dir: str, step: LiveStep) -> list[str]:
    """The ids of the agent runs of the step run ``step`` that run now."""
    found = []
    for paths in iter_runs(root, flow_dir, step.flow):
        status = read_json(paths.status) or {}
        extra = mapping(status, "extra")
        if is_live(status.get("state")) and extra.get("chainRunID") == step.holder.run_id:
            found.append(paths.run_dir.name)
    return found


def _not_an_agent_run(paths: RunPaths) -> str:
    """What ``cancel`` says of a run folder without an agent's ``status.json``: a step run's,
    ended (its outcome) or still running (UsageError: cancel one of its agents, or its ``run``)."""
    result = read_json(paths.result) or {}
    chain = result.get("chain")
    outcome = chain.get("outcome") if isinstance(chain, dict) else result.get("status")
    if outcome is not None:
        return f"run {paths.run_dir.name} already ended: {outcome}"
    raise UsageError(
        f"cancel: run {paths.run_dir.name} is not an agent's run (a step run's): cancel one of "
        "its agents (`gitflow-agents status` lists them), or stop its `run` with Ctrl-C"
    )


def _find(root: Path, run_id: str, flow_dir: str | None, command: str) -> RunPaths:
    if flow_dir is None:
        flow_dir = load_flow_config(root).flow_dir
    return named_run(root, flow_dir, run_id, command)


def _live_run(
    root: Path, run_id: str, flow_dir: str | None, command: str
) -> tuple[RunPaths, dict[str, Any]]:
    paths = _find(root, run_id, flow_dir, command)
    status = read_json(paths.status) or {}
    if not is_live(status.get("state")):
        raise NotRunning(f"{command}: run {paths.run_dir.name} is not running")
    return paths, status
