"""The git boundary: small named queries over plain ``git`` argv run through ``spawn.run``.

The boundary is four modules: this one (repository, revisions, diffs, contents, notes,
statistics, merges), ``worktree`` (the work trees, branches and commits of chain steps) and
``remote`` (fetch, push, the atomic claim of a branch on a remote), whose names are
re-exported here, and ``gitcmd`` (the environment, the runner, the persistent
``cat-file`` reader, and the gate hook's one import-light query). What git prints is parsed
in ``diffparse``.

Every call scrubs inherited ``GIT_DIR`` / ``GIT_WORK_TREE`` / ``GIT_INDEX_FILE`` (git exports
them to hooks, often as paths relative to a directory we are not in; see ``gitcmd``, which runs
every call) and asks for machine output: ``-z`` where git offers it, ``--no-color``,
``--no-ext-diff``.
"""

from __future__ import annotations

import _thread  # threading's lock, without importing threading (a small review's start-up)
import importlib
import os
from collections.abc import Callable, Iterable, Sequence

from gitflow_agents.base.atomic import common_git_dir
from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.lazy import on_first_use
from gitflow_agents.base.lazy import path as as_path
from gitflow_agents.base.records import TYPE_CHECKING, NamedTuple
from gitflow_agents.git import diffparse

# The environment and the runner live in gitcmd (import-light, for the gate hook); re-exported.
from gitflow_agents.git.blobs import BlobReader as BlobReader
from gitflow_agents.git.blobs import object_name as object_name
from gitflow_agents.git.blobs import object_sizes as object_sizes
from gitflow_agents.git.cmd import NOTES_REF as NOTES_REF
from gitflow_agents.git.cmd import explicit_repository as explicit_repository
from gitflow_agents.git.cmd import failure as _fail
from gitflow_agents.git.cmd import git_env as git_env
from gitflow_agents.git.cmd import in_hook as in_hook
from gitflow_agents.git.cmd import no_repository, reachable_top, start_git
from gitflow_agents.git.cmd import run_git as run_git
from gitflow_agents.git.diffparse import Commit, CommitPatch, FileChange

# What a git that refused a call lacks: asked only then, so a review never imports it
_VERSION = on_first_use("gitflow_agents.git.version")

