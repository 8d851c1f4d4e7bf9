"""Work trees: those gitflow-agents makes for chain steps, with their branches and commits;
what a work tree holds beyond its commit (changed, untracked paths); the layout every work tree
of a repository shares (the common git directory, ``info/exclude``).

Part of the git boundary with ``git`` (which re-exports every public name here, so callers write
``git.add_worktree``) and ``gitcmd`` (the environment and runner every call uses). Work trees are
only ever created under ``tool_worktree_root``, and only those are ever reset, cleaned or
removed (``require_tool_worktree``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from gitflow_agents.base.atomic import real_path
from gitflow_agents.base.errors import GitflowError, UsageError
from gitflow_agents.base.xdg import cache_dir
from gitflow_agents.git.cmd import failure as _fail
from gitflow_agents.git.cmd import run_git
from gitflow_agents.git.queries import head_commit, is_ancestor, literal_pathspecs, tree_sha
from gitflow_agents.git.version import MERGE_TREE, WORKTREE_LIST, require

# --- repository layout: common dir, info/exclude ------------------------------------------


def git_common_dir(root: Path) -> Path:
    """The directory shared by every work tree of the repository (``.git`` of the main one)."""
    out = run_git(root, "rev-parse", "--git-common-dir").stdout.strip()
    path = Path(out)
    return real_path(path if path.is_absolute() else root / path)


def ensure_info_exclude(root: Path, patterns: Sequence[str], *, common: Path | None = None) -> None:
    """Append each pattern missing from ``info/exclude`` (shared by all work trees), atomically;
    ``common``: the ``git_common_dir`` when the caller knows it already."""
    exclude = (common or git_common_dir(root)) / "info" / "exclude"
    existing = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    present = {line.strip() for line in existing.splitlines()}
    missing = [p for p in patterns if p not in present]
    if not missing:
        return
    text = existing + ("" if not existing or existing.endswith("\n") else "\n")
    text += "# gitflow-agents run artifacts\n" + "".join(p + "\n" for p in missing)
    exclude.parent.mkdir(parents=True, exist_ok=True)
    tmp = exclude.with_name(f".exclude.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(exclude)


# --- branches and work trees ---------------------------------------------------------------


def _stage_all(root: Path, exclude: Sequence[str], nested: Sequence[str] = ()) -> None:
    """``git add -A`` except the untracked nested repositories ``nested``, then unstage
    anything under ``exclude`` again (an exclude pathspec on ``add`` itself fails when the path
    is also ignored, as the flow dir is; a nested repository is not ignored: git lists it)."""
    run_git(root, "add", "-A", "--", ".", *(f":(exclude,literal){path}" for path in nested))
    if exclude:
        run_git(root, "reset", "--quiet", "--", *(e.strip("/") for e in exclude))


def check_branch_name(root: Path, name: str) -> str:
    result = run_git(root, "check-ref-format", "--branch", name, check=False)
    if result.returncode != 0 or name.startswith("-"):
        raise UsageError(f"invalid branch name: {name!r}")
    return name


def branch_sha(root: Path, name: str) -> str | None:
    """Sha of local branch ``name``, or None when there is no such branch."""
    result = run_git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}", check=False)
    return result.stdout.strip() if result.returncode == 0 else None


def create_branch(root: Path, name: str, start: str) -> None:
    result = run_git(root, "branch", "--no-track", "--", name, start, check=False)
    if result.returncode != 0:
        raise _fail(result, f"cannot create branch {name}")


def set_branch(root: Path, name: str, sha: str) -> None:
    """Point local branch ``name`` at ``sha`` (created when missing). A branch checked out in a
    work tree of the tool's own moves with that work tree (reset); UsageError, before anything
    changes, when it is checked out in any other work tree."""
    tree = worktree_of_branch(root, name)
    if tree is not None:
        discard_changes(tree, sha)
        return
    result = run_git(root, "branch", "--force", "--no-track", "--", name, sha, check=False)
    if result.returncode != 0:
        raise _fail(result, f"cannot set branch {name} to {sha[:12]}")


def delete_branch(root: Path, name: str) -> None:
    """Delete local branch ``name`` (tool-owned step branches only), merged or not."""
    run_git(root, "branch", "-D", "--", name, check=False)


# git's work-tree bookkeeping (.git/worktrees/) is read and written without a lock of git's own:
# a `worktree add` reads every other tree's admin folder, and fails on one another thread is
# creating. Steps that run at once (run --all --jobs N) take turns here.
_BOOKKEEPING = threading.RLock()


def worktrees(root: Path) -> dict[Path, str | None]:
    """Every work tree of the repository and the branch checked out in it (None: detached).
    ``version.GitTooOld`` on a git before 2.36 (no ``-z``: its paths may hold a line feed)."""
    with _BOOKKEEPING:
        result = run_git(root, "worktree", "list", "--porcelain", "-z", check=False)
    if result.returncode != 0:
        require(root, WORKTREE_LIST, "finding the work trees of the repository")
        raise _fail(result, "cannot list the work trees of the repository")
    out = result.stdout
    found: dict[Path, str | None] = {}
    current: Path | None = None
    for field in out.split("\0"):
        if field.startswith("worktree "):
            current = Path(field.removeprefix("worktree "))
            found[current] = None
        elif field.startswith("branch ") and current is not None:
            found[current] = field.removeprefix("branch refs/heads/")
    return found


def worktree_of_branch(root: Path, branch: str) -> Path | None:
    """The work tree that has ``branch`` checked out, if any."""
    for path, name in worktrees(root).items():
        if name == branch:
            return path
    return None


def add_worktree(root: Path, path: Path, ref: str, *, detach: bool = False) -> None:
    """Check out ``ref`` (a branch, or any commit with ``detach``) in a new work tree ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    args = ("--detach", str(path), ref) if detach else (str(path), ref)
    with _BOOKKEEPING:
        result = run_git(root, "worktree", "add", "--quiet", *args, check=False)
    if result.returncode != 0:
        raise _fail(result, f"cannot create work tree {path}")


