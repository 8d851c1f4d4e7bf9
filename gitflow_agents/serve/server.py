"""The HTTP server of ``gitflow-agents serve``: the standard library's ``ThreadingHTTPServer``
on 127.0.0.1, pages rendered by Jinja (autoescape on), server-sent events for the live view
(docs/decisions.md, "A live view"; docs/serve.md).

Routes (each needs the token, ``security.py``): ``/`` the runs and plans, ``/run/<id>`` one
run, ``/plan?path=`` one plan, ``/events`` the live stream, ``/static/<file>`` the page's script
and style; ``POST /run/<id>/send`` and ``POST /run/<id>/cancel``.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jinja2

from gitflow_agents.base.resources import templates_dir
from gitflow_agents.plan import SpecPlanConfig
from gitflow_agents.runs import find_run
from gitflow_agents.serve import security, views
from gitflow_agents.serve.control import ACTIONS, MAX_MESSAGE, Notices, forward
from gitflow_agents.serve.stream import Follower

POLL_SECONDS = 0.2
"""How often the live stream looks for new events."""
KEEPALIVE_SECONDS = 15.0
MAX_FORM_BYTES = 64 * 1024
STATIC = {"serve.js": "text/javascript", "serve.css": "text/css"}
_RUN_PATH = re.compile(r"^/run/([0-9A-Za-z-]{8,64})(?:/(send|cancel))?$")


@dataclass
class App:
    """What every request of one server shares."""

    root: Path
    flow_dir: str
    token: str
    spec_plan: SpecPlanConfig
    port: int = 0
    notices: Notices = field(default_factory=Notices)
    stopping: threading.Event = field(default_factory=threading.Event)
    env: jinja2.Environment = field(init=False)

    def __post_init__(self) -> None:
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(templates_dir() / "serve"),
            autoescape=True,  # every text of a run is an agent's or a user's: escaped
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.globals["url"] = self.url

    def url(self, where: str, /, **params: object) -> str:
        """``where`` with the token (and ``params``) in its query."""
        query = {k: str(v) for k, v in params.items() if v is not None}
        return f"{where}?{urlencode({**query, 'token': self.token})}"

    def render(self, name: str, **context: Any) -> bytes:
        return self.env.get_template(name).render(token=self.token, **context).encode("utf-8")


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the URL holds the token, and the terminal is the user's."""

    @property
    def app(self) -> App:
        return self.server.app

    def _refuse(self, why: str, status: HTTPStatus = HTTPStatus.FORBIDDEN) -> None:
        self._send(status, f"{status.value} {status.phrase}: {why}\n".encode(), "text/plain")

    def _send(
        self, status: HTTPStatus, body: bytes, kind: str, headers: Mapping[str, str] = {}
    ) -> None:
        self.send_response(status)
        for name, value in {**security.HEADERS, **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _allowed(self, form: Mapping[str, str] | None = None) -> bool:
        """Host and token checked (403 sent when not); the query as parsed."""
        problem = security.host_problem(self.headers, self.app.port)
        if problem is not None:
            self._refuse(problem)
            return False
        given = self.query.get("token") or self.headers.get(security.TOKEN_HEADER)
        if form is not None:
            given = form.get("token") or self.headers.get(security.TOKEN_HEADER)
        if not security.token_ok(self.app.token, given):
            self._refuse("this address needs the token that `gitflow-agents serve` printed")
            return False
        return True

    @property
    def query(self) -> dict[str, str]:
        parsed = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
        return {key: values[-1] for key, values in parsed.items()}

    def do_GET(self) -> None:
        self._guarded(self._get)

    def do_POST(self) -> None:
        self._guarded(self._post)

    def _guarded(self, answer: Callable[[], None]) -> None:
        """``answer``; a bug in it is one line on the terminal and a 500, not a traceback."""
        try:
            answer()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:
            where = urlsplit(self.path).path
            print(
                f"gitflow-agents serve: error answering {self.command} {where}: {exc!r}",
                file=sys.stderr,
            )
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._refuse(
                    "the server failed; see its terminal", HTTPStatus.INTERNAL_SERVER_ERROR
                )

    def _get(self) -> None:
        if not self._allowed():
            return
        path = urlsplit(self.path).path
        if path == "/":
            self._page("index.html.j2", **self._index())
        elif path == "/events":
            self._events()
        elif path.startswith("/static/") and path.removeprefix("/static/") in STATIC:
            name = path.removeprefix("/static/")
            body = (templates_dir() / "serve" / name).read_bytes()
            self._send(HTTPStatus.OK, body, STATIC[name])
        elif path == "/plan":
            self._plan()
        elif (match := _RUN_PATH.match(path)) and match.group(2) is None:
            self._run(match.group(1))
        else:
            self._refuse("no such page", HTTPStatus.NOT_FOUND)

    def _post(self) -> None:
        form = self._form()
        if form is None or not self._allowed(form):
            return
        problem = security.cross_site_problem(self.headers, self.app.port)
        if problem is not None:
            self._refuse(problem)
            return
        match = _RUN_PATH.match(urlsplit(self.path).path)
        if match is None or match.group(2) not in ACTIONS:
            self._refuse("no such action", HTTPStatus.NOT_FOUND)
            return
        run_id, action = match.group(1), match.group(2)
        if find_run(self.app.root, self.app.flow_dir, run_id) is None:
            self._refuse(f"no run {run_id}", HTTPStatus.NOT_FOUND)
            return
        message = form.get("message", "").strip()
        if (action == "send" and not message) or len(message) > MAX_MESSAGE:
            self._refuse(
                f"send needs a message of 1 to {MAX_MESSAGE:,} characters", HTTPStatus.BAD_REQUEST
            )
            return
        forward(self.app.root, action, run_id, message, self.app.notices)
        self.send_response(HTTPStatus.SEE_OTHER)
        for name, value in security.HEADERS.items():
            self.send_header(name, value)
        self.send_header("Location", self.app.url(f"/run/{run_id}"))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _form(self) -> dict[str, str] | None:
        """The POSTed form (urlencoded, at most MAX_FORM_BYTES), or None after a refusal."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_FORM_BYTES:
            self._refuse("a form of at most 64 KiB", HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
            return None
        body = self.rfile.read(length).decode("utf-8", errors="replace")
        return {key: values[-1] for key, values in parse_qs(body, keep_blank_values=True).items()}

    def _page(self, template: str, **context: Any) -> None:
        self._send(HTTPStatus.OK, self.app.render(template, **context), "text/html")

    def _index(self) -> dict[str, Any]:
        rows, older = views.run_rows(self.app.root, self.app.flow_dir)
        plans = sorted({views.shown_plan(self.app.root, row.plan) for row in rows if row.plan})
        return {
            "rows": rows,
            "older": older,
            "plans": plans,
            "elapsed": views.elapsed_text,
            "now": time.time(),
        }

    def _run(self, run_id: str) -> None:
        detail = views.run_detail(self.app.root, self.app.flow_dir, run_id)
        if detail is None:
            self._refuse(f"no run {run_id}", HTTPStatus.NOT_FOUND)
            return
        notices = self.app.notices.of_run(detail.row.run_id)
        self._page("run.html.j2", run=detail, notices=notices, elapsed=views.elapsed_text)

    def _plan(self) -> None:
        shown = views.plan_view(
            self.app.root, self.app.flow_dir, self.query.get("path", ""), self.app.spec_plan
        )
        status = HTTPStatus.OK if not shown.problem else HTTPStatus.BAD_REQUEST
        self._send(status, self.app.render("plan.html.j2", plan=shown), "text/html")

    def _events(self) -> None:
        """Server-sent events until the client goes or the server stops: ``event`` for each
        line appended to an events.jsonl (``?from=end``: none of what live runs did before),
        ``notice`` for what send and cancel said."""
        follower = Follower(self.app.root, self.app.flow_dir)
        follower.start(replay=self.query.get("from") != "end")
        seen = self.app.notices.last
        self.send_response(HTTPStatus.OK)
        for name, value in security.HEADERS.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        quiet_since = time.monotonic()
        try:
            self.wfile.write(b"retry: 1000\n\n")
            while not self.app.stopping.is_set():
                chunks = [_sse("event", view) for view in follower.poll()]
                for notice in self.app.notices.since(seen):
                    seen = notice.seq
                    chunks.append(_sse("notice", notice.to_json()))
                if not chunks and time.monotonic() - quiet_since > KEEPALIVE_SECONDS:
                    chunks.append(b": keep-alive\n\n")
                if chunks:
                    self.wfile.write(b"".join(chunks))
                    self.wfile.flush()
                    quiet_since = time.monotonic()
                self.app.stopping.wait(POLL_SECONDS)
        except (BrokenPipeError, ConnectionResetError):
            return


def _sse(kind: str, data: Mapping[str, Any]) -> bytes:
    """One server-sent event: JSON on one line (json.dumps escapes newlines)."""
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    app: App


def make_server(
    root: Path, flow_dir: str, spec_plan: SpecPlanConfig, port: int = 0, token: str | None = None
) -> Server:
    """A server on 127.0.0.1:``port`` (0: a free one), not yet serving; OSError when the port
    is taken."""
    server = Server(("127.0.0.1", port), Handler)
    token = token or security.new_token()
    server.app = App(root, flow_dir, token, spec_plan, port=server.server_address[1])
    return server


def stop_streams(server: Server) -> None:
    """End the live streams and close the socket (after ``serve_forever`` returned)."""
    server.app.stopping.set()
    server.server_close()


def stop(server: Server) -> None:
    """End the server from another thread than the one in ``serve_forever``."""
    server.app.stopping.set()
    server.shutdown()
    server.server_close()
