"""What one finished agent run leaves behind, and how it is shown.

``result.json`` (the flow kind's result shape plus ``run``, our run metadata), the final
``status.json``, and the card's status and history line: the contract is docs/protocol.md, Run
records. :func:`record_result` never raises, so a crash anywhere still leaves a result.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitflow_agents.agents.output import json_lines
from gitflow_agents.agents.prices import Price, Usage, shipped_prices, usage_of
from gitflow_agents.base.errors import ExitCode, GitflowError
from gitflow_agents.base.fsutil import (
    MAX_REPORT_CHARS,
    irregular,
    read_agent_text,
    real_path,
    write_json_atomic,
)
from gitflow_agents.base.redact import redact_data
from gitflow_agents.findings.reply import AgentReply, ReplyStatus, format_reply, parse_reply
from gitflow_agents.git import queries as git
from gitflow_agents.git import stats
from gitflow_agents.render import git_stats
from gitflow_agents.runs import FLOW_KINDS, flow_result, read_json, result_status, write_result
from gitflow_agents.runs.cards import (
    append_history,
    apply_checked_criteria,
    history_line,
    lock_path,
    set_card_status,
)
from gitflow_agents.runs.fields import strings, text
from gitflow_agents.runs.spend import Spend, total
from gitflow_agents.runs.status import is_live

if TYPE_CHECKING:
    from gitflow_agents.findings import Review
    from gitflow_agents.findings.reply import AgentReply
    from gitflow_agents.runs import RunPaths
    from gitflow_agents.supervisor import Outcome, ReportFiles
    from gitflow_agents.supervisor.outcome import ParsedOutput

#: A file's (mtime_ns, size); (0, -1) when it is gone.
FileState = tuple[int, int]


@dataclass(frozen=True)
class RunFacts:
    """What is known of a run before it starts: where it records, who runs, from which commit."""

    paths: RunPaths
    kind: str  # implement | review | research: the result shape
    flow_name: str
    agent_id: str
    adapter: str
    files: ReportFiles  # the agent's report files
    base_sha: str | None  # HEAD when the run started (None outside git / before a commit)
    agent_config: str | None = None  # the agent's key in the .flow config (what `send` resumes)
    workdir: Path | None = None  # where the agent worked: the root, or a chain step's work tree
    session: Mapping[str, Any] | None = None  # the session link of a `send` turn
    secrets: frozenset[str] = frozenset()  # exact values to mask (a reviewed diff's)
    model: str | None = None  # the agent's configured model (when its CLI does not name one)
    prices: Mapping[str, Price] = field(default_factory=shipped_prices)  # estimates a cost


# --- the files a run changed -------------------------------------------------------------


def worktree_state(root: Path, base_sha: str | None) -> dict[str, FileState]:
    """Changed (vs ``base_sha``) and untracked files with their (mtime_ns, size)."""
    if base_sha is None:
        return {}
    state = {}
    for name in (*git.paths_differing_from(root, base_sha), *git.untracked_paths(root)):
        try:
            info = (root / name).stat()
            state[name] = (info.st_mtime_ns, info.st_size)
        except OSError:
            state[name] = (0, -1)  # deleted
    return state


def start_state(root: Path) -> tuple[str | None, dict[str, FileState]]:
    """The commit a run starts from and ``worktree_state`` against it. The commit is None
    outside a repository of its own (``root`` has no ``.git``: a project folder inside someone
    else's repository) or before its first commit. A clean work tree (a chain step's, always)
    is told by one ``git status``; only a dirty one is asked for its files."""
    if not (root / ".git").exists():
        return None, {}
    try:
        head, dirty = git.head_and_dirty(root)
    except GitflowError:  # git cannot tell (its failure: a CalledProcessError): no commit
        return None, {}
    return head, worktree_state(root, head) if dirty else {}


def changed_files(
    root: Path, base_sha: str | None, before: Mapping[str, FileState], skip: set[str]
) -> list[str]:
    """Files the run changed: differing from the start commit or untracked, and not in the
    same state as when the run started (a dirty file the agent never touched is not its change)."""
    after = worktree_state(root, base_sha)
    names = {n for n, state in after.items() if before.get(n) != state}
    names |= {n for n in before if n not in after}  # changed before, restored by the agent
    return sorted(names - skip)


def own_files(root: Path, card: Path | None) -> set[str]:
    """The card and its lock: written by the run's command, not by the agent."""
    if card is None:
        return set()
    own = set()
    for path in (card, lock_path(card)):
        with contextlib.suppress(ValueError):
            own.add(real_path(path).relative_to(real_path(root)).as_posix())
    return own


