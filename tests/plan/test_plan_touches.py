"""A step's footprint: the ``Touches:`` line, its globs, what ``plan lint`` and ``plan show``
say about it, and when two footprints may overlap (docs/spec-plans.md, Touches)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitflow_agents.base.errors import PlanError
from gitflow_agents.plan import lint_plan, parse_plan_text
from gitflow_agents.plan.touches import BadTouches, glob_regex, globs_overlap, parse_touches
from tests.conftest import Cli
from tests.helpers.plans import plan_text


@pytest.mark.parametrize(
    ("line", "globs"),
    [
        ("Touches: src/api/**, docs/api.md", ("src/api/**", "docs/api.md")),
        ("touches:docs", ("docs",)),
        ("**Touches:** src/*.py", ("src/*.py",)),
        ("**Touches**: `src/api/**`, `README.md`", ("src/api/**", "README.md")),
        ("- Touches: a/b.md.", ("a/b.md",)),
        ("_Touches: docs/_", ("docs/",)),
        ("Touches: a, a", ("a",)),
        ("Touches: src/[ab]?.py, **/x.md", ("src/[ab]?.py", "**/x.md")),
        ("Touches: web/**", ("web/**",)),
        ("Touches: *.md, src/**", ("*.md", "src/**")),
        ("**Touches:** *.md, web/**", ("*.md", "web/**")),
        ("**Touches: web/****", ("web/**",)),
        ("**Touches**: **/x.md", ("**/x.md",)),
    ],
)
def test_touches_line_forms(line: str, globs: tuple[str, ...]) -> None:
    assert parse_touches(line) == globs


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("Touches:", "lists no glob"),
        ("Touches: .", "lists no glob"),
        ("Touches: a,,b", "empty entry"),
        ("Touches: a, ", "empty entry"),
        ("Touches: /etc/passwd", "relative to the repository root"),
        ("Touches: src\\api", "backslash"),
        ("Touches: src//api", "path segment"),
        ("Touches: ../x", "path segment"),
        ("Touches: src/a**b", "whole segment"),
        ("Touches: src/[ab", "not a valid glob"),
        ("Touches: src/[z-a].py", "not a valid glob"),
    ],
)
def test_bad_touches_lines(line: str, why: str) -> None:
    with pytest.raises(BadTouches, match=why.replace(".", r"\.")):
        parse_touches(line)


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("src/api/**", "src/api/x.py", True),
        ("src/api/**", "src/api/v1/x.py", True),
        ("src/api/**", "src/apix/x.py", False),
        ("docs", "docs/a/b.md", True),
        ("docs/", "docs/a.md", True),
        ("docs", "docsx/a.md", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/a/b.py", False),
        ("**/x.md", "x.md", True),
        ("**/x.md", "a/b/x.md", True),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("src/[!a]?.py", "src/bc.py", True),
        ("src/[!a]?.py", "src/ac.py", False),
        ("a+b(1).md", "a+b(1).md", True),
    ],
)
def test_glob_matches(glob: str, path: str, matches: bool) -> None:
    assert (glob_regex(glob).fullmatch(path) is not None) == matches


@pytest.mark.parametrize(
    ("first", "second", "overlap"),
    [
        ("src/api/**", "src/api/**", True),  # equal
        ("src/api/**", "src/**", True),  # one literal prefix holds the other
        ("src/api/**", "src/api/v1.py", True),
        ("src/api/**", "docs/**", False),
        ("src/api/**", "src/web/**", False),
        ("docs/api.md", "docs/api.md", True),
        ("docs/api.md", "docs/guide.md", False),
        ("docs", "docs/api.md", True),  # a folder holds its files
        ("docs/", "docs/api.md", True),
        ("docs/a.md", "docs/a.mdx", False),  # two literal paths: segments, not text
        ("src/a", "src/ab/c", False),
        ("*.md", "docs/api.md", True),  # no literal prefix: may overlap anything
        ("**", "anything", True),
        ("src/*.py", "src/x.md", True),  # conservative: no path matches both, yet "overlap"
        ("src/a*", "src/b*", False),
        ("src/[ab].py", "src/c.py", True),  # conservative
        ("tests/**", "src/**", False),
    ],
)
def test_footprints_overlap_table(first: str, second: str, overlap: bool) -> None:
    assert globs_overlap(first, second) == overlap
    assert globs_overlap(second, first) == overlap


def test_the_conservative_test_never_says_apart_for_globs_one_path_matches() -> None:
    """Every pair of globs of the table against every path: a path that both match means the
    test says overlap."""
    globs = ["src/api/**", "src/**", "docs", "docs/api.md", "*.md", "**/x.md", "src/*.py", "a/**/b"]
    paths = ["src/api/x.py", "src/x.py", "docs/api.md", "x.md", "a/b", "a/c/b", "docs/q/x.md"]
    for first in globs:
        for second in globs:
            both = [
                p
                for p in paths
                if glob_regex(first).fullmatch(p) and glob_regex(second).fullmatch(p)
            ]
            if both:
                assert globs_overlap(first, second), (first, second, both)


def test_parse_plan_reads_the_footprint() -> None:
    text = plan_text(
        "Touches: src/api/**, docs/api.md", "Depends on: 1\n\n**Touches:** `docs`", "x"
    )
    steps = parse_plan_text(text, Path("p.md")).steps
    assert [s.touches for s in steps] == [("src/api/**", "docs/api.md"), ("docs",), ()]
    assert [s.touches_line for s in steps] == [7, 13, None]
    assert "Touches: src/api/**" in steps[0].content  # the agent sees it


def test_a_touches_line_in_code_is_not_one() -> None:
    text = plan_text("```\nTouches: /bad\n```", "x")
    assert [s.touches for s in parse_plan_text(text, Path("p.md")).steps] == [(), ()]


def test_a_malformed_line_is_a_plan_error_with_its_line() -> None:
    with pytest.raises(PlanError) as raised:
        parse_plan_text(plan_text("x", "Touches: a,,b"), Path("p.md"))
    assert raised.value.line == 11
    assert "empty entry" in raised.value.detail


def test_lint_reports_every_touches_problem(tmp_path: Path) -> None:
    path = tmp_path / "plan.md"
    text = plan_text("Touches:", "Touches: src/[a\n\nTouches: docs", "Touches: ok/**")
    path.write_text("Touches: early\n" + text, encoding="utf-8")
    problems = [(p.line, p.message) for p in lint_plan(path)]
    assert [line for line, _ in problems] == [1, 8, 12, 14]
    assert "before the first step" in problems[0][1]
    assert "lists no glob" in problems[1][1]
    assert "not a valid glob" in problems[2][1]
    assert "second 'Touches:' line (the first is line 12)" in problems[3][1]


def test_cli_show_and_lint(cli_run: Cli, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "p.md").write_text(plan_text("Touches: src/api/**, docs", "x"), encoding="utf-8")
    table = cli_run.main("plan", "show", "p.md", cwd=project)
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[2:] == [
        "STEP  STATUS  LINE  DEPENDS ON  TOUCHES           TITLE",
        "   1             5  -           src/api/**, docs  step 1",
        "   2             9  1           -                 step 2",
    ]
    shown = cli_run.main("plan", "show", "p.md", "--json", cwd=project)
    assert [s["touches"] for s in json.loads(shown.stdout)["steps"]] == [["src/api/**", "docs"], []]
    (project / "p.md").write_text(plan_text("Touches: src/**/", "Touches: a,"), encoding="utf-8")
    for args in (("show",), ("matrix",)):
        bad = cli_run.main("plan", *args, "p.md", cwd=project)
        assert bad.returncode == 2
        assert bad.stderr.startswith(
            "gitflow-agents: error: p.md:11: 'Touches: a,' has an empty entry"
        )
        assert "Traceback" not in bad.stderr
    lint = cli_run.main("plan", "lint", "p.md", cwd=project)
    assert lint.returncode == 2
    assert lint.stdout.startswith("p.md:11: 'Touches: a,' has an empty entry")
