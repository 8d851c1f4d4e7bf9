"""What a supervised run ended as: the completion signal files, the verdict, the ``Outcome``.

Exit codes are not trusted as success: the rename of ``report.md`` to ``report.complete.md`` /
``report.failed.md`` decides (docs/protocol.md, "Completion signal"); an agent that exits without
renaming has failed, whatever its code. CLIs that cannot rename a file (``completes_by_exit``)
are judged by their exit code, their own error flag and the ``<STATUS>`` of their reply
(docs/supervisor.md, "What decides the outcome"). ``status.json`` (docs/protocol.md, "Run
records") is the run's live state, merged into by ``update_status``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from gitflow_agents.agents.base import AgentOutput
from gitflow_agents.agents.output import since
from gitflow_agents.base.errors import interrupted_by
from gitflow_agents.base.fsutil import irregular, write_json_atomic
from gitflow_agents.findings.reply import parse_reply
from gitflow_agents.runs import read_json
from gitflow_agents.runs.status import ProcessStatus

Status = ProcessStatus  # how an agent process ended (runs/status.py has every vocabulary)
ParsedOutput = AgentOutput  # what an adapter's parse_output returns (agents/base.py)


@dataclass(frozen=True)
class Outcome:
    status: Status
    reason: str
    report_path: Path | None
    exit_code: int | None
    started: float  # epoch seconds
    ended: float
    duration: float  # seconds
    last_activity: float  # epoch seconds of the last activity seen
    pid: int | None
    last_activity_kind: str = "start"
    signal_at: float | None = None  # epoch seconds when the rename was seen
    stdout: str = ""
    stderr: str = ""
    output: ParsedOutput | None = None
    leftover_pids: tuple[int, ...] = ()
    watcher: str = "inotify"
    # The outputs of the run's earlier attempts (rate limits waited out: agent_run/attempts.py),
    # oldest first: its record prices each as it prices ``output`` and adds them up.
    earlier_outputs: tuple[ParsedOutput, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "outcome": self.status,
            "reason": self.reason,
            "report": str(self.report_path) if self.report_path else None,
            "exitCode": self.exit_code,
            "pid": self.pid,
            "startedAt": self.started,
            "endedAt": self.ended,
            "durationMs": round(self.duration * 1000),
            "lastActivityAt": self.last_activity,
            "lastActivityKind": self.last_activity_kind,
            "watcher": self.watcher,
        }
        if self.leftover_pids:
            data["leftoverPids"] = list(self.leftover_pids)
        return data


class SupervisorInterrupted(KeyboardInterrupt):
    """Ctrl-C while supervising: the tree is already dead; ``outcome`` says so."""

    def __init__(self, outcome: Outcome, by: str = "Ctrl-C") -> None:
        super().__init__("interrupted")
        self.outcome = outcome
        self.interrupted_by = by  # what interrupted (``errors.interrupted_by``): SIGTERM too


@dataclass(frozen=True)
class Verdict:
    """A status, why, and when the rename was seen (None when none was)."""

    status: Status
    reason: str
    signal_at: float | None = None


@dataclass(frozen=True)
class Stop:
    """Why the wait ended. ``verdict`` when that alone decides (cancel, timeout, stuck, Ctrl-C,
    no start); otherwise the agent is judged by its rename and exit, and ``signal_at`` is when
    the rename was seen while it ran."""

    sweep: str  # why the tree is swept (status.json's reason while it dies)
    verdict: Verdict | None = None
    signal_at: float | None = None
    drain: float = 2.0  # seconds the output readers get to reach EOF


def interrupted(exc: BaseException) -> Stop:
    """The stop of a run whose command was interrupted: Ctrl-C, or SIGTERM (``Terminated``)."""
    why = f"interrupted ({interrupted_by(exc)})"
    return Stop(why, Verdict("canceled", why), drain=1.0)


def stopped(status: Status, reason: str) -> Stop:
    """A stop whose verdict is already decided; the tree is swept for the same reason."""
    return Stop(reason, Verdict(status, reason))


class ReportFiles(NamedTuple):
    """The agent's report and the two names it may rename it to (``report.md``,
    ``report.complete.md``, ``report.failed.md`` by default), in the agent's folder."""

    report: Path
    success: Path
    failure: Path

    @classmethod
    def named(
        cls, agent_dir: Path, report_name: str, success_suffix: str, failure_suffix: str
    ) -> ReportFiles:
        """The report files of a completion workflow (its report name and suffixes)."""
        stem = report_name[: -len(".md")] if report_name.endswith(".md") else Path(report_name).stem
        return cls(
            agent_dir / report_name,
            agent_dir / f"{stem}{success_suffix}",
            agent_dir / f"{stem}{failure_suffix}",
        )

    @property
    def folder(self) -> Path:
        """The agent's folder, where its report files are."""
        return self.report.parent

    def renamed(self) -> Path | None:
        """The rename the agent made (success or failure), None while there is none."""
        ok, failed = self.success.exists(), self.failure.exists()
        if ok and failed:  # both: the later one is the agent's last word
            newer = self.success.stat().st_ctime_ns >= self.failure.stat().st_ctime_ns
            return self.success if newer else self.failure
        return self.success if ok else self.failure if failed else None

    def report_path(self, status: Status) -> Path | None:
        """The file that holds the agent's report after a run that ended ``status``: only a
        regular file, never a symlink or FIFO the agent left there (it is not read)."""
        candidates: tuple[Path, ...] = (self.success, self.failure, self.report)
        if status != "succeeded":
            candidates = candidates[1:]
        for path in candidates:
            if path.exists() and irregular(path) is None:
                return path
        return None


