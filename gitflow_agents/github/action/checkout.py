"""A pull request or a merge queue's group in the runner's checkout, reviewed the way
``git agent-review`` reviews.

The head and base commits must be in the checkout; a missing one is fetched from ``origin``
(objects only: nothing is checked out or run): ``refs/pull/N/head`` for a PR, the group's refs
(and then the commit itself) for a merge group. Configuration comes from a work tree of the base
commit, never from the reviewed commits' own files; docs/github.md, "Configuration comes from
the base branch" and "Merge queue".
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from gitflow_agents.base.errors import GitflowError, UsageError
from gitflow_agents.findings import GateResult, Review
from gitflow_agents.git import queries as git
from gitflow_agents.github.action import comment
from gitflow_agents.github.action.publish import outcome_label
from gitflow_agents.github.action.runner import Options
from gitflow_agents.github.api.client import PullRequest
from gitflow_agents.github.api.values import MergeGroup
from gitflow_agents.reviewer.agent_target import review_target, runs_builtin
from gitflow_agents.reviewer.flow_settings import acceptance_at, settings_at
from gitflow_agents.reviewer.incremental import Earlier, Prior, findings_from, recorded_scope
from gitflow_agents.reviewer.locate import empty_range, missing_history
from gitflow_agents.reviewer.target import Target
from gitflow_agents.runs.spend import NOTHING, run_spend


def ensure_commit(root: Path, sha: str, number: int) -> None:
    """The PR head must be in the checkout; fetch ``refs/pull/N/head`` once if it is not
    (objects only: nothing from the PR is checked out or run)."""
    fetch_missing(root, sha, [f"+refs/pull/{number}/head"], f"commit {sha[:12]} of PR #{number}")


def fetch_missing(root: Path, sha: str, refspecs: Sequence[str], what: str) -> None:
    """``sha`` must be in the checkout: when it is not, fetch ``refspecs`` from ``origin`` one
    by one until it is (objects only); UsageError naming ``what`` when none brings it."""
    for refspec in ("", *refspecs):
        if refspec:
            git.fetch_ref(root, refspec)
        try:
            git.rev_parse(root, sha)
            return
        except UsageError:
            continue
    raise UsageError(
        f"{what} is not in the checkout at {root} and could not be fetched from origin: "
        "use actions/checkout with fetch-depth: 0"
    )


def ensure_group(root: Path, group: MergeGroup) -> None:
    """Both commits of a merge group in the checkout. actions/checkout fetches only the group's
    head (``fetch-depth: 1``); the base is fetched by its ref, then by its sha."""
    for sha, ref, which in (
        (group.head_sha, group.head_ref, "head"),
        (group.base_sha, group.base_ref, "base"),
    ):
        fetch_missing(
            root, sha, _refspecs(sha, ref), f"the merge group's {which} commit {sha[:12]}"
        )


def _refspecs(sha: str, ref: str) -> list[str]:
    """What to fetch ``sha`` by: its plain ref (``refs/heads/…``), then the sha itself."""
    return [ref, sha] if ref.startswith("refs/") else [sha]


# How far a shallow checkout is deepened, one step after the other, before all of it is fetched.
_DEEPEN_STEPS = (1, 16, 256)


def ensure_history(root: Path, target: Target, refspec: str) -> None:
    """Every commit of ``target``'s range in the checkout: actions/checkout's default clone is
    one commit deep, and the range's commits past that boundary (and what they add) are not
    there. The history is deepened from ``origin`` (fetching ``refspec``, objects only) in
    growing steps, then unshallowed; UsageError when the range is still not whole."""
    for depth in (*_DEEPEN_STEPS, None):
        if missing_history(root, target) is None:
            return
        git.deepen(root, refspec, depth)
    missing = missing_history(root, target)
    if missing is not None:
        raise UsageError(f"{missing} (fetching them from origin did not bring them)")


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


@contextlib.contextmanager
def before_agent() -> Iterator[None]:
    """A review's preparation (its commits fetched, the base's configuration read), before
    any agent starts: a GitflowError raised here that does not say what was spent spent
    nothing, which is known (``NOTHING``), so the spend outputs and the run-history row say
    0, not unknown (docs/github.md, "Outputs")."""
    try:
        yield
    except GitflowError as exc:
        if exc.spent is None:
            exc.spent = NOTHING.to_json()
        raise


def review_pull(
    workspace: Path,
    pull: PullRequest,
    options: Options,
    temp: Path | None = None,
    earlier: Earlier | None = None,
) -> tuple[Review, GateResult, comment.RunRow]:
    """Review the PR's head against its merge-base with the base commit. A configured agent
    (``options.agent`` other than ``builtin``) is defined by the base commit's ``.flow/``, and
    reviews incrementally when ``earlier`` knows the last reviewed head and the base commit's
    ``review.incremental`` allows it. A head already contained in the base leaves no commit to
    review: UsageError, never an approval of nothing (``locate.empty_range``)."""
    with before_agent():
        root = git.repo_root(workspace)
        ensure_commit(root, pull.head_sha, pull.number)
        ensure_commit(root, pull.base_sha, pull.number)
        empty = empty_range(root, pull.base_sha, pull.head_sha)
        if empty is not None:
            raise UsageError(nothing_in_pull(pull, empty))
        base = git.merge_base(root, pull.base_sha, pull.head_sha)
        target = Target(base, pull.head_sha, f"PR #{pull.number}")
        ensure_history(root, target, f"+refs/pull/{pull.number}/head")
    return _review(root, target, pull.base_sha, options, temp, earlier)


def nothing_in_pull(pull: PullRequest, why: str) -> str:
    """The line for a pull request whose range holds no commit (``why``: ``empty_range``'s)."""
    return (
        f"PR #{pull.number} has nothing to review between its base {pull.base_sha[:12]} and "
        f"its head {pull.head_sha[:12]} ({why}), so no review is recorded and the head is not "
        "approved: push the pull request's changes to its branch, or close it"
    )


def review_group(
    workspace: Path, group: MergeGroup, options: Options, temp: Path | None = None
) -> tuple[Review, GateResult, comment.RunRow]:
    """Review a merge queue's group: ``base_sha..head_sha`` (every queued change the group
    holds), configured by the base commit like a PR."""
    with before_agent():
        root = git.repo_root(workspace)
        ensure_group(root, group)
        target = Target(group.base_sha, group.head_sha, group.label)
        ensure_history(root, target, _refspecs(group.head_sha, group.head_ref)[0])
    return _review(root, target, group.base_sha, options, temp)


def _review(
    root: Path,
    target: Target,
    config_sha: str,
    options: Options,
    temp: Path | None,
    earlier: Earlier | None = None,
) -> tuple[Review, GateResult, comment.RunRow]:
    """``target`` reviewed by ``options.agent`` (defined by ``config_sha``'s configuration;
    for the builtin reviewer, what it accepts), with its run-history row."""
    started = time.monotonic()
    agent = options.agent
    with contextlib.ExitStack() as stack:
        with before_agent():
            config_root = None
            acceptance = None
            if agent != "builtin":
                scratch = temp if temp is not None else Path(tempfile.gettempdir())
                config_root = stack.enter_context(base_checkout(root, config_sha, scratch))
                if runs_builtin(config_root, agent):  # a configured agent that is the builtin
                    agent, config_root = "builtin", None
            if agent == "builtin":  # its review: settings and baseline, read from git
                acceptance = acceptance_at(root, config_sha)
            elif earlier is not None:
                earlier = earlier._replace(enabled=settings_at(root, config_sha).incremental)
        result, gate = review_target(
            root,
            target,
            agent=agent,
            threshold=options.threshold,
            max_file_size=options.max_file_size,
            config_root=config_root,
            acceptance=acceptance,
            earlier=earlier,
        )
    stats = git.numstat(root, target.spec)
    run = result.run if isinstance(result.run, dict) else {}
    usage = _usage(agent, run)
    row = comment.RunRow(
        flow="review",
        agent=options.agent,
        outcome=outcome_label(result, gate),
        step=target.label,
        iterations=1,
        files_changed=len(stats),
        insertions=sum(a or 0 for a, _ in stats.values()),
        deletions=sum(d or 0 for _, d in stats.values()),
        duration_s=time.monotonic() - started,
        **usage,
    )
    return result, gate, row


def _usage(agent: str, run: Mapping[str, Any]) -> dict[str, Any]:
    """The review's usage for its RunRow: the builtin reviewer calls no model (0 tokens, $0:
    that is known); an agent reviewer's is its run record's, unknown where that does not say."""
    if agent == "builtin":
        return {"tokens": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    return comment.usage_fields(run_spend(run))


def earlier_review(body: str | None, since: str, agent: str) -> Earlier:
    """The last review a ``synchronize`` builds on: the state our summary comment (``body``)
    records for ``since``, the head before the push. Only that head counts: an event that is
    not a push to the PR (``since`` ""), or a head the comment does not remember, gets a full
    review saying why."""
    if not since:
        return Earlier(
            unknown="only a push to the pull request (synchronize) is reviewed incrementally"
        )
    for state in comment.recorded_states(body or ""):
        found = findings_from(state.get("openFindings"))
        if state.get("reviewedSha") == since and found is not None:
            base, by = state.get("baseSha"), state.get("agent")
            base = base if isinstance(base, str) else ""
            prior = Prior(since, base, str(by), found, recorded_scope(state))
            return Earlier(prior)
    return Earlier(
        unknown=f"the summary comment records no review of {since[:12]}, the head before the push"
    )
