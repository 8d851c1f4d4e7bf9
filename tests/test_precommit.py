"""The hooks in .pre-commit-hooks.yaml: the manifest, the entry points, and the real pre-commit
framework installing this project as a hook repository, offline, from a local wheel folder."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from gitflow_agents import cli
from gitflow_agents.git import queries as g
from gitflow_agents.reviewer import read_review_note
from tests.conftest import GIT_ENV, ROOT, Cli, git
from tests.helpers.offline_pip import offline_pip_env
from tests.helpers.once import once_per_session
from tests.helpers.project import load_pyproject

AWS_KEY = "AKIA" + "Z7Q2XK4M9PLR3VBN"
DEFECT = f'KEY = "{AWS_KEY}"\n\ndef handler(:\n    return KEY\n'
FIXED = 'import os\n\nKEY = os.environ["KEY"]\n\n\ndef handler() -> str:\n    return KEY\n'
PLAN = (
    "# Plan: demo\n\nOverview.\n\n## Implementation Steps\n\n"
    "### Status: ❌ | Step 1: Do the thing\n\nDetails.\n"
)

needs_pre_commit = pytest.mark.skipif(
    importlib.util.find_spec("pre_commit") is None, reason="pre-commit is not installed"
)


def manifest() -> list[dict[str, object]]:
    data = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert isinstance(data, list)
    return data


# --- fast: the manifest and the entry points -------------------------------------------------


def test_manifest_declares_the_three_hooks() -> None:
    hooks = {h["id"]: h for h in manifest()}
    assert set(hooks) == {"agent-review", "agent-review-gate", "plan-lint"}
    review, gate = hooks["agent-review"], hooks["agent-review-gate"]
    assert review["stages"] == ["pre-commit", "pre-push", "manual"]
    assert gate["stages"] == ["pre-push", "manual"]
    assert review["pass_filenames"] is True  # --all-files / --files: the files are reviewed
    assert gate["pass_filenames"] is False
    for hook in (review, gate):
        assert hook["language"] == "python"
    assert hooks["plan-lint"]["files"] == r"(^|/)specs/.*\.md$"


def test_manifest_entries_are_installed_console_scripts() -> None:
    scripts = load_pyproject()["project"]["scripts"]
    for hook in manifest():
        entry = str(hook["entry"]).split()
        assert entry[0] in scripts, hook["id"]
        # the rest of the entry must parse as a real command line
        if entry[0] == "gitflow-agents":
            cli.build_parser().parse_args(entry[1:] + (["x.md"] if "lint" in entry else []))


@needs_pre_commit
def test_manifest_validates_with_pre_commit() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", ".pre-commit-hooks.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_review_hook_entry_reviews_staged_changes_on_pre_commit(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "app.py").write_text(DEFECT)
    git(repo, "add", "app.py")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PRE_COMMIT", "1")
    # git exports these to hooks; inherited, they must not redirect our git calls (an index
    # that is there is what git commits: test_commit_all_and_commit_a_path_review_the_index…)
    monkeypatch.setenv("GIT_DIR", ".git")
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / "nonexistent-index"))
    status_before = git(repo, "status", "--porcelain")
    assert cli.main(["review", "--hook", "app.py"]) == 1  # pre-commit hands the staged files
    out = capsys.readouterr().out
    assert "app.py" in out and "python-syntax" in out and "aws-access-key" in out
    assert git(repo, "status", "--porcelain") == status_before  # never modifies files


def test_gate_entry_uses_the_pushed_ref(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first = g.head_sha(repo)
    monkeypatch.chdir(repo)
    assert cli.main(["review", first]) == 0
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "unreviewed")
    assert cli.main(["hook", "gate"]) == 1  # HEAD: no review
    assert "has no recorded review" in capsys.readouterr().err
    monkeypatch.setenv("PRE_COMMIT_TO_REF", first)
    assert cli.main(["hook", "gate"]) == 0  # the pushed commit was reviewed


# --- slow: the real pre-commit framework -----------------------------------------------------

_HOOK_REPO_FILES = ("pyproject.toml", "README.md", "LICENSE", ".pre-commit-hooks.yaml")
_HOOK_REPO_DIRS = ("gitflow_agents", "templates")


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's working tree as a committed git repo (try-repo installs a repo's HEAD).
    One for the session, xdist workers included, so the pre-commit store they share installs
    its environment once."""
    return once_per_session(tmp_path_factory, "hook-repo", _commit_the_checkout) / "repo"


