"""Atomic writes that stay inside the repository: a temp file in the same folder, then
``os.replace``, never half-written. Every write (and every folder the tool creates for runs and
agents) is checked by :func:`safe_target` first: a symlink on the way that leads out of the
repository is refused (docs/security.md, "Writes"). ``fsutil.py`` re-exports these names; a
small review writes through this module alone, without json (issue 20).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from functools import cache

from gitflow_agents.base.errors import UnsafeWriteError, UsageError
from gitflow_agents.base.lazy import path as as_path
from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from _typeshed import StrPath

# pathlib is imported by the first write (or check of one, ``as_path``): a small review with a
# .flow/ layer only asks common_git_dir, without it (issue 20)


@cache
def _default_mode() -> int:
    """``0o666`` less the umask: the mode a plain ``open(..., "w")`` would give a new file.

    Read once: reading the umask means setting it, which is process-wide.
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


# --- where a write may land ------------------------------------------------------------------


def _repository_of(path: Path) -> Path | None:
    """The work tree a write to ``path`` belongs to: the innermost folder above it holding
    ``.git``, looking from the top down and stopping at the first symlink below a repository
    (a link inside a repository may lead anywhere, even into another repository). None when
    ``path`` is in no repository."""
    root: Path | None = None
    for folder in reversed(path.parents):
        if root is not None and folder.is_symlink():
            break
        if os.path.lexists(folder / ".git"):
            root = folder
    return root


def common_git_dir(root: StrPath) -> str | None:
    """The git directory shared by the work trees of the repository whose work tree is
    ``root``, read from the file system (no git process): ``root/.git`` when it is a folder;
    for a linked work tree (``.git`` a file: ``gitdir: …/.git/worktrees/<name>``) the folder
    its ``commondir`` names; a submodule's own git directory (no ``commondir``). None when
    ``.git`` is neither (``GIT_DIR`` elsewhere) or cannot be read. In ``os.path`` terms: a
    small review with a ``.flow/`` layer asks it without importing pathlib (issue 20)."""
    dot = os.path.join(root, ".git")  # noqa: PTH118
    if os.path.isdir(dot):  # noqa: PTH112
        return dot
    try:
        with open(dot, encoding="utf-8") as pointer_file:  # noqa: PTH123
            pointer = pointer_file.read()
        if not pointer.startswith("gitdir:"):
            return None
        gitdir = os.path.join(root, pointer[len("gitdir:") :].strip())  # noqa: PTH118
        commondir = os.path.join(gitdir, "commondir")  # noqa: PTH118
        if not os.path.exists(commondir):  # noqa: PTH110 - a submodule: its own git directory
            return gitdir
        with open(commondir, encoding="utf-8") as commondir_file:  # noqa: PTH123
            return os.path.realpath(os.path.join(gitdir, commondir_file.read().strip()))  # noqa: PTH118
    except (OSError, UnicodeDecodeError):
        return None


def _main_work_tree(root: Path) -> str | None:
    """For a linked work tree, the main work tree of its repository; None otherwise (a main
    work tree, a submodule, no repository)."""
    if (root / ".git").is_dir():
        return None
    common = common_git_dir(root)
    if common is None or os.path.basename(common) != ".git":  # noqa: PTH119
        return None
    return os.path.dirname(common)  # noqa: PTH120


def real_path(path: StrPath) -> Path:
    """``path`` made absolute with its symlinks followed, as ``Path.resolve`` does, but a symlink
    loop is no error: the path is followed up to the loop and the rest kept as given (what
    Python 3.13's ``resolve`` does; 3.11's raises RuntimeError, which no caller expects). Every
    path the tool resolves goes through here: a user or an agent may plant a loop, and opening
    what this returns for one fails as for any path that cannot be read."""
    return as_path(os.path.realpath(path))


def write_bounds(path: Path) -> tuple[Path, ...]:
    """Real folders a write to ``path`` must land in: its repository's work tree (and, for a
    linked work tree such as the tool's own, the main one: the tool links their run folders).
    Empty when ``path`` is in no repository (a file the user named anywhere)."""
    root = _repository_of(as_path(os.path.normpath(path.absolute())))
    if root is None:
        return ()
    bounds = [as_path(os.path.realpath(root))]
    main = _main_work_tree(root)
    if main is not None:
        bounds.append(as_path(os.path.realpath(main)))
    return tuple(bounds)


def safe_target(path: Path) -> Path:
    """The real path a write to ``path`` lands on (symlinks followed); UnsafeWriteError when a
    symlink on the way leads out of the repository ``path`` lies in."""
    target = as_path(os.path.realpath(path))
    bounds = write_bounds(path)
    if bounds and not any(target.is_relative_to(bound) for bound in bounds):
        raise UnsafeWriteError(
            f"{path}: refusing to write: a symlink leads it out of the repository "
            f"{bounds[0]} (to {target})"
        )
    return target


def make_dirs(path: Path) -> Path:
    """``mkdir -p`` of ``path`` after :func:`safe_target`; the real folder."""
    target = safe_target(path)
    target.mkdir(parents=True, exist_ok=True)
    return target


def refuse_symlinks(*paths: Path) -> None:
    """UnsafeWriteError if any of ``paths`` is a symlink: files the tool creates for an agent
    (its report, its config folder) must not follow one planted there before the run."""
    for path in paths:
        if path.is_symlink():
            raise UnsafeWriteError(
                f"{path}: is a symlink (to {path.readlink()}); the tool creates this path "
                "for the agent and does not follow a symlink placed there: remove it"
            )


