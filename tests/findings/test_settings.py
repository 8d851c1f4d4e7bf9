"""``findings/settings.py``: the one glob syntax of ``review:`` read two ways, as a regular
expression (the builtin reviewer, thresholds) and as git pathspecs (an agent reviewer's diff),
which must agree on every path; and the per-path threshold."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.findings import Finding, Severity
from gitflow_agents.findings.settings import (
    DEFAULT_EXCLUDE,
    PathGlob,
    PathThreshold,
    ReviewSettings,
    glob_regex,
    path_threshold,
    pathspecs,
)
from tests.conftest import git
from tests.helpers.files import commit_files

PATHS = [
    "vendor/a.py",
    "vendor/deep/b.go",
    "src/vendor/c.py",
    "node_modules/x/index.js",
    "web/node_modules/y/z.js",
    "app.min.js",
    "web/static/site.min.js",
    "web/static/site.js",
    "package-lock.json",
    "web/package-lock.json",
    "Cargo.lock",
    "crates/a/Cargo.lock",
    "go.sum",
    "docs/guide.md",
    "docs/api/ref.md",
    "gen/out.txt",
    "src/gen",
    "a[1].txt",
    "src/app.py",
]
GLOBS = [*DEFAULT_EXCLUDE, "docs/*.md", "gen/", "/src/gen", "**/api/**", "a[1].txt", "*.md"]


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("globs")
    git(repo, "init", "-q")
    commit_files(repo, {path: "x\n" for path in PATHS})
    return repo


@pytest.mark.parametrize("glob", GLOBS)
def test_git_pathspecs_leave_out_exactly_what_the_glob_matches(tracked: Path, glob: str) -> None:
    kept = git(tracked, "ls-files", "-z", "--", ".", *pathspecs(glob)).split("\0")
    regex = glob_regex(glob)
    assert sorted(p for p in kept if p) == sorted(p for p in PATHS if not regex.fullmatch(p))


MORE_GLOBS = [
    "a/**/b",
    "**",
    "x/**",
    "**/y",
    "a**b",
    "*.py",
    "src/?pp.py",
    "/vendor/",
    "**/deep/**",
]
MORE_PATHS = ["a/b", "a/x/y/b", "x/1", "q/y", "aab", "a/b/c.py", "src/app.py", "vendor/z", "deep"]


@pytest.mark.parametrize("glob", GLOBS + MORE_GLOBS)
def test_a_glob_compiled_on_first_use_matches_as_its_regex(glob: str) -> None:
    """A glob without its regex (the defaults: compiled only for a path holding the glob's
    plain characters, issue 20) matches exactly the paths its regex matches."""
    regex = glob_regex(glob)
    for path in PATHS + MORE_PATHS:
        expected = regex.fullmatch(path) is not None
        assert PathGlob(glob, "x:1").matches(path) == expected, path
        assert PathGlob(glob, "x:1", regex).matches(path) == expected, path


def test_the_default_excludes_compile_nothing_for_ordinary_paths() -> None:
    from gitflow_agents.findings import settings

    settings._compiled.cache_clear()
    ordinary = ReviewSettings()
    assert ordinary.excluded("src/app.py") is None
    assert ordinary.excluded("README.md") is None
    assert settings._compiled.cache_info().currsize == 0
    assert ordinary.excluded("web/node_modules/y/z.js") is not None


def test_the_last_matching_path_threshold_wins() -> None:
    def entry(glob: str, severity: Severity) -> PathThreshold:
        return PathThreshold(PathGlob(glob, "x:1", glob_regex(glob)), severity)

    paths = [entry("src/**", Severity.WARN), entry("src/legacy/", Severity.ERROR)]

    def at(file: str | None) -> Severity:
        return path_threshold(paths, Finding(Severity.WARN, "m", file=file), Severity.INFO)

    assert at("src/app.py") is Severity.WARN
    assert at("src/legacy/old.py") is Severity.ERROR
    assert at("docs/x.md") is Severity.INFO
    assert at(None) is Severity.INFO  # a finding without a file: the command line's
