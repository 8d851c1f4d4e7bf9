"""Step 1 of tests/helpers/step_pr.py's plan as an open, approved pull request, made once per
test module and copied into each test that starts from it (``run --pr`` is the slow part).

``opened_step`` (a module-scoped fixture: a test module using it imports it) runs
``setup_repo`` and ``run --pr --step 1`` once, against a stand-in of its own, in a folder and
``$HOME`` of its own. ``restore`` gives a test the same starting point in its ``tmp_path``:
origin and the checkout copied (the checkout's ``origin`` pointed at the copy), and the test's
stand-in given a copy of what GitHub held and had been asked by then. The commits are the same
objects, so their shas are too.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import git, isolate_home
from tests.github_standin import GitHubStandIn, Recorded, State
from tests.helpers.step_pr import BRANCH, origin_sha, run_pr, setup_repo, standin_env, statuses


@dataclass(frozen=True)
class Opened:
    root: Path  # holds origin.git and repo
    state: State  # the stand-in's state once the pull request was open
    log: list[Recorded]  # and what it had been asked


@pytest.fixture(scope="module")
def opened_step(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opened]:
    def build(root: Path, server: GitHubStandIn) -> None:
        out = run_pr(setup_repo(root, server), "--step", "1")
        assert out.returncode == 0, out.stdout + out.stderr
        head = origin_sha(server, f"refs/heads/{BRANCH}")
        assert head is not None and statuses(server, head)[-1] == "success"

    yield from prepared(tmp_path_factory.mktemp("opened"), build)


def prepared(root: Path, build: Callable[[Path, GitHubStandIn], None]) -> Iterator[Opened]:
    """What a module-scoped fixture yields: ``build`` run in ``root`` (which it leaves holding
    ``origin.git`` and the checkout ``repo``) against a stand-in of its own, in a ``$HOME`` of
    its own and with ``run --pr``'s environment, as ``restore`` copies it."""
    server = GitHubStandIn().start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            isolate_home(root / "home", patch)
            for key, value in standin_env(server).items():
                patch.setenv(key, value)
            patch.delenv("GH_TOKEN", raising=False)
            build(root, server)
        yield Opened(root, copy.deepcopy(server.state), copy.deepcopy(server.log))
    finally:
        server.stop()
    assert not server.violations, "OpenAPI violations:\n" + "\n".join(server.violations)


def restore(opened: Opened, tmp_path: Path, gh: GitHubStandIn) -> Path:
    """``opened`` in ``tmp_path`` (``origin.git`` and ``repo``) and in ``gh``, which must not
    have been used or set up yet (all it holds is replaced); the checkout."""
    assert not gh.log and gh.state.origin is None and not gh.state.branch_rules
    for name in ("origin.git", "repo"):
        shutil.copytree(opened.root / name, tmp_path / name, symlinks=True)
    repo = tmp_path / "repo"
    git(repo, "remote", "set-url", "origin", str(tmp_path / "origin.git"))
    gh.state = copy.deepcopy(opened.state)
    gh.state.origin = tmp_path / "origin.git"
    gh.log[:0] = copy.deepcopy(opened.log)
    return repo
