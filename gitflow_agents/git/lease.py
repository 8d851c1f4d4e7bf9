"""A step claim's lease on a remote: who holds the claim of a step branch, in a small ref.

Part of the git boundary. The lease of branch ``B`` is ``refs/gitflow-agents/claims/B`` on the
remote, pointing at a parentless commit of the empty tree whose message is the holder's record
(JSON: workflow run id and attempt, or host and pid) with ``at``, when it was written (Unix
seconds; not the committer date, which ``GIT_COMMITTER_DATE`` may pin). Writing is one push with a lease on the value read before (``push_lease``): of two
writers that read the same lease, exactly one wins, as with ``remote.claim_branch``. Reading is
one ``ls-remote`` and, when there is a lease, one fetch of that tiny commit. No GitHub API
request either way (docs/github.md, "Claims that expire with their runner").
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitflow_agents.base.errors import GitError
from gitflow_agents.git.cmd import run_git
from gitflow_agents.git.remote import PushResult, push_porcelain, remote_tips

LEASE_PREFIX = "refs/gitflow-agents/claims/"


def lease_ref(branch: str) -> str:
    return LEASE_PREFIX + branch


@dataclass(frozen=True)
class Lease:
    """A lease as read: its commit (the value a takeover leases against), the holder's record
    and when it was written (Unix seconds)."""

    sha: str
    holder: dict[str, Any]
    written: float


def push_lease(
    root: Path,
    branch: str,
    holder: dict[str, Any],
    expected: str,
    remote: str = "origin",
    identity: dict[str, str] | None = None,
) -> tuple[str | None, str]:
    """Point the lease of ``branch`` at a new record of ``holder``, only while it is at
    ``expected`` ("" : only while there is none): the new lease's commit and "", or None and
    git's reason when the push was refused (another writer got there first) or failed."""
    made = _lease_commit(root, holder, identity)
    ref = lease_ref(branch)
    pushed = push_porcelain(root, remote, f"--force-with-lease={ref}:{expected}", f"{made}:{ref}")
    return (made, "") if pushed.ok else (None, pushed.detail)


def claim_with_lease(
    root: Path,
    sha: str,
    branch: str,
    holder: dict[str, Any],
    expected: str,
    remote: str = "origin",
    identity: dict[str, str] | None = None,
) -> tuple[PushResult, str | None]:
    """Create ``branch`` at ``sha`` on ``remote`` (only if it does not exist there) and its
    lease naming ``holder`` (only while the lease is at ``expected``, "" : none) in ONE atomic
    push: a run killed during its claim leaves both or neither, never a claim without a lease
    (which would never be free). The push's result for the branch, and the lease's commit when
    the claim was made. A branch that already pointed at ``sha`` counts as taken (git calls it
    up to date, and the push wrote the lease anyway): the lease is put back as it was."""
    made = _lease_commit(root, holder, identity)
    ref = lease_ref(branch)
    pushed = push_porcelain(
        root,
        remote,
        "--atomic",
        f"--force-with-lease=refs/heads/{branch}:",
        f"--force-with-lease={ref}:{expected}",
        f"{sha}:refs/heads/{branch}",
        f"{made}:{ref}",
        ref=f"refs/heads/{branch}",
    )
    if not pushed.ok:
        return pushed, None
    if pushed.flag != "*":  # the branch was there: the lease it had is put back
        if expected:
            push_porcelain(root, remote, f"--force-with-lease={ref}:{made}", f"{expected}:{ref}")
        else:
            delete_lease(root, branch, made, remote)
        return PushResult(False, True, f"{branch} already exists on {remote}", pushed.flag), None
    return pushed, made


def _lease_commit(root: Path, holder: dict[str, Any], identity: dict[str, str] | None) -> str:
    """A parentless commit of the empty tree whose message is ``holder`` (with ``at``)."""
    tree = run_git(root, "hash-object", "-t", "tree", "--stdin", input="").stdout.strip()
    message = json.dumps({**holder, "at": time.time()}, sort_keys=True)
    return run_git(root, "commit-tree", tree, "-m", message, extra_env=identity).stdout.strip()