def _commit_the_checkout(folder: Path) -> None:
    path = folder / "repo"
    path.mkdir()
    for name in _HOOK_REPO_FILES:
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, path / name)
    for name in _HOOK_REPO_DIRS:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, path / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
    env = {**os.environ, **GIT_ENV, "HOME": str(path)}
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "snapshot")):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)


def _wheelhouse_requirements() -> list[str]:
    data = load_pyproject()
    return sorted({*data["build-system"]["requires"], *data["project"]["dependencies"]})


def _installed_versions() -> list[str]:
    """``name==version`` of every distribution installed here but the project: the wheelhouse
    gets the versions the tests run with (in CI, those of .ci/constraints.txt), not whatever
    the index offers today."""
    pins = {
        f"{d.metadata['Name']}=={d.version}"
        for d in importlib.metadata.distributions()
        if d.metadata["Name"] and d.metadata["Name"].lower() != "gitflow-agents"
    }
    return sorted(pins)


@pytest.fixture(scope="session")
def wheelhouse() -> Path:
    """Wheels of the build backend and every runtime dependency, so pre-commit's ``pip install .``
    runs with PIP_NO_INDEX. Built once and kept in the temp dir (keyed by the requirements and
    the Python version), so later sessions and xdist workers reuse it; never under $HOME."""
    requirements = _wheelhouse_requirements()
    pins = _installed_versions()
    key = hashlib.sha256("\n".join([sys.version, *requirements, *pins]).encode()).hexdigest()[:16]
    final = Path(tempfile.gettempdir()) / f"gitflow-agents-test-wheelhouse-{key}"
    if (final / ".complete").exists():
        return final
    building = Path(tempfile.mkdtemp(prefix=final.name + ".", dir=final.parent))
    (building / "constraints.txt").write_text("\n".join(pins) + "\n", encoding="utf-8")
    constraints = ["-c", str(building / "constraints.txt")]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "-w",
            str(building),
            *constraints,
            *requirements,
        ],
        env={**os.environ, "PIP_CACHE_DIR": str(building / ".pip-cache")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        pytest.fail(f"building the wheelhouse failed:\n{result.stdout}\n{result.stderr}")
    shutil.rmtree(building / ".pip-cache", ignore_errors=True)
    (building / ".complete").touch()
    try:
        building.rename(final)
    except OSError:  # another worker finished first
        shutil.rmtree(building, ignore_errors=True)
    return final


def _folder(name: str) -> Callable[[Path], None]:
    """A ``once_per_session`` build that makes an empty folder ``name``."""
    return lambda parent: (parent / name).mkdir()


@pytest.fixture(scope="session")
def virtualenv_app_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """virtualenv's cache of the seed packages it puts in each new environment, one per session
    (xdist workers included: virtualenv locks it, as it does its per-user default): extracting
    them again for each hook environment took longer than creating it from them."""
    return once_per_session(tmp_path_factory, "virtualenv", _folder("app-data")) / "app-data"


@pytest.fixture
def offline_env(
    wheelhouse: Path, virtualenv_app_data: Path, tmp_path: Path, isolated_home: Path
) -> Iterator[dict[str, str]]:
    env = offline_pip_env(wheelhouse)
    env.update(
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        VIRTUALENV_OVERRIDE_APP_DATA=str(virtualenv_app_data),
        PRE_COMMIT_COLOR="never",
    )
    yield env


def pre_commit(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.fixture
def project(repo: Path) -> Path:
    """A user's project with the seeded defect staged."""
    (repo / "app.py").write_text(DEFECT)
    git(repo, "add", "app.py")
    return repo


@pytest.mark.slow
@needs_pre_commit
def test_try_repo_fails_on_the_seeded_defect(
    project: Path, hook_repo: Path, offline_env: dict[str, str]
) -> None:
    failed = pre_commit("try-repo", str(hook_repo), "agent-review", cwd=project, env=offline_env)
    output = failed.stdout + failed.stderr
    assert failed.returncode == 1, output
    assert "agent review" in output and "Failed" in output
    assert "app.py" in output and "python-syntax" in output and "aws-access-key" in output
    assert AWS_KEY not in output


@pytest.mark.slow
@needs_pre_commit
def test_hooks_pass_on_the_fix_and_gate_the_push(
    project: Path, hook_repo: Path, offline_env: dict[str, str], shared_pre_commit_home: Path
) -> None:
    """The same hooks from a config (one install, reused): pre-commit stage on the staged fix,
    then pre-push with the review and the gate, then plan-lint."""
    env = {**offline_env, "PRE_COMMIT_HOME": str(shared_pre_commit_home)}
    rev = g.head_sha(hook_repo)
    config = (
        f"repos:\n- repo: {hook_repo}\n  rev: {rev}\n  hooks:\n"
        "  - id: agent-review\n  - id: agent-review-gate\n  - id: plan-lint\n"
    )
    (project / ".pre-commit-config.yaml").write_text(config)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return pre_commit("run", "--config", ".pre-commit-config.yaml", *args, cwd=project, env=env)

    staged_defect = run("agent-review")
    assert staged_defect.returncode == 1, staged_defect.stdout
    assert "python-syntax" in staged_defect.stdout
    (project / "app.py").write_text(FIXED)
    git(project, "add", "app.py")
    staged_fix = run("agent-review")
    assert staged_fix.returncode == 0, staged_fix.stdout + staged_fix.stderr
    assert "Passed" in staged_fix.stdout

    git(project, "reset", "-q")
    base = g.head_sha(project)
    git(project, "checkout", "-q", "-b", "feature")
    (project / "app.py").write_text(DEFECT)
    (project / "specs").mkdir()
    (project / "specs" / "plan.md").write_text(PLAN)
    git(project, "add", "app.py", "specs")
    git(project, "commit", "-q", "-m", "defect")
    broken = g.head_sha(project)
    # the leaked key is fixed by rewriting the commit: a fix on top would push it in the history
    (project / "app.py").write_text(FIXED)
    git(project, "commit", "-q", "-am", "fix")
    on_top = g.head_sha(project)
    git(project, "reset", "-q", "--soft", base)
    git(project, "commit", "-q", "-m", "feature")
    fixed = g.head_sha(project)

    def push(to: str) -> subprocess.CompletedProcess[str]:
        return run("--hook-stage", "pre-push", "--from-ref", base, "--to-ref", to)

    refused = push(broken)
    output = refused.stdout + refused.stderr
    assert refused.returncode == 1, output
    assert "python-syntax" in output
    assert "push refused" in output
    note = read_review_note(project, broken)
    assert note is not None and note.verdict == "revise"

    history = push(on_top)
    assert history.returncode == 1, history.stdout
    assert "in commit" in history.stdout and "aws-access-key" in history.stdout

    allowed = push(fixed)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert allowed.stdout.count("Passed") == 3  # review, gate, plan-lint (plan.md is in the range)
    note = read_review_note(project, fixed)
    assert note is not None and note.verdict == "approved"

    (project / "specs" / "plan.md").write_text(PLAN.replace("Step 1:", "Step one:"))
    git(project, "add", "specs")
    lint = run("plan-lint")
    assert lint.returncode != 0, lint.stdout
    assert "plan.md" in lint.stdout


def test_gate_entry_outside_a_repository_and_from_a_subdirectory(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    assert cli.main(["hook", "gate"]) == 2
    assert "not a git repository" in capsys.readouterr().err
    sub = repo / "deep" / "dir"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert cli.main(["review", "HEAD"]) == 0
    assert cli.main(["hook", "gate"]) == 0
    assert cli.main(["hook", "gate", "no-such-ref"]) == 2


# --- slow: real pushes to a local bare remote through the installed hooks --------------------

TOKEN_FILE = f'KEY = "{AWS_KEY}"\n'


@pytest.fixture(scope="session")
def shared_pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit store for the tests of a session that run the hooks from a config, xdist
    workers included (pre-commit locks its store while it installs, as it does for the commits
    of several repositories at once): the hook repository's environment is installed once, not
    once per test or worker. try-repo always installs into a store of its own."""
    return once_per_session(tmp_path_factory, "pre-commit", _folder("home")) / "home"


@pytest.fixture
def hooked(
    repo: Path, hook_repo: Path, offline_env: dict[str, str], shared_pre_commit_home: Path
) -> tuple[Path, dict[str, str]]:
    """A user's project with agent-review and agent-review-gate installed for pre-commit and
    pre-push (the config committed), an empty bare remote ``origin``, and the environment that
    git's hooks run with."""
    env = {**offline_env, "PRE_COMMIT_HOME": str(shared_pre_commit_home)}
    config = (
        "default_install_hook_types: [pre-commit, pre-push]\n"
        f"repos:\n- repo: {hook_repo}\n  rev: {g.head_sha(hook_repo)}\n  hooks:\n"
        "  - id: agent-review\n  - id: agent-review-gate\n"
    )
    (repo / ".pre-commit-config.yaml").write_text(config)
    git(repo, "add", ".pre-commit-config.yaml")
    git(repo, "commit", "-q", "-m", "pre-commit config")
    installed = pre_commit("install", cwd=repo, env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    remote = repo.parent / "remote.git"
    git(repo.parent, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    return repo, env


def git_with(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """git in ``repo`` with ``env`` (the hooks it runs see it), its output captured."""
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=240
    )


def remote_branches(repo: Path) -> set[str]:
    return {
        line.split("\t")[1] for line in git(repo, "ls-remote", "--heads", "origin").splitlines()
    }


def branch_with_key(repo: Path, name: str, start: str = "main") -> None:
    """Branch ``name`` from ``start`` with one unreviewed commit adding an AWS key (the commit
    hook skipped, as a commit made elsewhere would be)."""
    git(repo, "checkout", "-q", "-b", name, start)
    (repo / "t.py").write_text(TOKEN_FILE)
    git(repo, "add", "t.py")
    git(repo, "commit", "-q", "--no-verify", "-m", "add a key")


@pytest.mark.slow
@needs_pre_commit
def test_first_push_to_an_empty_remote_gates_the_pushed_branch_not_head(
    hooked: tuple[Path, dict[str, str]], cli_run: Cli
) -> None:
    """The pushed branch's whole history is new to the remote, so pre-commit gives no from/to
    refs; what is reviewed and gated is the pushed branch, never HEAD (main, approved)."""
    repo, env = hooked
    assert cli_run.review("HEAD", cwd=repo).returncode == 0  # main: approved
    branch_with_key(repo, "leaky")
    git(repo, "checkout", "-q", "main")

    refused = git_with(repo, env, "push", "origin", "leaky")
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0, output
    assert "aws-access-key" in output and "push refused" in output
    assert AWS_KEY not in output
    assert remote_branches(repo) == set()
    leaky = g.rev_parse(repo, "leaky")
    note = read_review_note(repo, leaky)
    assert note is not None and note.verdict == "revise"

    first = git_with(repo, env, "push", "origin", "main")  # approved: whole history new too
    assert first.returncode == 0, first.stdout + first.stderr
    again = git_with(repo, env, "push", "origin", "leaky")  # now from main's tip: from/to refs
    assert again.returncode != 0, again.stdout + again.stderr
    assert remote_branches(repo) == {"refs/heads/main"}


@pytest.mark.slow
@needs_pre_commit
def test_a_push_of_several_branches_is_gated_branch_by_branch_by_git_s_own_hook(
    hooked: tuple[Path, dict[str, str]], cli_run: Cli
) -> None:
    """pre-commit tells its hooks about one pushed ref only (the first with new commits), so
    ``git push origin a-docs z-leaky`` would gate a-docs alone; the gate as git's own pre-push
    hook reads every pushed ref, and pre-commit keeps running it (``pre-push.legacy``)."""
    repo, env = hooked
    assert pre_commit("uninstall", "-t", "pre-push", cwd=repo, env=env).returncode == 0
    native = repo / ".git" / "hooks" / "pre-push"
    native.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -m gitflow_agents hook gate --pre-push "$@"\n'
    )
    native.chmod(0o755)
    installed = pre_commit("install", "-t", "pre-push", cwd=repo, env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (repo / ".git" / "hooks" / "pre-push.legacy").exists()  # pre-commit runs it first

    assert cli_run.review("HEAD", cwd=repo).returncode == 0
    first = git_with(repo, env, "push", "origin", "main")
    assert first.returncode == 0, first.stdout + first.stderr
    git(repo, "checkout", "-q", "-b", "a-docs")
    (repo / "docs.md").write_text("docs\n")
    git(repo, "add", "docs.md")
    git(repo, "commit", "-q", "--no-verify", "-m", "docs")
    assert cli_run.review("HEAD", cwd=repo).returncode == 0
    branch_with_key(repo, "z-leaky")
    git(repo, "checkout", "-q", "main")

    both = git_with(repo, env, "push", "origin", "a-docs", "z-leaky")
    output = both.stdout + both.stderr
    assert both.returncode != 0, output
    assert "push refused: refs/heads/z-leaky" in output, output
    assert remote_branches(repo) == {"refs/heads/main"}
    alone = git_with(repo, env, "push", "origin", "a-docs")
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert remote_branches(repo) == {"refs/heads/main", "refs/heads/a-docs"}


@pytest.mark.slow
@needs_pre_commit
def test_all_files_and_files_review_the_files_pre_commit_hands_over(
    repo: Path, hook_repo: Path, offline_env: dict[str, str], shared_pre_commit_home: Path
) -> None:
    """``--all-files`` and ``--files`` review those files' content, not the (empty) staged
    changes; a commit still reviews what it stages, not every file."""
    (repo / "settings.py").write_text(TOKEN_FILE)
    git(repo, "add", "settings.py")
    git(repo, "commit", "-q", "-m", "settings")

    tried = pre_commit("try-repo", str(hook_repo), "agent-review", "--all-files", cwd=repo,
                       env=offline_env)  # fmt: skip
    output = tried.stdout + tried.stderr
    assert tried.returncode == 1, output
    assert "Failed" in output and "settings.py" in output and "aws-access-key" in output
    assert AWS_KEY not in output

    env = {**offline_env, "PRE_COMMIT_HOME": str(shared_pre_commit_home)}
    config = repo.parent / "pre-commit-config.yaml"
    config.write_text(
        f"repos:\n- repo: {hook_repo}\n  rev: {g.head_sha(hook_repo)}\n  hooks:\n"
        "  - id: agent-review\n"
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return pre_commit("run", "--config", str(config), *args, cwd=repo, env=env)

    for args in (("--all-files",), ("--files", "settings.py")):
        result = run(*args)
        assert result.returncode == 1, (args, result.stdout + result.stderr)
        assert "aws-access-key" in result.stdout, (args, result.stdout)

    (repo / "new.py").write_text("x = 1\n")  # not tracked: git has no content to review
    untracked = run("--files", "new.py")
    assert untracked.returncode == 1, untracked.stdout + untracked.stderr
    assert "new.py: not tracked by git" in untracked.stdout, untracked.stdout

    git(repo, "add", "new.py")
    for args in ((), ("--files", "new.py")):  # the staged change: settings.py is not in it
        result = run(*args)
        assert result.returncode == 0, (args, result.stdout + result.stderr)


@pytest.mark.slow
@needs_pre_commit
def test_a_commit_honours_the_hook_s_exclude_as_all_files_does(
    repo: Path, hook_repo: Path, offline_env: dict[str, str], shared_pre_commit_home: Path
) -> None:
    """``exclude: ^tests/``: pre-commit hands the hook the staged files but tests/fixture.py,
    on a commit as with ``--all-files``; a commit staging nothing but excluded files passes."""
    env = {**offline_env, "PRE_COMMIT_HOME": str(shared_pre_commit_home)}
    config = repo.parent / "pre-commit-config.yaml"
    config.write_text(
        f"repos:\n- repo: {hook_repo}\n  rev: {g.head_sha(hook_repo)}\n  hooks:\n"
        "  - id: agent-review\n    exclude: ^tests/\n"
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return pre_commit("run", "--config", str(config), *args, cwd=repo, env=env)

    (repo / "tests").mkdir()
    (repo / "tests" / "fixture.py").write_text(TOKEN_FILE)
    git(repo, "add", "-A")
    only_excluded = run()
    assert only_excluded.returncode == 0, only_excluded.stdout + only_excluded.stderr
    (repo / "app.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    staged = run()
    assert staged.returncode == 0, staged.stdout + staged.stderr
    git(repo, "commit", "-q", "--no-verify", "-m", "fixture")
    assert run("--all-files").returncode == 0
    (repo / "app.py").write_text(TOKEN_FILE)  # a file the hook is given still fails it
    git(repo, "add", "-A")
    refused = run()
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "app.py" in refused.stdout and "tests/fixture.py" not in refused.stdout


@pytest.mark.slow
@needs_pre_commit
def test_a_commit_too_large_for_one_command_line_is_reviewed_once_in_shares(
    repo: Path, hook_repo: Path, offline_env: dict[str, str], shared_pre_commit_home: Path
) -> None:
    """pre-commit splits file names that would not fit on one command line (128 KiB at most)
    into batches, one run of the hook each: each run reviews its share of the staged change
    (each reviewed the whole change: the same finding once per run, an agent paid per run),
    and none records a note (a share is never the approval of a commit)."""
    env = {**offline_env, "PRE_COMMIT_HOME": str(shared_pre_commit_home)}
    config = repo.parent / "pre-commit-config.yaml"
    config.write_text(
        f"repos:\n- repo: {hook_repo}\n  rev: {g.head_sha(hook_repo)}\n  hooks:\n"
        "  - id: agent-review\n"
    )
    folder = repo / ("long_folder_name_" * 6)
    folder.mkdir()
    names = [folder / f"file_{i:04}.py" for i in range(1300)]  # ~150 KB of names
    for i, name in enumerate(names):
        name.write_text(TOKEN_FILE if i == 0 else f"x = {i}\n")
    git(repo, "add", "-A")
    result = pre_commit("run", "--config", str(config), cwd=repo, env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    counts = [int(line.split()[2]) for line in output.splitlines() if "file(s) checked" in line]
    assert len(counts) >= 2 and sum(counts) == len(names), counts  # shares, each file once
    assert output.count("aws-access-key") == 1, output
    assert git(repo, "for-each-ref", "refs/notes/") == ""


@pytest.mark.slow
@needs_pre_commit
def test_commit_all_and_commit_a_path_review_the_index_git_commits(
    hooked: tuple[Path, dict[str, str]],
) -> None:
    """``git commit -a`` (and ``git commit PATH``) commits the index git names in
    ``GIT_INDEX_FILE`` (``index.lock``), not ``.git/index``: the hook reviews that one (it read
    the stale ``.git/index``, so a key added with ``commit -a`` passed)."""
    repo, env = hooked
    (repo / "t.py").write_text("x = 1\n")
    git(repo, "add", "t.py")
    git(repo, "commit", "-q", "--no-verify", "-m", "t.py")
    for args in (("-a",), ("t.py",)):
        (repo / "t.py").write_text(TOKEN_FILE)  # changed in the work tree, not staged
        refused = git_with(repo, env, "commit", "-m", "add a key", *args)
        output = refused.stdout + refused.stderr
        assert refused.returncode != 0, (args, output)
        assert "aws-access-key" in output and AWS_KEY not in output, (args, output)
        assert "not reviewed" not in output, (args, output)
    assert "KEY" not in git(repo, "show", "HEAD:t.py")
    (repo / "t.py").write_text("x = 2\n")
    passed = git_with(repo, env, "commit", "-a", "-m", "an ordinary change")
    assert passed.returncode == 0, passed.stdout + passed.stderr