def remove_worktree(root: Path, path: Path) -> None:
    """Remove a tool-owned work tree (and its files), then prune its bookkeeping."""
    with _BOOKKEEPING:
        run_git(root, "worktree", "remove", "--force", str(path), check=False)
        run_git(root, "worktree", "prune", check=False)


def _message(message: str, trailers: Mapping[str, str] | None) -> str:
    """A commit message as git is given it: ``message`` verbatim, then ``Key: value`` trailers
    after a blank line."""
    body = message.rstrip("\n") + "\n"
    if trailers:
        body += "\n" + "".join(f"{key}: {value}\n" for key, value in trailers.items())
    return body


def _commit(
    worktree: Path,
    message: str,
    trailers: Mapping[str, str] | None,
    extra: Sequence[str],
    failure: str,
    identity: Mapping[str, str] | None = None,
) -> str:
    """``git commit`` of what ``extra`` selects (the index when empty), message verbatim with
    ``Key: value`` trailers after a blank line, hooks skipped; the new HEAD sha."""
    result = run_git(
        worktree,
        "commit",
        "--quiet",
        "--no-verify",
        "--cleanup=verbatim",
        "-F",
        "-",
        *extra,
        input=_message(message, trailers),
        check=False,
        extra_env=identity,
    )
    if result.returncode != 0:
        raise _fail(result, failure)
    return run_git(worktree, "rev-parse", "--verify", "HEAD^{commit}").stdout.strip()


def tool_worktree_root(root: Path, *, common: Path | None = None) -> Path:
    """``$XDG_CACHE_HOME/gitflow-agents/worktrees/<repo>-<hash>``: the only place gitflow-agents
    creates work trees, and so the only work trees it may ever reset, clean or remove
    (``common``: the ``git_common_dir`` when the caller knows it already).

    Outside the repository's ``.git`` on purpose: agent CLIs protect ``.git`` (Claude Code
    refuses every edit below it), and outside the user's work tree so their tools never see it.
    """
    common = real_path(common or git_common_dir(root))
    digest = hashlib.sha256(str(common).encode()).hexdigest()[:12]
    name = common.parent.name if common.name == ".git" else common.name
    return cache_dir() / "worktrees" / f"{name}-{digest}"


def is_tool_worktree(root: Path, path: Path) -> bool:
    """Whether ``path`` lies inside ``tool_worktree_root`` of ``root``'s repository."""
    return is_under_tool_root(tool_worktree_root(root), path)


def is_under_tool_root(base: Path, path: Path) -> bool:
    """``is_tool_worktree`` with the ``tool_worktree_root`` ``base`` already known (no git)."""
    resolved = real_path(path)
    return resolved != base and resolved.is_relative_to(base)


