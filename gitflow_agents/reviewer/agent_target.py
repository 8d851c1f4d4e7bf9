"""An agent reviewer's review of a target, and :func:`review_target`, the one review path for
either reviewer (the Action's; ``git agent-review`` imports this module only for ``--agent``).

The builtin reviewer's path is ``target.py``, which imports none of the agent's modules
(``agent_run/``, ``prompt/``, the incremental review): a small review's start-up (issue 20).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitflow_agents import findings
from gitflow_agents.agents import BUILTIN
from gitflow_agents.config import load_flow_config
from gitflow_agents.findings import GateResult, Review, Severity
from gitflow_agents.git import queries as git
from gitflow_agents.reviewer.acceptance import Acceptance, Scope, scope_of
from gitflow_agents.reviewer.agent import run_agent_review, with_usage
from gitflow_agents.reviewer.builtin import diff_secrets
from gitflow_agents.reviewer.checkout import kept_head
from gitflow_agents.reviewer.checks import CheckOptions
from gitflow_agents.reviewer.flow_settings import local_settings
from gitflow_agents.reviewer.incremental import (
    Earlier,
    decide,
    merged,
    reviewed_only,
    scope_digest,
)
from gitflow_agents.reviewer.incremental import Scope as Increment
from gitflow_agents.reviewer.target import Target, gated, line_lookup, review_builtin_target

if TYPE_CHECKING:
    from gitflow_agents.findings.settings import ReviewSettings
    from gitflow_agents.git.diffparse import FileChange


def runs_builtin(config_root: Path, agent: str) -> bool:
    """Whether the configured agent ``agent`` is the builtin reviewer (``adapter: builtin``, as
    ``init --example``'s ``reviewer``): it runs no CLI, so it reviews as ``--agent builtin``
    does (ConfigError, naming the known agents, for an agent the config lacks)."""
    return load_flow_config(config_root).agent(agent).adapter == BUILTIN


def review_target(
    root: Path,
    target: Target,
    *,
    agent: str,
    threshold: Severity,
    max_file_size: int,
    config_root: Path | None = None,
    acceptance: Acceptance | None = None,
    budget: tuple[float | None, int | None] = (None, None),
    earlier: Earlier | None = None,
    blobs: git.BlobReader | None = None,
    changes: Callable[[], tuple[FileChange, ...]] | None = None,
) -> tuple[Review, GateResult]:
    """Run the reviewer on ``target``, parse its report, mask the secrets in it, and gate it:
    the one review path (``git agent-review``, ``gitflow-agents action``). ``config_root``,
    ``budget``: see ``agent_report``; ``acceptance``: what the builtin reviewer accepts (none:
    nothing); ``earlier``: the last review of the range, for an incremental review
    (``incremental.py``; the Review's ``kind`` and ``kind_reason`` say which kind ran);
    ``blobs``: the caller's reader of the repository's contents (None: one of its own);
    ``changes``: the builtin reviewer's changed files, from a diff of ``target.spec`` the
    caller started (``git.AskedDiff``; None: the diff runs here)."""
    if agent == "builtin":
        return review_builtin_target(
            root,
            target,
            threshold=threshold,
            max_file_size=max_file_size,
            acceptance=acceptance,
            blobs=blobs,
            changes=changes,
        )
    settings = (acceptance or Acceptance()).settings
    if acceptance is None:  # the agent's own .flow/ (the base's in the Action)
        settings = local_settings(config_root or root)
    with contextlib.ExitStack() as stack:
        if blobs is None:
            blobs = stack.enter_context(git.BlobReader(root))
        guard = stack.enter_context(kept_head(root))  # it runs in the user's checkout
        parsed, secrets = _agent_review(
            root,
            agent,
            target,
            blobs,
            settings=settings,
            config_root=config_root,
            max_file_size=max_file_size,
            budget=budget,
            earlier=earlier,
        )
    review, verdict = gated(parsed, secrets, target, threshold, settings)
    if guard.undone:  # as a chain's round where a reviewer committed: not approved
        verdict = GateResult(False, 1, (*verdict.reasons, guard.undone), verdict.threshold)
    return review, verdict


def agent_report(
    root: Path,
    name: str,
    target: Target,
    *,
    config_root: Path | None = None,
    secrets: Iterable[str] = (),
    budget: tuple[float | None, int | None] = (None, None),
    increment: Increment | None = None,
    scope: Scope | None = None,
) -> tuple[str, dict[str, Any]]:
    """Run the configured agent ``name`` as the reviewer (supervised); its completed report and
    the usage its run record holds.
    ``config_root``: where ``.flow/`` and ``.agents-flow/`` are read (default: ``root``);
    ``secrets``: exact values masked in the run's records; ``budget``: the review's
    ``--budget-usd`` and ``--budget-tokens`` (None: ``.flow/`` ``budget.review``); ``scope``:
    the paths it reviews (``review.exclude``; None: every changed path); ``increment``: an
    incremental review's (None: the whole target)."""
    return run_agent_review(
        root,
        name,
        base=target.base,
        head=target.head,
        config_root=config_root,
        secrets=secrets,
        budget=budget,
        increment=increment,
        scope=scope,
    )


def _whole_range(review: Review, increment: Increment) -> tuple[Review, Increment]:
    """After an incremental review: ``review``'s findings are the whole range's (the open ones
    carried over, ``incremental.merged``), and the reason counts what carried over and what
    was fixed."""
    if increment.since is None:
        return review, increment
    found, fixed = merged(increment, review.findings)
    carried = len(found) - len(review.findings)
    why = f"{increment.reason}; {carried} open finding(s) carried over, {fixed} fixed"
    return review._replace(findings=found), increment._replace(reason=why)


def _agent_review(
    root: Path,
    agent: str,
    target: Target,
    blobs: git.BlobReader,
    *,
    settings: ReviewSettings,
    config_root: Path | None,
    max_file_size: int,
    budget: tuple[float | None, int | None],
    earlier: Earlier | None,
) -> tuple[Review, frozenset[str]]:
    """An agent reviewer's parsed review of ``target`` (whole, or incremental since
    ``earlier``'s head) and the exact secret values of the diff; see ``review_target``."""
    digest = scope_digest(settings)  # a full review when review.exclude changed since
    increment = decide(root, target.base, target.head, agent, earlier or Earlier(), digest)
    increment = reviewed_only(increment, settings)  # review.exclude: no finding carries over
    scope = scope_of(settings, git.numstat(root, target.spec))
    if target.paths:  # only these files (the hook's, from pre-commit): its diff command says so
        scope = scope._replace(pathspecs=(*git.literal_pathspecs(target.paths), *scope.pathspecs))
    secrets = diff_secrets(root, target.spec, CheckOptions(max_file_bytes=max_file_size))
    report, usage = agent_report(
        root,
        agent,
        target,
        config_root=config_root,
        secrets=secrets,
        budget=budget,
        scope=scope,
        increment=increment if increment.since is not None else None,
    )
    parsed = findings.parse_review(
        report,
        reviewed_sha=target.head,
        base_sha=target.base,
        source=f"{agent} report",
        line_content=line_lookup(blobs, target.head),
        root=root,  # where the reviewer worked: its absolute paths are made relative to it
    )
    parsed = parsed._replace(
        run=with_usage(parsed.run, usage), excluded_files=len(scope.excluded), scope_digest=digest
    )
    parsed, increment = _whole_range(parsed, increment)
    return parsed._replace(kind=increment.kind, kind_reason=increment.reason), secrets