def fill_git_stats(
    report: Path, root: Path, against: str, start: str, exclude: tuple[str, ...]
) -> None:
    """The ``GIT_STATS_MARKER`` of an implementer's completed ``report`` replaced by the git
    statistics of ``root``'s work tree, untracked files included, against the merge-base of
    ``against`` (the target branch) and ``start`` (the commit the run started from); ``start``
    itself when the two have no merge-base (no such branch). What the chain does for its
    agents' commits (``chain/agents.py``), for one agent working in the project's own tree
    (``spawn``): docs/configuration.md, "Git statistics are the tool's job". A git that cannot
    tell leaves the report as it is."""
    try:
        try:
            base = git.merge_base(root, against, start)
        except GitflowError:  # no such branch, or no common history
            base = start
        git_stats.fill_report_file(report, stats.compute(root, base, exclude=exclude))
    except GitflowError:
        return


# --- result.json and the final status.json -----------------------------------------------


def record_result(
    facts: RunFacts,
    outcome: Outcome | None,
    failure_reason: str,
    changed: Callable[[], list[str]],
    *,
    run_extra: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    review: Review | None = None,
) -> dict[str, Any]:
    """Write result.json (and the final status.json) from whatever is known; never raises.
    ``run_extra`` is added to ``run``, ``extra`` to the top level; ``review``: a reviewer's
    Review already read from its report (the report is then not parsed again).

    ``run.reply`` is the agent's reply parsed with the reply protocol (docs/protocol.md, Agent
    replies; ``structured`` False when it fell back to heuristics); ``run.replies`` counts
    structured vs unstructured replies (one reply per run: ``status`` adds them up over runs)."""
    status = result_status(outcome.status) if outcome is not None else "failed"
    if failure_reason == "interrupted" and outcome is None:
        status = "canceled"
    files = facts.files

    report_path = next(
        (
            p
            for p in (files.success, files.failure, files.report)
            if p.exists() and irregular(p) is None  # never a FIFO or a symlink the agent left
        ),
        None,
    )
    report_text = ""
    if report_path is not None:
        report_text = read_agent_text(report_path, MAX_REPORT_CHARS)
    # the adapter's parsed reply, else stdout
    parsed_text = outcome.output.reply if outcome is not None and outcome.output else None
    reply_text = ""
    if parsed_text:
        reply_text = str(parsed_text)
    elif outcome is not None:
        reply_text = outcome.stdout
    if _event_stream(reply_text):
        reply_text = ""  # a CLI's JSON events without its result (stopped mid-run): no reply
    try:
        files_changed = changed()
    except Exception:
        files_changed = []
    try:
        result = flow_result(
            facts.kind,
            status,
            report_text=report_text,
            reply_text=reply_text,
            changed_files=files_changed,
            review=review,
            root=facts.workdir,
        )
    except Exception as exc:
        result = flow_result(facts.kind, status)
        failure_reason += f"; report not read: {exc}"
    parsed_reply = parse_reply(reply_text) if reply_text.strip() else None
    run = _run_json(facts, outcome, status, failure_reason, report_path, parsed_reply)
    result.update(extra or {})
    result["run"] = {**run, **(run_extra or {})}
    # Agent text (report, reply, reasons) is masked like every review output before it is
    # written or emitted (docs/security.md, "Secrets in review output").
    masked: dict[str, Any] = redact_data(result, facts.secrets)
    _write(facts.paths, masked)
    return masked


USAGE_KEYS = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "cachedTokens": "cached_tokens",
    "costUsd": "cost_usd",
    "model": "model",
}
"""result.json's ``run`` keys for a run's usage (camelCase like every key there: docs/decisions.md,
"CLI conventions"), and the :class:`Usage` attribute each comes from. A key is absent when its
value is unknown; ``costEstimated`` goes with ``costUsd`` (docs/protocol.md, Run records)."""


def _event_stream(text: str) -> bool:
    """Whether ``text`` ends in a JSON event line (``{"type": …}``: Claude's stream-json, the
    JSONL of Codex, Gemini CLI, opencode): what a CLI stopped before its result printed, which
    is no reply to guess a status or a summary from."""
    event = next(json_lines(text.rstrip().rpartition("\n")[2]), None)
    return event is not None and isinstance(event.get("type"), str)


