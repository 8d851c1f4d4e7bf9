"""Shared fixtures: real git in temp dirs, a fixed author, and no writes to the real $HOME."""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pytest
from hypothesis import settings as hypothesis_settings

if TYPE_CHECKING:
    import psutil

ROOT = Path(__file__).resolve().parent.parent
FAKES = Path(__file__).resolve().parent / "fakes"
DATA = Path(__file__).resolve().parent / "data"


def _cache_bytecode() -> None:
    """Under PYTHONDONTWRITEBYTECODE every test process, and every ``python -m gitflow_agents``
    or hook a test starts, compiled the package from source again (a large share of the suite's
    CPU time on such a machine). Keep the byte code instead, outside the checkout, in a
    ``PYTHONPYCACHEPREFIX`` under the temp dir, as benchmarks/ do (checked against the source
    the way ``__pycache__`` is)."""
    if not sys.dont_write_bytecode:
        return
    prefix = str(Path(tempfile.gettempdir()) / f"gitflow-agents-test-pycache-{os.getuid()}")
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


_cache_bytecode()

# ``pytest --hypothesis-profile=long``: the long-haul sizes of the property tests (the chain state
# machine's 2 x 100 sequences, a larger fuzz sample, more examples for any other hypothesis test);
# CONTRIBUTING.md, "Long runs". A normal run uses the smaller sizes the tests name.
LONG_PROFILE = "long"
hypothesis_settings.register_profile(LONG_PROFILE, max_examples=1000)


@pytest.fixture(scope="session")
def long_run(request: pytest.FixtureRequest) -> bool:
    """True under ``pytest --hypothesis-profile=long``."""
    return bool(request.config.getoption("hypothesis_profile", None) == LONG_PROFILE)


GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
}


# What the supervisor sets for every agent it starts (docs/supervisor.md)
SUPERVISOR_ENV = (
    "GITFLOW_AGENTS_RUN_ID",
    "GITFLOW_AGENTS_RUN_DIR",
    "GITFLOW_AGENTS_AGENT_DIR",
    "GITFLOW_AGENTS_TREE",
)


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point $HOME (and XDG dirs) at a fresh folder so no test writes to the real one."""
    return isolate_home(tmp_path_factory.mktemp("home"), monkeypatch)


def isolate_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment of ``isolated_home`` with ``home`` as $HOME (also for fixtures of a wider
    scope, which run before the autouse one)."""
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    for key in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GITHUB_ACTIONS", "CI"):
        monkeypatch.delenv(key, raising=False)
    for key in SUPERVISOR_ENV:  # the suite run by an agent behaves as outside one
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)  # never the CI job's own summary
    (home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
    )
    return home


TEST_TMP_ENV = "PYTEST_GITFLOW_AGENTS_TMP"  # not GITFLOW_AGENTS_*: that prefix is the product's


# How long a process the test started may take to finish after it (a command the test's server
# started as it ended, a tree being killed): 2 s failed tests under a load of 20.
LEFT_BEHIND_GRACE = 10.0


@pytest.fixture(autouse=True)
def no_process_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that used ``tmp_path`` must not leave a process running (agent trees leak silently).

    After the test, every process of ours started since it began that belongs to the test and is
    still alive ``LEFT_BEHIND_GRACE`` seconds later is SIGKILLed, and the test fails. A process belongs to the test when its
    command line or working directory points into the test's ``tmp_path``, when its
    ``GITFLOW_AGENTS_RUN_DIR`` / ``GITFLOW_AGENTS_AGENT_DIR`` does (set by the supervisor for every
    process of an agent tree, also those that left its process group), or when it inherited
    ``PYTEST_GITFLOW_AGENTS_TMP`` (set here for the test's duration: every process the test starts
    with the usual environment, and their setsid'd grandchildren, carry it). Cheap: tests without
    ``tmp_path`` are skipped, and older processes are skipped by their start time (cached by
    psutil), so their command line and environment are never read.
    """
    if "tmp_path" not in request.fixturenames:
        yield
        return
    tmp = Path(request.getfixturevalue("tmp_path"))
    since = time.time() - 1.0  # create_time is jiffy-precise
    previous = os.environ.get(TEST_TMP_ENV)
    os.environ[TEST_TMP_ENV] = str(tmp)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(TEST_TMP_ENV, None)
        else:
            os.environ[TEST_TMP_ENV] = previous
    left = _processes_under(tmp, since)
    deadline = time.monotonic() + LEFT_BEHIND_GRACE
    while left and time.monotonic() < deadline:  # a tree that is being killed right now
        time.sleep(0.05)
        left = _processes_under(tmp, since)
    if not left:
        return
    import psutil

    names = []
    for proc in left:
        try:
            names.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
            proc.kill()
        except psutil.Error:
            pass
    pytest.fail(f"processes left behind by this test (now killed): {names}", pytrace=False)


def _processes_under(tmp: Path, since: float) -> list[psutil.Process]:
    """Live processes of ours, started after ``since``, that belong to ``tmp`` (see above)."""
    import psutil

    prefix = str(tmp) + os.sep
    own = os.getpid()  # (pytest and its parents are older than the test anyway)
    uid = os.getuid()
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid == own or proc.create_time() < since:
                continue
            if proc.uids().real != uid or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            env = proc.environ()
            places = [
                *proc.cmdline(),
                proc.cwd(),
                env.get("GITFLOW_AGENTS_RUN_DIR", ""),
                env.get("GITFLOW_AGENTS_AGENT_DIR", ""),
                env.get(TEST_TMP_ENV, ""),
            ]
        except psutil.Error:
            continue
        if any(str(tmp) == place or prefix in place for place in places):
            found.append(proc)
    return found


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` and return stdout (tests only; the package goes through git.py)."""
    out = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    )
    return out.stdout


