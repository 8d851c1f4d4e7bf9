"""Running git: the environment every git call gets, the runner, and the one query the pre-push
gate makes (the persistent ``git cat-file --batch`` reader is ``blobs.py``).

Kept import-light on purpose (no dataclasses, no regular expressions, no tempfile): ``gitflow-agents
hook gate`` imports only this module and ``spawn``. ``gitflow_agents.git.queries`` re-exports
``git_env``, ``run_git``, ``NOTES_REF`` and ``blobs.BlobReader``, and holds (with ``worktree``)
every other git query.

The environment: inherited ``GIT_DIR`` / ``GIT_WORK_TREE`` / ``GIT_INDEX_FILE`` and friends are
removed from every call, because git exports them to hooks (often as paths relative to a
directory we are not in, or naming a temporary index). Only a command run by the user, not as a
hook, may keep an explicit ``GIT_DIR`` (and ``GIT_WORK_TREE``), as ``git --git-dir=X
--work-tree=Y agent-review`` sets them; and ``git agent-review --hook`` keeps the index a commit
hook names (``git commit -a`` commits ``index.lock``, not ``.git/index``): see
``explicit_repository``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

from gitflow_agents.base import spawn
from gitflow_agents.base.errors import GitError, UsageError
from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import StrPath

NOTES_REF = "refs/notes/gitflow-agents"

# Variables git sets for hooks and aliases; inherited, they point our calls at the wrong
# repository or a temporary index (pre-commit drops them for the same reason).
_SCRUBBED = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
)
# Variables that change what git prints, whoever set them: ``GIT_DIFF_OPTS=--unified=3``
# overrides ``-U0``, and the context lines it adds put the added lines at the wrong numbers.
_OUTPUT_VARIABLES = ("GIT_DIFF_OPTS",)
# Set while a hook runs: by the pre-commit framework, or by git for commit hooks (the index
# being committed). With any of them present an inherited GIT_DIR is never trusted.
_HOOK_MARKERS = ("PRE_COMMIT", "PRE_COMMIT_FROM_REF", "PRE_COMMIT_TO_REF", "GIT_INDEX_FILE")

# The repository variables kept for every git call while ``explicit_repository`` is active.
_kept: dict[str, str] = {}
# Whether the command may follow a work tree git cannot find the repository from
# (``reachable_top``): only while ``explicit_repository`` is active (``git agent-review``).
_follows = False


def git_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for git calls: ``environ`` (default os.environ) minus repo-pointing vars
    (plus the user's explicit repository while ``explicit_repository`` is active)."""
    source = os.environ if environ is None else environ
    env = {k: v for k, v in source.items() if k not in _SCRUBBED and k not in _OUTPUT_VARIABLES}
    env.update(_kept)
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


# Settings of the user's configuration that change what git prints, pinned on every call so
# that what the tool parses is git's plain output: no colour; ``git log`` output in UTF-8
# (``i18n.logOutputEncoding=UTF-16`` put a NUL beside every character of a ``--format`` line);
# no signature check printed before a commit; no rename following when one path is given.
_PINNED = (
    *("-c", "color.ui=never"),
    *("-c", "i18n.logOutputEncoding=UTF-8"),
    *("-c", "log.showSignature=false"),
    *("-c", "log.follow=false"),
)


def git_argv(root: StrPath) -> tuple[str, ...]:
    """``git`` in ``root`` with no pager and the settings that change its output pinned
    (``_PINNED``): the start of every git command the tool runs."""
    return ("git", "--no-pager", *_PINNED, "-C", str(root))


_LOCKED = ("Unable to create '", "': File exists")  # git's words for a lock file already there
SAID_LINES = 8
"""How many lines of git's stderr an error repeats at most: the first ones and the last."""


