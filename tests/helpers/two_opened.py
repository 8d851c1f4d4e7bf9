"""Steps 1 and 2 of tests/helpers/step_pr.py's plan (2 made independent of 1) as open, approved
pull requests with auto-merge (squash) armed, made once per test module by ``run --pr --all``
(``two_opened_steps``: a module-scoped fixture, a test module using it imports it) and copied
into a test by ``tests.helpers.opened_step.restore``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.github_standin import GitHubStandIn
from tests.helpers.opened_step import Opened, prepared
from tests.helpers.step_pr import independent_steps_runner, run_pr


@pytest.fixture(scope="module")
def two_opened_steps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opened]:
    def build(root: Path, server: GitHubStandIn) -> None:
        runner = independent_steps_runner(root, server)
        out = run_pr(runner, "--all", "--auto-merge", "squash")
        assert out.returncode == 0 and len(server.state.pulls) == 2, out.stdout + out.stderr
        shutil.rmtree(root / "repo")  # setup_repo's checkout: the runner's is the one kept
        runner.rename(root / "repo")

    yield from prepared(tmp_path_factory.mktemp("two-opened"), build)
