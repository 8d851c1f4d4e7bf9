"""The git boundary's remotes: fetch, push, and the atomic claim of a branch on a remote.

Part of the git boundary (``gitflow_agents.git.queries`` re-exports these names). Every push here is a
normal push or a push with a lease: nothing is ever forced over a commit the caller did not
expect. ``claim_branch`` creates a branch on the remote only when it does not exist there: a
lease with an empty expected value makes the client refuse when the remote advertised the
branch, and the remote's own ref update refuses when another push created it in the meantime,
so of two claims racing for one branch exactly one wins (docs/github.md, "Plan steps as pull
requests").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitflow_agents.base.errors import GitError
from gitflow_agents.git.cmd import failure as _fail
from gitflow_agents.git.cmd import run_git

if TYPE_CHECKING:
    from gitflow_agents.base.proc import Result


def fetch_ref(root: Path, refspec: str, remote: str = "origin") -> bool:
    """``git fetch --no-tags --quiet REMOTE REFSPEC``, best effort: whether git succeeded.

    Callers look for the commit they need afterwards (``rev_parse``), so a failed fetch shows
    up as that commit missing, named in their own words."""
    # --end-of-options: a refspec from an event payload can never be read as an option
    args = ("fetch", "--no-tags", "--quiet", "--end-of-options", remote, refspec)
    result = run_git(root, *args, check=False)
    return result.returncode == 0


def deepen(root: Path, refspec: str, depth: int | None, remote: str = "origin") -> bool:
    """Deepen this shallow clone's history by ``depth`` commits past its boundary (None: all of
    it, ``--unshallow``), fetching ``refspec`` from ``remote``; best effort, as ``fetch_ref``:
    whether git succeeded."""
    how = f"--deepen={depth}" if depth is not None else "--unshallow"
    args = ("fetch", "--no-tags", "--quiet", how, "--end-of-options", remote, refspec)
    return run_git(root, *args, check=False).returncode == 0


def remote_branch_sha(root: Path, branch: str, remote: str = "origin") -> str | None:
    """The tip of ``branch`` on ``remote`` (``git ls-remote``), None when it has no such branch;
    GitError when the remote cannot be read."""
    ref = f"refs/heads/{branch}"
    return remote_tips(root, (ref,), remote, what=f"branch {branch}").get(ref)


def remote_tips(
    root: Path, refs: Sequence[str], remote: str = "origin", *, what: str | None = None
) -> dict[str, str]:
    """The tips of those of ``refs`` (full names) that ``remote`` has, from one ``git
    ls-remote``; GitError when the remote cannot be read (``what``: the refs in its message)."""
    result = run_git(root, "ls-remote", remote, *refs, check=False)
    if result.returncode != 0:
        raise _fail(result, f"cannot read {what or ' and '.join(refs)} from {remote}")
    found = (line.partition("\t") for line in result.stdout.splitlines())
    return {ref: sha for sha, _, ref in found if ref in refs}


def remote_heads(root: Path, remote: str = "origin") -> dict[str, str]:
    """Every branch of ``remote`` and its tip, from one ``git ls-remote --heads`` (a snapshot
    of one moment); GitError when the remote cannot be read."""
    result = run_git(root, "ls-remote", "--heads", remote, check=False)
    if result.returncode != 0:
        raise GitError(f"cannot list the branches of {remote}: {_why(result)}")
    heads = (line.partition("\t")[::2] for line in result.stdout.splitlines())
    return {ref.removeprefix("refs/heads/"): sha for sha, ref in heads if ref.startswith("refs/")}


def unreachable(root: Path, branch: str, remote: str = "origin") -> str | None:
    """Why ``remote`` cannot be read (git's words, as its first line has them), None when
    it can: asks for ``branch`` only, so the answer stays small."""
    result = run_git(root, "ls-remote", "--heads", remote, f"refs/heads/{branch}", check=False)
    return _why(result) if result.returncode != 0 else None


def _why(result: Result) -> str:
    """git's first line says why a remote failed; its last is a generic hint."""
    said = [line for line in result.stderr.splitlines() if line.strip()]
    return said[0].removeprefix("fatal: ") if said else f"git exited {result.returncode}"


def remote_url(root: Path, remote: str = "origin") -> str | None:
    """The URL ``remote`` fetches from; None when there is no such remote."""
    result = run_git(root, "remote", "get-url", remote, check=False)
    return result.stdout.strip() or None if result.returncode == 0 else None


@dataclass(frozen=True)
class PushResult:
    ok: bool
    moved: bool  # refused as not a fast-forward (or a lease that failed): the branch moved on
    detail: str  # the last lines git printed when refused ("" when ok)
    flag: str = ""  # git's porcelain flag for the ref: "*" new, " " fast-forward, "=" up to date


def push_porcelain(root: Path, remote: str, *args: str, ref: str = "") -> PushResult:
    """``git push --porcelain`` with ``args`` (options first, then the refspecs); the flag is
    the first ref's, or that of the ref named ``ref`` (of a push of several)."""
    options = [arg for arg in args if arg.startswith("-")]
    specs = [arg for arg in args if not arg.startswith("-")]
    result = run_git(root, "push", "--porcelain", *options, remote, *specs, check=False)
    flag = next(
        (
            line[0]
            for line in result.stdout.splitlines()
            if "\t" in line and line[:1] in "*+-= !" and (not ref or f":{ref}\t" in line)
        ),
        "",
    )
    if result.returncode == 0:
        return PushResult(True, False, "", flag)
    lines = [
        line.strip()
        for line in (result.stderr + "\n" + result.stdout).splitlines()
        if line.strip() and line.strip() not in ("Done",) and not line.startswith("To ")
    ]
    detail = "; ".join(lines[-3:]) or f"git exited {result.returncode}"
    refused = "[rejected]" in result.stdout or "failed to update ref" in result.stdout
    return PushResult(False, refused, detail, flag)


def push_branch(
    root: Path, sha: str, branch: str, remote: str = "origin", *, dry_run: bool = False
) -> PushResult:
    """``git push --porcelain REMOTE SHA:refs/heads/BRANCH``: a normal push, never forced, so
    git refuses it when ``branch`` moved on (``moved``). ``dry_run``: only ask whether the
    remote would take it."""
    flags = ("--dry-run",) if dry_run else ()
    return push_porcelain(root, remote, *flags, f"{sha}:refs/heads/{branch}")


def claim_branch(root: Path, sha: str, branch: str, remote: str = "origin") -> PushResult:
    """Create ``branch`` at ``sha`` on ``remote`` only if it does not exist there (see the
    module doc). ``ok`` only when this push created it: a branch that already pointed at
    ``sha`` is "up to date" to git, and counts as taken."""
    pushed = push_porcelain(
        root, remote, f"--force-with-lease=refs/heads/{branch}:", f"{sha}:refs/heads/{branch}"
    )
    if pushed.ok and pushed.flag != "*":
        return PushResult(False, True, f"{branch} already exists on {remote}", pushed.flag)
    return pushed


def delete_remote_branch(
    root: Path, branch: str, expected: str, remote: str = "origin"
) -> PushResult:
    """Delete ``branch`` on ``remote`` only while it still points at ``expected`` (a lease):
    a branch someone else pushed to since is left alone (``moved``)."""
    return push_porcelain(
        root, remote, f"--force-with-lease=refs/heads/{branch}:{expected}", f":refs/heads/{branch}"
    )