def read_lease(
    root: Path, branch: str, remote: str = "origin", *, listed: Mapping[str, str] | None = None
) -> Lease | None:
    """The lease of ``branch`` on ``remote``; None when there is none or it cannot be read
    (a lease that cannot be read never frees a claim). ``listed``: the refs of ``remote`` one
    ``ls-remote`` of the lease ref just listed (``listed_claim``), not listed again."""
    ref = lease_ref(branch)
    if listed is None:
        try:
            listed = remote_tips(root, (ref,), remote)
        except GitError:
            listed = {}
    sha = listed.get(ref)
    return None if sha is None else _lease_at(root, ref, sha, remote)


def listed_claim(root: Path, branch: str, remote: str = "origin") -> dict[str, str]:
    """``refs/heads/<branch>`` and the branch's lease ref, those ``remote`` has, with their
    tips: one ``ls-remote`` for both (``read_lease`` reads the lease from it); GitError when
    the remote cannot be read."""
    return remote_tips(root, (f"refs/heads/{branch}", lease_ref(branch)), remote)


def read_leases(root: Path, branches: Iterable[str], remote: str = "origin") -> dict[str, Lease]:
    """The leases of ``branches`` on ``remote`` that exist and can be read, by branch: one
    ``ls-remote`` for them all, then one fetch and one ``git log`` of the ones listed (what
    a plan's glance reads for each of its steps). GitError when the remote cannot be read."""
    refs = {lease_ref(branch): branch for branch in branches}
    listed = remote_tips(root, list(refs), remote, what="the step branches' leases") if refs else {}
    if not listed:
        return {}
    specs = [f"+{ref}:{ref}" for ref in listed]
    fetched = run_git(root, "fetch", "--no-tags", "--quiet", remote, *specs, check=False)
    if fetched.returncode != 0:
        return {}
    shas = sorted(set(listed.values()))
    shown = run_git(root, "log", "--no-walk", "--format=%H%n%B%x00", *shas, "--", check=False)
    if shown.returncode != 0:
        return {}
    messages = dict(entry.strip("\n").partition("\n")[::2] for entry in shown.stdout.split("\0"))
    found = {}
    for ref, sha in listed.items():
        lease = _parsed(sha, messages.get(sha, ""))
        if lease is not None:
            found[refs[ref]] = lease
    return found


def _lease_at(root: Path, ref: str, sha: str, remote: str) -> Lease | None:
    """The lease ``ref`` on ``remote`` listed at ``sha``, fetched and read (None: unreadable)."""
    fetched = run_git(root, "fetch", "--no-tags", "--quiet", remote, f"+{ref}:{ref}", check=False)
    shown = run_git(root, "log", "-1", "--format=%B", sha, "--", check=False)
    if fetched.returncode != 0 or shown.returncode != 0:
        return None
    return _parsed(sha, shown.stdout)


def _parsed(sha: str, message: str) -> Lease | None:
    """The lease whose commit ``sha`` has ``message`` (its holder's JSON), None when that is
    not a holder record with its ``at`` (a finite number: json reads ``NaN`` and ``Infinity``,
    which no writer of a lease writes)."""
    try:
        holder = json.loads(message)
    except (ValueError, RecursionError):  # anyone who may push can write a lease
        return None
    when = holder.get("at") if isinstance(holder, dict) else None
    if not isinstance(when, (int, float)) or isinstance(when, bool) or not math.isfinite(when):
        return None
    return Lease(sha, holder, float(when))


def delete_lease(root: Path, branch: str, expected: str, remote: str = "origin") -> PushResult:
    """Remove the lease of ``branch`` while it is still at ``expected``."""
    ref = lease_ref(branch)
    return push_porcelain(root, remote, f"--force-with-lease={ref}:{expected}", f":{ref}")
