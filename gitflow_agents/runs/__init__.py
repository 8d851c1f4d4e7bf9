"""Run records: run ids, the run directory, ``result.json``, ``status.json``.

The contract is docs/protocol.md, Run records. Layout::

    <flow_dir>/<flow>/agents/<agent-id>/system_prompt.md, report.md (→ .complete.md | .failed.md)
    <flow_dir>/<flow>/runs/<runID>/events.jsonl   one event a line, flushed as it happens
                                   worker.log     the agent's stdout and stderr, as produced
                                   status.json    live state: pid, pgid, state, last activity
                                   result.json    the result shape of the flow, written last
                                   heartbeat      touched by ``gitflow-agents heartbeat``
                                   cancel         written by ``gitflow-agents cancel``

``<flow_dir>/`` is added to ``.git/info/exclude`` (``git.exclude_flow_dir``) so no run artifact
lands in a commit.
"""

from __future__ import annotations

import re
import secrets
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.fsutil import (
    MAX_REPORT_CHARS,
    ReadRefused,
    read_limited,
    safe_target,
    write_json_atomic,
)
from gitflow_agents.base.jsondata import JsonProblem, load_object
from gitflow_agents.config.values import display
from gitflow_agents.findings import parse_review
from gitflow_agents.findings.reply import parse_reply
from gitflow_agents.git.queries import exclude_flow_dir
from gitflow_agents.runs.fields import mistyped
from gitflow_agents.runs.status import ResultStatus, is_live
from gitflow_agents.runs.status import result_status as result_status

if TYPE_CHECKING:
    from gitflow_agents.findings import Review

FlowKind = Literal["implement", "review", "research"]
FLOW_KINDS: tuple[FlowKind, ...] = ("implement", "review", "research")
RunStatusValue = ResultStatus  # result.json's status (runs/status.py has every vocabulary)

RUN_DIR_ENV = "GITFLOW_AGENTS_RUN_DIR"
RUN_ID_ENV = "GITFLOW_AGENTS_RUN_ID"
AGENT_DIR_ENV = "GITFLOW_AGENTS_AGENT_DIR"

_RUN_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def new_run_id() -> str:
    """A UUID that sorts by creation time: version 7 (48-bit ms timestamp + random)."""
    millis = time.time_ns() // 1_000_000
    rand = secrets.randbits(74)
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= (rand >> 62) << 64  # 12 random bits
    value |= 0b10 << 62  # RFC 4122 variant
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def short_ids(run_ids: Sequence[str]) -> list[str]:
    """Each of ``run_ids`` as a table shows it: its first 13 characters (its creation time to
    the millisecond: a prefix ``cancel``, ``send`` and ``status`` take), longer where another of
    them began in the same millisecond (steps started at once by ``--jobs``): to the end of the
    next group of the UUID that tells them apart."""
    lengths = (13, 18, 23)
    seen = {n: Counter(run_id[:n] for run_id in run_ids) for n in lengths}
    return [
        run_id[: next((n for n in lengths if seen[n][run_id[:n]] == 1), len(run_id))]
        for run_id in run_ids
    ]


def is_run_id(text: str) -> bool:
    return bool(_RUN_ID.match(text))


@dataclass(frozen=True)
class RunPaths:
    run_dir: Path

    @property
    def events(self) -> Path:
        return self.run_dir / "events.jsonl"

    @property
    def worker_log(self) -> Path:
        return self.run_dir / "worker.log"

    @property
    def result(self) -> Path:
        return self.run_dir / "result.json"

    @property
    def status(self) -> Path:
        return self.run_dir / "status.json"

    @property
    def landing(self) -> Path:
        """A step run's record as it stands right before its merge into the target: what the
        next run finishes it with when this one is killed after the merge (``chain/record.py``)."""
        return self.run_dir / "landing.json"

    @property
    def heartbeat(self) -> Path:
        return self.run_dir / "heartbeat"

    @property
    def cancel(self) -> Path:
        return self.run_dir / "cancel"


