"""Cards: the markdown task file a run works on, and what a run writes back into it.

- Frontmatter lifecycle: ``agent_flow=<flow>`` and ``agent_status=queued`` when the card lock is
  taken, ``running`` right before dispatch, then ``succeeded|failed|canceled``. ``agent_flow``
  stays until the next run overwrites it; implement runs persist ``branch`` on success.
- History: one dated line per event, in the fixed formats of docs/supervisor.md ("Cards"),
  under ``## History``.
- Checklist: only the acceptance-criteria boxes whose 0-based index is in ``checkedCriteria``
  are ticked; nothing is ever unticked.

Edits are textual (the rest of the file, comments, key order and line endings included, stays
byte for byte: LF, CRLF and lone-CR cards alike) and atomic (temp file + ``os.replace``, never
through a symlink that leads out of the repository: gitflow_agents/base/fsutil.py).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import date as Date
from pathlib import Path
from typing import Literal

from gitflow_agents.base.errors import GitflowError, InputError
from gitflow_agents.base.frontmatter import split_frontmatter
from gitflow_agents.base.fsutil import ReadRefused, read_limited, write_text_atomic
from gitflow_agents.runs.lock import LockInfo, hold
from gitflow_agents.runs.status import CARD_STATUSES as CARD_STATUSES
from gitflow_agents.runs.status import CardStatus as CardStatus
from gitflow_agents.runs.status import HistoryEvent as HistoryEvent

Flow = Literal["implement", "review", "research"]

_KEY_LINE = re.compile(r"^([A-Za-z_][\w.-]*)\s*:")
_SAFE_SCALAR = re.compile(r"^[A-Za-z0-9_./@+-][A-Za-z0-9_./@+ -]*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_CHECKBOX = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+\[)([ xX])(\].*)$")


class CardLockedError(GitflowError):
    """Another live run holds the card's lock."""


def _yaml_scalar(value: str) -> str:
    if _SAFE_SCALAR.match(value) and value.lower() not in ("yes", "no", "true", "false", "null"):
        return value
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid YAML scalar


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def set_frontmatter(text: str, updates: Mapping[str, str], *, path: str = "card") -> str:
    """``text`` with the top-level ``updates`` keys set; everything else byte for byte.

    A key already present is rewritten in place (its indented continuation lines, if any, are
    replaced too); a new key goes at the end of the frontmatter; a file without frontmatter gets
    one. Raises InputError when the existing frontmatter is malformed.
    """
    front = split_frontmatter(text, path=path)
    nl = _newline(text)
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    if front.raw is None:
        lines = [f"{key}: {_yaml_scalar(value)}{nl}" for key, value in updates.items()]
        return f"{bom}---{nl}{''.join(lines)}---{nl}{text[len(bom) :]}"
    raw_lines = front.raw.splitlines(keepends=True)
    if raw_lines and not raw_lines[-1].endswith("\n"):
        raw_lines[-1] += nl
    pending = dict(updates)
    out: list[str] = []
    skipping = False
    for line in raw_lines:
        if skipping and (line[:1] in (" ", "\t") or not line.strip()):
            continue
        skipping = False
        match = _KEY_LINE.match(line)
        if match and match.group(1) in pending:
            key = match.group(1)
            out.append(f"{key}: {_yaml_scalar(pending.pop(key))}{nl}")
            skipping = True
            continue
        out.append(line)
    out.extend(f"{key}: {_yaml_scalar(value)}{nl}" for key, value in pending.items())
    body_text = text[len(bom) :]
    opening_end = body_text.index("\n") + 1
    opening = body_text[:opening_end]
    rest = body_text[opening_end + len(front.raw) :]  # closing --- line and the body
    return bom + opening + "".join(out) + rest


MAX_CARD_BYTES = 4 * 1024 * 1024
"""A card larger than this is refused (docs/security.md, "Bounds")."""


def read_card(path: Path) -> str:
    """The card's text exactly as stored: line endings (LF, CRLF, CR) and a byte order mark
    kept. InputError naming the card (and line) when it is missing, not a regular file (a FIFO
    would block), over :data:`MAX_CARD_BYTES` or not UTF-8."""
    try:
        data = read_limited(path, MAX_CARD_BYTES)
    except FileNotFoundError:
        raise InputError("card not found", path=path) from None
    except ReadRefused as exc:
        raise InputError(exc.reason, path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read the card: {exc.strerror or exc}", path=path) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = len(re.findall(rb"\r\n|\r|\n", data[: exc.start])) + 1
        raise InputError(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); cards "
            "must be UTF-8",
            path=path,
            line=line,
        ) from None


