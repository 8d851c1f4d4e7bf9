"""The review settings of ``.flow/base.yaml`` kept in the git directory, keyed by the layer's
bytes (``reviewer/settings_cache.py``, issue 20): a review with the same bytes reads no YAML;
any other bytes, a damaged file or another version read the layer as without a cache."""

from __future__ import annotations

import json
import marshal
import subprocess
import sys
from pathlib import Path

import pytest

from gitflow_agents.base.atomic import common_git_dir
from gitflow_agents.base.errors import ConfigError
from gitflow_agents.findings.settings import ReviewSettings
from gitflow_agents.reviewer import settings_cache
from gitflow_agents.reviewer.flow_settings import acceptance_at, local_settings
from tests.conftest import Cli, git
from tests.helpers.files import commit_files

TODO_OFF = "review:\n  rules:\n    todo: {enabled: false}\n"
CACHE = Path(".git") / settings_cache.CACHE


def _accepted_rules(cli: Cli, repo: Path) -> list[tuple[str, str]]:
    result = cli.review("HEAD", "--no-note", "--format", "json", cwd=repo)
    assert result.returncode in (0, 1), result.stderr
    accepted = json.loads(result.stdout)["accepted"]
    return [(a["rule"], a["accepted"]["why"]) for a in accepted]


def _todo_commit(repo: Path, layer: str) -> None:
    """The layer in a commit of its own, then a commit the layer accepts a finding of (so the
    reviewed commit holds no YAML file: its syntax rule would import PyYAML)."""
    commit_files(repo, {".flow/base.yaml": layer}, "layer")
    commit_files(repo, {"a.py": "x = 1  # TODO later\n"}, "todo")


def test_a_second_review_takes_the_settings_from_the_cache(cli: Cli, repo: Path) -> None:
    _todo_commit(repo, TODO_OFF)
    assert not (repo / CACHE).exists()
    first = _accepted_rules(cli, repo)
    assert first == [("todo", "rule todo is switched off (.flow/base.yaml:3)")]
    key, _ = marshal.loads((repo / CACHE).read_bytes())
    assert key[-1] == TODO_OFF.encode()  # the exact bytes, compared whole
    assert _accepted_rules(cli, repo) == first


def test_an_edited_layer_applies_at_once(cli: Cli, repo: Path) -> None:
    """Same size, same second: only the bytes tell the two layers apart."""
    _todo_commit(repo, TODO_OFF)
    assert _accepted_rules(cli, repo) == [("todo", "rule todo is switched off (.flow/base.yaml:3)")]
    stat = (repo / ".flow" / "base.yaml").stat()
    (repo / ".flow" / "base.yaml").write_text(TODO_OFF.replace("false", "true "))
    assert (repo / ".flow" / "base.yaml").stat().st_size == stat.st_size
    assert _accepted_rules(cli, repo) == []
    (repo / ".flow" / "base.yaml").write_text(TODO_OFF)
    assert _accepted_rules(cli, repo) == [("todo", "rule todo is switched off (.flow/base.yaml:3)")]