def require_tool_worktree(worktree: Path, action: str) -> None:
    """UsageError unless ``worktree`` is the top of a work tree gitflow-agents created.

    The guard of every destructive helper (``discard_changes``, ``remove_tool_worktree``): the
    user's own work tree, or a worktree the user made, is never reset, cleaned or removed,
    whatever the caller passes."""
    result = run_git(worktree, "rev-parse", "--show-toplevel", check=False)
    if result.returncode == 0:
        top = real_path(Path(result.stdout.strip()))
        base = real_path(tool_worktree_root(worktree))
        if top == real_path(worktree) and top != base and top.is_relative_to(base):
            return
    raise UsageError(
        f"refusing to {action} {worktree}: gitflow-agents only does that to work trees it "
        "created itself (under $XDG_CACHE_HOME/gitflow-agents/worktrees/)"
    )


def remove_tool_worktree(root: Path, path: Path, *, base: Path | None = None) -> None:
    """``remove_worktree`` for a work tree under ``tool_worktree_root`` only (UsageError for any
    other path, before anything is removed).

    A folder there that git does not know as a work tree (its repository was deleted and made
    again at the same path, or its bookkeeping under ``.git/worktrees`` is gone) is removed too,
    so the next ``add_worktree`` at that path does not fail with "already exists"; symlinks in
    it (the ``flows`` link) are removed, never followed. ``base``: the ``tool_worktree_root``
    when the caller knows it already."""
    base = base or tool_worktree_root(root)
    if not is_under_tool_root(base, path):
        raise UsageError(
            f"refusing to remove the work tree {path}: gitflow-agents only removes work trees "
            f"it created under {base}"
        )
    remove_worktree(root, path)
    if os.path.lexists(path) and real_path(path) not in {real_path(p) for p in worktrees(root)}:
        if path.is_symlink() or not path.is_dir():
            path.unlink()
        else:
            shutil.rmtree(path)


def dirty_paths(worktree: Path) -> tuple[str, ...]:
    """Paths with uncommitted changes or untracked (not ignored) in ``worktree``."""
    return _status(worktree)[1]


def head_and_dirty(worktree: Path, *, nested: bool = True) -> tuple[str | None, tuple[str, ...]]:
    """HEAD's commit (None before the first) and ``dirty_paths`` from one ``git status``;
    ``nested`` False: without untracked nested repositories (``commit_work`` leaves them out
    of every commit and ``discard_changes`` keeps them: they are not the work's)."""
    head, paths = _status(worktree, "--branch", "--no-ahead-behind")
    return head, paths if nested else tuple(p for p in paths if not p.endswith("/"))


# Fields before the path in a ``git status --porcelain=v2`` entry: changed, renamed or copied
# (its original path follows as the next entry), unmerged, untracked.
_V2_FIELDS = {"1": 8, "2": 9, "u": 10, "?": 1}


def _status(worktree: Path, *extra: str) -> tuple[str | None, tuple[str, ...]]:
    args = ("status", "--porcelain=v2", "-z", "--untracked-files=all", *extra)
    head: str | None = None
    paths, parts, i = [], run_git(worktree, *args).stdout.split("\0"), 0
    while i < len(parts) and parts[i]:
        entry = parts[i]
        if entry.startswith("# branch.oid "):
            oid = entry.removeprefix("# branch.oid ")
            head = None if oid == "(initial)" else oid
        elif entry[0] in _V2_FIELDS:
            paths.append(entry.split(" ", _V2_FIELDS[entry[0]])[-1])
        i += 2 if entry[0] == "2" else 1
    return head, tuple(paths)


def discard_changes(worktree: Path, sha: str) -> None:
    """Reset a *tool-owned* work tree to ``sha`` and drop untracked files (ignored ones stay, and
    nested repositories: ``git clean`` keeps them without a second ``--force``).

    UsageError, before anything changes, for any other work tree (see ``require_tool_worktree``)."""
    require_tool_worktree(worktree, "reset and clean")
    run_git(worktree, "reset", "--quiet", "--hard", sha)
    run_git(worktree, "clean", "-d", "--force", "--quiet")


class Committed(NamedTuple):
    """What ``commit_work`` did: the new commit (None: nothing to commit) and the nested
    repositories it left out of it, sorted."""

    sha: str | None
    left_out: tuple[str, ...] = ()


