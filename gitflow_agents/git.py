"""The one git boundary: small named queries over plain ``git`` argv run through ``proc.run``.

Every call scrubs inherited ``GIT_DIR`` / ``GIT_WORK_TREE`` / ``GIT_INDEX_FILE`` (git exports
them to hooks, often as paths relative to a directory we are not in) and asks for machine
output: ``-z`` where git offers it, ``--no-color``, ``--no-ext-diff``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitflow_agents import proc
from gitflow_agents.errors import GitError, UsageError

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


def git_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for git calls: ``environ`` (default os.environ) minus repo-pointing vars."""
    source = os.environ if environ is None else environ
    env = {k: v for k, v in source.items() if k not in _SCRUBBED}
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def run_git(
    root: Path | str, *args: str, input: str | None = None, check: bool = True
) -> proc.Result:
    """``git -C root <args>`` with a scrubbed environment and no pager or colour."""
    argv = ("git", "--no-pager", "-c", "color.ui=never", "-C", str(root), *args)
    return proc.run(argv, env=git_env(), input=input, check=check)


def _fail(result: proc.Result, what: str) -> GitError:
    detail = result.stderr.strip().splitlines()
    return GitError(f"{what}: {detail[-1] if detail else f'git exited {result.returncode}'}")


# --- repository and revisions -------------------------------------------------------------


def repo_root(start: Path | str | None = None) -> Path:
    """Top of the work tree containing ``start`` (default: the current directory)."""
    where = Path(start) if start is not None else Path.cwd()
    result = run_git(where, "rev-parse", "--show-toplevel", check=False)
    if result.returncode != 0:
        raise UsageError(f"not a git repository (or any parent up to /): {where}")
    top = result.stdout.strip()
    if not top:
        raise UsageError(f"not inside a git work tree (bare repository?): {where}")
    return Path(top)


def rev_parse(root: Path, rev: str) -> str:
    """Full sha of the commit ``rev`` names; UsageError naming ``rev`` when unknown."""
    if not rev or rev.startswith("-"):
        raise UsageError(f"unknown revision: {rev!r}")
    result = run_git(
        root, "rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}", check=False
    )
    if result.returncode != 0 or not result.stdout.strip():
        raise UsageError(f"unknown revision: {rev}")
    return result.stdout.strip()


def head_sha(root: Path) -> str:
    """Sha of HEAD; UsageError when the repository has no commit yet."""
    result = run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    if result.returncode != 0:
        raise UsageError("HEAD has no commit yet (make a first commit)")
    return result.stdout.strip()


