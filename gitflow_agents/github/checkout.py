"""The pull request in the runner's checkout, reviewed the way ``git agent-review`` reviews.

The PR's head and base commits must be in the checkout (``refs/pull/N/head`` is fetched once
when they are not: objects only, nothing from the PR is checked out or run). Configuration comes
from a work tree of the base commit, never from the PR's own files; docs/github.md,
"Configuration comes from the base branch".
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from gitflow_agents import git
from gitflow_agents.errors import UsageError
from gitflow_agents.findings import GateResult, Review
from gitflow_agents.github import comment
from gitflow_agents.github.client import PullRequest
from gitflow_agents.github.publish import float_or_none, int_or_none, outcome_label
from gitflow_agents.github.runner import Options


def ensure_commit(root: Path, sha: str, number: int) -> None:
    """The PR head must be in the checkout; fetch ``refs/pull/N/head`` once if it is not
    (objects only: nothing from the PR is checked out or run)."""
    try:
        git.rev_parse(root, sha)
        return
    except UsageError:
        pass
    git.fetch_ref(root, f"+refs/pull/{number}/head")
    try:
        git.rev_parse(root, sha)
    except UsageError:
        raise UsageError(
            f"commit {sha[:12]} of PR #{number} is not in the checkout at {root}: "
            "use actions/checkout with fetch-depth: 0"
        ) from None


@contextlib.contextmanager
def base_checkout(root: Path, sha: str, temp: Path) -> Iterator[Path]:
    """A detached work tree of ``sha`` (the PR's base commit) under ``temp``, removed afterwards.

    Configuration, plans and agent definitions are read from here, never from the PR's own
    files: a pull request that edits ``.flow/`` cannot choose or weaken its own reviewer."""
    temp.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="base-config-", dir=temp))
    path.rmdir()  # `git worktree add` creates it
    git.add_worktree(root, path, sha, detach=True)
    try:
        yield path
    finally:
        git.remove_worktree(root, path)


def review_pull(
    workspace: Path, pull: PullRequest, options: Options, temp: Path | None = None
) -> tuple[Review, GateResult, comment.RunRow]:
    """Review the PR's head against its merge-base with the base commit. A configured agent
    (``options.agent`` other than ``builtin``) is defined by the base commit's ``.flow/``."""
    from gitflow_agents.commands.review import Target, review_target

    root = git.repo_root(workspace)
    ensure_commit(root, pull.head_sha, pull.number)
    ensure_commit(root, pull.base_sha, pull.number)
    base = git.merge_base(root, pull.base_sha, pull.head_sha)
    target = Target(base, pull.head_sha, f"PR #{pull.number}")
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        config_root = None
        if options.agent != "builtin":  # the builtin reviewer reads no configuration at all
            scratch = temp if temp is not None else Path(tempfile.gettempdir())
            config_root = stack.enter_context(base_checkout(root, pull.base_sha, scratch))
        result, gate = review_target(
            root,
            target,
            agent=options.agent,
            threshold=options.threshold,
            max_file_size=options.max_file_size,
            config_root=config_root,
        )
    stats = git.numstat(root, target.spec)
    run = result.run if isinstance(result.run, dict) else {}
    row = comment.RunRow(
        flow="review",
        agent=options.agent,
        outcome=outcome_label(result, gate),
        step=f"PR #{pull.number}",
        iterations=1,
        files_changed=len(stats),
        insertions=sum(a or 0 for a, _ in stats.values()),
        deletions=sum(d or 0 for _, d in stats.values()),
        duration_s=time.monotonic() - started,
        tokens=int_or_none(run.get("tokens")),
        cost_usd=float_or_none(run.get("cost_usd")),
    )
    return result, gate, row