def _edit_card(path: Path, change: Callable[[str], str]) -> None:
    """Apply ``change`` to the card's text and write it back if it changed, every line ending
    kept byte for byte. ``change`` works on ``\n`` and ``\r\n`` lines; a card that ends its
    lines with a lone ``\r`` (and has no ``\n``) is edited as ``\n`` and turned back."""
    text = read_card(path)
    lone_cr = "\r" in text and "\n" not in text
    new = change(text.replace("\r", "\n") if lone_cr else text)
    if lone_cr:
        new = new.replace("\n", "\r")
    if new != text:
        write_text_atomic(path, new)


def set_card_status(
    path: Path, flow: str, status: CardStatus, *, branch: str | None = None
) -> None:
    """Write ``agent_flow`` and ``agent_status`` (and ``branch`` when given) into the card."""
    if status not in CARD_STATUSES:
        raise ValueError(f"unknown card status {status!r}")
    updates = {"agent_flow": flow, "agent_status": status}
    if branch is not None:
        updates["branch"] = branch
    _edit_card(path, lambda text: set_frontmatter(text, updates, path=str(path)))


def card_status(path: Path) -> tuple[str | None, str | None]:
    """(agent_flow, agent_status) of the card, None where absent."""
    text = read_card(path)
    if "\n" not in text:  # lone-CR line endings
        text = text.replace("\r", "\n")
    data = split_frontmatter(text, path=str(path)).data
    flow, status = data.get("agent_flow"), data.get("agent_status")
    return (str(flow) if flow is not None else None, str(status) if status is not None else None)


# --- the lock -----------------------------------------------------------------------------


def lock_path(card: Path) -> Path:
    return card.with_name(f".{card.name}.lock")


@contextlib.contextmanager
def card_lock(card: Path, run_id: str) -> Iterator[Path]:
    """Hold ``.<card>.lock`` for the duration of a run (a lock file of gitflow_agents/runs/lock.py: a
    lock whose process is gone, or unreadable, is taken over).

    Raises CardLockedError naming the run that holds it.
    """
    lock = lock_path(card)

    def refuse(path: Path, holder: LockInfo | None) -> GitflowError:
        if holder is None:
            return CardLockedError(f"{card}: could not take the card lock {lock}")
        return CardLockedError(
            f"{card}: card is locked by run {holder.run_id}"
            f" (pid {holder.pid}); remove {lock} if that run is gone"
        )

    with hold(lock, run_id, refuse=refuse):
        yield lock


# --- history lines (the formats of docs/supervisor.md, "Cards") ----------------------------


def history_line(
    flow: Flow,
    event: HistoryEvent,
    *,
    run_id: str,
    day: Date | None = None,
    branch: str | None = None,
    target: str | None = None,
    topic: str | None = None,
    checked: int = 0,
    tests: str = "pass",
    findings: tuple[int, int, int] = (0, 0, 0),
    overall: str = "revise",
    sources: int = 0,
    log_path: str = "",
) -> str:
    """One history line in its fixed format (docs/supervisor.md, "Cards"), e.g.
    ``2026-01-02: Run <id> succeeded (implement); checked 2 items; tests: pass.``"""
    stamp = (day or Date.today()).isoformat()
    head = f"{stamp}: Run {run_id}"
    if event == "failed":
        return f"{head} failed ({flow}); see logs at {log_path}."
    if event == "canceled":
        return f"{head} canceled ({flow})."
    if event == "started":
        return f"{head} started ({flow})."
    if flow == "implement":
        if event == "queued":
            return f"{head} queued (implement) on branch {branch or ''}."
        return f"{head} succeeded (implement); checked {checked} items; tests: {tests}."
    if flow == "review":
        if event == "queued":
            return f"{head} queued (review) for {target or branch or ''}."
        errors, warns, infos = findings
        return (
            f"{head} succeeded (review); findings blocking/warn/info: "
            f"{errors}/{warns}/{infos}; overall={overall}."
        )
    if event == "queued":
        return f'{head} queued (research) topic "{topic or ""}".'
    return f"{head} succeeded (research); {sources} sources captured."