def commit_work(
    worktree: Path,
    start: str,
    message: str,
    *,
    trailers: Mapping[str, str] | None = None,
    exclude: Sequence[str] = (),
    identity: Mapping[str, str] | None = None,
) -> Committed:
    """Commit an agent's work in ``worktree``, which it started at commit ``start``: every
    change except ``exclude`` (and ignored files), with ``trailers`` (as ``identity``,
    ``GIT_AUTHOR_*``/``GIT_COMMITTER_*``, when given).

    A nested repository (a folder with a ``.git`` of its own: a clone, ``git init``) that the
    ``.gitmodules`` being committed does not register is left out: ``git add -A`` would record
    it as a gitlink with no URL (clones get a dangling entry) that the reviewed diff does not
    show. It stays in the work tree as it is. A gitlink the agent staged or committed itself
    since ``start`` (new, or at another commit) is put back as ``start`` has it, so when its
    own commits held nothing else the branch goes back to ``start`` (``git reset --soft``: the
    work tree is not touched). A submodule ``.gitmodules`` registers (``git submodule add``)
    is committed as any change."""
    untracked = untracked_repositories(worktree)
    _stage_all(worktree, exclude, untracked)
    registered = _submodule_paths(worktree)
    left_out = {path for path in untracked if path not in registered}
    for path in (p for p in untracked if p in registered):  # listed, but not added yet
        if run_git(worktree, "add", "--", *literal_pathspecs([path]), check=False).returncode:
            left_out.add(path)  # a repository without a commit: there is nothing to record
    moved = [path for path in _gitlinks_since(worktree, start) if path not in registered]
    if moved:
        run_git(worktree, "reset", "--quiet", start, "--", *literal_pathspecs(moved))
        left_out.update(moved)
    found = tuple(sorted(left_out))
    tree = run_git(worktree, "write-tree").stdout.strip()
    head_sha = head_commit(worktree)
    own_commits = moved and head_sha not in (None, start) and is_ancestor(worktree, start, "HEAD")
    if own_commits and tree == tree_sha(worktree, start):  # they held only what was taken out
        run_git(worktree, "reset", "--quiet", "--soft", start)
        return Committed(None, found)
    if head_sha is not None and tree == tree_sha(worktree, head_sha):
        return Committed(None, found)
    sha = _commit(worktree, message, trailers, (), "cannot commit the agent's changes", identity)
    return Committed(sha, found)


def untracked_repositories(worktree: Path) -> tuple[str, ...]:
    """Untracked, not ignored nested repositories in ``worktree`` (paths from its top, no
    trailing slash): the folders ``git status`` lists whole, as it lists only those when asked
    for every untracked file. Empty when git cannot tell (no such work tree)."""
    try:
        paths = dirty_paths(worktree)
    except GitflowError:
        return ()
    return tuple(path.rstrip("/") for path in paths if path.endswith("/"))


def _submodule_paths(worktree: Path) -> set[str]:
    """The paths the staged ``.gitmodules`` registers as submodules (none without one, or when
    git cannot read it)."""
    args = ("config", "-z", "--blob", ":.gitmodules", "--get-regexp", r"^submodule\..*\.path$")
    result = run_git(worktree, *args, check=False)
    if result.returncode != 0:
        return set()
    entries = (entry.partition("\n")[2] for entry in result.stdout.split("\0"))
    return {path.strip("/") for path in entries if path.strip("/")}


def _gitlinks_since(worktree: Path, start: str) -> list[str]:
    """The staged gitlinks that ``start`` does not have as they are: new, at another commit, or
    in place of a file. One a merge in progress brings as its other side has it (the target
    merged into a step branch: ``merge_in_worktree``) is not the agent's."""
    args = ("diff", "--cached", "--raw", "-z", "--no-abbrev", "--no-renames")
    out = run_git(worktree, *args, "--ignore-submodules=none", start, "--").stdout
    parts = out.split("\0")
    found: dict[str, str] = {}
    for index in range(0, len(parts) - 1, 2):
        fields = parts[index].split()  # ":old-mode new-mode old-sha new-sha status"
        if len(fields) >= 4 and fields[1] == "160000":
            found[parts[index + 1]] = fields[3]
    if not found:
        return []
    merging = run_git(worktree, "rev-parse", "--verify", "--quiet", "MERGE_HEAD", check=False)
    if merging.returncode == 0:
        other = merging.stdout.strip()
        listed = run_git(worktree, "ls-tree", "-z", other, "--", *literal_pathspecs(found)).stdout
        theirs = {
            entry.partition("\t")[2]: entry.partition("\t")[0].split()[-1]
            for entry in listed.split("\0")
            if entry
        }
        found = {path: sha for path, sha in found.items() if theirs.get(path) != sha}
    return list(found)


