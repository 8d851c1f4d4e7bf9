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
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitflow_agents.agent_run.launch import report_files
from gitflow_agents.agent_run.record import USAGE_KEYS
from gitflow_agents.agent_run.run import AgentJob, execute, limits
from gitflow_agents.assets import load_manifest
from gitflow_agents.base.errors import AgentError, BudgetError, RateLimitedError
from gitflow_agents.base.fsutil import MAX_REPORT_CHARS, read_agent_text
from gitflow_agents.base.redact import redact_text
from gitflow_agents.config import find_project_root, load_flow_config
from gitflow_agents.findings.settings import excluded_note
from gitflow_agents.prompt import PromptRequest, agent_dir, assemble_prompt
from gitflow_agents.runs.budget import Ledger

if TYPE_CHECKING:
    from gitflow_agents.reviewer.acceptance import Scope
    from gitflow_agents.supervisor import ReportFiles

REVIEW_TASK = """\
Review the code changes {what}. See them with:

    {diff_command}

Check correctness, security (leaked secrets, injection), error handling, tests and readability.
Look only at what this change adds or modifies; do not edit any file.

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
) -> tuple[str, dict[str, Any]]:
    """Run the configured agent ``name`` on ``base``..``head`` (None: the staged changes); its
    completed report's text. ConfigError for an unknown agent; AgentError when it does not
    complete. ``config_root``: where ``.flow/`` and ``.agents-flow/`` are read (the action
    passes the pull request's base commit: a pull request cannot change its own review). The
    agent works in ``root``, where its run records go, ``secrets`` (the diff's) masked;
    ``budget``: the review's USD and token options over ``.flow/`` ``budget.review``;
    ``scope``: the changed paths it reviews (its diff leaves ``review.exclude`` out; the
    instructions whose ``applyTo`` matches one are attached to its prompt)."""
    project = find_project_root(root)
    settings = config_root if config_root is not None else project
    config = load_flow_config(settings)
    config.agent(name)  # ConfigError naming the known agents
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
            task=_review_task(base, head, files, scope),
            manifest=load_manifest(settings),
            changed=scope.reviewed if scope is not None else None,
        )
    )
    report, success, failure = files
    prompt_path = a_dir / "system_prompt.md"  # where the run writes it
    with ledger.scope("review"):
        ledger.refuse()  # a limit of 0 starts no reviewer
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
                prompt_segments=len(prompt.segments),
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
    if run.get("outcome") == "budget":  # not approved: no review came back
        raise BudgetError(
            f"agent {name} did not complete the review: {run['reason']} (logs: {logs})"
        )
    if result["status"] != "succeeded" or not success.exists():
        # the reason may quote the agent's output: it reaches the terminal, outputs, status
        failed = RateLimitedError if run["outcome"] == "rate_limited" else AgentError
        raise failed(
            f"agent {name} did not complete the review: {run['outcome']}: "
            f"{redact_text(str(run['reason']))} (logs: {logs})"
        )

    text = read_agent_text(success, MAX_REPORT_CHARS)  # bounded; "" for a symlink or FIFO
    return text, {key: run[key] for key in RECORD_USAGE if key in run}


RECORD_USAGE = (*USAGE_KEYS, "costEstimated")
"""The usage keys of a run record (``agent_run.record``), as a review's ``run`` carries them."""


def with_usage(run: Mapping[str, Any], usage: Mapping[str, Any]) -> dict[str, Any]:
    """A review's ``run`` (read from the agent's own findings block) with the usage of its run
    record instead of any the agent wrote: what the Action outputs and shows is measured."""
    return {**{k: v for k, v in run.items() if k not in RECORD_USAGE}, **usage}


def _review_task(
    base: str, head: str | None, files: ReportFiles, scope: Scope | None = None
) -> str:
    """The assignment: which changes, the diff command that shows them, the report contract;
    the files ``review.exclude`` keeps out of the review are left out of the diff and
    counted."""
    if head is None:
        what, diff_command = "staged in the index", f"git diff --cached {base}"
    else:
        what, diff_command = f"from {base} to {head}", f"git diff {base} {head}"
    excluded = scope.excluded if scope is not None else ()
    if scope is not None and excluded:
        diff_command += " -- " + " ".join(shlex.quote(spec) for spec in scope.pathspecs)
    task = REVIEW_TASK.format(
        what=what,
        diff_command=diff_command,
        report=files.report,
        success=files.success.name,
        failed=files.failure.name,
        reviewed=head or "",
    )
    if not excluded:
        return task
    them = "it" if len(excluded) == 1 else "them"
    note = (
        f"{excluded_note(len(excluded))} (vendored, generated or lock files): "
        f"that command leaves {them} out; do not review {them}.\n\n"
    )
    cut = task.index("Check correctness")
    return task[:cut] + note + task[cut:]
