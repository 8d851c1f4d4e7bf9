"""Where configuration files come from: the project root, the shipped ``templates/flow/`` files
(the defaults before ``init``, and what ``init`` writes), and which file an ``@path`` value may
name."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from gitflow_agents.base.bounded import inside_root
from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.resources import templates_dir
from gitflow_agents.config.json_schema import SCHEMA_FILE, schema_text
from gitflow_agents.config.values import FLOW_DIR_NAME
from gitflow_agents.git.queries import refuse_git_dir, repo_root


def find_project_root(start: Path | None = None) -> Path:
    """The nearest ancestor (or ``start`` itself) holding ``.flow/`` or ``.git``, else ``start``."""
    here = (start if start is not None else Path.cwd()).absolute()
    for candidate in (here, *here.parents):
        if (candidate / FLOW_DIR_NAME).is_dir() or (candidate / ".git").exists():
            return candidate
    return here


def project_root(start: Path | None = None) -> Path:
    """The project a command works in, the one way every command finds it:
    :func:`find_project_root`, refused (UsageError, exit 2) in a bare repository or inside a
    git folder, which have no work tree for it (``git.queries.refuse_git_dir``). git is asked
    only when the root found is no work tree's top (no ``.git`` there)."""
    root = find_project_root(start)
    if not (root / ".git").exists():
        refuse_git_dir(start if start is not None else Path.cwd())
    return root


def repository_project(start: Path | None = None) -> Path:
    """:func:`project_root` for a command that works on its repository's branches and work
    trees (``run``, ``flow``, ``plan tend``, ``plan matrix --ready``, ``gc``, ``worktrees``):
    the top of the repository's work tree (as ``git.queries.repo_root`` spells it), which
    the project must be. UsageError (exit 2) for a project whose ``.flow/`` is in a sub-folder
    of its repository: those commands took the top's settings there, other agents than the
    project's (docs/configuration.md); and outside a repository."""
    root = project_root(start)
    top = repo_root(root)
    if os.path.realpath(top) != os.path.realpath(root):
        raise UsageError(
            f"{root / FLOW_DIR_NAME}: a project in a sub-folder of the repository {top}; "
            "runs, their branches and work trees (run, flow, plan tend, plan matrix --ready, "
            "gc, worktrees) are the whole repository's and work only for a project at its "
            f"top: move .flow/ to {top}, or run the command there (with the settings there)"
        )
    return top


def builtin_flow_dir() -> Path:
    """The shipped ``templates/flow/`` folder that ``init`` copies and the defaults read."""
    return templates_dir() / "flow"


class ScaffoldFile(NamedTuple):
    """One file ``init`` writes: a shipped file copied as it is, or the generated JSON Schema
    (``source`` None)."""

    dest: str  # project-relative, posix slashes
    source: Path | None

    def content(self) -> bytes:
        if self.source is not None:
            return self.source.read_bytes()

        return schema_text().encode("utf-8")


def scaffold_files(*, example: bool = False) -> tuple[ScaffoldFile, ...]:
    """Everything ``init`` writes, in order.

    ``templates/flow/*.md`` -> ``.flow/templates/``, ``agents/`` -> ``.flow/agents/``,
    ``*.yaml`` -> ``.flow/`` (same sub-folder), ``specs/`` -> ``specs/``, plus the JSON Schema
    (generated from the shape the loader checks) next to ``.flow/base.yaml`` for editors.
    ``example``: ``templates/example/`` (mapped the same way) replaces or adds files: the
    offline example of ``init --example`` (a plan whose steps carry diffs, agents that run offline).
    """
    files = {file.dest: file for file in _shipped(builtin_flow_dir())}
    if example:
        files.update((file.dest, file) for file in _shipped(templates_dir() / "example"))
    return (*files.values(), ScaffoldFile(f"{FLOW_DIR_NAME}/{SCHEMA_FILE}", None))


def _shipped(folder: Path) -> list[ScaffoldFile]:
    files: list[ScaffoldFile] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel.startswith(("specs/",)):
            dest = rel
        elif rel.startswith("agents/") or rel.endswith(".yaml"):
            dest = f"{FLOW_DIR_NAME}/{rel}"
        elif "/" not in rel:
            dest = f"{FLOW_DIR_NAME}/templates/{rel}"
        else:
            continue
        files.append(ScaffoldFile(dest, path))
    return files


@dataclass(frozen=True)
class Layout:
    """Where layer files are read from, and how ``@path`` values map to files."""

    root: Path
    flow_dir: Path
    built_in: bool

    def at_file(self, rel: str) -> Path | None:
        """The file an ``@rel`` value names, or None when it is outside what may be read."""
        if self.built_in:
            shipped = {f.dest: f.source for f in scaffold_files() if f.source is not None}
            return shipped.get(normalise(rel))
        target = inside_root(self.root, self.root / rel)
        return None if target is None else Path(target)


def normalise(rel: str) -> str:
    """``rel`` with posix slashes and no leading ``./``."""
    return PurePosixPath(rel.replace("\\", "/")).as_posix().removeprefix("./")