def commit_paths(
    worktree: Path,
    paths: Sequence[str],
    message: str,
    *,
    trailers: Mapping[str, str] | None = None,
    identity: Mapping[str, str] | None = None,
) -> str | None:
    """Commit the work-tree content of the tracked ``paths`` in ``worktree`` and nothing else
    (``git commit --only``: whatever else is staged stays staged), with ``trailers``; the new
    sha, or None when those paths did not change."""
    if run_git(worktree, "diff", "--quiet", "HEAD", "--", *paths, check=False).returncode == 0:
        return None
    return _commit(
        worktree,
        message,
        trailers,
        ("--only", "--", *paths),
        f"cannot commit {', '.join(paths)}",
        identity,
    )


def commit_trailers(root: Path, sha: str) -> dict[str, str]:
    """The trailers of commit ``sha`` (last value wins per key)."""
    out = run_git(root, "log", "-1", "--format=%(trailers:only,unfold)", sha).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            found[key.strip()] = value.strip()
    return found


# --- a work tree's state and its flow directory (run records) -------------------------------


def paths_differing_from(root: Path, base: str) -> tuple[str, ...]:
    """Paths whose work-tree content differs from commit ``base`` (committed since, staged or
    not); empty when git cannot tell."""
    out = run_git(root, "diff", "--no-ext-diff", "--name-only", "-z", base, check=False).stdout
    return tuple(name for name in out.split("\0") if name)


def paths_differing_between(
    root: Path, base: str, head: str, paths: Iterable[str]
) -> tuple[str, ...]:
    """Which of ``paths`` differ between commits ``base`` and ``head`` (added, changed or
    removed); empty when ``paths`` is, or the commits are the same."""
    wanted = sorted(paths)
    if not wanted or base == head:
        return ()
    out = run_git(
        root, "diff", "--no-ext-diff", "--name-only", "-z", base, head, "--", *wanted, check=False
    ).stdout
    return tuple(name for name in out.split("\0") if name)


def untracked_paths(root: Path) -> tuple[str, ...]:
    """Untracked files that are not ignored, relative to ``root``; empty when git cannot tell."""
    out = run_git(root, "ls-files", "--others", "--exclude-standard", "-z", check=False).stdout
    return tuple(name for name in out.split("\0") if name)


def work_tree_top(root: Path) -> Path | None:
    """Top of the work tree containing ``root``; None outside a repository or without a work
    tree (``repo_root`` is the variant that refuses with a UsageError)."""
    result = run_git(root, "rev-parse", "--show-toplevel", check=False)
    top = result.stdout.strip()
    return Path(top) if result.returncode == 0 and top else None


def exclude_flow_dir(root: Path, flow_dir: str) -> bool:
    """Add ``flow_dir`` (under ``root``) to ``info/exclude`` once, as ``/<path from the top of the
    work tree>/``, so no run artifact lands in a commit. False when there is nothing to exclude
    it from: ``root`` is not in a work tree, or the flow dir lies outside it."""
    top = work_tree_top(root)
    if top is None:
        return False
    try:
        rel = real_path(root / flow_dir).relative_to(real_path(top)).as_posix()
    except ValueError:
        return False
    ensure_info_exclude(root, (f"/{rel.strip('/')}/",))
    return True


# --- bringing a moved target into a step branch (chain/integrate.py) -----------------------


class WorktreeMerge(NamedTuple):
    sha: str | None  # the merge commit; None when it conflicted (the merge is left in progress)
    conflicts: tuple[str, ...]  # the conflicted paths


def merge_in_worktree(
    worktree: Path,
    sha: str,
    message: str,
    *,
    trailers: Mapping[str, str] | None = None,
    identity: Mapping[str, str] | None = None,
) -> WorktreeMerge:
    """Merge ``sha`` into the branch of a *tool-owned* work tree with a merge commit (hooks
    skipped). On conflicts the merge stays in progress, markers in the files, for an agent to
    resolve; GitError when git refuses for another reason."""
    require_tool_worktree(worktree, "merge into")
    result = run_git(
        worktree,
        "merge",
        "--no-ff",
        "--no-verify",
        "--quiet",
        "-m",
        _message(message, trailers),
        sha,
        check=False,
        extra_env=identity,
    )
    if result.returncode == 0:
        return WorktreeMerge(run_git(worktree, "rev-parse", "HEAD").stdout.strip(), ())
    out = run_git(worktree, "diff", "--name-only", "-z", "--diff-filter=U", check=False).stdout
    conflicts = tuple(name for name in out.split("\0") if name)
    if not conflicts:
        raise _fail(result, f"cannot merge {sha[:12]} into {worktree}")
    return WorktreeMerge(None, conflicts)


