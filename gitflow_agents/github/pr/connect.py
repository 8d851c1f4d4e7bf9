"""GitHub for ``run PLAN --pr``, found and checked before anything is claimed.

``connect`` finds it as the action does (docs/github.md, "Plan steps as pull requests"): token
``GITHUB_TOKEN`` else ``GH_TOKEN``, repository ``GITHUB_REPOSITORY`` else ``origin``'s URL, API
``GITHUB_API_URL``; what is missing is a usage error (exit 2). ``check_access`` then asks
GitHub once (``GET /repos/{repo}``): a bad token, a repository the token cannot see, or an API
that cannot be reached is exit 4 before the claim and before any agent, so nothing is claimed
that a run could not publish. ``on_origin`` then fetches origin's target (what cannot be fetched
is said, exit 2), and ``guarded`` reads what guards it when auto-merge is asked; ``run --pr``
and ``plan tend`` start alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gitflow_agents.base.errors import GitError, GitflowError, GitHubError, UsageError
from gitflow_agents.chain import Context
from gitflow_agents.chain.state import fetch_target, target_tip
from gitflow_agents.git import queries as git
from gitflow_agents.github.action.fixer import BOT_EMAIL
from gitflow_agents.github.action.runner import server_url_from, workflow_run_url
from gitflow_agents.github.api.client import ACTIONS_BOT_LOGIN, Client
from gitflow_agents.github.api.rules import TargetGuard, branch_guard
from gitflow_agents.github.api.settings import (
    repository_from,
    settings_from_env,
    without_credentials,
)
from gitflow_agents.github.pr import lease as leases
from gitflow_agents.github.pr.startable import REMOTE

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"]+")
"""A URL inside git's words, whose user info is masked before it is shown."""


@dataclass(frozen=True)
class GitHub:
    client: Client
    repo: str
    server_url: str
    run_url: str | None
    guard: TargetGuard | None = None  # what guards the target (read when auto-merge is asked)
    claimant: dict[str, Any] = field(default_factory=dict)  # who claims (github/pr/lease.py)
    ttl: float = leases.DEFAULT_TTL  # a lease older than this that stopped renewing is free


def connect(environ: Mapping[str, str], root: Path) -> GitHub:
    """GitHub as the action finds it (docs/github.md): token ``GITHUB_TOKEN`` else
    ``GH_TOKEN``, repository ``GITHUB_REPOSITORY`` else ``origin``'s URL, API
    ``GITHUB_API_URL``. UsageError (exit 2) naming what is missing."""
    url = git.remote_url(root, REMOTE)
    if url is None:
        raise UsageError(f"--pr pushes the step branch to {REMOTE}, and this repository has none")
    missing = []
    if not (environ.get("GITHUB_TOKEN") or environ.get("GH_TOKEN")):
        missing.append("a token (GITHUB_TOKEN or GH_TOKEN)")
    repo = repository_from(environ, url)
    if repo is None:
        shown = without_credentials(url)
        missing.append(f"the repository (GITHUB_REPOSITORY; {REMOTE}'s URL {shown} names none)")
    if missing:
        raise UsageError(f"--pr needs GitHub: set {' and '.join(missing)}")
    assert repo is not None
    server = server_url_from(environ)
    run_url = workflow_run_url(server, repo, environ.get("GITHUB_RUN_ID"))
    client = Client(settings_from_env(environ))
    claimant = leases.holder(environ, repo, "")
    return GitHub(client, repo, server, run_url, claimant=claimant, ttl=leases.claim_ttl(environ))


def check_access(github: GitHub) -> None:
    """One ``GET /repos/{repo}``: a bad token, a repository the token cannot see or an API that
    cannot be reached is found before anything is claimed (exit 4, GitHub failed)."""
    api = github.client.settings.api_url
    try:
        github.client.check_repository(github.repo)
    except GitHubError as exc:
        why = " ".join(str(exc).split())  # one line, whatever the transport said
        raise GitHubError(
            f"--pr cannot use GitHub: the repository {github.repo} at {api} ({why}); "
            "nothing was claimed and no agent ran"
        ) from None


def on_origin(ctx: Context) -> Context:
    """``ctx`` (as ``open_context`` made it: its ``commit_identity`` asked of git) on origin's
    target, fetched, or the GitflowError saying why it could not be (``no_target``). A fresh
    runner knows no git identity: the commits are then github-actions[bot]'s."""
    known = not ctx.commit_identity  # {}: git knows both (or the environment names both)
    identity = git.commit_identity(ctx.root, ACTIONS_BOT_LOGIN, BOT_EMAIL, known=known)
    ctx = replace(ctx, target_remote=REMOTE, commit_identity=identity)
    # a failed fetch must not leave the run on a stale remote-tracking ref
    if not fetch_target(ctx) or target_tip(ctx, fetch=False) is None:
        raise no_target(ctx.root, ctx.target)
    return ctx


def guarded(github: GitHub, target: str) -> GitHub:
    """``github`` knowing what keeps a tree no review saw off ``target`` once auto-merge
    merges, said before any step runs: a plain warning when nothing does (docs/github.md,
    "Only reviewed trees land")."""
    guard = branch_guard(github.client, github.repo, target)
    warning = guard.warning()
    print(f"auto-merge: {guard.describe()}" if warning is None else f"warning: {warning}")
    return replace(github, guard=guard)


def no_target(root: Path, target: str) -> GitflowError:
    """Why origin's ``target`` could not be fetched: origin cannot be reached (its URL and git's
    reason shown with credentials masked), it has no such branch, or git failed to fetch it.
    Exit 2 each time, as every git failure is (docs/decisions.md, "Plan steps in waves" 6)."""
    why = git.unreachable(root, target, REMOTE)
    if why is not None:
        why = _URL.sub(lambda match: without_credentials(match[0]), why)
        url = without_credentials(git.remote_url(root, REMOTE) or "")
        return GitError(f"cannot reach {REMOTE} ({url}): {why}")
    if git.remote_branch_sha(root, target, REMOTE) is None:
        return UsageError(f"the target branch {target} does not exist on {REMOTE}")
    return GitError(f"cannot fetch the target branch {target} from {REMOTE}")