def has_head(root: Path) -> bool:
    return run_git(root, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0


def tree_sha(root: Path, rev: str) -> str:
    return run_git(root, "rev-parse", "--verify", rev + "^{tree}").stdout.strip()


def empty_tree(root: Path) -> str:
    """The empty tree's id (differs between sha1 and sha256 repositories)."""
    return run_git(root, "hash-object", "-t", "tree", "--stdin", input="").stdout.strip()


def parents(root: Path, sha: str) -> tuple[str, ...]:
    out = run_git(root, "rev-list", "--parents", "-n", "1", sha).stdout.split()
    return tuple(out[1:])


def merge_base(root: Path, a: str, b: str) -> str:
    result = run_git(root, "merge-base", a, b, check=False)
    if result.returncode != 0 or not result.stdout.strip():
        raise UsageError(f"no common ancestor between {a} and {b}")
    return result.stdout.split()[0]


def ref_exists(root: Path, ref: str) -> bool:
    return run_git(root, "show-ref", "--verify", "--quiet", ref, check=False).returncode == 0


@dataclass(frozen=True)
class DefaultBranch:
    ref: str  # what to pass to git, e.g. "origin/main" or "main"
    note: str  # how it was found, for a message to the user


def default_branch(root: Path, remote: str = "origin") -> DefaultBranch:
    """The branch reviews compare against.

    ``refs/remotes/<remote>/HEAD`` when the clone knows it; otherwise ``main`` then ``master``
    (remote-tracking first, then local), saying which was used.
    """
    result = run_git(root, "symbolic-ref", "-q", f"refs/remotes/{remote}/HEAD", check=False)
    target = result.stdout.strip()
    if result.returncode == 0 and target.startswith("refs/remotes/"):
        name = target.removeprefix("refs/remotes/")
        return DefaultBranch(name, f"default branch {name} (from refs/remotes/{remote}/HEAD)")
    for name in ("main", "master"):
        for ref, shown in (
            (f"refs/remotes/{remote}/{name}", f"{remote}/{name}"),
            (f"refs/heads/{name}", name),
        ):
            if ref_exists(root, ref):
                return DefaultBranch(
                    shown,
                    f"default branch {shown} (refs/remotes/{remote}/HEAD is not set; "
                    f"fell back to {name})",
                )
    raise UsageError(
        f"cannot find the default branch: refs/remotes/{remote}/HEAD is not set and there is "
        "no main or master branch; give a range, e.g. `git agent-review BASE..HEAD`"
    )


# --- diffs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AddedLine:
    number: int  # 1-based line number in the new file
    text: str  # without the trailing newline


@dataclass(frozen=True)
class FileChange:
    path: str  # new path ("" never; for deletions the old path)
    status: str  # A, M, D, R, C, T
    old_path: str | None = None  # for renames and copies
    added: int | None = None  # numstat; None for binary files
    deleted: int | None = None
    added_lines: tuple[AddedLine, ...] = ()
    no_final_newline: bool = False  # the new side ends without a newline

    @property
    def binary(self) -> bool:
        return self.added is None and self.status != "D"


@dataclass(frozen=True)
class DiffSpec:
    """What to compare: ``base`` against ``head`` (a commit) or the index (``head`` None)."""

    base: str
    head: str | None

    def args(self) -> tuple[str, ...]:
        return (self.base, self.head) if self.head is not None else ("--cached", self.base)


_DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv", "-M", "--ignore-submodules")


def name_status(root: Path, spec: DiffSpec) -> list[tuple[str, str, str | None]]:
    """(status letter, path, old path) per changed file, from ``git diff --name-status -z``."""
    out = run_git(root, "diff", *_DIFF_FLAGS, "--name-status", "-z", *spec.args(), "--").stdout
    parts = out.split("\0")
    rows: list[tuple[str, str, str | None]] = []
    i = 0
    while i < len(parts) and parts[i]:
        letter = parts[i][0]
        if letter in "RC":
            rows.append((letter, parts[i + 2], parts[i + 1]))
            i += 3
        else:
            rows.append((letter, parts[i + 1], None))
            i += 2
    return rows


def numstat(root: Path, spec: DiffSpec) -> dict[str, tuple[int | None, int | None]]:
    """(added, deleted) per new path; None for binary files (git prints ``-``)."""
    out = run_git(root, "diff", *_DIFF_FLAGS, "--numstat", "-z", *spec.args(), "--").stdout
    parts = out.split("\0")
    stats: dict[str, tuple[int | None, int | None]] = {}
    i = 0
    while i < len(parts) and parts[i]:
        added, deleted, path = parts[i].split("\t", 2)
        if path == "":  # rename: "a\td\t" then old path, new path
            path = parts[i + 2]
            i += 3
        else:
            i += 1
        stats[path] = (
            None if added == "-" else int(added),
            None if deleted == "-" else int(deleted),
        )
    return stats


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    '"': '"',
    "\\": "\\",
}


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual paths in patch headers."""
    if not (path.startswith('"') and path.endswith('"')):
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567":
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out.extend(_ESCAPES.get(nxt, nxt).encode())
            i += 2
            continue
        out.extend(ch.encode())
        i += 1
    return out.decode("utf-8", errors="replace")


def added_lines(root: Path, spec: DiffSpec) -> dict[str, tuple[tuple[AddedLine, ...], bool]]:
    """Added lines (new line number, text) per new path, and whether the new side lacks a final
    newline; parsed from ``git diff -U0``."""
    out = run_git(
        root,
        "diff",
        *_DIFF_FLAGS,
        "-U0",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        *spec.args(),
        "--",
    ).stdout
    result: dict[str, tuple[tuple[AddedLine, ...], bool]] = {}
    path: str | None = None
    lines: list[AddedLine] = []
    no_newline = False
    number = 0
    last = ""

    def flush() -> None:
        if path is not None:
            result[path] = (tuple(lines), no_newline)

    for raw in out.split("\n"):
        if raw.startswith("diff --git "):
            flush()
            path, lines, no_newline, last = None, [], False, ""
        elif raw.startswith("+++ ") and path is None and not lines:
            target = _unquote(raw[4:])
            path = target[2:] if target.startswith("b/") else None
        elif raw.startswith("@@"):
            match = _HUNK.match(raw)
            number = int(match.group(1)) if match else 0
            last = ""
        elif raw.startswith("+") and path is not None:
            lines.append(AddedLine(number, raw[1:]))
            number += 1
            last = "+"
        elif raw.startswith("-"):
            last = "-"
        elif raw.startswith("\\ ") and last == "+":
            no_newline = True
    flush()
    return result


def diff(root: Path, spec: DiffSpec) -> tuple[FileChange, ...]:
    """Every changed file between ``spec.base`` and ``spec.head`` (or the index)."""
    stats = numstat(root, spec)
    hunks = added_lines(root, spec)
    changes = []
    for status, path, old in name_status(root, spec):
        added, deleted = stats.get(path, (None, None))
        lines, no_newline = hunks.get(path, ((), False))
        changes.append(FileChange(path, status, old, added, deleted, lines, no_newline))
    return tuple(changes)


# --- file contents -------------------------------------------------------------------------


def _object(rev: str | None, path: str) -> str:
    return f":{path}" if rev is None else f"{rev}:{path}"


def show_file(root: Path, rev: str | None, path: str) -> str | None:
    """Text of ``path`` at ``rev`` (None: the index); None when it does not exist there."""
    result = run_git(root, "cat-file", "blob", _object(rev, path), check=False)
    return result.stdout if result.returncode == 0 else None


def blob_sizes(root: Path, rev: str | None, paths: Sequence[str]) -> dict[str, int]:
    """Size in bytes of each path at ``rev`` (None: the index), in one ``cat-file`` call."""
    if not paths:
        return {}
    request = "".join(_object(rev, p) + "\n" for p in paths)
    out = run_git(
        root, "cat-file", "--batch-check=%(objecttype) %(objectsize)", input=request
    ).stdout
    sizes: dict[str, int] = {}
    for path, line in zip(paths, out.splitlines(), strict=False):
        kind, _, size = line.partition(" ")
        if kind == "blob":
            sizes[path] = int(size)
    return sizes


# --- notes ---------------------------------------------------------------------------------


def read_note(root: Path, sha: str, ref: str = NOTES_REF) -> str | None:
    """The note attached to ``sha`` under ``ref``, or None."""
    result = run_git(root, "notes", f"--ref={ref}", "show", sha, check=False)
    return result.stdout if result.returncode == 0 else None


def write_note(root: Path, sha: str, text: str, ref: str = NOTES_REF) -> None:
    """Attach ``text`` to ``sha`` under ``ref``, replacing any earlier note."""
    result = run_git(
        root, "notes", f"--ref={ref}", "add", "-f", "-F", "-", sha, input=text, check=False
    )
    if result.returncode != 0:
        raise _fail(result, f"cannot write note on {sha[:12]}")
