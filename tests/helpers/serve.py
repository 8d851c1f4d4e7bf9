"""``gitflow-agents serve`` in a test: the server in a thread of this process (``serving``),
requests with the standard library (``request``), the live stream read line by line
(``Stream``), and run records written by hand (``write_run``) for pages that must show them."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from gitflow_agents.plan import SpecPlanConfig
from gitflow_agents.serve.server import Server, make_server, stop


@dataclass(frozen=True)
class Served:
    server: Server
    port: int
    token: str

    def target(self, where: str = "/", /, **params: str) -> str:
        """``where`` with ``params`` and the token in its query."""
        return f"{where}?{urlencode({**params, 'token': self.token})}"

    def url(self, where: str = "/", /, **params: str) -> str:
        return f"http://127.0.0.1:{self.port}{self.target(where, **params)}"


@contextmanager
def serving(
    root: Path, flow_dir: str = "flows", *, port: int = 0, token: str | None = None
) -> Iterator[Served]:
    """A server in a thread (on ``port`` with ``token``: a restart of an earlier one)."""
    server = make_server(root, flow_dir, SpecPlanConfig(), port, token)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield Served(server, server.app.port, server.app.token)
    finally:
        stop(server)
        thread.join(10)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    body: str


def request(
    served: Served,
    target: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    form: Mapping[str, str] | None = None,
) -> Answer:
    """``target`` (path and query) asked of the server; ``form`` is POSTed urlencoded."""
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
    body = urlencode(form).encode() if form is not None else None
    sent = dict(headers or {})
    if body is not None:
        sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
    try:
        conn.request(method, target, body=body, headers=sent)
        response = conn.getresponse()
        return Answer(
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            response.read().decode("utf-8", "replace"),
        )
    finally:
        conn.close()


class Stream:
    """The live stream (``/events``), its server-sent events read as they come."""

    def __init__(self, served: Served, timeout: float = 10.0) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=timeout)
        self.conn.request("GET", f"/events?token={served.token}")
        self.response = self.conn.getresponse()

    def next_event(self, kind: str = "event") -> dict[str, Any]:
        """The data of the next server-sent event of ``kind`` (socket timeout: fails the test)."""
        name = ""
        while True:
            line = self.response.fp.readline().decode("utf-8").rstrip("\n")
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: ") and name == kind:
                return json.loads(line.removeprefix("data: "))  # type: ignore[no-any-return]

    def close(self) -> None:
        self.conn.close()


def write_run(
    root: Path,
    run_id: str,
    *,
    status: dict[str, Any] | None = None,
    result: dict[str, Any] | None = None,
    events: list[dict[str, Any]] = (),  # type: ignore[assignment]
    flow: str = "feature",
) -> Path:
    """A run folder under ``flows/<flow>/runs/`` with the records given."""
    run_dir = root / "flows" / flow / "runs" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    if status is not None:
        (run_dir / "status.json").write_text(json.dumps(status))
    if result is not None:
        (run_dir / "result.json").write_text(json.dumps(result))
    with (run_dir / "events.jsonl").open("a") as handle:
        for event in events:
            handle.write(json.dumps(event) + "\n")
    return run_dir


def event(kind: str, run_id: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "timestamp": "2026-01-01T00:00:00.000Z", "runId": run_id, "data": data}