def refuse_irregular_report(files: ReportFiles, verdict: Verdict) -> Verdict:
    """A success whose report is a symlink, a FIFO or a folder is a failure: the tool would
    read (and may write, filling in statistics) whatever it points at (docs/security.md,
    "Writes")."""
    if verdict.status != "succeeded":
        return verdict
    problem = irregular(files.success)
    if problem is None:
        return verdict
    return Verdict("failed", f"{files.success.name} {problem}: the report is not read")


def judge_ending(
    files: ReportFiles,
    code: int | None,
    *,
    signal_at: float | None,
    completes_by_exit: bool,
) -> Verdict:
    """The verdict on an agent whose tree is gone: its rename decides, else how it exited.

    ``signal_at``: when the supervisor saw the rename while the agent ran (None: it did not).
    """
    report, success, failure = files
    renamed = files.renamed()
    if renamed is not None or signal_at is not None:
        at = signal_at if signal_at is not None else time.time()
        if renamed == success:
            return Verdict("succeeded", f"{report.name} renamed to {success.name}", at)
        return Verdict(
            "failed", f"agent signalled failure: {report.name} renamed to {failure.name}", at
        )
    if completes_by_exit:
        if code == 0:
            return Verdict("succeeded", "agent exited 0 (completes by exit)")
        return Verdict("failed", f"agent exited (code {code})")
    if code is not None and code < 0:
        return Verdict(
            "crashed", f"agent killed by {_signal_name(code)} without renaming {report.name}"
        )
    return Verdict("failed", f"agent exited (code {code}) without renaming {report.name}")


def read_reply(
    parse_output: Callable[[str, str], ParsedOutput] | None,
    verdict: Verdict,
    stdout: str,
    stderr: str,
    *,
    completes_by_exit: bool,
) -> tuple[ParsedOutput | None, Verdict]:
    """The adapter's reading of the agent's output (None without a parser) and the verdict that
    stands after it (``judge_reply``). A parser bug is noted in the reason, never fatal."""
    parsed = None
    if parse_output is not None:
        try:
            parsed = parse_output(stdout, stderr)
        except Exception as exc:  # a parser bug must not lose the outcome
            reason = f"{verdict.reason} (output not parsed: {exc!r})"
            verdict = dataclasses.replace(verdict, reason=reason)
    verdict = judge_reply(verdict, parsed, stdout, completes_by_exit=completes_by_exit)
    return parsed, judge_rate_limit(verdict, parsed)


