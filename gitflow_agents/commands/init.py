"""``gitflow-agents init``: scaffold `.flow/` (config, templates, agents) and an example plan.

Copies the shipped ``templates/flow/`` files into the project root (the nearest folder with
``.flow/`` or ``.git``), plus the JSON Schema generated from the config shape. An existing file is
never overwritten unless ``--force`` is given, so running ``init`` twice is safe. Every write is
atomic (temp file + ``os.replace``).

``--example`` writes the offline example instead of the sample plan and agents
(``templates/example/`` and ``example_config``): its steps carry diffs, its builder is the
``patch`` agent and its reviewer the builtin one, with ``default_branch`` set to the branch checked out. In a repository
with no commit yet it also commits what it wrote, so ``run`` has a target to land on
(docs/agents.md, "The patch agent").
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path, PurePosixPath

from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.fsutil import write_bounds, write_bytes_atomic
from gitflow_agents.config import project_root, scaffold_files
from gitflow_agents.git.cmd import run_git
from gitflow_agents.git.queries import LOCAL_EMAIL, LOCAL_NAME, commit_identity, head_commit

EXAMPLE_PLAN = "specs/example-plan.md"
BASE_CONFIG = ".flow/base.yaml"
# The offline example's agents: the patch agent implements (and fixes), the builtin one reviews.
EXAMPLE_ADAPTERS = {"builder": "patch", "reviewer": "builtin", "fixer": "patch"}
EXAMPLE_NOTE = b"""#
# Written by `gitflow-agents init --example`: the agents run offline. The builder (and the
# fixer) is the `patch` agent, which applies the diff fenced in a step's text; the reviewer is
# the builtin offline reviewer. Set `adapter: claude` (or codex, gemini, ...) to use an agent CLI.
"""


def run(args: argparse.Namespace) -> int:
    root = project_root()
    force = bool(getattr(args, "force", False))
    example = bool(getattr(args, "example", False))
    written: list[str] = []
    other: list[str] = []  # --example: its config or plan kept as a plain `init` wrote it
    files = scaffold_files(example=example)
    _refuse_what_is_in_the_way(root, [file.dest for file in files], force=force)
    for file in files:
        target = root / file.dest
        if target.exists() and not force:
            print(f"skip {file.dest} (exists)")
            if example and not _is_the_examples(target, file.dest, file.content()):
                other.append(file.dest)
            continue
        content = file.content()
        if example and file.dest == BASE_CONFIG:
            content = _on_current_branch(root, example_config(content))
        write_bytes_atomic(target, content)
        written.append(file.dest)
        print(f"write {file.dest}")
    if example:
        _first_commit(root, written)
        if other:  # a plain `init` wrote them: its agents call model CLIs, its plan has no diffs
            print(
                f"gitflow-agents: warning: kept the existing {' and '.join(other)}, so the "
                "offline example is not set up (`gitflow-agents init --example --force` writes "
                "it over what is there)",
                file=sys.stderr,
            )
            return 0
        print(f"next: gitflow-agents run {EXAMPLE_PLAN} --all")
    return 0


def _refuse_what_is_in_the_way(root: Path, dests: list[str], *, force: bool) -> None:
    """UsageError naming every path that stops ``init`` (a file where it needs a folder, a
    folder where it writes a file, a symlink that leads a file it would write out of the
    repository), before it writes anything: it stopped half-way with a raw OS error that named a
    temp file, or after writing (with ``--force``, overwriting) the files before the link,
    leaving part of the scaffold."""
    problems: dict[str, str] = {}
    for dest in dests:
        parts = PurePosixPath(dest).parts
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if os.path.lexists(root / folder) and not (root / folder).is_dir():
                problems.setdefault(
                    folder, f"{folder} is {_kind(root / folder)}; init needs a folder there"
                )
                break
        else:
            if (root / dest).is_dir():
                problems.setdefault(dest, f"{dest} is a folder; init writes a file there")
            elif force or not (root / dest).exists():  # a file init writes (else: skipped)
                _refuse_leading_out(root, parts, problems)
    if problems:
        raise UsageError("; ".join(problems.values()) + " (init wrote nothing)")


def _refuse_leading_out(root: Path, parts: tuple[str, ...], problems: dict[str, str]) -> None:
    """Into ``problems``: the first of ``parts`` (a folder on the way or the file itself) that a
    symlink leads out of the repository, which every write refuses (``base/atomic.safe_target``,
    docs/security.md, "Writes"); once per link, however many files lie under it."""
    bounds = write_bounds(root / "/".join(parts))
    for depth in range(1, len(parts) + 1):
        rel = "/".join(parts[:depth])
        real = os.path.realpath(root / rel)
        if bounds and not any(Path(real).is_relative_to(bound) for bound in bounds):
            problems.setdefault(
                rel,
                f"{rel}: a symlink leads it out of the repository (to {real}); init never "
                "writes through such a link",
            )
            return


def _kind(path: Path) -> str:
    """What is at ``path`` instead of a folder, as a message says it."""
    if not path.exists():
        return "a broken symbolic link"
    return "a file" if path.is_file() else "not a folder"


def _is_the_examples(path: Path, dest: str, content: bytes) -> bool:
    """Whether the existing ``path`` is what ``init --example`` writes there: its config (the
    note it carries) and its plan (the same bytes); any other file counts as it is."""
    if dest not in (BASE_CONFIG, EXAMPLE_PLAN):
        return True
    try:
        existing = path.read_bytes()
    except OSError:
        return False
    return EXAMPLE_NOTE in existing if dest == BASE_CONFIG else existing == content


def example_config(shipped: bytes) -> bytes:
    """The shipped ``base.yaml`` with the example's adapters and a note saying so: one file to
    keep, so the example never drifts from what ``init`` writes."""
    text = shipped
    for agent, adapter in EXAMPLE_ADAPTERS.items():
        pattern = rb"(^  " + agent.encode() + rb":\n(?:    .*\n)*?    adapter: )\S+"
        text = re.sub(pattern, rb"\g<1>" + adapter.encode(), text, count=1, flags=re.M)
    header, sep, rest = text.partition(b"Reference: docs/configuration.md\n")
    return header + sep + EXAMPLE_NOTE + rest if sep else text


def _on_current_branch(root: Path, content: bytes) -> bytes:
    """The example's ``default_branch`` is the branch checked out (``git init`` may name it
    ``master``), so its steps land where the user is."""
    result = run_git(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    branch = result.stdout.strip()
    if result.returncode != 0 or not branch:
        return content
    line = f"default_branch: {branch}".encode()
    return re.sub(rb"^default_branch: .*$", line, content, count=1, flags=re.M)


def _first_commit(root: Path, written: list[str]) -> None:
    """In a repository without commits, commit the scaffold: the target ``run`` lands on."""
    if not written or not (root / ".git").exists() or head_commit(root) is not None:
        return
    identity = commit_identity(root, LOCAL_NAME, LOCAL_EMAIL)
    run_git(root, "add", "--", *written)
    run_git(root, "commit", "-q", "-m", "gitflow-agents init --example", extra_env=identity)
    print("commit the scaffold (the first commit: the branch the example's steps land on)")
