"""Reading an agent CLI's output, forgivingly: its stdout and stderr are untrusted, and nothing
here raises. JSON and JSON Lines (``json_object``, ``json_lines``), typed looks into what they
hold (``as_int``, ``as_str``...), and ``unparsed``: the ``AgentOutput`` of a CLI that printed
nothing understood. The adapters' ``parse_output`` and the usage meter (``meter.py``) use them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from gitflow_agents.agents.base import AgentOutput
from gitflow_agents.agents.limits import rate_limit

_O = TypeVar("_O")
_N = TypeVar("_N", int, float)


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object that is ``text``, or else the last line of it that is a JSON object,
    or else a pretty-printed object that ends it.

    CLIs print warnings before their JSON; a truncated or garbage output gives None.
    """
    stripped = text.strip()
    if not stripped:
        return None
    whole = _loads(stripped)
    if isinstance(whole, dict):
        return whole
    for line in reversed(stripped.splitlines()):  # from the end: a stream-json run's last
        line = line.strip()  # line is its result; the 8 MiB before it are not parsed
        found = _loads(line) if line.startswith("{") else None
        if isinstance(found, dict):
            return found
    return _trailing_object(stripped)


def _trailing_object(text: str, tries: int = 20) -> dict[str, Any] | None:
    """A pretty-printed JSON object that ends ``text``, from a line starting with ``{``
    (Gemini CLI prints its error so on stderr, after its log lines and a stack trace)."""
    at = len(text)
    for _ in range(tries):
        at = text.rfind("\n{", 0, at)
        if at < 0:
            return None
        found = _loads(text[at + 1 :])
        if isinstance(found, dict):
            return found
    return None


def stream_model(stdout: str, lines: int = 200) -> str | None:
    """The model a Claude-style stream-json output's last message names (an ``assistant``
    line's or a ``message_start`` event's ``message.model``), of its last ``lines`` lines: the
    model of a run whose ``result`` names none (no ``modelUsage``), as the meter reads it while
    the run streams. Only lines that mention a model are parsed, and only the message's own
    key counts (never a model a tool's input or output names)."""
    for line in last_lines(stdout, lines):
        line = line.strip()
        if not line.startswith("{") or '"model"' not in line:
            continue
        model = event_model(_loads(line))
        if model:
            return model
    return None


def event_model(event: Any) -> str | None:
    """The ``message.model`` of a Claude-style ``assistant`` line or ``message_start`` stream
    event (parsed); None for any other event, or one that names none."""
    event = as_dict(event)
    if event.get("type") == "stream_event":
        event = as_dict(event.get("event"))
        if event.get("type") != "message_start":
            return None
    elif event.get("type") != "assistant":
        return None
    return as_str(as_dict(event.get("message")).get("model"))


def last_lines(text: str, most: int) -> Iterator[str]:
    """The last ``most`` lines of ``text``, last first, without splitting the rest of it (a
    stream's kept tail is megabytes)."""
    stop = len(text)
    for _ in range(most):
        if stop < 0:
            return
        start = text.rfind("\n", 0, stop) + 1
        yield text[start:stop]
        stop = start - 1


def lines_with(text: str, needle: str) -> Iterator[str]:
    """The lines of ``text`` that contain ``needle``, in order, found by searching for it (a
    stream's kept tail is megabytes of lines that do not: never split)."""
    at = 0
    while (hit := text.find(needle, at)) >= 0:
        stop = text.find("\n", hit)
        stop = len(text) if stop < 0 else stop
        yield text[text.rfind("\n", 0, hit) + 1 : stop]
        at = stop + 1


def _loads(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def json_lines(text: str) -> Iterator[dict[str, Any]]:
    """Every line of ``text`` that is a JSON object; other lines are skipped."""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        obj = _loads(line)
        if isinstance(obj, dict):
            yield obj


MAX_COUNT = 10**15
"""More tokens than any run uses (and within what a record is read back with): a count an agent
prints beyond it, or below 0, is no count (unknown), never a figure shown or summed."""
MAX_USD = 1e9
"""The same for a cost: a negative one would let a budget's sum shrink, an absurd one fill a
terminal; either is unknown."""


def as_int(value: object) -> int | None:
    """A count an agent's output gives (tokens, a status code): a whole number from 0 to
    ``MAX_COUNT`` (a float is cut to its whole part); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value):
        value = int(value)
    if isinstance(value, int):
        return in_range(value)
    return None


def in_range(count: int | None) -> int | None:
    """``count`` when it is from 0 to ``MAX_COUNT``, else None (unknown)."""
    return count if count is not None and 0 <= count <= MAX_COUNT else None


def as_float(value: object) -> float | None:
    """A cost an agent's output gives: a finite number from 0 to ``MAX_USD``; None else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= MAX_USD:
        return float(value)
    return None


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def add_optional(total: int | None, value: int | None) -> int | None:
    """Sum that stays None until some value is known."""
    if value is None:
        return total
    return value if total is None else total + value


SESSION_FIGURES = ("input_tokens", "output_tokens", "cached_tokens", "cost_usd")
"""The usage fields a CLI that reports its session's totals (``Cli.session_totals``) counts up."""


def less(now: _N | None, then: _N | None) -> _N | None:
    """What a figure grew by since it was ``then``: ``now`` less ``then`` (never below 0) when
    both are known, else ``now`` (an earlier figure unknown takes nothing off)."""
    return now if now is None or then is None else max(now - then, 0)


def since(output: _O, before: AgentOutput) -> _O:
    """``output`` (a reading of a CLI whose figures are its session's so far) without what the
    session had used ``before`` this run, figure by figure (``less``)."""
    if not dataclasses.is_dataclass(output) or isinstance(output, type):
        return output
    fields = {name: less(getattr(output, name), getattr(before, name)) for name in SESSION_FIGURES}
    return dataclasses.replace(output, **fields)


def main_model(models: Mapping[str, Any], weight: str = "total") -> str | None:
    """The model that did most of a run: ``models`` maps each model name a CLI reports to its
    numbers; the one whose ``weight`` is largest (a CLI may use a small model for side tasks)."""
    best: str | None = None
    best_weight = -1.0
    for name, numbers in models.items():
        value = as_float(as_dict(numbers).get(weight))
        if isinstance(name, str) and name and (value or 0.0) > best_weight:
            best, best_weight = name, value or 0.0
    return best


def last_line(text: str, limit: int = 300) -> str | None:
    """The last non-empty line of ``text``, shortened: a one-line note for ``AgentOutput.error``."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return None


def unparsed(stdout: str, stderr: str, what: str) -> AgentOutput:
    """The output of a run whose CLI printed nothing we understand."""
    detail = last_line(stderr) or last_line(stdout)
    note = f"no {what} in the output" + (f"; last line: {detail}" if detail else "")
    # a CLI that gave up on a rate limit may say so only on stderr, in its own words
    return AgentOutput(error=note, rate_limit=rate_limit(stderr))