def usage_json(usage: Usage) -> dict[str, Any]:
    """A run's usage as result.json's ``run`` records it: unknown values are left out."""
    data: dict[str, Any] = {}
    for key, name in USAGE_KEYS.items():
        value = getattr(usage, name)
        if value is not None:
            data[key] = value
    if usage.cost_usd is not None:
        data["costEstimated"] = usage.cost_estimated
    return data


def _run_json(
    facts: RunFacts,
    outcome: Outcome | None,
    status: str,
    failure_reason: str,
    report_path: Path | None,
    reply: AgentReply | None,
) -> dict[str, Any]:
    """The ``run`` key of result.json: our metadata about the run."""
    structured = int(reply is not None and reply.structured)
    run: dict[str, Any] = {
        "runID": facts.paths.run_dir.name,
        "flow": facts.flow_name,
        "kind": facts.kind,
        "agent": facts.agent_id,
        "agentId": facts.agent_id,  # "agent" is the config key in a chain's agent runs
        "adapter": facts.adapter,
        "outcome": outcome.status if outcome is not None else status,
        "reason": outcome.reason if outcome is not None else failure_reason,
        "logDirectory": str(facts.paths.run_dir),
        "report": str(report_path) if report_path else None,
        "baseSha": facts.base_sha,
        "replies": {"structured": structured, "unstructured": int(reply is not None) - structured},
    }
    if facts.agent_config is not None:
        run["agentConfig"] = facts.agent_config
    if facts.workdir is not None:
        run["workdir"] = str(facts.workdir)
    if facts.session:
        run["session"] = dict(facts.session)
    if reply is not None:
        run["reply"] = reply_json(reply)
    if outcome is not None:
        run.update(outcome.to_json())
        run["outcome"] = outcome.status
        session_id = getattr(outcome.output, "session_id", None)
        if session_id is not None:
            run["sessionId"] = session_id
        outputs = [*outcome.earlier_outputs, outcome.output]
        run.update(attempts_usage(outputs, facts.model, facts.prices))
    return run


def attempts_usage(
    outputs: Sequence[ParsedOutput | None], model: str | None, prices: Mapping[str, Price]
) -> dict[str, Any]:
    """A run's usage keys (``usage_json``) from the outputs of its attempts (one, or more when
    it waited out rate limits), each priced on its own (``usage_of``: the cost its CLI stated,
    else its estimate) and then added up, so an attempt that stated no cost still counts at
    its estimate. As every sum of spend (``runs/spend.total``): ``costEstimated`` when some
    part is estimated; a figure some attempt did not know, or knew only as a lower bound (it
    stopped before its totals: ``usage_partial``), is a lower bound (``tokensPartial``,
    ``costPartial``). The model is the last one named."""
    parts = [(usage_of(output, model, prices), output) for output in outputs]
    spent = total(
        Spend(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=usage.cost_usd,
            cost_estimated=usage.cost_estimated,
            tokens_partial=getattr(output, "usage_partial", False),
            cost_partial=getattr(output, "usage_partial", False),
        )
        for usage, output in parts
    )
    cached = [usage.cached_tokens for usage, _ in parts if usage.cached_tokens is not None]
    summed = Usage(
        input_tokens=spent.input_tokens,
        output_tokens=spent.output_tokens,
        cached_tokens=sum(cached) if cached else None,
        cost_usd=spent.cost_usd,
        cost_estimated=spent.cost_estimated,
        model=next((usage.model for usage, _ in reversed(parts) if usage.model), None),
    )
    data = usage_json(summed)
    if spent.tokens_partial and ("inputTokens" in data or "outputTokens" in data):
        data["tokensPartial"] = True
    if spent.cost_partial and "costUsd" in data:
        data["costPartial"] = True
    return data


def _write(paths: RunPaths, result: dict[str, Any]) -> None:
    """result.json (durable), then the live status.json brought to the run's end state."""
    run = result["run"]
    with contextlib.suppress(OSError):
        write_result(paths, result)
        data = read_json(paths.status) or {}
        if data.get("state") is None or is_live(data.get("state")):
            data.update(state=run["outcome"], reason=run["reason"], ended=time.time())
        if run.get("sessionId"):
            data["session_id"] = run["sessionId"]  # what `send` continues
        if "reply" in run:
            data["reply_status"] = run["reply"]["status"]
        write_json_atomic(paths.status, data, durable=False)  # live state; result.json is durable