@pytest.fixture
def repo(tmp_path: Path, isolated_home: Path) -> Iterator[Path]:
    """A git repository with one commit on ``main``."""
    yield init_repo(tmp_path / "repo")


def init_repo(path: Path) -> Path:
    """A git repository at ``path`` with one commit on ``main`` (what ``repo`` gives): a copy of
    a template this process built once (the author, committer and dates of ``GIT_ENV`` make
    every copy the same commit a fresh ``git init`` + commit would give, without its three git
    processes per test)."""
    shutil.copytree(_repo_template(), path, symlinks=True)
    return path


_TEMPLATE: list[Path] = []  # the template of ``init_repo``, built on first use in this process


def _repo_template() -> Path:
    if not _TEMPLATE:
        box = Path(tempfile.mkdtemp(prefix="gitflow-agents-test-repo-"))
        atexit.register(shutil.rmtree, box, ignore_errors=True)
        template = box / "repo"
        template.mkdir()
        env = {**os.environ, **GIT_ENV, "HOME": str(box), "XDG_CONFIG_HOME": str(box)}
        for key in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"):
            env.pop(key, None)
        (template / "README.md").write_text("# demo\n")
        for args in (("init", "-q", "-b", "main"), ("add", "README.md")):
            subprocess.run(["git", *args], cwd=template, env=env, check=True)
        subprocess.run(
            ["git", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "initial"],
            cwd=template,
            env=env,
            check=True,
        )
        _TEMPLATE.append(template)
    return _TEMPLATE[0]


class CliResult(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def _pythonpath() -> str:
    """The checkout first, so the CLI runs from any cwd even when the package is not installed."""
    existing = os.environ.get("PYTHONPATH")
    return str(ROOT) if not existing else os.pathsep.join((str(ROOT), existing))


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> CliResult:
    """Run ``gitflow-agents`` as a real subprocess (``python -m gitflow_agents``)."""
    proc = subprocess.run(
        [sys.executable, "-m", "gitflow_agents", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": _pythonpath(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def cli_main(*args: str, cwd: Path, env: Mapping[str, str] | None = None) -> CliResult:
    """``gitflow-agents ARGS`` called in this process without fixtures (also from a module- or
    session-scoped one): the console script's ``cli.main`` with its exit code (argparse's too)
    and what it printed, ``cwd`` and ``env`` set for the call only."""
    from gitflow_agents import cli

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        for key, value in (env or {}).items():
            patch.setenv(key, value)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(args))
            except SystemExit as exc:  # argparse
                code = int(exc.code or 0)
    return CliResult(code, out.getvalue(), err.getvalue())


class Cli:
    """``gitflow-agents`` called in-process (fast): real git and files, the output captured, the
    working directory and environment set for the call only. Use ``run_cli`` (a real process)
    only for what a process alone shows, such as the console script's exit status."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
        self.monkeypatch = monkeypatch
        self.capsys = capsys

    def _call(
        self,
        main: Callable[[list[str]], int],
        args: tuple[str, ...],
        cwd: Path,
        env: dict[str, str] | None,
    ) -> CliResult:
        with self.monkeypatch.context() as patch:
            patch.chdir(cwd)
            for key, value in (env or {}).items():
                patch.setenv(key, value)
            self.capsys.readouterr()
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse
                code = int(exc.code or 0)
            out = self.capsys.readouterr()
        return CliResult(code, out.out, out.err)

    def main(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> CliResult:
        from gitflow_agents import cli

        return self._call(cli.main, args, cwd, env)

    def review(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> CliResult:
        """``git agent-review`` (its console script's ``main``)."""
        from gitflow_agents import git_agent_review

        return self._call(git_agent_review.main, args, cwd, env)


@pytest.fixture
def cli_run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(monkeypatch, capsys)


@pytest.fixture
def cli(cli_run: Cli) -> Cli:
    """``cli_run`` by its short name: the commands in-process (agents stay real processes)."""
    return cli_run


def wait_until(condition: Callable[[], object], timeout: float) -> None:
    """Poll ``condition`` every 50 ms until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def running_agent(repo: Path, flow: str = "feature") -> dict[str, object] | None:
    """The status.json of a run of ``flow`` whose agent is running (with its ``runId``), if any."""
    import json

    for status in (repo / "flows" / flow / "runs").glob("*/status.json"):
        data = json.loads(status.read_text())
        if data.get("state") == "running" and data.get("pid"):
            return {**data, "runId": status.parent.name}
    return None