def runs_root(root: Path, flow_dir: str, flow: str) -> Path:
    return root / flow_dir / flow / "runs"


def create_run(root: Path, flow_dir: str, flow: str, run_id: str | None = None) -> RunPaths:
    """Create ``<flow_dir>/<flow>/runs/<runID>/`` (fresh id unless given) and exclude it from git."""
    run_id = run_id or new_run_id()
    paths = RunPaths(runs_root(root, flow_dir, flow) / run_id)

    # a committed `flows` symlink must not put run records outside the repository
    safe_target(paths.run_dir)
    paths.run_dir.mkdir(parents=True, exist_ok=False)
    exclude_flow_dir(root, flow_dir)
    return paths


MAX_RECORD_BYTES = 16 * 1024 * 1024
"""A run record (status.json, result.json, a session) larger than this is not read."""


def read_json(path: Path) -> dict[str, Any] | None:
    """The object in ``path``, or None when it is missing or unreadable: not a regular file,
    over :data:`MAX_RECORD_BYTES`, not JSON, not an object, nested too deeply or holding numbers
    out of range (gitflow_agents/base/jsondata.py). Callers still check each field's type: an agent
    can write anything into its run folder."""
    try:
        return load_record(path)
    except (OSError, JsonProblem):
        return None


def load_record(path: Path) -> dict[str, Any]:
    """The object in ``path``, as :func:`read_json` reads it, for a caller that says why it
    cannot: OSError (FileNotFoundError when missing; ``fsutil.ReadRefused`` with a ``reason``)
    or ``jsondata.JsonProblem`` (``message``, ``line``)."""
    return load_object(read_limited(path, MAX_RECORD_BYTES))


RESULT_SHAPE: dict[str, Any] = {
    "status": "a string",
    "overall": "a string",
    "run": {
        "runID": "a string",
        "flow": "a string",
        "kind": "a string",
        "agent": "a string",
        "agentId": "a string",
        "status": "a string",
        "outcome": "a string",
        "durationMs": "a number",
        "finishedAt": "a number",
        "endedAt": "a number",
        "startedAt": "a number",
        "historyLine": "a string",
        "chainRunID": "a string",
        "sessionId": "a string",
        "inputTokens": "a number",
        "outputTokens": "a number",
        "cachedTokens": "a number",
        "costUsd": "a number",
        "costEstimated": "a boolean",
        "tokensPartial": "a boolean",
        "costPartial": "a boolean",
        "lost": "a boolean",
        "session": {},
        "replies": {},
        "reply": {},
    },
    "chain": {
        "outcome": "a string",
        "exitCode": "an integer",
        "reason": "a string",
        "step": "an integer",
        "plan": "a string",
        "iterations": "an integer",
        "agents": "a list",
        "rounds": "a list",
    },
    "gitStats": {
        "filesChanged": "an integer",
        "insertions": "an integer",
        "deletions": "an integer",
        "commits": "a list",
    },
}
"""The keys of a result.json that ``history`` and ``status`` show (or sum), and their kinds
(``fields.mistyped``)."""


def load_result(path: Path) -> dict[str, Any]:
    """A run's result.json as ``history`` and ``status`` read it: :func:`load_record`, and
    JsonProblem naming the first key they show whose value is of the wrong kind (``run.runID:
    expected a string, got an integer``). Such a record is left out, as one that is not JSON:
    read as absent, its figures would show as 0 or as another run's (``step None``, ``$0``),
    where a record says nothing true (docs/chains.md, "History")."""
    data = load_record(path)
    problem = mistyped(data, RESULT_SHAPE)
    if problem is not None:
        raise JsonProblem(problem)
    return data