def find_merge(root: Path, tip: str, first: str, second: str) -> str | None:
    """A merge commit between ``first`` and ``tip`` whose parents are exactly ``first`` and
    ``second`` (an earlier run's integration of the target, found again when resuming)."""
    out = run_git(root, "rev-list", "--merges", "--parents", f"{first}..{tip}", check=False)
    for line in out.stdout.splitlines():
        parts = line.split()
        if parts[1:] == [first, second]:
            return parts[0]
    return None


def conflict_markers(root: Path, base: str, head: str) -> tuple[str, ...]:
    """``path:line`` of every conflict marker the change ``base..head`` adds. git reports each
    problem on a line of its own (its lines end at ``\\n`` alone: a lone ``\\r`` in a file's
    line is part of it) and shows the line of a whitespace problem (its message ends in
    ``.``; not ``new blank line at EOF.``) on the next line, which is no report."""
    args = ("diff", "--check", "--no-color", base, head)
    out = run_git(root, *args, check=False, as_written=True).stdout
    found: list[str] = []
    previous = ""
    for line in out.split("\n"):
        shown = previous.endswith(".") and not previous.endswith(": new blank line at EOF.")
        if not shown and line.endswith(_MARKER):
            found.append(line.removesuffix(_MARKER))
        previous = "" if shown else line
    return tuple(found)


_MARKER = ": leftover conflict marker"


def merge_conflicts(root: Path, ours: str, theirs: str) -> tuple[str, ...]:
    """The paths merging ``theirs`` into ``ours`` would conflict in, computed without a work
    tree (``git merge-tree --write-tree``); () when it merges cleanly."""
    result = run_git(
        root,
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        "-z",
        ours,
        theirs,
        check=False,
    )
    if result.returncode == 0:
        return ()
    if result.returncode != 1:
        require(root, MERGE_TREE, "listing the files a merge would conflict in")
        raise _fail(result, f"cannot merge {theirs[:12]} into {ours[:12]}")
    names = [name for name in result.stdout.split("\0") if name]
    return tuple(dict.fromkeys(names[1:]))  # the first is the tree written


# --- the tool's work trees as a cache (gitflow-agents worktrees, gc) -----------------------


def admin_dir(worktree: Path) -> Path | None:
    """The git directory of the linked work tree ``worktree`` (``.git/worktrees/<name>``): what
    gitflow-agents keeps about that tree lives there and goes with it. None when git does not
    know it."""
    result = run_git(worktree, "rev-parse", "--absolute-git-dir", check=False)
    out = result.stdout.strip()
    return Path(out) if result.returncode == 0 and out else None


def unpublished_commits(root: Path, branch: str, target: str) -> int:
    """How many commits of local ``branch`` are neither on the local ``target`` branch nor on
    any remote-tracking branch: work that exists nowhere else."""
    result = run_git(root, "rev-list", "--count", *_unpublished(root, branch, target), check=False)
    return int(result.stdout.strip() or 0) if result.returncode == 0 else 0


def unpublished_foreign(root: Path, branch: str, target: str, trailer: str) -> tuple[str, ...]:
    """The commits of local ``branch`` that exist nowhere else (``unpublished_commits``) and
    carry no ``trailer`` (whose every commit the tool makes carries it): what a reset of the
    branch would lose for good. Newest first, one line each (short sha and subject)."""
    result = run_git(
        root,
        "log",
        f"--format=%h %s%x00%(trailers:key={trailer},valueonly)%x00",
        *_unpublished(root, branch, target),
        check=False,
    )
    if result.returncode != 0:
        return ()
    fields = result.stdout.split("\0")
    pairs = zip(fields[0::2], fields[1::2], strict=False)
    return tuple(line.strip() for line, value in pairs if not value.strip())


def _unpublished(root: Path, branch: str, target: str) -> list[str]:
    """rev-list's arguments for the commits of ``branch`` on neither ``target`` nor a remote."""
    others = ["--remotes"]
    if branch_sha(root, target) is not None:
        others.insert(0, f"refs/heads/{target}")
    return [f"refs/heads/{branch}", "--not", *others]