def reply_json(reply: AgentReply) -> dict[str, Any]:
    """A parsed reply as recorded in ``run.reply`` (and the ``agent:reply`` event); read back
    by :func:`reply_from_json`."""
    return {
        "status": reply.status.value if reply.status is not None else None,
        "structured": reply.structured,
        "summary": reply.summary,
        "actions": list(reply.actions),
        "filesCreated": list(reply.files_created),
        "filesModified": list(reply.files_modified),
        "questions": list(reply.questions),
        "warnings": list(reply.warnings),
    }


def reply_from_json(data: Mapping[str, Any]) -> AgentReply:
    """``run.reply`` read back into the AgentReply :func:`reply_json` wrote (a field of the
    wrong type reads as absent: ``runs/fields.py``)."""
    said = text(data, "status")
    known = {status.value for status in ReplyStatus}
    return AgentReply(
        summary=text(data, "summary") or "",
        actions=tuple(strings(data, "actions")),
        files_created=tuple(strings(data, "filesCreated")),
        files_modified=tuple(strings(data, "filesModified")),
        questions=tuple(strings(data, "questions")),
        status=ReplyStatus(said) if said in known else None,
        structured=data.get("structured") is True,
        warnings=tuple(strings(data, "warnings")),
    )


# --- the card ----------------------------------------------------------------------------


def start_card(card: Path, kind: str, queued_line: str | None) -> None:
    """The card's status goes queued (with its history line) → running, right before dispatch."""
    set_card_status(card, kind, "queued")
    if queued_line is not None:
        append_history(card, queued_line)
    set_card_status(card, kind, "running")


def finish_card(card: Path, kind: str, result: Mapping[str, Any], run_id: str, log: str) -> None:
    """The card's end status and history line (implement: the ticked criteria, the tests)."""
    status = result["status"]
    flow = kind if kind in FLOW_KINDS else "implement"
    set_card_status(card, flow, status)
    if status == "failed":
        append_history(card, history_line(flow, "failed", run_id=run_id, log_path=log))
        return
    if status == "canceled":
        append_history(card, history_line(flow, "canceled", run_id=run_id))
        return
    if flow == "implement":
        ticked = apply_checked_criteria(card, result["checkedCriteria"])
        tests = result["tests"]
        verdict = ("pass" if tests["passed"] else "fail") if tests["ran"] else "none"
        line = history_line(
            "implement", "succeeded", run_id=run_id, checked=len(ticked), tests=verdict
        )
    elif flow == "review":
        counts = [
            sum(1 for f in result["findings"] if f["severity"] == s)
            for s in ("error", "warn", "info")
        ]
        line = history_line(
            "review",
            "succeeded",
            run_id=run_id,
            findings=(counts[0], counts[1], counts[2]),
            overall=result["overall"],
        )
    else:
        line = history_line("research", "succeeded", run_id=run_id, sources=len(result["sources"]))
    append_history(card, line)


# --- showing a result --------------------------------------------------------------------


def exit_code(result: Mapping[str, Any]) -> ExitCode:
    """The exit code of a command that ran one agent: 0 when it succeeded, 5 when a budget
    stopped it, 6 when it ended rate limited (the wait ran out), else 3 (README, "Exit
    codes")."""
    if result.get("status") == "succeeded":
        return ExitCode.OK
    run = result.get("run")
    outcome = run.get("outcome") if isinstance(run, Mapping) else None
    if outcome == "budget":
        return ExitCode.BUDGET
    if outcome == "rate_limited":
        return ExitCode.RATE_LIMITED
    return ExitCode.AGENT_FAILED


def print_result(result: Mapping[str, Any], *, as_json: bool, root: Path | None = None) -> None:
    """``--json``: the result; else the outcome line, the log folder, the formatted reply
    (docs/protocol.md, Agent replies) and, when the agent needs input, its questions and how to
    answer them."""
    if as_json:
        print(json.dumps(result, indent=2))
        return
    run_info = result["run"]
    run_id = run_info["runID"]
    print(f"{run_info['agent']}: {run_info['outcome']} - {run_info['reason']} (run {run_id})")
    logs = str(run_info.get("logDirectory") or "")
    print(f"  logs: {os.path.relpath(logs, root) if root and logs else logs}/")
    reply = run_info.get("reply")
    if not reply:
        return
    parsed = reply_from_json(reply)
    if parsed.status is ReplyStatus.COMPLETED and run_info["outcome"] != "succeeded":
        return  # a reply saying completed under a run that did not (stopped, failed, waited out)
    print()
    print(format_reply(parsed, icons=sys.stdout.isatty()), end="")
    if parsed.status is ReplyStatus.NEEDS_INPUT:
        print()
        print(f"The agent needs input. Answer with: gitflow-agents send {run_id} 'your answer'")