def skipped_run(root: Path, paths: RunPaths, exc: Exception) -> str:
    """The line ``history`` and ``status`` print on stderr for a run whose result.json
    :func:`load_result` refused: which run, the file, and why."""
    where = display(root, paths.result)
    return f"skipped run {paths.run_dir.name}: {where}: {record_problem(exc)}"


def record_problem(exc: Exception) -> str:
    """One line saying why :func:`load_record` refused a record: ``line 1: integer … is out
    of range``, ``is a FIFO (named pipe), not a regular file``."""
    if isinstance(exc, (ReadRefused, JsonProblem)):
        why = exc.reason if isinstance(exc, ReadRefused) else exc.message
        return why if exc.line is None else f"line {exc.line}: {why}"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


# --- status.json -------------------------------------------------------------------------


@dataclass(frozen=True)
class RunStatus:
    """What ``status`` shows and ``cancel`` needs: who runs, where, since when, last activity."""

    run_id: str
    flow: str
    agent: str
    state: str  # runs.status: LIVE_STATES (queued, running, waiting, killing), then a ProcessStatus
    started: float
    pid: int | None = None
    pgid: int | None = None
    create_time: float | None = None  # psutil create_time of pid (guards against pid reuse)
    supervisor_pid: int | None = None
    last_activity: float | None = None
    last_activity_kind: str | None = None
    ended: float | None = None
    reason: str | None = None
    agent_dir: str | None = None
    kind: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        """The run has ended: its state is none of ``LIVE_STATES`` (``killing`` is live)."""
        return not is_live(self.state)


def write_status(paths: RunPaths, status: RunStatus) -> None:
    data = asdict(status)
    data["extra"] = dict(status.extra)
    # Live state, replaced atomically but not fsync'd (as the supervisor's updates): a crash of
    # the process loses nothing; result.json is the durable record.
    write_json_atomic(paths.status, data, durable=False)


def read_status(paths: RunPaths) -> RunStatus | None:
    data = read_json(paths.status)
    if data is None:
        return None
    known = set(RunStatus.__dataclass_fields__)
    try:
        return RunStatus(**{k: v for k, v in data.items() if k in known})
    except TypeError:
        return None


def iter_runs(root: Path, flow_dir: str, flow: str | None = None) -> Iterator[RunPaths]:
    """Run directories, oldest first (a run id begins with its creation time), of one flow or
    of all flows: across the flows, not flow by flow (a run of flow ``a`` begun last is last)."""
    base = root / flow_dir
    flows = [base / flow] if flow else [p for p in base.glob("*") if p.is_dir()]
    found = [
        run_dir
        for flow_path in flows
        if (flow_path / "runs").is_dir()
        for run_dir in (flow_path / "runs").iterdir()
        if run_dir.is_dir()
    ]
    # the same id in two flows (copied by hand): by flow, so the order stays the same each time
    for run_dir in sorted(found, key=lambda run_dir: (run_dir.name, run_dir.parent.parent.name)):
        yield RunPaths(run_dir)


def find_run(root: Path, flow_dir: str, run_id: str) -> RunPaths | None:
    """The run directory of ``run_id`` in any flow (a unique prefix of 8+ characters also works)."""
    matches = _matching_runs(root, flow_dir, run_id)
    return matches[0] if len(matches) == 1 else None


def named_run(root: Path, flow_dir: str, run_id: str, command: str) -> RunPaths:
    """:func:`find_run`, or UsageError saying why not: no run has that id or prefix, or the
    prefix names several runs (begun in the same millisecond: their first 13 characters are
    their creation time), which it lists as long as it takes to tell them apart."""
    matches = _matching_runs(root, flow_dir, run_id)
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UsageError(f"{command}: no run {run_id!r} under {flow_dir}/*/runs/")
    names = short_ids([paths.run_dir.name for paths in matches])
    raise UsageError(f"{command}: {run_id!r} names {len(matches)} runs: {', '.join(names)}")


