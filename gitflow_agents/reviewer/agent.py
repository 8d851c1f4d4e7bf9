"""A configured agent (``.flow/`` agents) as the reviewer of a git range.

The agent gets the assembled system prompt and a review task naming the exact diff command and
the report contract (fenced JSON findings, the exact ``REVIEW_RESULT:`` line). It runs like every
agent run (``agent_run.run.execute``: supervised, with the same run records, result.json of the review
shape included); its completed report goes through the same parse → gate path as ``builtin``.
An agent that fails, gets stuck or times out is an AgentError (exit 3), never a verdict; one a
budget stopped (or did not start) is a BudgetError (exit 5): not approved either.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitflow_agents.agent_run.launch import report_files
from gitflow_agents.agent_run.record import USAGE_KEYS
from gitflow_agents.agent_run.run import AgentJob, execute, limits
from gitflow_agents.assets import load_manifest
from gitflow_agents.base.errors import AgentError, BudgetError, GitflowError, RateLimitedError
from gitflow_agents.base.fsutil import MAX_REPORT_CHARS, read_agent_text
from gitflow_agents.base.redact import redact_text
from gitflow_agents.config import find_project_root, load_flow_config
from gitflow_agents.findings import Finding
from gitflow_agents.findings.settings import excluded_note
from gitflow_agents.prompt import PromptRequest, agent_dir, assemble_prompt
from gitflow_agents.reviewer.incremental import Scope as Increment
from gitflow_agents.runs.budget import Ledger

if TYPE_CHECKING:
    from gitflow_agents.reviewer.acceptance import Scope
    from gitflow_agents.supervisor import ReportFiles

WHOLE_TASK = """\
Review the code changes {what}. See them with:

    {diff_command}

Check correctness, security (leaked secrets, injection), error handling, tests and readability.
Look only at what this change adds or modifies; do not edit any file.

"""

INCREMENTAL_TASK = """\
Review the commits pushed since the last review of this change: from {since} to {head}. See
them with:

    {diff_command}

They continue the change {base}..{head}, whose earlier commits were reviewed already; its files:
{files}
Read any of these at {head} when you need context, but review only what the command above shows.
Check correctness, security (leaked secrets, injection), error handling, tests and readability;
do not edit any file.

{open_findings}
Your verdict covers the whole change: the findings still open above are kept by the tool, so do
not repeat them. One on lines the new commits changed stays only if you report it again.

