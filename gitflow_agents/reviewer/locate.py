"""What a review is about: the target (a range, a commit, the index) from the command line's
RANGE / ``--staged`` or a hook's environment, and whether it holds anything to review.

Apart from ``target.py`` (the review itself) so that ``git agent-review`` asks git where the
review is before it imports the review: git answers while the modules load (issue 20).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.records import TYPE_CHECKING, NamedTuple
from gitflow_agents.git import queries as git
from gitflow_agents.git.cmd import pushed_commit

if TYPE_CHECKING:
    from _typeshed import StrPath


class Target(NamedTuple):
    """What is reviewed: ``base`` against ``head`` (None: the index); ``paths``: only those
    files (none: every file; the hook's files pre-commit hands over)."""

    base: str
    head: str | None
    label: str  # for messages: "abc123..def456", "staged changes"
    one_commit: bool = False  # head is one commit whose only parent is base (REV, not a merge)
    paths: tuple[str, ...] = ()

    @property
    def spec(self) -> git.DiffSpec:
        return git.DiffSpec(self.base, self.head, self.one_commit, self.paths)


def _one_commit(root: StrPath, rev_range: str) -> Target:
    """``REV``: its first parent (the empty tree for a root commit) .. REV. Known to be one
    commit unless REV is a merge, so no git process is spent asking."""
    return _commit_target(root, rev_range, *git.commit_and_parents(root, rev_range))


def _commit_target(root: StrPath, rev: str, head: str, parents: tuple[str, ...]) -> Target:
    base = parents[0] if parents else git.empty_tree(root)
    return Target(base, head, rev, one_commit=len(parents) <= 1)


def ask_location(
    rev_range: str | None, *, staged: bool
) -> Callable[[], tuple[StrPath, Target | None]]:
    """Where the review is, asked now: the function returned gives the top of the work tree
    (``git.repo_root``) and, for a single commit ``REV`` or ``--staged``, the target too, both
    from one git process (issue 20: a small review's git processes), started before it is
    read so that git answers while ``git agent-review`` imports the review. None for the
    target: ``resolve_target`` finds it (a range, the default branch, or what git could not
    name, which it then reports)."""
    if staged and not rev_range:
        asked = git.ask_root_and_head()

        def staged_changes() -> tuple[StrPath, Target | None]:
            found = asked()
            if found is None:
                return git.repo_root(), None
            root, head = found
            return root, Target(head or git.empty_tree(root), None, "staged changes")

        return staged_changes
    if rev_range and not staged and ".." not in rev_range:
        asked_commit = git.ask_root_and_commit(rev_range)

        def one_commit() -> tuple[StrPath, Target | None]:
            commit = asked_commit()
            if commit is None:
                return git.repo_root(), None
            root, head, parents = commit
            return root, _commit_target(root, rev_range, head, parents)

        return one_commit
    return lambda: (git.repo_root(), None)


def resolve_target(
    root: StrPath,
    rev_range: str | None,
    *,
    staged: bool,
    say: list[str] | None = None,
    pushed: str | None = None,
) -> Target:
    """Turn the command line's RANGE / --staged into base and head commits.

    ``say`` collects one-line remarks for the user (which default branch was used);
    ``pushed``: without a RANGE, the hook's pushed ref whose whole history is new to the
    remote, reviewed from the empty tree (``_whole_history``). A range's base may be the empty
    tree's id (``EMPTY..X``: every commit of X).
    """
    say = say if say is not None else []
    if staged:
        if rev_range:
            raise UsageError("give either a RANGE or --staged, not both")
        base = git.head_sha(root) if git.has_head(root) else git.empty_tree(root)
        return Target(base, None, "staged changes")
    if rev_range is None and pushed:
        return _whole_history(root, pushed, say)
    if rev_range is None:
        branch = git.default_branch(root)
        head = git.head_sha(root)
        base = git.merge_base(root, branch.ref, head)
        say.append(f"reviewing {base[:12]}..{head[:12]}: merge-base with the {branch.note}")
        return Target(base, head, f"{base[:12]}..{head[:12]}")
    if "..." in rev_range:
        left, right = rev_range.split("...", 1)
        head = git.rev_parse(root, right or "HEAD")
        base = git.merge_base(root, git.rev_parse(root, left or "HEAD"), head)
        return Target(base, head, rev_range)
    if ".." in rev_range:
        left, right = rev_range.split("..", 1)
        return Target(
            _range_base(root, left or "HEAD"), git.rev_parse(root, right or "HEAD"), rev_range
        )
    return _one_commit(root, rev_range)


def _range_base(root: StrPath, rev: str) -> str:
    """The base of ``rev..X``: the commit ``rev`` names, or the repository's empty tree when
    ``rev`` is its full id (``4b825dc642cb6eb9a060e54bf8d69288fbee4904..X``): every commit of
    X, its root commit too, which no commit as the base can leave in the range."""
    if git.is_empty_tree(rev) and rev == git.empty_tree(root):
        return rev
    return git.rev_parse(root, rev)


def _whole_history(root: StrPath, pushed: str, say: list[str]) -> Target:
    """A pushed ref whose whole history is new to the remote (pre-commit gives no from/to refs:
    a first push to an empty remote, an orphan branch): every commit of it, from the empty
    tree. A commit as the base could never hold the root commit, and the merge-base with the
    default branch, a local branch the remote may not have, is the pushed commit itself on
    such a first push: a review of nothing."""
    head = git.rev_parse(root, pushed)
    say.append(
        f"reviewing every commit of {pushed} ({head[:12]}) from the empty tree: "
        "its whole history is new to the remote"
    )
    return Target(git.empty_tree(root), head, f"{pushed} (its whole history)")


def empty_range(root: StrPath, base: str, head: str) -> str | None:
    """Why ``base..head`` holds no commit (None when it holds one): base and head are the same
    commit, or head is already contained in base (a reverse range, whose diff would be the
    base's commits undone). The one rule for ``git agent-review``, ``flow review``, the chain
    and the note writer (``note_record.record_review``): reviewing nothing approves nothing."""
    if base == head:
        return "the same commit"
    if git.is_ancestor(root, head, base):  # False for the empty tree
        return f"{head[:12]} is already contained in {base[:12]}"
    return None


def nothing_to_review(root: StrPath, target: Target) -> str | None:
    """Why ``target`` holds no commit to review (None when it does), as the line to print
    (:func:`empty_range`): base and head are the same commit (``git agent-review`` on the
    default branch, ``HEAD..HEAD``), or head is already contained in base. Reviewing nothing
    must never approve anything."""
    if target.head is None or target.one_commit:  # a commit is never in its own parent
        return None
    why = empty_range(root, target.base, target.head)
    if why is None:
        return None
    base, head = target.base[:12], target.head[:12]
    return (
        f"nothing to review between {base} and {head} ({why}), so no review is recorded; "
        f"name the commits to review, e.g. `git agent-review {head}` (that commit alone) "
        f"or `git agent-review BASE..{head}`"
    )


def missing_history(root: StrPath, target: Target) -> str | None:
    """Why ``target`` cannot be reviewed whole here (None when it can): commits of its range sit
    at the shallow boundary of this clone, so the commits before them, and whatever they added
    (a key added and removed again), are not here. A review never approves what it did not
    see; ``git agent-review`` fetches nothing itself (a review and its hooks stay offline)."""
    if target.head is None:
        return None
    boundary = git.shallow_boundary(root, target.base, target.head)
    if not boundary:
        return None
    return (
        f"{target.label} reaches past the shallow boundary of this clone at "
        f"{len(boundary)} commit(s) ({boundary[0][:12]}…): the commits before them are not "
        "here, so the range cannot be reviewed whole; fetch them (`git fetch --unshallow`, "
        "or `git fetch --deepen=N`) and review again; in GitHub Actions check out with "
        "`actions/checkout`'s `fetch-depth: 0`"
    )


def hook_range(environ: Mapping[str, str]) -> tuple[str | None, bool, str | None]:
    """What ``--hook`` reviews, as (RANGE, staged, pushed): on pre-push the pushed range
    ``PRE_COMMIT_FROM_REF..PRE_COMMIT_TO_REF``; for a pushed ref whose whole history is new to
    the remote (pre-commit gives no from/to refs), no RANGE and the pushed ref, reviewed from
    the empty tree (``_whole_history``; UsageError when the push names none: never HEAD); else
    the staged changes."""
    from_ref, to_ref = environ.get("PRE_COMMIT_FROM_REF"), environ.get("PRE_COMMIT_TO_REF")
    if from_ref and to_ref:
        return f"{from_ref}..{to_ref}", False, None
    pushed = pushed_commit(environ)
    if pushed is not None:
        return None, False, pushed
    return None, True, None


def hook_target(root: StrPath, environ: Mapping[str, str]) -> Target:
    """The target for ``--hook``: the pushed range on pre-push, else the staged changes."""
    rev_range, staged, pushed = hook_range(environ)
    return resolve_target(root, rev_range, staged=staged, pushed=pushed)
