"""``git.refname.branch_name_problem``: git's rules for a branch name (``git check-ref-format
--branch``), read without a git process, so that loading ``.flow/`` can check
``chain.branch_pattern`` (docs/configuration.md); each answer is the one git gives."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitflow_agents.git.refname import branch_name_problem

NAMES = [
    "agents/plan/step-1",
    "ai/plan/step-01",
    "lock",
    "a.lock.x",
    "a@b",
    "a{b}",
    "@",
    "é/1",
    "a/HEAD",
    "refs/heads/x",
    "x-",
    "a b/1",
    "a\tb",
    "a\x7fb",
    "x.lock",
    "a/b.lock/c",
    "x/.lock",
    ".a",
    "a/.b",
    "a/./b",
    "a..b",
    "-x",
    "a/",
    "/a",
    "a//b",
    "a.",
    "a@{b",
    "@{-1}",
    "a\\b",
    "a~1",
    "a^1",
    "a:b",
    "a?",
    "a*",
    "a[1",
    "HEAD",
    "",
]


@pytest.mark.parametrize("name", NAMES)
def test_the_rules_are_gits(name: str, tmp_path: Path) -> None:
    # outside any repository: in one, `@{-1}` names the branch checked out before (git answers
    # with it), so the answer would depend on the checkout the suite runs in
    git = subprocess.run(
        ["git", "check-ref-format", "--branch", name],
        capture_output=True,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)},
    )
    assert (branch_name_problem(name) is None) == (git.returncode == 0), name


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("a b/1", "contains a space"),
        ("x:1", "contains ':'"),
        ("a..b", "contains '..'"),
        ("a@{b", "contains '@{'"),
        ("x/1.lock", "a part ends with '.lock'"),
        ("x/.1", "a part starts with '.'"),
        ("x//1", "an empty part (a '/' at either end or two in a row)"),
        ("x.", "ends with '.'"),
        ("-1", "starts with '-'"),
        ("HEAD", "HEAD is not a branch name"),
    ],
)
def test_the_problem_is_named(name: str, said: str) -> None:
    assert branch_name_problem(name) == said