def _matching_runs(root: Path, flow_dir: str, run_id: str) -> list[RunPaths]:
    """The run that has the id ``run_id``, else every run whose id begins with it (8+ chars)."""
    matches = [
        paths
        for paths in iter_runs(root, flow_dir)
        if paths.run_dir.name == run_id
        or (len(run_id) >= 8 and paths.run_dir.name.startswith(run_id))
    ]
    exact = [p for p in matches if p.run_dir.name == run_id]
    return exact[:1] or matches


# --- result.json (one shape per flow kind) ------------------------------------------------


def implement_result(
    status: RunStatusValue,
    *,
    summary: str = "",
    changed_files: Sequence[str] = (),
    tests_ran: Sequence[str] = (),
    tests_passed: bool = False,
    checked_criteria: Sequence[int] = (),
) -> dict[str, Any]:
    return {
        "status": status,
        "summary": summary,
        "changedFiles": list(changed_files),
        "tests": {"ran": list(tests_ran), "passed": bool(tests_passed)},
        "checkedCriteria": [int(i) for i in checked_criteria],
    }


def review_result(
    status: RunStatusValue,
    *,
    findings: Sequence[Mapping[str, Any]] = (),
    overall: Literal["approve", "revise"] = "revise",
    summary: str = "",
) -> dict[str, Any]:
    shaped = []
    for finding in findings:
        item: dict[str, Any] = {"severity": finding["severity"], "message": finding["message"]}
        if finding.get("file") is not None:
            item["file"] = str(finding["file"])
        if finding.get("line") is not None:
            item["line"] = int(finding["line"])
        shaped.append(item)
    return {"status": status, "findings": shaped, "overall": overall, "summary": summary}


def research_result(
    status: RunStatusValue,
    *,
    summary: str = "",
    bullet_points: Sequence[str] = (),
    sources: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    return {
        "status": status,
        "summary": summary,
        "bulletPoints": list(bullet_points),
        "sources": [{"title": s["title"], "url": s["url"]} for s in sources],
    }


_STRING_LIST = {"type": "array", "items": {"type": "string"}}
_STATUS = {"enum": ["succeeded", "failed", "canceled"]}

# JSON Schemas of the result shapes (the extra ``run`` key holds our run metadata).
RESULT_SCHEMAS: dict[str, dict[str, Any]] = {
    "implement": {
        "type": "object",
        "required": ["status", "summary", "changedFiles", "tests", "checkedCriteria"],
        "properties": {
            "status": _STATUS,
            "summary": {"type": "string"},
            "changedFiles": _STRING_LIST,
            "tests": {
                "type": "object",
                "required": ["ran", "passed"],
                "properties": {"ran": _STRING_LIST, "passed": {"type": "boolean"}},
            },
            "checkedCriteria": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        },
    },
    "review": {
        "type": "object",
        "required": ["status", "findings", "overall", "summary"],
        "properties": {
            "status": _STATUS,
            "findings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["severity", "message"],
                    "properties": {
                        "severity": {"enum": ["error", "warn", "info"]},
                        "file": {"type": "string"},
                        "line": {"type": "integer"},
                        "message": {"type": "string"},
                    },
                },
            },
            "overall": {"enum": ["approve", "revise"]},
            "summary": {"type": "string"},
        },
    },
    "research": {
        "type": "object",
        "required": ["status", "summary", "bulletPoints", "sources"],
        "properties": {
            "status": _STATUS,
            "summary": {"type": "string"},
            "bulletPoints": _STRING_LIST,
            "sources": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["title", "url"],
                    "properties": {"title": {"type": "string"}, "url": {"type": "string"}},
                },
            },
        },
    },
}


def write_result(paths: RunPaths, result: Mapping[str, Any]) -> None:
    write_json_atomic(paths.result, dict(result))


# --- reading a report into the flow's result shape ---------------------------------------