# Fetching from and pushing to remotes live in remote, the work trees, branches and commits of
# chain steps in worktree; their names are re-exported here, each module imported when one of its
# names is first asked for (a review needs neither: issue 20).
if TYPE_CHECKING:
    from pathlib import Path

    from _typeshed import StrPath

    from gitflow_agents.git.merge import MergeResult as MergeResult
    from gitflow_agents.git.merge import merge_into as merge_into
    from gitflow_agents.git.remote import PushResult as PushResult
    from gitflow_agents.git.remote import claim_branch as claim_branch
    from gitflow_agents.git.remote import deepen as deepen
    from gitflow_agents.git.remote import delete_remote_branch as delete_remote_branch
    from gitflow_agents.git.remote import fetch_ref as fetch_ref
    from gitflow_agents.git.remote import push_branch as push_branch
    from gitflow_agents.git.remote import remote_branch_sha as remote_branch_sha
    from gitflow_agents.git.remote import remote_heads as remote_heads
    from gitflow_agents.git.remote import remote_url as remote_url
    from gitflow_agents.git.remote import unreachable as unreachable
    from gitflow_agents.git.worktree import Committed as Committed
    from gitflow_agents.git.worktree import WorktreeMerge as WorktreeMerge
    from gitflow_agents.git.worktree import add_worktree as add_worktree
    from gitflow_agents.git.worktree import branch_sha as branch_sha
    from gitflow_agents.git.worktree import check_branch_name as check_branch_name
    from gitflow_agents.git.worktree import commit_paths as commit_paths
    from gitflow_agents.git.worktree import commit_trailers as commit_trailers
    from gitflow_agents.git.worktree import commit_work as commit_work
    from gitflow_agents.git.worktree import conflict_markers as conflict_markers
    from gitflow_agents.git.worktree import create_branch as create_branch
    from gitflow_agents.git.worktree import delete_branch as delete_branch
    from gitflow_agents.git.worktree import dirty_paths as dirty_paths
    from gitflow_agents.git.worktree import discard_changes as discard_changes
    from gitflow_agents.git.worktree import ensure_info_exclude as ensure_info_exclude
    from gitflow_agents.git.worktree import exclude_flow_dir as exclude_flow_dir
    from gitflow_agents.git.worktree import find_merge as find_merge
    from gitflow_agents.git.worktree import git_common_dir as git_common_dir
    from gitflow_agents.git.worktree import head_and_dirty as head_and_dirty
    from gitflow_agents.git.worktree import is_tool_worktree as is_tool_worktree
    from gitflow_agents.git.worktree import is_under_tool_root as is_under_tool_root
    from gitflow_agents.git.worktree import merge_in_worktree as merge_in_worktree
    from gitflow_agents.git.worktree import paths_differing_between as paths_differing_between
    from gitflow_agents.git.worktree import paths_differing_from as paths_differing_from
    from gitflow_agents.git.worktree import remove_tool_worktree as remove_tool_worktree
    from gitflow_agents.git.worktree import remove_worktree as remove_worktree
    from gitflow_agents.git.worktree import require_tool_worktree as require_tool_worktree
    from gitflow_agents.git.worktree import set_branch as set_branch
    from gitflow_agents.git.worktree import tool_worktree_root as tool_worktree_root
    from gitflow_agents.git.worktree import unpublished_foreign as unpublished_foreign
    from gitflow_agents.git.worktree import untracked_paths as untracked_paths
    from gitflow_agents.git.worktree import untracked_repositories as untracked_repositories
    from gitflow_agents.git.worktree import work_tree_top as work_tree_top
    from gitflow_agents.git.worktree import worktree_of_branch as worktree_of_branch
    from gitflow_agents.git.worktree import worktrees as worktrees


def __getattr__(name: str) -> object:
    """A name of ``worktree``, ``remote`` or ``merge`` (those imported above for type checkers), importing
    its module when first asked for."""
    for module in ("worktree", "remote", "merge") if not name.startswith("_") else ():
        found = importlib.import_module(f"gitflow_agents.git.{module}")
        value = getattr(found, name, None)
        if getattr(value, "__module__", None) == found.__name__:
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- repository and revisions -------------------------------------------------------------


def repo_root(start: Path | str | None = None) -> Path:
    """Top of the work tree containing ``start`` (default: the current directory), a Path
    (``lazy.path``: a small review passes the string git printed on, without pathlib)."""
    where = as_path(start if start is not None else os.getcwd())  # noqa: PTH109
    result = run_git(where, "rev-parse", "--show-toplevel", check=False)
    top = result.stdout.strip() if result.returncode == 0 else ""
    if not top:
        raise UsageError(_no_work_tree(where))
    return as_path(reachable_top(top, where))


def refuse_git_dir(where: StrPath) -> None:
    """UsageError (as ``repo_root`` gives) when ``where`` is in a bare repository or inside a
    git folder: a place with no work tree, where the project's files (``.flow/``, ``specs/``,
    ``flows/``) have no place. Nothing outside a repository (``init`` and ``status`` work in any
    folder)."""
    result = run_git(where, "rev-parse", "--is-inside-work-tree", check=False)
    if result.returncode == 0 and result.stdout.strip() == "false":
        raise UsageError(_no_work_tree(where))


def _no_work_tree(where: StrPath) -> str:
    """Why there is no work tree at ``where``: no repository, or one git refuses
    (``no_repository``), a bare one (git works there, but a review reads its settings,
    ``.flow/``, and its baseline from a work tree: without one it would review by other rules
    than the project's), or the inside of a ``.git`` folder."""
    args = ("rev-parse", "--is-bare-repository", "--absolute-git-dir")
    found = run_git(where, *args, check=False)
    lines = found.stdout.splitlines()
    if found.returncode != 0 or len(lines) != 2:
        return no_repository(where, found.stderr)
    bare, git_dir = lines
    if bare != "true":
        return (
            f"{where} is inside {git_dir}, the git folder of a repository: run it in its work tree"
        )
    same = os.path.realpath(where) == os.path.realpath(git_dir)
    place = "is a bare repository" if same else f"is in the bare repository {git_dir}"
    return (
        f"{where} {place}: it has no work tree, where its settings "
        "(.flow/) and a review's baseline are read; run it in a clone (`git clone "
        f"{git_dir} DIR`); git agent-review also takes a work tree named for the repository: "
        f"`git --git-dir={git_dir} --work-tree=DIR agent-review A..B`"
    )