def test_a_damaged_or_foreign_cache_is_ignored_and_rewritten(cli: Cli, repo: Path) -> None:
    _todo_commit(repo, TODO_OFF)
    expected = _accepted_rules(cli, repo)
    good = (repo / CACHE).read_bytes()
    other_version = marshal.dumps(((1, "0.0.0", (), TODO_OFF.encode()), ((), {}, (), True)))
    for damaged in (
        b"",
        b"\x00garbage",
        good[: len(good) // 2],
        marshal.dumps([1, 2]),
        other_version,
    ):
        (repo / CACHE).write_bytes(damaged)
        assert _accepted_rules(cli, repo) == expected
        assert (repo / CACHE).read_bytes() == good


def test_a_bad_layer_is_refused_with_its_line_and_never_cached(cli: Cli, repo: Path) -> None:
    _todo_commit(repo, TODO_OFF)
    _accepted_rules(cli, repo)
    good = (repo / CACHE).read_bytes()
    bad = "review:\n  rules:\n    todoo: {enabled: false}\n"
    (repo / ".flow" / "base.yaml").write_text(bad)
    for _ in range(2):  # and again: nothing of it was kept
        result = cli.review("HEAD", "--no-note", cwd=repo)
        assert result.returncode == 2
        assert ".flow/base.yaml:3" in result.stderr and "todoo" in result.stderr
        assert (repo / CACHE).read_bytes() == good


def test_a_dangling_or_looping_layer_link_is_refused_not_taken_for_no_layer(
    cli: Cli, repo: Path
) -> None:
    _todo_commit(repo, TODO_OFF)
    layer = repo / ".flow" / "base.yaml"
    for target, reason in (
        (
            "../shared/flow.yml",
            "is a dangling symlink (to ../shared/flow.yml, which does not exist)",
        ),
        ("base.yaml", "is a symlink loop"),
    ):
        layer.unlink()
        layer.symlink_to(target)
        result = cli.review("HEAD", "--no-note", cwd=repo)
        assert (result.returncode, result.stderr.strip()) == (
            2,
            f"git agent-review: error: .flow/base.yaml: {reason}",
        )
        with pytest.raises(ConfigError, match=reason.replace("(", r"\(").replace(")", r"\)")):
            local_settings(repo)


def test_a_layer_a_symlink_leads_out_of_the_project_is_refused_as_the_config_loader_refuses_it(
    cli: Cli, repo: Path, tmp_path: Path
) -> None:
    """The builtin reviewer reads ``.flow/base.yaml`` with the loader's containment check: one
    line naming the layer and where it leads, exit 2, nothing of it applied or cached (it used
    to switch the rule off from a file outside the project). A link inside is followed."""
    _todo_commit(repo, TODO_OFF)
    layer = repo / ".flow" / "base.yaml"
    layer.unlink()
    outside = tmp_path / "shared.yaml"
    outside.write_text(TODO_OFF)
    layer.symlink_to(outside)
    reason = (
        f"leads outside the project root (to {outside.resolve()}); the file must be inside the "
        "project root"
    )
    for _ in range(2):
        result = cli.review("HEAD", "--no-note", cwd=repo)
        assert (result.returncode, result.stderr.strip()) == (
            2,
            f"git agent-review: error: .flow/base.yaml: {reason}",
        )
        assert not (repo / CACHE).exists()
    with pytest.raises(ConfigError, match=r"^\.flow/base\.yaml: leads outside the project root"):
        local_settings(repo)
    (repo / "docs").mkdir()
    (repo / "docs" / "flow.yaml").write_text(TODO_OFF)
    layer.unlink()
    layer.symlink_to("../docs/flow.yaml")
    assert _accepted_rules(cli, repo) == [("todo", "rule todo is switched off (.flow/base.yaml:3)")]


def test_a_layer_with_more_than_review_is_cached_after_its_whole_check(
    cli: Cli, repo: Path
) -> None:
    layer = "chain:\n  max_iterations: 3\n" + TODO_OFF
    _todo_commit(repo, layer)
    assert _accepted_rules(cli, repo) == [("todo", "rule todo is switched off (.flow/base.yaml:5)")]
    assert _accepted_rules(cli, repo) == [("todo", "rule todo is switched off (.flow/base.yaml:5)")]
    (repo / ".flow" / "base.yaml").write_text("chain:\n  max_iterationz: 3\n" + TODO_OFF)
    result = cli.review("HEAD", "--no-note", cwd=repo)
    assert result.returncode == 2 and ".flow/base.yaml:2" in result.stderr


def test_two_reviews_at_once_both_apply_the_settings(repo: Path) -> None:
    _todo_commit(repo, TODO_OFF)
    argv = [sys.executable, "-m", "gitflow_agents.git_agent_review", "HEAD", "--no-note"]
    for _ in range(3):
        (repo / CACHE).unlink(missing_ok=True)
        children = [
            subprocess.Popen(argv, cwd=repo, stdout=subprocess.PIPE, text=True) for _ in range(4)
        ]
        outputs = [child.communicate()[0] for child in children]
        assert all("1 accepted" in out for out in outputs), outputs
        assert settings_cache.load(repo, TODO_OFF.encode(), ".flow/base.yaml") is not None
    assert [p.name for p in (repo / CACHE).parent.iterdir()] == [CACHE.name]  # no temp file left


def test_a_hit_imports_no_yaml_and_no_config(repo: Path) -> None:
    """... nor pathlib or typing: the layer is read by its name (a commit's small review)."""
    _todo_commit(repo, TODO_OFF)
    code = (
        "import sys\n"
        "from gitflow_agents.git_agent_review import main\n"
        "code = main(['HEAD', '--no-note'])\n"
        "heavy = ('yaml', 'gitflow_agents.config.review', 'gitflow_agents.config.yaml_nodes', 'json',"
        " 'pathlib', 'typing')\n"
        "print(code, [m for m in heavy if m in sys.modules], file=sys.stderr)\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
        for _ in range(2)
    ]
    assert all("1 accepted" in done.stdout for done in runs)
    first, second = (done.stderr.strip().splitlines()[-1] for done in runs)
    assert first.startswith("0 ['yaml', 'gitflow_agents.config.review'")  # the miss reads it
    assert second == "0 []"


def test_the_same_bytes_under_another_name_say_that_name(repo: Path) -> None:
    """The Action reads ``.flow/`` from the base commit (named ``<sha>:.flow/base.yaml``) and
    keys on the blob's bytes: the work tree's cache answers it, with the commit's name."""
    _todo_commit(repo, TODO_OFF)
    local = local_settings(repo)
    sha = git(repo, "rev-parse", "HEAD").strip()
    cached = settings_cache.load(repo, TODO_OFF.encode(), f"{sha[:12]}:.flow/base.yaml")
    assert cached is not None
    assert cached.rules["todo"].source == f"{sha[:12]}:.flow/base.yaml:3"
    assert cached == local._replace(
        rules={"todo": local.rules["todo"]._replace(source=f"{sha[:12]}:.flow/base.yaml:3")}
    )
    assert acceptance_at(repo, sha).settings == cached


def test_without_a_git_directory_of_its_own_nothing_is_cached(tmp_path: Path) -> None:
    assert common_git_dir(tmp_path) is None
    settings_cache.store(tmp_path, b"x", "n", ReviewSettings())
    assert settings_cache.load(tmp_path, b"x", "n") is None
    assert list(tmp_path.iterdir()) == []


def test_a_linked_work_tree_shares_the_repositorys_cache(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked), "HEAD")
    assert common_git_dir(linked) == str((repo / ".git").resolve())
    assert common_git_dir(repo) == str(repo / ".git")
