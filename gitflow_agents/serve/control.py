"""Send and cancel from the page: forwarded to the product's own send and cancel, in the
background, their outcome shown on the page as a notice of the run.

:func:`control_argv` is the one place that says how: the ``send`` and ``cancel`` commands, which
reach a running agent through its orchestrator's control channel (``runs/control.py``): ``send``
delivers now or queues for its next turn (a finished agent's session is continued), ``cancel``
asks the run's supervisor, then kills the tree it recorded.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from gitflow_agents.base import proc
from gitflow_agents.base.errors import ExitCode
from gitflow_agents.base.redact import redact_text

ACTIONS = ("send", "cancel")
MAX_MESSAGE = 16_000
"""Characters of a message the page may send."""


def control_argv(action: str, run_id: str, message: str = "") -> list[str]:
    """The command that carries out ``action`` on ``run_id`` (docs/serve.md, "Send and cancel")."""
    if action == "send":
        return [sys.executable, "-m", "gitflow_agents", "send", "--quiet", "--", run_id, message]
    return [sys.executable, "-m", "gitflow_agents", "cancel", "--", run_id]


@dataclass(frozen=True)
class Notice:
    seq: int
    run: str
    at: float
    text: str

    def to_json(self) -> dict[str, object]:
        return {"seq": self.seq, "run": self.run, "at": self.at, "text": self.text}


@dataclass
class Notices:
    """What send and cancel said, per run, for the page (thread-safe; the newest 200 kept)."""

    items: list[Notice] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _seq: int = 0

    def add(self, run: str, text: str) -> Notice:
        with self._lock:
            self._seq += 1
            notice = Notice(self._seq, run, time.time(), redact_text(text))
            self.items = [*self.items[-199:], notice]
            return notice

    def since(self, seq: int) -> list[Notice]:
        with self._lock:
            return [n for n in self.items if n.seq > seq]

    def of_run(self, run: str) -> list[Notice]:
        with self._lock:
            return [n for n in self.items if n.run == run]

    @property
    def last(self) -> int:
        with self._lock:
            return self._seq


def _outcome(action: str, result: proc.Result) -> str:
    lines = [ln for ln in (result.stdout + "\n" + result.stderr).splitlines() if ln.strip()]
    said = lines[-1] if lines else "(no output)"
    verb = "sent" if action == "send" else "canceled"
    if result.returncode == 0:
        return f"{action}: {said}" if said != "(no output)" else f"{action}: {verb}"
    if result.returncode == ExitCode.NOT_CONFIRMED:  # taken, unanswered: not a refusal
        return f"{action} not confirmed (exit {result.returncode}): {said}"
    return f"{action} refused (exit {result.returncode}): {said}"


def forward(root: Path, action: str, run_id: str, message: str, notices: Notices) -> Notice:
    """Start ``action`` on ``run_id`` in the background; its outcome becomes a notice of the
    run. Returns the notice that says it started."""
    argv = control_argv(action, run_id, message)

    def work() -> None:
        try:
            result = proc.run(argv, cwd=root, check=False)
        except Exception as exc:  # shown on the page; the server goes on
            notices.add(run_id, f"{action} failed: {exc}")
            return
        notices.add(run_id, _outcome(action, result))

    started = notices.add(run_id, f"{action}: started" + (f": {message}" if message else ""))
    threading.Thread(target=work, name=f"serve-{action}", daemon=True).start()
    return started