# Linear patterns (an agent's report may be a megabyte of anything): values are stripped in
# code, not by a lazy `(.*?)\s*$` (quadratic on long runs of blanks), and a link title holds no
# `[` (else every `[` of a line of them rescans the line).
_MARKER = re.compile(r"^[ \t]*(CHECKED_CRITERIA|TESTS_RAN|TESTS_PASSED)[ \t]*:(.*)$", re.M)
_LINK = re.compile(r"\[([^\[\]\n]+)\]\((https?://[^)\s]+)\)")
_BULLET = re.compile(r"^[-*+]\s+(\S.*)$")


def _summary(report_text: str, reply_summary: str) -> str:
    if reply_summary:
        return reply_summary
    lines = report_text.splitlines()
    for index, line in enumerate(lines):
        if line.strip().lower().lstrip("#").strip() == "summary" and line.lstrip().startswith("#"):
            body = []
            for position in range(index + 1, len(lines)):  # no copy of the rest
                item = lines[position]
                if item.lstrip().startswith("#"):
                    break
                body.append(item)
            text = "\n".join(body).strip()
            if text:
                return text
    paragraphs = [p.strip() for p in report_text.split("\n\n") if p.strip()]
    prose = [p for p in paragraphs if not p.startswith("#")]
    return prose[0] if prose else ""


def flow_result(
    kind: str,
    status: RunStatusValue,
    *,
    report_text: str = "",
    reply_text: str = "",
    changed_files: Sequence[str] = (),
    review: Review | None = None,
    root: Path | None = None,
) -> dict[str, Any]:
    """The result of ``kind`` (implement/review/research) read from the agent's report.

    implement: summary (``<SUMMARY>``, else the report's ``## Summary``), the changed files the
    orchestrator computed, and the report's marker lines ``CHECKED_CRITERIA: 0, 2``,
    ``TESTS_RAN: <command>`` (repeatable) and ``TESTS_PASSED: yes|no``.
    review: findings, overall and summary from ``findings.parse_review`` (no verdict = revise;
    ``root``: where the agent worked, which its absolute paths are made relative to), or from
    ``review`` when the caller read the report already (a chain's reviewer).
    research: summary, the report's top-level bullets, and its markdown links as sources.
    """
    reply = parse_reply(reply_text or report_text)
    if kind != "review" and len(report_text) > MAX_REPORT_CHARS:  # parse_review says so itself
        note = f"(report not read: {len(report_text):,} characters, over the limit)"
        report_text = ""
        summary = reply.summary if reply.structured else note
    else:
        summary = _summary(report_text, reply.summary if reply.structured else "")
    if kind == "review":
        if review is None:
            review = parse_review(report_text, root=root)
        return review_result(
            status,
            findings=[
                {"severity": f.severity.value, "file": f.file, "line": f.line, "message": f.message}
                for f in review.findings
            ],
            overall="approve"
            if review.overall is not None and review.overall.value == "approve"
            else "revise",
            summary=review.summary or summary,
        )
    if kind == "research":
        sources: dict[str, str] = {}
        for title, url in _LINK.findall(report_text):
            sources.setdefault(url, title)
        bullets = [
            m.group(1).rstrip() for ln in report_text.splitlines() if (m := _BULLET.match(ln))
        ]
        return research_result(
            status,
            summary=summary,
            bullet_points=bullets,
            sources=[{"title": title, "url": url} for url, title in sources.items()],
        )
    checked: list[int] = []
    ran: list[str] = []
    passed = False
    for name, raw in _MARKER.findall(report_text):
        value = raw.strip()
        if name == "CHECKED_CRITERIA":
            checked = [int(n) for n in re.findall(r"\d+", value)]
        elif name == "TESTS_RAN" and value:
            ran.append(value)
        elif name == "TESTS_PASSED":
            passed = value.lower() in ("yes", "true", "pass", "passed")
    return implement_result(
        status,
        summary=summary,
        changed_files=changed_files,
        tests_ran=ran,
        tests_passed=passed and bool(ran),
        checked_criteria=checked,
    )
