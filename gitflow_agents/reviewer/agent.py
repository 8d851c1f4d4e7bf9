"""A configured agent (``.flow/`` agents) as the reviewer of a git range.

The agent gets the assembled system prompt and a review task naming the exact diff command and
the report contract (fenced JSON findings, the exact ``REVIEW_RESULT:`` line). It runs like every
agent run (``agent_run.run.execute``: supervised, with the same run records, result.json of the review
shape included); its completed report goes through the same parse → gate path as ``builtin``.
An agent that fails, gets stuck or times out is an AgentError (exit 3), never a verdict.
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
from gitflow_agents.base.errors import AgentError, RateLimitedError
from gitflow_agents.base.fsutil import MAX_REPORT_CHARS, read_agent_text
from gitflow_agents.base.redact import redact_text
from gitflow_agents.config import find_project_root, load_flow_config
from gitflow_agents.findings import Finding
from gitflow_agents.prompt import PromptRequest, agent_dir, assemble_prompt
from gitflow_agents.reviewer.incremental import Scope

if TYPE_CHECKING:
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
    scope: Scope | None = None,
) -> tuple[str, dict[str, Any]]:
    """Run the configured agent ``name`` on ``base``..``head`` (None: the staged changes), or
    on what ``scope`` says when it is an incremental one; its
    completed report's text. ConfigError for an unknown agent; AgentError when it does not
    complete. ``config_root``: where ``.flow/`` and ``.agents-flow/`` are read (the action
    passes the pull request's base commit: a pull request cannot change its own review). The
    agent works in ``root``, where its run records go, ``secrets`` (the diff's) masked."""
    project = find_project_root(root)
    settings = config_root if config_root is not None else project
    config = load_flow_config(settings)
    config.agent(name)  # ConfigError naming the known agents
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
        )
    )
    report, success, failure = files
    prompt_path = a_dir / "system_prompt.md"  # where the run writes it
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
        )
    )
    run = result["run"]
    logs = os.path.relpath(run["logDirectory"], Path.cwd())
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


def _review_task(base: str, head: str | None, files: ReportFiles, scope: Scope | None) -> str:
    """The assignment: which changes, the diff command that shows them (and, for an
    incremental review, the change's files and the findings still open), the report contract."""
    if scope is not None and scope.since is not None and head is not None:
        paths = " ".join(shlex.quote(f":(literal){f}") for f in scope.new_files)
        intro = INCREMENTAL_TASK.format(
            since=scope.since,
            head=head,
            base=base,
            diff_command=f"git diff {scope.since} {head} -- {paths}".rstrip(),
            files="\n".join(f"- {f}" for f in scope.files),
            open_findings=_open_section(scope),
        )
    elif head is None:
        intro = WHOLE_TASK.format(
            what="staged in the index", diff_command=f"git diff --cached {base}"
        )
    else:
        intro = WHOLE_TASK.format(
            what=f"from {base} to {head}", diff_command=f"git diff {base} {head}"
        )
    return intro + REVIEW_TASK.format(
        report=files.report,
        success=files.success.name,
        failed=files.failure.name,
        reviewed=head or "",
    )


def _open_section(scope: Scope) -> str:
    """The findings an earlier review left open, as lines for the task."""

    def line(finding: Finding) -> str:
        where = finding.file or "(no file)"
        if finding.line is not None:
            where += f":{finding.line}"
        rule = f" [{finding.rule}]" if finding.rule else ""
        return f"- {finding.severity.value}{rule} {where}: {' '.join(finding.message.split())}"

    parts = []
    if scope.carried:
        parts.append("Findings still open, on lines the new commits did not change (line numbers")
        parts.append("as they are now):")
        parts += [line(f) for f in scope.carried]
    if scope.touched:
        parts.append("Findings open before, on lines the new commits changed (as they were):")
        parts += [line(f) for f in scope.touched]
    return "\n".join(parts) + "\n" if parts else "No finding of the earlier review is open.\n"