def said(stderr: str) -> list[str]:
    """The lines of git's ``stderr`` worth repeating: not blank, not a ``hint:`` (advice on
    git's settings), at most :data:`SAID_LINES` (git's last line is its verdict: kept)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("hint:")]
    if len(lines) <= SAID_LINES:
        return lines
    return [*lines[: SAID_LINES - 2], f"… {len(lines) - SAID_LINES + 1} more lines", lines[-1]]


def failure(result: spawn.Result, what: str) -> GitError:
    """The GitError for a git call that failed: ``what``, then what git printed (``said``, one
    line: a step's record keeps it), whose first lines often say why (``error: gpg failed to
    sign the data`` before ``fatal: failed to write commit object``, which alone was shown);
    for a lock file already there (a stale ``….lock`` a killed git left), the file, which git
    names on a line before five of advice (the last of them: "remove the file manually to
    continue.")."""
    start, end = _LOCKED
    found = result.stderr.find(start)
    stop = result.stderr.find(end, found) if found >= 0 else -1
    if stop >= 0 and "\n" not in result.stderr[found:stop]:
        lock = result.stderr[found + len(start) : stop]
        return GitError(
            f"{what}: {lock} exists: another git process is running in this repository, or "
            "one was killed and left it; when none is running, remove the file to continue"
        )
    detail = "; ".join(said(result.stderr))
    return GitError(f"{what}: {detail or f'git exited {result.returncode}'}")


def no_repository(where: StrPath, stderr: str) -> str:
    """Why a git call in ``where`` found no repository to work in, from what git printed: ours,
    ``not a git repository (or any parent up to /): WHERE``, when git says that; otherwise
    git's own words, which name the cause and its fix. A repository owned by another user (a
    checkout on a mounted volume, a CI cache) is one git refuses: "detected dubious ownership",
    then the ``git config --global --add safe.directory …`` line that allows it; "not a git
    repository" hid both."""
    lines = said(stderr)
    if not lines or any("not a git repository" in line for line in lines):
        return f"not a git repository (or any parent up to /): {where}"
    return "\n  ".join([f"git refuses {where}: {lines[0].removeprefix('fatal: ')}", *lines[1:]])


def require_repository(root: StrPath) -> None:
    """UsageError with ``no_repository``'s reason when git finds no repository at ``root``:
    asked after a git call there failed, to tell that from an unknown revision or object."""
    found = run_git(root, "rev-parse", "--git-dir", check=False)
    if found.returncode != 0:
        raise UsageError(no_repository(root, found.stderr))


def run_git(
    root: StrPath,
    *args: str,
    input: str | None = None,
    check: bool = True,
    extra_env: Mapping[str, str] | None = None,
    as_written: bool = False,
) -> spawn.Result:
    """``git -C root <args>`` with a scrubbed environment and no pager or colour;
    ``extra_env`` (e.g. a commit identity) is added to that environment for this call only;
    ``as_written``: its output's line ends kept as git wrote them (``spawn.text``: a patch or a
    file's content, whose lines git ends at ``\\n`` alone)."""
    running = start_git(root, *args, input=input, extra_env=extra_env, as_written=as_written)
    return running.result(check=check)


def start_git(
    root: StrPath,
    *args: str,
    input: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    as_written: bool = False,
) -> spawn.Running:
    """What ``run_git`` runs, started now; its ``result`` waits for it (``spawn.begin``: git
    starts without importing ``subprocess``, issue 20)."""
    argv = (*git_argv(root), *args)
    env = git_env() if not extra_env else {**git_env(), **extra_env}
    return spawn.begin(argv, env=env, input=input, as_written=as_written)


def in_hook(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` says a hook is running: the pre-commit framework's variables, or the
    index git hands a commit hook."""
    return any(environ.get(k) for k in _HOOK_MARKERS)


def repository_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """``GIT_DIR`` and ``GIT_WORK_TREE`` from ``environ``, made absolute against the current
    directory, when the user gave a ``GIT_DIR`` and nothing says a hook is running; else {}."""
    if not environ.get("GIT_DIR") or in_hook(environ):
        return {}
    return {
        # as Path.absolute(), without pathlib on a small review's path (issue 20)
        key: os.path.join(os.getcwd(), environ[key])  # noqa: PTH109, PTH118
        for key in ("GIT_DIR", "GIT_WORK_TREE")
        if environ.get(key)
    }


def hook_index(environ: Mapping[str, str]) -> dict[str, str]:
    """``GIT_INDEX_FILE`` of a commit hook, made absolute against the current directory (the
    top of the work tree, where git and pre-commit run hooks); {} without one. ``git commit -a``
    (``-i``, ``git commit PATH``) commits the index it names (``index.lock``, a
    ``next-index-*.lock``), not ``.git/index``: what a pre-commit review must read. {} too
    when no file is there."""
    index = environ.get("GIT_INDEX_FILE")
    if not index:
        return {}
    # as Path.absolute(), without pathlib on a small review's path (issue 20)
    path = os.path.join(os.getcwd(), index)  # noqa: PTH109, PTH118
    # an index that is not there is not what git commits (a variable left over): not followed
    return {"GIT_INDEX_FILE": path} if os.path.isfile(path) else {}  # noqa: PTH113


@contextlib.contextmanager
def explicit_repository(environ: Mapping[str, str], *, hook: bool = False) -> Iterator[bool]:
    """While active, every git call of this process keeps the ``GIT_DIR`` / ``GIT_WORK_TREE``
    of ``environ`` (see ``repository_from_env``); yields whether there was one. As a ``hook``
    only the index git commits is kept (``hook_index``), never an inherited repository.

    Only for commands that read the repository and write notes (``git agent-review``): a
    command that works in other work trees (the chain) must never follow an inherited
    ``GIT_DIR`` back into the user's work tree, so it does not use this."""
    global _kept, _follows
    previous = _kept, _follows
    _kept = hook_index(environ) if hook else repository_from_env(environ)
    _follows = True
    try:
        yield bool(_kept) and not hook
    finally:
        _kept, _follows = previous


def reachable_top(top: str, where: StrPath) -> str:
    """``top``, the top of the work tree git found from ``where``, once every later git call
    (``git -C top``) finds the repository too. git finds it by the ``.git`` there; a work tree
    without one is named by its repository: a git directory whose ``core.worktree`` names it,
    used from the git directory's folder (a dotfiles layout). Then ``git agent-review``
    (inside ``explicit_repository``) keeps that git directory and work tree for its calls, as
    for ``git --git-dir=X --work-tree=Y agent-review``; git said "unknown revision: main" to
    every call made in ``top``. Any other command runs git in work trees of its own, where
    such a ``GIT_DIR`` would lead back to this one, so it refuses (UsageError, saying why)."""
    # os.path: no pathlib on a small review's path (issue 20)
    if _kept.get("GIT_DIR") or os.path.lexists(os.path.join(top, ".git")):  # noqa: PTH118
        return top
    git_dir = run_git(where, "rev-parse", "--absolute-git-dir").stdout.strip()
    if not _follows:
        raise UsageError(
            f"{top}, the work tree of the repository {git_dir} (its core.worktree), holds no "
            ".git, so git finds no repository there; gitflow-agents runs git in the work tree "
            "(and in work trees of its own): use a work tree that holds .git (`git worktree "
            "add`, a clone); `git agent-review` works in this layout"
        )
    _kept.update(GIT_DIR=git_dir, GIT_WORK_TREE=top)
    return top


def commit_note(root: StrPath, rev: str, ref: str = NOTES_REF) -> tuple[str, str | None]:
    """(full sha of the commit ``rev`` names, its note under ``ref`` or None) in one git call.

    UsageError ``unknown revision: REV`` when ``rev`` names no commit (ranges included), or
    ``no_repository``'s reason when ``root`` is in none (a second call, on that path only)."""
    if not rev or rev.startswith(("-", "^")) or ".." in rev:
        raise UsageError(f"unknown revision: {rev!r}")
    result = run_git(
        root,
        "log",
        "-1",
        "--no-show-signature",
        "--no-notes",
        f"--notes={ref}",
        "--format=%H%x00%N",
        "--end-of-options",
        rev + "^{commit}",
        "--",
        check=False,
    )
    sha, found, note = result.stdout.partition("\0")
    if result.returncode != 0 or not found:
        require_repository(root)
        raise UsageError(f"unknown revision: {rev}")
    note = note.removesuffix("\n")  # the line end --format adds; the note keeps its own
    return sha.strip(), note or None


# What pre-commit exports to a pre-push hook: the four names of the pushed ref (always together,
# in every pre-commit the hooks accept, 3.2.0 on) and, unless the pushed ref's whole history is
# new to the remote, the range.
_PUSH_MARKERS = (
    "PRE_COMMIT_FROM_REF",
    "PRE_COMMIT_TO_REF",
    "PRE_COMMIT_LOCAL_BRANCH",
    "PRE_COMMIT_REMOTE_BRANCH",
    "PRE_COMMIT_REMOTE_NAME",
    "PRE_COMMIT_REMOTE_URL",
)


def pushed_commit(environ: Mapping[str, str]) -> str | None:
    """The commit a pre-push run by pre-commit pushes: ``PRE_COMMIT_TO_REF``, else (a ref whose
    whole history is new to the remote: pre-commit gives no from/to refs) the local ref git
    named, ``PRE_COMMIT_LOCAL_BRANCH`` (``refs/heads/x``, ``HEAD``, or what the refspec said).
    None when ``environ`` is not a push's. UsageError when it is one but names no pushed
    commit: HEAD need not be what is pushed (``git push origin other``), so it is never
    taken instead."""
    for name in ("PRE_COMMIT_TO_REF", "PRE_COMMIT_LOCAL_BRANCH"):
        if environ.get(name):
            return environ[name]
    if not any(environ.get(name) for name in _PUSH_MARKERS):
        return None
    raise UsageError(
        "pre-push: cannot tell which commit is pushed (neither PRE_COMMIT_TO_REF nor "
        "PRE_COMMIT_LOCAL_BRANCH is set), so the push is refused rather than HEAD checked: "
        "HEAD need not be the pushed commit; pre-commit 3.2.0 or newer sets them"
    )
