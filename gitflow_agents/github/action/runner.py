"""What the GitHub Actions runner gives the action and reads back from it.

In: the ``GITHUB_*`` environment (``RunnerEnv``) and the action's inputs (``Options``, mapped
from action.yml's inputs to ``gitflow-agents action`` flags). Out: the step's outputs
(``GITHUB_OUTPUT``), the job summary (``GITHUB_STEP_SUMMARY``) and workflow commands on stdout
(notices and warnings); docs/github.md, "Inputs" and "Outputs".
"""

from __future__ import annotations

import secrets
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitflow_agents.base.errors import InputError, UsageError
from gitflow_agents.base.fsutil import ReadRefused, read_limited
from gitflow_agents.base.jsondata import JsonProblem, loads
from gitflow_agents.findings import Severity
from gitflow_agents.github.action import review
from gitflow_agents.github.api.settings import owner_name
from gitflow_agents.render.annotations import command

PREFIX = "gitflow-agents"
DEFAULT_SERVER_URL = "https://github.com"


def server_url_from(environ: Mapping[str, str]) -> str:
    """``GITHUB_SERVER_URL`` (GitHub Enterprise: its host), else github.com; no trailing slash."""
    return (environ.get("GITHUB_SERVER_URL") or DEFAULT_SERVER_URL).rstrip("/")


def workflow_run_url(server_url: str, repository: str, run_id: str | None) -> str | None:
    """The page of workflow run ``run_id``; None outside one."""
    return f"{server_url}/{repository}/actions/runs/{run_id}" if run_id else None


def comment_author(value: str | None) -> str | None:
    """The ``comment-author`` input: None when not given; the login with the spaces around it
    dropped. UsageError (exit 2) for a value that cannot be a login (blank, or with a space
    in it), which would find none of our comments and post anew on every run."""
    if value is None or value == "":
        return None
    login = value.strip()
    if not login or any(c.isspace() or not c.isprintable() for c in login):
        raise UsageError(
            f"the comment-author input {value!r} is not a GitHub login: set it to the login the "
            "token writes as (github-actions[bot] for GITHUB_TOKEN), or leave it empty to have "
            "it learned"
        )
    return login


@dataclass(frozen=True)
class Options:
    agent: str = "builtin"
    threshold: Severity = Severity.ERROR
    fail_on: str = "revise"
    max_inline: int = review.MAX_INLINE
    max_file_size: int = 1024 * 1024
    review_drafts: bool = False
    allow_bots: bool = False
    comment_author: str | None = None
    """Login our comments are written as, when the token cannot say (``GET /user``)."""
    check_run: bool = False
    """Also create a check run with the findings as annotations (skipped when the token may not)."""
    post_findings: Path | None = None
    """Post this findings JSON (from an earlier review job) instead of reviewing."""
    fixer: str = "fixer"
    """The ``.flow/`` agent ``/agent fix`` runs (defined by the base commit's configuration)."""


@dataclass(frozen=True)
class RunnerEnv:
    event_name: str
    event_path: Path
    repository: str
    workspace: Path
    output: Path | None = None
    step_summary: Path | None = None
    server_url: str = DEFAULT_SERVER_URL
    run_id: str | None = None
    run_attempt: str | None = None
    temp: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))

    @property
    def run_url(self) -> str | None:
        return workflow_run_url(self.server_url, self.repository, self.run_id)


def read_runner_env(environ: Mapping[str, str]) -> RunnerEnv:
    """The ``GITHUB_*`` variables the runner sets; UsageError naming any that is missing."""
    missing = [
        name
        for name in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY")
        if not environ.get(name)
    ]
    if missing:
        raise UsageError(
            f"not running in GitHub Actions: {', '.join(missing)} not set "
            "(run `git agent-review` locally instead)"
        )

    def path(name: str) -> Path | None:
        value = environ.get(name)
        return Path(value) if value else None

    return RunnerEnv(
        event_name=environ["GITHUB_EVENT_NAME"],
        event_path=Path(environ["GITHUB_EVENT_PATH"]),
        repository=owner_name(environ["GITHUB_REPOSITORY"]),
        workspace=Path(environ.get("GITHUB_WORKSPACE") or Path.cwd()),
        output=path("GITHUB_OUTPUT"),
        step_summary=path("GITHUB_STEP_SUMMARY"),
        server_url=server_url_from(environ),
        run_id=environ.get("GITHUB_RUN_ID") or None,
        run_attempt=environ.get("GITHUB_RUN_ATTEMPT") or None,
        temp=Path(environ.get("RUNNER_TEMP") or tempfile.gettempdir()),
    )


def run_id_for(env: RunnerEnv) -> str:
    """``RUN_ID-ATTEMPT`` of the workflow run; a unique local id outside one."""
    if env.run_id:
        return f"{env.run_id}-{env.run_attempt or '1'}"
    return f"local-{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


MAX_JSON_BYTES = 64 * 1024 * 1024
"""An event payload or findings file larger than this is refused (GitHub caps webhook
payloads at 25 MB)."""


def read_json(path: Path, what: str) -> Any:
    """The JSON in ``path``; InputError naming the file (and line) when unreadable or invalid:
    not a regular file, over :data:`MAX_JSON_BYTES`, not UTF-8, nested too deeply, numbers
    out of range (gitflow_agents/base/jsondata.py). Lone surrogates become U+FFFD."""
    try:
        data = read_limited(path, MAX_JSON_BYTES)
    except ReadRefused as exc:
        raise InputError(f"cannot read the {what}: {exc.reason}", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}", path=path) from None
    try:
        return loads(data)
    except JsonProblem as exc:
        column = f" (column {exc.column})" if exc.column is not None else ""
        joint = " is " if exc.message.startswith("not ") else ": "
        raise InputError(f"{what}{joint}{exc.message}{column}", path=path, line=exc.line) from None


def write_outputs(path: Path | None, values: Mapping[str, str]) -> None:
    """Append ``name<<DELIM`` … ``DELIM`` blocks (a random delimiter: no value can end one)."""
    if path is None:
        return
    chunks = []
    for name, value in values.items():
        delimiter = f"ghadelimiter_{secrets.token_hex(12)}"
        chunks.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(chunks))


def append_summary(path: Path | None, markdown: str) -> None:
    if path is None:
        return
    with path.open("a", encoding="utf-8") as handle:
        handle.write(markdown.rstrip("\n") + "\n\n")


def github_failed(
    env: RunnerEnv, exc: Exception, outputs: Mapping[str, str], summary: str = ""
) -> None:
    """A run GitHub failed after its retries (exit 4) writes the job summary (``summary``;
    empty when the caller wrote it) and every output all the same: ``outputs``, with
    ``review-result`` ``error`` and ``github-error`` the error line (docs/github.md,
    "Outputs")."""
    if summary:
        append_summary(env.step_summary, summary)
    write_outputs(env.output, {**outputs, "review-result": "error", "github-error": str(exc)})


def notice(kind: str, message: str) -> None:
    """A workflow command on stdout (``notice``, ``warning``, ``error``)."""
    print(command(kind, message, title=PREFIX), flush=True)