"""

REVIEW_TASK = """\
Write your review to {report}. It must contain:
1. a short summary;
2. one fenced ```json block with this shape (line numbers are in the NEW version of each file):
   {{"overall": "approve" | "revise", "summary": "...", "reviewed_sha": "{reviewed}",
     "findings": [{{"severity": "error" | "warn" | "info", "file": "path", "line": 12,
                   "message": "...", "suggestion": "...", "rule": "short-id"}}]}}
3. as the LAST line, exactly one of these, alone on its line and without decoration:
   REVIEW_RESULT: APPROVED
   REVIEW_RESULT: REVISE

When the report is written, rename it to {success}; if you could not review, rename it to {failed}.
"""


def run_agent_review(
    root: Path,
    name: str,
    *,
    base: str,
    head: str | None,
    quiet: bool = False,
    config_root: Path | None = None,
    secrets: Iterable[str] = (),
    budget: tuple[float | None, int | None] = (None, None),
    scope: Scope | None = None,
    increment: Increment | None = None,
) -> tuple[str, dict[str, Any]]:
    """Run the configured agent ``name`` on ``base``..``head`` (None: the staged changes), or
    on what ``increment`` says when it is an incremental one; its
    completed report's text. ConfigError for an unknown agent; AgentError when it does not
    complete. ``config_root``: where ``.flow/`` and ``.agents-flow/`` are read (the action
    passes the pull request's base commit: a pull request cannot change its own review). The
    agent works in ``root``, where its run records go, ``secrets`` (the diff's) masked;
    ``budget``: the review's USD and token options over ``.flow/`` ``budget.review``;
    ``scope``: the changed paths it reviews (its diff leaves ``review.exclude`` out; the
    instructions whose ``applyTo`` matches one are attached to its prompt); ``increment``: an
    incremental review's new commits and open findings (None: the whole range)."""
    project = find_project_root(root)
    settings = config_root if config_root is not None else project
    config = load_flow_config(settings)
    adapter = config.agent(name).adapter  # ConfigError naming the known agents
    ledger = Ledger(config.budget.with_option("review", *budget), config.prices)
    flow_name, agent_id = "review", f"review-{name}"
    a_dir = agent_dir(project, config.flow_dir, flow_name, agent_id)
    files = report_files(config, name, a_dir)
    for stale in files:  # the previous review by this agent
        stale.unlink(missing_ok=True)

    prompt = assemble_prompt(
        PromptRequest(
            root=settings,
            config=config,
            agent=name,
            agent_id=agent_id,
            flow_name=flow_name,
            task=_review_task(base, head, files, scope, increment),
            manifest=load_manifest(settings),
            changed=scope.reviewed if scope is not None else None,
        )
    )
    report, success, failure = files
    prompt_path = a_dir / "system_prompt.md"  # where the run writes it
    with ledger.scope("review"):
        ledger.refuse(adapter)  # a limit of 0 starts no reviewer that calls a model
        result = execute(
            AgentJob(
                root=project,
                config=config,
                agent=name,
                agent_id=agent_id,
                flow_name=flow_name,
                kind="review",
                secrets=frozenset(secrets),
                prompt_text=prompt.text,
                prompt_segments=prompt.segments,
                task=(
                    f"Follow the instructions in your system prompt ({prompt_path}). "
                    f"Write your review to {report}; when done rename it to {success.name}, "
                    f"or to {failure.name} if you could not review."
                ),
                limits=limits(config),
                quiet=quiet,
                tty=False,
                budget=ledger,
            )
        )
    run = result["run"]
    logs = os.path.relpath(run["logDirectory"], Path.cwd())
    error: GitflowError | None = None
    if run.get("outcome") == "budget":  # not approved: no review came back
        error = BudgetError(
            f"agent {name} did not complete the review: {run['reason']} (logs: {logs})"
        )
    elif result["status"] != "succeeded" or not success.exists():
        # the reason may quote the agent's output: it reaches the terminal, outputs, status
        failed = RateLimitedError if run["outcome"] == "rate_limited" else AgentError
        error = failed(
            f"agent {name} did not complete the review: {run['outcome']}: "
            f"{redact_text(str(run['reason']))} (logs: {logs})"
        )
    if error is not None:
        error.spent = {key: run[key] for key in RECORD_USAGE if key in run}  # spent even so
        error.outcome = str(run.get("outcome") or "failed")
        raise error

    text = read_agent_text(success, MAX_REPORT_CHARS)  # bounded; "" for a symlink or FIFO
    return text, {key: run[key] for key in RECORD_USAGE if key in run}


RECORD_USAGE = (*USAGE_KEYS, "costEstimated")
"""The usage keys of a run record (``agent_run.record``), as a review's ``run`` carries them."""


def with_usage(run: Mapping[str, Any], usage: Mapping[str, Any]) -> dict[str, Any]:
    """A review's ``run`` (read from the agent's own findings block) with the usage of its run
    record instead of any the agent wrote: what the Action outputs and shows is measured."""
    return {**{k: v for k, v in run.items() if k not in RECORD_USAGE}, **usage}


def _review_task(
    base: str,
    head: str | None,
    files: ReportFiles,
    scope: Scope | None = None,
    increment: Increment | None = None,
) -> str:
    """The assignment: which changes, the diff command that shows them (and, for an
    incremental review, the change's files and the findings still open), the report contract;
    the files ``review.exclude`` keeps out of the review are left out of the diff and
    counted."""
    excluded = scope.excluded if scope is not None else ()
    limit = ""
    if scope is not None and scope.pathspecs:  # the excluded files', and the only files'
        limit = " -- " + " ".join(shlex.quote(spec) for spec in scope.pathspecs)
    if increment is not None and increment.since is not None and head is not None:
        intro = incremental_intro(increment, base, head, excluded, limit[4:])
    elif head is None:
        intro = WHOLE_TASK.format(
            what="staged in the index", diff_command=f"git diff --cached {base}{limit}"
        )
    else:
        intro = WHOLE_TASK.format(
            what=f"from {base} to {head}", diff_command=f"git diff {base} {head}{limit}"
        )
    if excluded:
        them = "it" if len(excluded) == 1 else "them"
        note = (
            f"{excluded_note(len(excluded))} (vendored, generated or lock files): "
            f"that command leaves {them} out; do not review {them}.\n\n"
        )
        cut = intro.index("Check correctness")
        intro = intro[:cut] + note + intro[cut:]
    return intro + REVIEW_TASK.format(
        report=files.report,
        success=files.success.name,
        failed=files.failure.name,
        reviewed=head or "",
    )


UNREADABLE = "\ufffd"
"""What stands in a path git reports for each byte that is not UTF-8 (git's output is read
lossily): a ``:(literal)`` pathspec of that path matches no file, so an incremental review's
diff command then names no file (it shows every file the new commits changed; the files
``review.exclude`` leaves out stay out), rather than leave one unreviewed."""


def incremental_intro(
    increment: Increment, base: str, head: str, excluded: Sequence[str] = (), limit: str = ""
) -> str:
    """The assignment of an incremental review (``INCREMENTAL_TASK``): the commits since
    ``increment.since``, their diff command over the change's files (``excluded`` left out;
    ``limit``: the pathspecs when none of them changed, or when one of them has a name that
    is not UTF-8), the change's files and the findings still open. ``git agent-review``, the
    Action and a chain's re-review after a fix."""
    left_out = set(excluded)
    new_files = [f for f in increment.new_files if f not in left_out]
    if any(UNREADABLE in f for f in new_files):  # no pathspec would match it: name none
        new_files = []
    paths = " ".join(shlex.quote(f":(literal){f}") for f in new_files) or limit
    return INCREMENTAL_TASK.format(
        since=increment.since,
        head=head,
        base=base,
        diff_command=f"git diff {increment.since} {head}" + (f" -- {paths}" if paths else ""),
        files="\n".join(f"- {f}" for f in increment.files if f not in left_out),
        open_findings=_open_section(increment),
    )


def open_finding_line(finding: Finding) -> str:
    """A finding still open, as one line of an agent's task (``- error [rule] path:12: …``)."""
    where = finding.file or "(no file)"
    if finding.line is not None:
        where += f":{finding.line}"
    rule = f" [{finding.rule}]" if finding.rule else ""
    return f"- {finding.severity.value}{rule} {where}: {' '.join(finding.message.split())}"


def _open_section(increment: Increment) -> str:
    """The findings an earlier review left open, as lines for the task."""
    parts = []
    if increment.carried:
        parts.append("Findings still open, on lines the new commits did not change (line numbers")
        parts.append("as they are now):")
        parts += [open_finding_line(f) for f in increment.carried]
    if increment.touched:
        parts.append("Findings open before, on lines the new commits changed (as they were):")
        parts += [open_finding_line(f) for f in increment.touched]
    return "\n".join(parts) + "\n" if parts else "No finding of the earlier review is open.\n"