def judge_reply(
    verdict: Verdict, parsed: ParsedOutput | None, stdout: str, *, completes_by_exit: bool
) -> Verdict:
    """A success by exit code alone is overruled by the CLI's own error flag, or by a
    structured reply (docs/protocol.md, "Agent replies") saying it did not finish."""
    if verdict.status != "succeeded" or not completes_by_exit or verdict.signal_at is not None:
        return verdict
    if parsed is not None and parsed.is_error:
        return Verdict("failed", f"agent reported an error: {parsed.error or 'unknown'}")
    said = _reply_status((parsed.reply if parsed is not None else None) or stdout)
    if said in ("failed", "needs_input"):
        return Verdict("failed", f"agent exited 0 but its reply's <STATUS> is {said}")
    return verdict


def judge_rate_limit(verdict: Verdict, parsed: ParsedOutput | None) -> Verdict:
    """An agent that ended failed or crashed by itself (no rename) whose CLI said the model API
    refused it (429, 529 overloaded, a usage limit) is ``rate_limited``: its run can go on
    once the limit passes (docs/supervisor.md, "Rate limits"). A rename, a stop the supervisor
    decided (stuck, timeout, canceled) and a success stand."""
    limit = parsed.rate_limit if parsed is not None else None
    if limit is None or verdict.status not in ("failed", "crashed") or verdict.signal_at:
        return verdict
    return Verdict("rate_limited", f"rate limited: {limit.line}")


def _reply_status(text: str) -> str | None:
    """The <STATUS> of a structured reply; None without protocol tags."""
    reply = parse_reply(text)
    return reply.status.value if reply.structured and reply.status is not None else None


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def update_status(run_dir: Path, **fields: Any) -> None:
    """Merge ``fields`` into the run's ``status.json``."""
    path = run_dir / "status.json"
    data = read_json(path) or {}
    data.update(fields)
    with contextlib.suppress(OSError):
        # Live state, rewritten often: atomic but not fsync'd (result.json is the durable record).
        write_json_atomic(path, data, durable=False)


def completion_event(
    outcome: Outcome,
    price: Callable[[ParsedOutput], tuple[float | None, bool]] | None = None,
    before: AgentOutput | None = None,
    run_usage: Callable[[ParsedOutput | None], Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The data of the agent:complete / agent:failed event that ends a run; ``price``: the
    cost of its output when its CLI stated none (``cost_estimated``: from the price table),
    as the run's record will have it; ``before``: what its figures count again of the session
    it continues (taken off, as the record takes it off). Its figures are the attempt's own
    (the live steps view adds each attempt's); ``run_usage``, given for an attempt after a
    rate limit's wait, adds the run's so far (key ``run_usage``: every attempt's, a lower bound
    marked, as its record will say them), which the console's end line says."""
    path = outcome.report_path
    data: dict[str, Any] = {
        "status": outcome.status,
        "reason": outcome.reason,
        "exit_code": outcome.exit_code,
        "duration_ms": round(outcome.duration * 1000),
        "report": str(path) if path else None,
    }
    parsed = outcome.output
    if parsed is not None and before is not None:
        parsed = since(parsed, before)
    if parsed is not None:
        usage = {
            "session_id": parsed.session_id,
            "input_tokens": parsed.input_tokens,
            "output_tokens": parsed.output_tokens,
            "cost_usd": parsed.cost_usd,
            "cached_tokens": parsed.cached_tokens,
        }
        if price is not None and parsed.cost_usd is None:
            usage["cost_usd"], estimated = price(parsed)
            if estimated:
                data["cost_estimated"] = True
        data.update((key, value) for key, value in usage.items() if value is not None)
        if getattr(parsed, "usage_partial", False):  # what it streamed before it stopped: ≥
            data["usage_partial"] = True
    if run_usage is not None:
        data["run_usage"] = dict(run_usage(parsed))
    return data
