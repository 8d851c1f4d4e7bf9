"""More starting points of tests/helpers/step_pr.py's plan on GitHub, each made once per test
module (``run --pr`` is the slow part) and copied into a test by
``tests.helpers.opened_step.restore``; module-scoped fixtures (a test module using one imports
it):

- ``two_opened_steps``: steps 1 and 2 (2 made independent of 1) open, approved pull requests
  with auto-merge (squash) armed, by one ``run --pr --all``;
- ``opened_resolving_step``: ``opened_step`` with the fake fixer that resolves a conflict by
  keeping both sides (``fixer resolve``) configured on origin's main.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.github_standin import GitHubStandIn
from tests.helpers.chain import FAKE
from tests.helpers.opened_step import Opened, prepared
from tests.helpers.step_pr import BRANCH, independent_steps_runner, origin_sha, run_pr, setup_repo

RESOLVING_FIXER = [sys.executable, str(FAKE), "fixer", "resolve"]


@pytest.fixture(scope="module")
def two_opened_steps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opened]:
    def build(root: Path, server: GitHubStandIn) -> None:
        runner = independent_steps_runner(root, server)
        out = run_pr(runner, "--all", "--auto-merge", "squash")
        assert out.returncode == 0 and len(server.state.pulls) == 2, out.stdout + out.stderr
        shutil.rmtree(root / "repo")  # setup_repo's checkout: the runner's is the one kept
        runner.rename(root / "repo")

    yield from prepared(tmp_path_factory.mktemp("two-opened"), build)


@pytest.fixture(scope="module")
def opened_resolving_step(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opened]:
    def build(root: Path, server: GitHubStandIn) -> None:
        out = run_pr(setup_repo(root, server, fixer=RESOLVING_FIXER), "--step", "1")
        assert out.returncode == 0, out.stdout + out.stderr
        assert origin_sha(server, f"refs/heads/{BRANCH}") is not None

    yield from prepared(tmp_path_factory.mktemp("opened-resolving"), build)