def _is_sha(word: str) -> bool:
    return len(word) in (40, 64) and word.strip("0123456789abcdef") == ""


def root_and_commit(rev: str) -> tuple[str, str, tuple[str, ...]] | None:
    """``repo_root()`` (as a string) and ``commit_and_parents(root, rev)`` from one git process; None when git
    cannot tell both (those two queries then say why: not a repository, unknown revision)."""
    return ask_root_and_commit(rev)()


def ask_root_and_commit(rev: str) -> Callable[[], tuple[str, str, tuple[str, ...]] | None]:
    """``root_and_commit(rev)`` asked now: git answers while the caller works, and the function
    returned reads the answer (a small review imports its modules meanwhile, issue 20)."""
    if not rev or rev.startswith("-"):
        return lambda: None
    args = ("rev-parse", "--show-toplevel", rev + "^{commit}", rev + "^@")
    here = os.getcwd()  # noqa: PTH109 - no pathlib here (issue 20)
    running = start_git(here, *args)

    def answer() -> tuple[str, str, tuple[str, ...]] | None:
        result = running.result(check=False)
        top, *shas = result.stdout.splitlines() or [""]
        if result.returncode != 0 or not top or not shas or not all(map(_is_sha, shas)):
            return None
        return reachable_top(top, here), shas[0], tuple(shas[1:])

    return answer


def root_and_head() -> tuple[str, str | None] | None:
    """``repo_root()`` (as a string) and HEAD's sha (None: no commit yet) from one git process; None when git
    cannot tell (``repo_root`` then says why)."""
    return ask_root_and_head()()


def ask_root_and_head() -> Callable[[], tuple[str, str | None] | None]:
    """``root_and_head()`` asked now, read when the function returned is called (as
    ``ask_root_and_commit``)."""
    args = ("rev-parse", "--show-toplevel", "--verify", "--quiet", "HEAD^{commit}")
    here = os.getcwd()  # noqa: PTH109 - no pathlib here (issue 20)
    running = start_git(here, *args)

    def answer() -> tuple[str, str | None] | None:
        result = running.result(check=False)
        lines = result.stdout.splitlines()
        if result.returncode == 0 and len(lines) == 2 and lines[0] and _is_sha(lines[1]):
            return reachable_top(lines[0], here), lines[1]
        if result.returncode == 1 and len(lines) == 1 and lines[0]:
            return reachable_top(lines[0], here), None
        return None

    return answer


def rev_parse(root: StrPath, rev: str) -> str:
    """Full sha of the commit ``rev`` names; UsageError naming ``rev`` when unknown."""
    if not rev or rev.startswith("-"):
        raise UsageError(f"unknown revision: {rev!r}")
    result = run_git(
        root, "rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}", check=False
    )
    if result.returncode != 0 or not result.stdout.strip():
        raise UsageError(f"unknown revision: {rev}")
    return result.stdout.strip()


def head_sha(root: StrPath) -> str:
    """Sha of HEAD; UsageError when the repository has no commit yet."""
    result = run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    if result.returncode != 0:
        raise UsageError("HEAD has no commit yet (make a first commit)")
    return result.stdout.strip()


def current_branch(root: StrPath) -> str | None:
    """Short name of the checked-out branch; None on a detached HEAD or outside a repository."""
    result = run_git(root, "symbolic-ref", "-q", "--short", "HEAD", check=False)
    return (result.stdout.strip() or None) if result.returncode == 0 else None