# --- atomic writes ----------------------------------------------------------------------------


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically.

    Follows a symlink to its target (the link stays a link) as long as the target is inside
    the repository (:func:`safe_target`), creates missing parent folders, keeps an existing
    file's mode (a new file gets the umask's usual mode, not mkstemp's 0600), and with
    ``durable`` fsyncs the data before the rename. On any failure the original file is
    untouched and no temp file is left behind.
    """
    target = safe_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = _default_mode()
    fd, tmp = _temp_beside(target)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, target)  # noqa: PTH105 - the one atomic step; tests patch os.replace
    except BaseException:
        as_path(tmp).unlink(missing_ok=True)
        raise


def _temp_beside(target: Path) -> tuple[int, str]:
    """A new file next to ``target`` (``.<name>.<random>.tmp``, mode 0600, never an existing
    path), open for writing: what ``tempfile.mkstemp`` gives, without importing tempfile (it
    imports shutil, random and the compressors: a small review's start-up, issue 20)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        name = str(target.parent / f".{target.name}.{os.urandom(6).hex()}.tmp")
        with contextlib.suppress(FileExistsError):
            return os.open(name, flags, 0o600), name
    raise FileExistsError(f"{target.parent}: no free name for a temporary file")


def write_text_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """UTF-8, newlines written exactly as given (no translation)."""
    write_bytes_atomic(path, text.encode("utf-8"), durable=durable)


# --- a file the user named ----------------------------------------------------------------------


def write_output(path: StrPath, data: bytes, *, option: str = "--output") -> None:
    """Write ``data`` to the file a user named on the command line (``option``), where ``> FILE``
    would put it, and never half-written:

    - a regular file, or a path that does not exist yet: replaced atomically
      (:func:`write_bytes_atomic`: symlinks followed within the repository, parents created);
    - a descriptor this process holds (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``,
      or a link to one): written to that descriptor, after what it already holds (gawk treats
      these names so too); the file behind it is neither replaced nor truncated;
    - any other existing file that is not regular (a character or block device, a FIFO, a
      socket): opened for writing and written in place, never replaced by a regular file
      (``--output /dev/null`` run as root replaced the system's /dev/null);
    - a folder: UsageError naming ``option``.

    A symlink inside a repository that leads out of it is refused in every case
    (:func:`safe_target`)."""
    name = os.fspath(path)
    safe_target(as_path(name))
    descriptor = _own_descriptor(name)
    if descriptor is not None:
        for stream in (sys.stdout, sys.stderr):  # what this process printed comes first
            with contextlib.suppress(Exception):
                stream.flush()
        _write_all(descriptor, data)
        return
    mode = _mode(name, option)
    if mode is None or stat.S_ISREG(mode):
        write_bytes_atomic(as_path(name), data)
        return
    # O_TRUNC as ``>`` gives it (a device or a FIFO ignores it); O_NOCTTY: a terminal named
    # here does not become this process's controlling terminal
    flags = os.O_WRONLY | os.O_TRUNC | os.O_NOCTTY | os.O_CLOEXEC
    handle = os.open(name, flags)
    try:
        _write_all(handle, data)
    finally:
        os.close(handle)


def refuse_folder(path: StrPath, option: str = "--output") -> None:
    """UsageError when ``path`` (named by ``option``) is empty, a folder, or under a file that
    is not a folder: there is no file to write. Asked before a review runs, so a long review
    does not end in it."""
    name = os.fspath(path)
    if not name:
        raise UsageError(f"{option}: give a file name (it was empty)")
    _mode(name, option)
    parent = os.path.dirname(name)  # noqa: PTH120 - the name as given, not a Path
    while parent and not os.path.lexists(parent):
        parent = os.path.dirname(parent.rstrip("/"))  # noqa: PTH120
    if parent and not os.path.isdir(parent):  # noqa: PTH112
        raise UsageError(f"{option} {name}: {parent} is a file, not a folder")


_FOLDER_ENDS = ("", os.curdir, os.pardir)


def _mode(name: str, option: str) -> int | None:
    """The ``st_mode`` of what ``name`` names (symlinks followed), None when nothing is there;
    UsageError for a folder, and for a name that can only be one, there or not: one ending in
    ``/``, ``.`` or ``..`` (``reports/``: a Path of it names ``reports``, which became a file)."""
    if os.path.basename(name) in _FOLDER_ENDS:  # noqa: PTH119 - the name as given, not a Path
        raise UsageError(
            f"{option} {name}: is a folder, not a file (the name ends in "
            f"{name[-1]!r}): name the file to write"
        )
    try:
        mode = os.stat(name).st_mode  # noqa: PTH116 - the name as given, not a Path
    except (FileNotFoundError, NotADirectoryError):
        return None  # the atomic write makes it, or says why it cannot
    if stat.S_ISDIR(mode):
        raise UsageError(f"{option} {name}: is a folder, not a file: name the file to write")
    return mode


_FD_FOLDERS = ("/dev/fd",)  # BSD and macOS hold the descriptors there, not under /proc


def _own_descriptor(name: str) -> int | None:
    """The descriptor of this process that ``name`` names, following its symlinks one at a time
    (``/dev/stdout`` → ``/proc/self/fd/1``): a name in this process's ``/proc/<pid>/fd`` (or
    ``/dev/fd``); None for any other path."""
    own = os.path.realpath("/proc/self/fd")  # /proc/<our pid>/fd while this process runs
    current = os.path.abspath(name)  # noqa: PTH100 - os.path throughout (issue 20)
    for _ in range(40):  # the kernel's own limit on links followed
        folder, base = os.path.split(current)
        if base.isdigit() and os.path.realpath(folder) in (own, *_FD_FOLDERS):
            return int(base)
        if not os.path.islink(current):  # noqa: PTH114
            return None
        current = os.path.join(folder, os.readlink(current))  # noqa: PTH115, PTH118
    return None


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]
