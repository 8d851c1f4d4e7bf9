"""Step dependencies: the ``Depends on:`` line, the previous step by default, and what
``plan lint`` reports about them (docs/spec-plans.md, Dependencies)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitflow_agents.base.errors import PlanError
from gitflow_agents.plan import lint_plan, parse_plan, parse_plan_text
from gitflow_agents.plan.deps import BadDepends, parse_depends
from tests.conftest import Cli, CliResult
from tests.helpers.plans import plan_text


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.md"
    path.write_text(text, encoding="utf-8")
    return path


def depends(text: str) -> dict[int, tuple[int, ...]]:
    return {s.number: s.depends_on for s in parse_plan_text(text, Path("p.md")).steps}


# --- the syntax ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "numbers"),
    [
        ("Depends on: 1, 3", (1, 3)),
        ("Depends on: 3,1", (3, 1)),
        ("depends ON:2", (2,)),
        ("Depends on: none", ()),
        ("Depends on: None.", ()),
        ("**Depends on:** 1, 3", (1, 3)),
        ("**Depends on**: 1", (1,)),
        ("**Depends on: 1, 3**", (1, 3)),
        ("_Depends on:_ none", ()),
        ("- Depends on: 02", (2,)),
        ("* **Depends on:** 4", (4,)),
        ("Depends on: 1, 3.", (1, 3)),
    ],
)
def test_depends_on_line_forms(line: str, numbers: tuple[int, ...]) -> None:
    assert parse_depends(line) == numbers


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("Depends on: two", "'two' is not a step number"),
        ("Depends on: 1,,3", "has an empty entry"),
        ("Depends on: 1, 3,", "has an empty entry"),
        ("Depends on:", "names no step"),
        ("Depends on: none, 2", "'none' is not a step number"),
        ("Depends on: 1, 1", "names step 1 twice"),
        ("Depends on: step 1", "'step 1' is not a step number"),
        ("Depends on: -1", "'-1' is not a step number"),
    ],
)
def test_malformed_depends_on_lines(line: str, why: str) -> None:
    with pytest.raises(BadDepends, match=why):
        parse_depends(line)


def test_without_a_line_a_step_depends_on_the_previous_one() -> None:
    assert depends(plan_text("a", "b", "c")) == {1: (), 2: (1,), 3: (2,)}


def test_explicit_lines_and_the_default_mix() -> None:
    text = plan_text("a", "Depends on: 1", "**Depends on:** 1", "Depends on: 2, 3", "e")
    assert depends(text) == {1: (), 2: (1,), 3: (1,), 4: (2, 3), 5: (4,)}


def test_none_frees_a_step_and_the_previous_step_is_the_one_in_the_file() -> None:
    text = plan_text("a", "Depends on: none").replace("Step 2:", "Step 5:")
    assert depends(text) == {1: (), 5: ()}
    gap = plan_text("a", "b").replace("Step 2:", "Step 7:")
    assert depends(gap) == {1: (), 7: (1,)}  # the step before it in the file, not step 6


def test_lines_in_code_blocks_and_in_the_overview_do_not_count() -> None:
    fenced = plan_text("a", "```\nDepends on: none\n```", "    Depends on: none")
    assert depends(fenced) == {1: (), 2: (1,), 3: (2,)}
    overview = "# Plan\n\nDepends on: 9\n\n" + plan_text("a", "b").removeprefix("# Plan\n\n")
    assert depends(overview) == {1: (), 2: (1,)}


def test_a_line_that_only_mentions_depends_on_is_not_one() -> None:
    text = plan_text("a", "This step depends on: the schema of step 1.")
    assert depends(text) == {1: (), 2: (1,)}


def test_the_line_is_kept_in_the_step_content_and_its_line_recorded() -> None:
    plan = parse_plan_text(plan_text("a", "Depends on: none"), Path("p.md"))
    second = plan.steps[1]
    assert "Depends on: none" in second.content
    assert second.depends_line == 11 and plan.steps[0].depends_line is None


@pytest.mark.parametrize(
    ("body", "line", "why"),
    [
        ("Depends on: two", 11, "'two' is not a step number"),
        ("Depends on: 1,,3", 11, "has an empty entry"),
        ("Depends on: 1\n\nDepends on: 1", 13, "step 2 has a second 'Depends on:' line"),
    ],
)
def test_a_malformed_line_is_a_plan_error_naming_file_and_line(
    tmp_path: Path, body: str, line: int, why: str
) -> None:
    path = write(tmp_path, plan_text("a", body))
    with pytest.raises(PlanError, match=why) as info:
        parse_plan(path)
    assert (info.value.path, info.value.line) == (str(path), line)
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_parse_does_not_judge_the_graph() -> None:
    """Unknown steps and cycles are lint's to report: a plan with them still parses, so
    `run --step 1` of a plan whose later steps are being rewired still works."""
    text = plan_text("Depends on: 2", "b", "Depends on: 9")
    assert depends(text) == {1: (2,), 2: (1,), 3: (9,)}


# --- plan lint -------------------------------------------------------------------------------


def problems(tmp_path: Path, text: str) -> list[str]:
    path = write(tmp_path, text)
    return [str(p).removeprefix(f"{path}:") for p in lint_plan(path)]


def test_lint_a_clean_plan_with_dependencies(tmp_path: Path) -> None:
    text = plan_text("a", "Depends on: 1", "Depends on: 1", "Depends on: 2, 3")
    assert problems(tmp_path, text) == []


def test_lint_unknown_step(tmp_path: Path) -> None:
    assert problems(tmp_path, plan_text("a", "Depends on: 1, 9")) == [
        "11: step 2 depends on step 9, which the plan does not have"
    ]


def test_lint_a_step_depending_on_itself(tmp_path: Path) -> None:
    assert problems(tmp_path, plan_text("a", "Depends on: 2")) == ["11: step 2 depends on itself"]


def test_lint_names_the_cycle(tmp_path: Path) -> None:
    # step 2 waits for 3, step 3 (no line) waits for the step before it: 2
    assert problems(tmp_path, plan_text("a", "Depends on: 3", "c")) == [
        "11: dependency cycle: 2 → 3 → 2; no step of it can ever start"
    ]


def test_lint_names_a_longer_cycle_from_its_lowest_step(tmp_path: Path) -> None:
    text = plan_text("Depends on: 3", "Depends on: 1", "Depends on: 2")
    assert problems(tmp_path, text) == [
        "7: dependency cycle: 1 → 3 → 2 → 1; no step of it can ever start"
    ]


def test_lint_a_tangle_names_its_shortest_cycle_and_every_step_in_it(tmp_path: Path) -> None:
    text = plan_text("Depends on: 2, 3", "Depends on: 1", "Depends on: 2")
    assert problems(tmp_path, text) == [
        "7: dependency cycle: 1 → 2 → 1 (steps 1, 2, 3 all wait for each other); "
        "no step of it can ever start"
    ]


def test_lint_reports_every_problem_not_just_the_first(tmp_path: Path) -> None:
    text = plan_text(
        "Depends on: 5",  # line 7: unknown
        "Depends on: two",  # 11: malformed
        "Depends on: 3",  # 15: itself
        "Depends on: 5\n\nDepends on: 1",  # 19: cycle 4 → 5 → 4; 21: a second line
        "e",  # 5 waits for 4 (the previous step)
        "Depends on: 1,,3",  # 29: malformed
    ).replace("Step 1: step 1\n\nDepends on: 5", "Step 1: step 1\n\nDepends on: 9")
    text = "Depends on: 1\n\n" + text  # line 1: before the first step
    assert problems(tmp_path, text) == [
        "1: 'Depends on:' line before the first step belongs to no step",
        "9: step 1 depends on step 9, which the plan does not have",
        "13: 'Depends on:' 'two' is not a step number; "
        "write `Depends on: 1, 3` or `Depends on: none`",
        "17: step 3 depends on itself",
        "21: dependency cycle: 4 → 5 → 4; no step of it can ever start",
        "23: step 4 has a second 'Depends on:' line (the first is line 21); "
        "list every step on one line",
        "31: 'Depends on: 1,,3' has an empty entry; write `Depends on: 1, 3` or `Depends on: none`",
    ]


def test_lint_of_a_large_chain_of_steps_does_not_recurse(tmp_path: Path) -> None:
    """3000 steps, each waiting for the previous one, and a cycle closing the whole chain:
    Tarjan without recursion (Python's limit is 1000 frames)."""
    bodies = ["Depends on: 3000"] + ["x"] * 2999
    found = problems(tmp_path, plan_text(*bodies))
    assert len(found) == 1
    assert found[0].startswith("7: dependency cycle: 1 → 3000 → 2999 → ")
    assert found[0].count("→") == 3000


# --- the command line ------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "specs").mkdir()
    return root


def cli(cli_run: Cli, project: Path, *args: str) -> CliResult:
    return cli_run.main(*args, cwd=project)


def test_cli_lint_exit_2_with_every_dependency_problem(cli_run: Cli, project: Path) -> None:
    (project / "specs" / "p.md").write_text(plan_text("Depends on: 9", "Depends on: 2"))
    result = cli(cli_run, project, "plan", "lint", "specs/p.md")
    assert result.returncode == 2
    assert result.stdout.splitlines() == [
        "specs/p.md:7: step 1 depends on step 9, which the plan does not have",
        "specs/p.md:11: step 2 depends on itself",
    ]
    assert "2 problems" in result.stderr


def test_cli_show_and_matrix_of_a_malformed_line_exit_2(cli_run: Cli, project: Path) -> None:
    (project / "specs" / "p.md").write_text(plan_text("a", "Depends on: two"))
    for args in (("show",), ("show", "--json"), ("matrix",)):
        result = cli(cli_run, project, "plan", *args, "specs/p.md")
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr.startswith("gitflow-agents: error: specs/p.md:11: 'Depends on:'")
        assert "Traceback" not in result.stderr


def test_cli_show_lists_the_dependencies(cli_run: Cli, project: Path) -> None:
    (project / "specs" / "p.md").write_text(plan_text("a", "Depends on: none", "Depends on: 1, 2"))
    table = cli(cli_run, project, "plan", "show", "specs/p.md")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[2:] == [
        "STEP  STATUS  LINE  DEPENDS ON  TOUCHES  TITLE",
        "   1             5  -           -        step 1",
        "   2             9  -           -        step 2",
        "   3            13  1,2         -        step 3",
    ]
    shown = cli(cli_run, project, "plan", "show", "specs/p.md", "--json")
    assert [s["dependsOn"] for s in json.loads(shown.stdout)["steps"]] == [[], [], [1, 2]]


# --- the order local `run --all` takes ---------------------------------------------------------


def order(*bodies: str) -> list[int]:
    from gitflow_agents.plan.deps import run_order

    return run_order(parse_plan_text(plan_text(*bodies), Path("p.md")))


def test_run_order_is_the_files_order_without_depends_on_lines() -> None:
    assert order("a", "b", "c", "d") == [1, 2, 3, 4]


def test_run_order_puts_each_step_after_what_it_waits_for() -> None:
    # 1 waits for 3, 2 for nothing: 2 runs first (earliest free step in the file), then 3, then 1
    assert order("Depends on: 3", "Depends on: none", "Depends on: none") == [2, 3, 1]
    assert order("a", "Depends on: 1", "Depends on: 1", "Depends on: 2, 3") == [1, 2, 3, 4]
    assert order("Depends on: 2", "Depends on: none", "c") == [2, 1, 3]


def test_run_order_leaves_out_steps_in_a_cycle() -> None:
    assert order("Depends on: none", "Depends on: 3", "Depends on: 2") == [1]


def test_a_step_number_defined_twice_is_a_problem_that_keeps_a_plan_from_running(
    tmp_path: Path,
) -> None:
    """`run --all` of a plan with steps 1, 2, 1, 3 did nothing and exited 0 (1, 2, 2: landed
    step 1, then exit 2), and `plan matrix --ready` listed a duplicate as ready: the duplicate is
    one of the problems `run --all` and the waves refuse before anything runs."""
    from gitflow_agents.plan.deps import plan_problems

    text = plan_text("a", "b", "c").replace("Step 3:", "Step 1:")
    plan = parse_plan_text(text, tmp_path / "p.md")
    [problem] = plan_problems(plan)
    assert problem.message == f"duplicate step 1: lines {plan.steps[0].line} and {problem.line}"
    assert problem.line == plan.steps[2].line


def test_run_all_refuses_a_duplicate_step_before_anything_runs(repo: Path) -> None:
    from tests.conftest import git, run_cli

    (repo / "specs").mkdir()
    (repo / "specs" / "p.md").write_text(plan_text("a", "b", "c").replace("Step 3:", "Step 2:"))
    git(repo, "add", "specs")
    git(repo, "commit", "-q", "-m", "plan")
    head = git(repo, "rev-parse", "HEAD")
    for jobs in ("1", "2"):
        result = run_cli("run", "specs/p.md", "--all", "--jobs", jobs, cwd=repo)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "duplicate step 2" in result.stderr and not result.stdout
    assert git(repo, "rev-parse", "HEAD") == head and not (repo / "flows").exists()


def test_plan_matrix_refuses_a_duplicate_step_each_job_of_it_would_fail(
    cli_run: Cli, project: Path
) -> None:
    """Plain `plan matrix` listed step 1 twice (two jobs whose `run --step 1` both fail);
    a cycle stays listed: `run --step N` runs a step whatever it waits for."""
    (project / "specs" / "p.md").write_text(plan_text("a", "b").replace("Step 2:", "Step 1:"))
    result = cli(cli_run, project, "plan", "matrix", "specs/p.md")
    assert result.returncode == 2 and "duplicate step 1" in result.stderr and not result.stdout
    (project / "specs" / "c.md").write_text(plan_text("Depends on: 2", "Depends on: 1"))
    assert cli(cli_run, project, "plan", "matrix", "specs/c.md").returncode == 0