def has_head(root: StrPath) -> bool:
    return run_git(root, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0


def tree_sha(root: StrPath, rev: str) -> str:
    return run_git(root, "rev-parse", "--verify", rev + "^{tree}").stdout.strip()


def merged_tree(root: StrPath, base: str, head: str) -> str | None:
    """The tree of ``head`` merged onto ``base`` (``git merge-tree --write-tree``, no work
    tree touched); None when the merge conflicts. ``version.GitTooOld`` on a git before 2.38,
    GitError when git fails otherwise (a commit it cannot read): never taken for a conflict."""
    result = run_git(root, "merge-tree", "--write-tree", base, head, check=False)
    if result.returncode not in (0, 1):  # 1: git's answer for a merge that conflicts
        version = _VERSION()
        version.require(root, version.MERGE_TREE, "merging a pull request onto its base")
        raise _fail(result, f"cannot merge {head[:12]} onto {base[:12]}")
    return result.stdout.split()[0] if result.returncode == 0 and result.stdout.strip() else None


def empty_tree(root: StrPath) -> str:
    """The empty tree's id (differs between sha1 and sha256 repositories)."""
    return run_git(root, "hash-object", "-t", "tree", "--stdin", input="").stdout.strip()


def commit_and_parents(root: StrPath, rev: str) -> tuple[str, tuple[str, ...]]:
    """Full sha of the commit ``rev`` names and its parents' (``rev_parse`` then ``parents``
    in one git process); UsageError naming ``rev`` when unknown."""
    if not rev or rev.startswith("-"):
        raise UsageError(f"unknown revision: {rev!r}")
    argv = ("rev-list", "--parents", "-n", "1", "--end-of-options", rev + "^{commit}", "--")
    out = run_git(root, *argv, check=False)
    shas = out.stdout.split() if out.returncode == 0 else []
    if not shas:
        raise UsageError(f"unknown revision: {rev}")
    return shas[0], tuple(shas[1:])


def parents(root: StrPath, sha: str) -> tuple[str, ...]:
    out = run_git(root, "rev-list", "--parents", "-n", "1", sha).stdout.split()
    return tuple(out[1:])


def merge_base(root: StrPath, a: str, b: str) -> str:
    result = run_git(root, "merge-base", "--end-of-options", a, b, check=False)
    if result.returncode != 0 or not result.stdout.strip():
        raise UsageError(f"no common ancestor between {a} and {b}")
    return result.stdout.split()[0]


def ref_exists(root: StrPath, ref: str) -> bool:
    return run_git(root, "show-ref", "--verify", "--quiet", ref, check=False).returncode == 0


def branch_tip(root: StrPath, ref: str) -> str | None:
    """The commit a branch or remote-tracking branch, named in full (``refs/heads/x``,
    ``refs/remotes/origin/x``), points at; None when there is no such ref. One git call where
    ``ref_exists`` then ``rev_parse`` took two (git keeps only commits in branches)."""
    result = run_git(root, "show-ref", "--verify", ref, check=False)
    sha, _, name = result.stdout.strip().partition(" ")
    return sha if result.returncode == 0 and name == ref else None


class DefaultBranch(NamedTuple):
    ref: str  # what to pass to git, e.g. "origin/main" or "main"
    note: str  # how it was found, for a message to the user


def default_branch(root: StrPath, remote: str = "origin") -> DefaultBranch:
    """The branch reviews compare against.

    ``refs/remotes/<remote>/HEAD`` when the clone knows it and the branch it names is there;
    otherwise ``main`` then ``master`` (remote-tracking first, then local), saying which was
    used. A dangling ``<remote>/HEAD`` (the remote renamed its default branch and ``git fetch
    --prune`` removed the one it names) is said, with how to set it again.
    """
    head = f"refs/remotes/{remote}/HEAD"
    result = run_git(root, "symbolic-ref", "-q", head, check=False)
    target = result.stdout.strip()
    why = f"{head} is not set"
    if result.returncode == 0 and target.startswith("refs/remotes/"):
        name = target.removeprefix("refs/remotes/")
        if branch_tip(root, target) is not None:
            return DefaultBranch(name, f"default branch {name} (from {head})")
        why = (
            f"{head} points at {name}, which does not exist: "
            f"`git remote set-head {remote} --auto` sets it again"
        )
    candidates = (
        (f"refs/remotes/{remote}/main", f"{remote}/main"),
        ("refs/heads/main", "main"),
        (f"refs/remotes/{remote}/master", f"{remote}/master"),
        ("refs/heads/master", "master"),
    )
    order = ", ".join(shown for _, shown in candidates)
    for ref, shown in candidates:
        if ref_exists(root, ref):
            return DefaultBranch(
                shown,
                f"default branch {shown} ({why}; {shown} is the first of {order} that exists)",
            )
    raise UsageError(
        f"cannot find the default branch: {why} and there is no main or master branch; "
        "give a range, e.g. `git agent-review BASE..HEAD`"
    )


# --- diffs ---------------------------------------------------------------------------------


class DiffSpec(NamedTuple):
    """What to compare: ``base`` against ``head`` (a commit) or the index (``head`` None);
    ``paths``: only those files (paths from the top of the work tree; none: every file)."""

    base: str
    head: str | None
    one_commit: bool = False  # the caller knows head is one commit whose only parent is base
    paths: tuple[str, ...] = ()

    def args(self) -> tuple[str, ...]:
        return (self.base, self.head) if self.head is not None else ("--cached", self.base)

    def limit(self) -> tuple[str, ...]:
        """``--`` and the pathspecs of ``paths``, to end a git command's arguments."""
        return ("--", *literal_pathspecs(self.paths))


def literal_pathspecs(paths: Iterable[str]) -> tuple[str, ...]:
    """``paths`` as git pathspecs that match each path exactly (no glob, no magic)."""
    return tuple(f":(literal){path}" for path in paths)


_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv", "-M")
DIFF_FLAGS = (*_FLAGS, "--ignore-submodules")  # the builtin's content: no gitlinks (decisions 18)
TEXT = "--text"
"""Every file as text, whatever git would call binary: for the files it calls binary whose
content is text (``.gitattributes`` says ``-diff`` or ``binary``, a ``diff=`` driver is
``binary = true`` in the configuration, the old side was binary), diffed again with it."""
STATS_FLAGS = (*_FLAGS, "--ignore-submodules=dirty")
"""What the statistics count: every gitlink (a submodule or a nested repository ``git add -A``
recorded) whose commit changes, as git's own ``--numstat`` counts it (+1, +1 -1, -1), but not a
nested repository's uncommitted edits, which no commit of this repository records."""
# what parse_added_lines reads: no context line, also where ``diff.interHunkContext`` would
# join two hunks with some (their lines would put the added lines after them at wrong numbers);
# a patch is always read ``as_written``: git ends its lines at ``\n`` alone, and a lone ``\r``
# read as a line end would cut an added line in two, its second half without the ``+``
# (never reviewed) or taken for a header
_PATCH_FLAGS = ("-U0", "--inter-hunk-context=0", "--src-prefix=a/", "--dst-prefix=b/")


def tracked(root: StrPath, paths: Iterable[str]) -> set[str]:
    """Those of ``paths`` (from the top of the work tree) that git tracks: in the index."""
    out = run_git(root, "ls-files", "-z", "--", *literal_pathspecs(paths)).stdout
    return {path for path in out.split("\0") if path}


def unstaged(root: StrPath, paths: Iterable[str]) -> list[str]:
    """Those of ``paths`` whose work tree content differs from the index's."""
    args = ("diff", *DIFF_FLAGS, "--name-only", "-z", "--", *literal_pathspecs(paths))
    return [path for path in run_git(root, *args).stdout.split("\0") if path]


def changed_files(root: StrPath, spec: DiffSpec) -> list[diffparse.FileStat]:
    """Every changed file of ``spec``: its path (a deletion's old path), status and, for a
    rename, its old path (``--raw``: no content is compared but for rename detection)."""
    args = ("diff", *DIFF_FLAGS, "--raw", "--no-abbrev", "-z", *spec.args(), *spec.limit())
    return diffparse.parse_raw_numstat(run_git(root, *args).stdout)


def changed_gitlinks(root: StrPath, spec: DiffSpec, paths: Iterable[str]) -> set[str]:
    """Those of ``paths`` that are gitlinks (submodules) whose commit ``spec`` changes: in the
    change, though no reviewed diff shows them (``--ignore-submodules``, decisions 18)."""
    limit = ("--", *literal_pathspecs(paths))
    args = ("diff", *STATS_FLAGS, "--raw", "--no-abbrev", "-z", *spec.args(), *limit)
    return {f.path for f in diffparse.parse_raw_numstat(run_git(root, *args).stdout) if f.gitlink}


def numstat(root: StrPath, spec: DiffSpec) -> dict[str, tuple[int | None, int | None]]:
    """(added, deleted) per new path; None for binary files (git prints ``-``). A gitlink
    whose commit changed counts as the statistics count it (``STATS_FLAGS``): this is the
    change's file list (an incremental review's files and diff command, ``review.exclude``'s
    scope), and a reviewer must be shown a submodule the change adds or moves."""
    args = ("diff", *STATS_FLAGS, "--numstat", "-z", *spec.args(), *spec.limit())
    out = run_git(root, *args).stdout
    return diffparse.parse_numstat(out)


def diff(root: StrPath, spec: DiffSpec, *, text: bool = False) -> tuple[FileChange, ...]:
    """Every changed file between ``spec.base`` and ``spec.head`` (or the index): statuses and
    counts from ``--raw --numstat``, added lines (new line number, text) and a missing final
    newline from the ``-U0`` patch, all from one git process (``diffparse.split_patch``).
    ``text``: every file diffed as text (``TEXT``)."""
    with AskedDiff(root, spec, text=text) as asked:
        return asked.changes()


class AskedDiff:
    """``diff(root, spec)`` asked before its answer is needed: git runs while the caller works
    (``git agent-review`` imports the builtin reviewer meanwhile, issue 20), ``changes`` reads
    the answer, and the end of a ``with`` block (``close``) ends a git whose answer was not
    read."""

    def __init__(self, root: StrPath, spec: DiffSpec, *, text: bool = False) -> None:
        args = ("diff", *DIFF_FLAGS, "--raw", "--no-abbrev", "--numstat", "-z", *_PATCH_FLAGS)
        extra = (TEXT,) if text else ()
        limit = (*spec.args(), *spec.limit())
        self._running = start_git(root, *args, *extra, *limit, as_written=True)
        self._changes: tuple[FileChange, ...] | None = None
        self._text = text

    def __enter__(self) -> AskedDiff:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def changes(self) -> tuple[FileChange, ...]:
        if self._changes is None:
            records, patch = diffparse.split_patch(self._running.result().stdout)
            parsed = diffparse.parse_changes(records, diffparse.parse_added_lines(patch))
            if self._text:  # --numstat ignores --text: the counts come from the patch
                counts = diffparse.parse_line_counts(patch)
                parsed = [
                    c._replace(added=added, deleted=deleted) if c.status != "D" else c
                    for c in parsed
                    for added, deleted in (counts.get(c.path, (0, 0)),)
                ]
            self._changes = tuple(parsed)
        return self._changes

    def close(self) -> None:
        self._running.stop()


# The empty tree in sha1 and sha256 repositories (a root commit's review base).
_EMPTY_TREES = frozenset(
    (
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321",
    )
)


def is_empty_tree(rev: str) -> bool:
    """Whether ``rev`` is the empty tree's full id (sha1 or sha256): a range base before every
    commit, so that ``base..head`` is every commit of ``head``."""
    return rev in _EMPTY_TREES


def range_revs(base: str, head: str) -> tuple[str, ...]:
    """The revisions of ``base..head`` for ``git log`` / ``rev-list``: ``head`` alone when
    ``base`` is the empty tree (every commit of ``head``, its root commits included)."""
    return (head,) if base in _EMPTY_TREES else (f"{base}..{head}",)


def is_one_commit(root: StrPath, base: str, head: str) -> bool:
    """Whether ``base..head`` is one commit whose only parent is ``base`` (``base`` the empty
    tree: a root commit), so that its patch is the diff ``base..head``."""
    parents = [] if base in _EMPTY_TREES else [base]
    revs = range_revs(base, head)
    args = ("rev-list", "--parents", "--max-count=2", "--end-of-options", *revs, "--")
    commits = [line.split() for line in run_git(root, *args).stdout.splitlines()]
    return commits == [[head, *parents]]


def commit_patches(
    root: StrPath, base: str, head: str, *, text: bool = False, paths: Sequence[str] = ()
) -> tuple[CommitPatch, ...]:
    """The added lines of every commit in ``base..head``, oldest first, from one
    ``git log -p -U0 -z`` call (``base`` the empty tree: every commit of ``head``), and the
    files each shows as binary (``CommitPatch.binary``). Merge commits are left out: their own
    resolutions show in the net diff. ``text``: every file diffed as text (``TEXT``);
    ``paths``: only the commits and files of those paths (none: all)."""
    revs = range_revs(base, head)
    # --root: a root commit's patch, which ``log.showRoot=false`` would leave out
    log = ("log", "-p", "--root", "-z", "--reverse", "--no-merges", "--no-show-signature")
    format = "--format=%x00%H %s"  # what parse_commit_patches reads
    flags = (*DIFF_FLAGS, *_PATCH_FLAGS, *((TEXT,) if text else ()))
    args = (*log, *flags, format, "--end-of-options", *revs, "--", *literal_pathspecs(paths))
    return diffparse.parse_commit_patches(run_git(root, *args, as_written=True).stdout)


def shallow_boundary(root: StrPath, base: str, head: str) -> tuple[str, ...]:
    """The commits of ``base..head`` at the shallow boundary of this clone (``git clone
    --depth``, ``actions/checkout``'s default) that have parents: git has none of those parents
    (nor what they add) and shows each such commit as a root commit, so the range is not all
    here. None in a full clone, where this costs no git process (``_shallow_commits``)."""
    shallow = _shallow_commits(root)
    if not shallow:
        return ()
    revs = range_revs(base, head)
    listed = run_git(root, "rev-list", "--end-of-options", *revs, "--").stdout.split()
    return tuple(sha for sha in listed if sha in shallow and _has_parents(root, sha))


def _shallow_commits(root: StrPath) -> frozenset[str]:
    """The commits the git directory's ``shallow`` file lists; none for a full clone. Read from
    the file system when ``.git`` is where it usually is, else where git says it is."""
    where = common_git_dir(root)
    if where is not None:
        path = os.path.join(where, "shallow")  # noqa: PTH118 - no pathlib (issue 20)
    else:
        named = run_git(root, "rev-parse", "--git-path", "shallow").stdout.strip()
        path = os.path.join(root, named)  # noqa: PTH118
    try:
        with open(path, encoding="ascii") as listed:  # noqa: PTH123
            return frozenset(listed.read().split())
    except FileNotFoundError:
        return frozenset()


def _has_parents(root: StrPath, sha: str) -> bool:
    """Whether commit ``sha`` names a parent in its own object (git's shallow view hides it;
    a real root commit at the boundary has none, and nothing of its history is missing)."""
    text = run_git(root, "cat-file", "commit", sha).stdout
    return any(line.startswith("parent ") for line in text.partition("\n\n")[0].splitlines())


# --- file contents -------------------------------------------------------------------------


def show_file(root: StrPath, rev: str, path: str) -> str | None:
    """Text of ``path`` as ``rev`` has it committed; None when it does not exist there."""
    result = run_git(root, "cat-file", "blob", object_name(rev, path), check=False)
    return result.stdout if result.returncode == 0 else None


# --- notes ---------------------------------------------------------------------------------


def read_note(root: StrPath, sha: str, ref: str = NOTES_REF) -> str | None:
    """The note attached to ``sha`` under ``ref``, or None."""
    result = run_git(root, "notes", f"--ref={ref}", "show", sha, check=False)
    return result.stdout if result.returncode == 0 else None


_NOTES = _thread.allocate_lock()  # git refuses a notes commit whose ref moved under it


def write_note(root: StrPath, sha: str, text: str, ref: str = NOTES_REF) -> None:
    """Attach ``text`` to ``sha`` under ``ref``, replacing any earlier note. A note is a commit:
    when git knows no identity (a fresh machine) it names the tool's (``LOCAL_NAME``). One
    writer at a time in this process: steps that run at once review at once."""
    argv = ("notes", f"--ref={ref}", "add", "-f", "-F", "-", sha)
    with _NOTES:
        result = run_git(root, *argv, input=text, check=False)
        if result.returncode != 0:
            identity = commit_identity(root, LOCAL_NAME, LOCAL_EMAIL)
            if identity:
                result = run_git(root, *argv, input=text, check=False, extra_env=identity)
    if result.returncode != 0:
        raise _fail(result, f"cannot write note on {sha[:12]}")


# --- statistics ----------------------------------------------------------------------------


def commits_between(root: StrPath, base: str, head: str) -> tuple[Commit, ...]:
    """Commits reachable from ``head`` but not ``base`` (the empty tree: every commit of
    ``head``), oldest first."""
    revs = range_revs(base, head)
    out = run_git(root, "log", "--reverse", "-z", "--format=%H%x00%s", *revs, "--").stdout
    return diffparse.parse_commits(out)


def hunk_ranges(
    root: StrPath, old: str, new: str, paths: Sequence[str]
) -> tuple[dict[str, tuple[diffparse.Hunk, ...]], dict[str, str]]:
    """The ``-U0`` hunks of ``old..new`` restricted to ``paths``, per old path
    (``diffparse.parse_hunk_ranges``): where the lines of ``old`` moved to, or were changed,
    in ``new``; and the files of ``paths`` renamed (old -> new: both paths must be among
    ``paths`` for git to see the rename). No path: nothing."""
    if not paths:
        return {}, {}
    literal = literal_pathspecs(paths)
    args = ("diff", *DIFF_FLAGS, *_PATCH_FLAGS, old, new, "--", *literal)
    out = run_git(root, *args, as_written=True).stdout
    return diffparse.parse_hunk_ranges(out), diffparse.parse_renames(out)


def is_ancestor(root: StrPath, ancestor: str, descendant: str) -> bool:
    result = run_git(root, "merge-base", "--is-ancestor", ancestor, descendant, check=False)
    return result.returncode == 0


def merges_of(root: StrPath, sha: str, head: str) -> tuple[str, ...]:
    """The merge commits between ``sha`` and ``head`` (``sha..head``) that have ``sha`` as a
    parent, oldest first: where commit ``sha`` was merged."""
    out = run_git(root, "rev-list", "--reverse", "--merges", "--parents", f"{sha}..{head}").stdout
    return tuple(words[0] for words in map(str.split, out.splitlines()) if sha in words[1:])


# --- run records: HEAD and exclude (used by runs/agent_run) ---


def head_commit(root: StrPath) -> str | None:
    """HEAD's commit; None before the first commit or outside a repository."""
    result = run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    return (result.stdout.strip() or None) if result.returncode == 0 else None


# --- commit identity (used by github/ and local runs) ---

# Who the tool's own commits name when git knows nobody (a fresh machine): local runs and
# ``init --example``; the user's own identity always wins (``commit_identity``).
LOCAL_NAME = "gitflow-agents"
LOCAL_EMAIL = "gitflow-agents@localhost"


def commit_identity(
    root: StrPath, name: str, email: str, *, known: bool | None = None
) -> dict[str, str]:
    """The environment a commit in ``root`` needs to have an author and a committer: {} when
    git already knows both (from its configuration or this process's environment), else
    ``GIT_AUTHOR_*`` / ``GIT_COMMITTER_*`` naming ``name`` <``email``>, each only where the
    environment does not set it. Nothing is changed here: the caller passes the result on.
    ``known``: whether git knows both, when this command already asked (``git var`` is not
    asked again)."""
    if known is None:
        known = all(
            run_git(root, "var", variable, check=False).returncode == 0
            for variable in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT")
        )
    if known:
        return {}
    wanted = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }
    return {key: value for key, value in wanted.items() if not os.environ.get(key)}