def _is_history_heading(line: str) -> int:
    match = _HEADING.match(line.rstrip("\r\n"))
    if match and match.group(2).strip().lower() == "history":
        return len(match.group(1))
    return 0


def add_history_line(text: str, line: str) -> str:
    """``text`` with ``line`` appended to its ``## History`` section (created at the end if none).

    The line is written as a list item (``- <line>``) unless the section's existing lines are
    bare; text outside the section is untouched.
    """
    nl = _newline(text)
    lines = text.splitlines(keepends=True)
    start = level = None
    for index, current in enumerate(lines):
        found = _is_history_heading(current)
        if found:
            start, level = index, found
    if start is None or level is None:
        sep = "" if not text or text.endswith(("\n", "\r")) else nl
        gap = "" if not text or text.endswith(nl * 2) else nl
        return f"{text}{sep}{gap}## History{nl}{nl}- {line}{nl}"
    end = len(lines)
    for index in range(start + 1, len(lines)):
        match = _HEADING.match(lines[index].rstrip("\r\n"))
        if match and len(match.group(1)) <= level:
            end = index
            break
    last = start
    for index in range(start + 1, end):
        if lines[index].strip():
            last = index
    existing = [ln.strip() for ln in lines[start + 1 : end] if ln.strip()]
    bullet = "" if existing and not existing[-1].startswith(("- ", "* ")) else "- "
    if last < len(lines) and not lines[last].endswith(("\n", "\r")):
        lines[last] += nl
    insert = [f"{bullet}{line}{nl}"]
    if last == start:
        insert.insert(0, nl)
    lines[last + 1 : last + 1] = insert
    return "".join(lines)


def append_history(path: Path, line: str) -> None:
    _edit_card(path, lambda text: add_history_line(text, line))


# --- checklist ----------------------------------------------------------------------------


def _checkbox_lines(lines: Sequence[str]) -> list[int]:
    """Indices (into ``lines``) of the acceptance-criteria checkboxes, in order.

    Scope: the section whose heading contains "acceptance" (up to the next heading of the same
    or a higher level); without such a heading, every checkbox of the file. Fenced code is skipped.
    """
    in_fence: str | None = None
    scope_level: int | None = None
    in_scope = False
    has_section = any(
        (m := _HEADING.match(ln.rstrip("\r\n"))) and "acceptance" in m.group(2).lower()
        for ln in lines
    )
    found = []
    for index, raw in enumerate(lines):
        line = raw.rstrip("\r\n")
        fence = _FENCE.match(line)
        if fence:
            marker = fence.group(1)
            if in_fence is None:
                in_fence = marker[0] * len(marker)
            elif marker.startswith(in_fence):
                in_fence = None
            continue
        if in_fence is not None:
            continue
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            if "acceptance" in heading.group(2).lower():
                in_scope, scope_level = True, level
            elif scope_level is not None and level <= scope_level:
                in_scope, scope_level = False, None
            continue
        if (in_scope or not has_section) and _CHECKBOX.match(line):
            found.append(index)
    return found


def flip_checklist(text: str, checked_criteria: Sequence[int]) -> tuple[str, list[int]]:
    """Tick the acceptance boxes at the 0-based ``checked_criteria``; return (text, ticked).

    Out-of-range indices are ignored; already ticked boxes stay ticked (and are not counted).
    """
    body_start = 0
    front = split_frontmatter(text, path="card")
    if front.raw is not None:
        body_start = front.body_line - 1
    lines = text.splitlines(keepends=True)
    boxes = _checkbox_lines(lines[body_start:])
    ticked = []
    for criterion in sorted(set(checked_criteria)):
        if 0 <= criterion < len(boxes):
            index = body_start + boxes[criterion]
            match = _CHECKBOX.match(lines[index].rstrip("\r\n"))
            if match and match.group(2) == " ":
                ending = lines[index][len(lines[index].rstrip("\r\n")) :]
                lines[index] = f"{match.group(1)}x{match.group(3)}{ending}"
                ticked.append(criterion)
    return "".join(lines), ticked


def apply_checked_criteria(path: Path, checked_criteria: Sequence[int]) -> list[int]:
    ticked: list[int] = []

    def tick(text: str) -> str:
        new, done = flip_checklist(text, checked_criteria)
        ticked.extend(done)
        return new

    _edit_card(path, tick)
    return ticked
