"""Spec plans: parsing rules, lint problems, pattern validation, byte-exact atomic status update."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from gitflow_agents.base.errors import ConfigError, PlanError
from gitflow_agents.plan import (
    Plan,
    Problem,
    SpecPlanConfig,
    compile_step_pattern,
    lint_plan,
    parse_plan,
    set_step_status,
)
from tests.conftest import DATA

PLANS = DATA / "plans"
CUSTOM = SpecPlanConfig(
    top_level_end_marker="<!-- steps -->", step_header_pattern=r"^## \[(.?)\] (\d+)\. (.+)$"
)


def write(tmp_path: Path, text: str, name: str = "plan.md") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def steps_of(plan: Plan) -> list[tuple[int, str, str, int]]:
    return [(s.number, s.status, s.title, s.line) for s in plan.steps]


# --- parsing -------------------------------------------------------------------------------------


def test_sample_plan_steps_overview_and_content() -> None:
    plan = parse_plan(PLANS / "feature.md")
    assert plan.name == "feature"
    assert plan.title == "Plan: Feature Implementation"
    assert steps_of(plan) == [
        (1, "✅", "Create database schema", 12),
        (2, "❌", "Implement API endpoints", 16),
        (3, "❌", "Add frontend components", 25),
    ]
    assert plan.overview.startswith("# Plan: Feature Implementation\n\n")
    assert plan.overview.endswith("- Test environment setup\n\n")
    assert "## Implementation Steps" not in plan.overview
    step2 = plan.step(2)
    assert step2.header == "### Status: ❌ | Step 2: Implement API endpoints"
    assert step2.content.startswith(step2.header + "\n\nCreate REST API")
    # The fenced step-like line belongs to step 2's content, and is not a step of its own.
    assert "### Status: ❌ | Step 9: Not a step\n```\n\n" in step2.content
    assert plan.step(3).content.endswith("Wire the endpoints into the UI.\n")


def test_assignment_context_exact_text() -> None:
    plan = parse_plan(PLANS / "feature.md")
    assert plan.assignment_context(3) == (
        "# Plan: Feature Implementation\n"
        "\n"
        "This plan implements the new feature with three steps.\n"
        "\n"
        "## Prerequisites\n"
        "\n"
        "- Existing codebase understanding\n"
        "- Test environment setup\n"
        "\n"
        "## Implementation Steps (headers only)\n"
        "\n"
        "- Step 1: Create database schema\n"
        "- Step 2: Implement API endpoints\n"
        "- Step 3: Add frontend components\n"
        "\n"
        "## Current Step: Step 3\n"
        "\n"
        "### Status: ❌ | Step 3: Add frontend components\n"
        "\n"
        "Wire the endpoints into the UI.\n"
    )


def test_fenced_and_indented_step_lines_are_never_steps_or_markers() -> None:
    plan = parse_plan(PLANS / "fences.md")
    assert steps_of(plan) == [(1, "❌", "Real step one", 5), (2, "✅", "Real step two", 20)]
    # ~~~ fence, a ```` fence holding a ``` line, and an indented block: all part of step 1.
    content = plan.step(1).content
    for hidden in ("Step 7: inside a tilde", "Step 8: inside a 4-backtick", "Step 9: inside an"):
        assert hidden in content
    assert plan.overview == "# Fences everywhere\n\n"


def test_end_marker_inside_code_is_not_the_marker(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "# T\n\n```\n## Implementation Steps\n```\n\nIntro.\n\n## Implementation Steps\n\n"
        "### Status: ❌ | Step 1: One\n",
    )
    plan = parse_plan(path)
    assert plan.overview == "# T\n\n```\n## Implementation Steps\n```\n\nIntro.\n\n"


def test_marker_absent_overview_is_everything_before_first_step(tmp_path: Path) -> None:
    path = write(tmp_path, "# Title\n\nSome intro.\n\n### Status: ❌ | Step 1: One\nbody\n")
    plan = parse_plan(path)
    assert plan.overview == "# Title\n\nSome intro.\n\n"
    assert plan.step(1).content == "### Status: ❌ | Step 1: One\nbody\n"


def test_marker_is_matched_as_a_whole_word_prefix(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "# T\n\n## Implementation Stepsx\n\nkept\n\n## Implementation Steps (3)\n\n"
        "### Status: ❌ | Step 1: One\n",
    )
    assert parse_plan(path).overview == "# T\n\n## Implementation Stepsx\n\nkept\n\n"


def test_custom_three_group_pattern_and_marker() -> None:
    plan = parse_plan(PLANS / "custom.md", CUSTOM)
    assert steps_of(plan) == [(1, "x", "First task", 7), (2, "", "Second task", 11)]
    assert plan.overview == "# Custom pattern plan\n\nIntro text.\n\n"
    assert lint_plan(PLANS / "custom.md", CUSTOM) == []


def test_crlf_and_bom_plan_parses_like_lf(tmp_path: Path) -> None:
    lf = (PLANS / "feature.md").read_text(encoding="utf-8")
    path = tmp_path / "crlf.md"
    path.write_bytes(b"\xef\xbb\xbf" + lf.replace("\n", "\r\n").encode("utf-8"))
    crlf_plan = parse_plan(path)
    lf_plan = parse_plan(PLANS / "feature.md")
    assert steps_of(crlf_plan) == steps_of(lf_plan)
    assert crlf_plan.overview == lf_plan.overview
    assert crlf_plan.step(2).content == lf_plan.step(2).content
    assert crlf_plan.title == "Plan: Feature Implementation"  # the BOM is not part of the title


def test_old_mac_cr_line_endings(tmp_path: Path) -> None:
    path = write(tmp_path, "# T\r\r### Status: ✅ | Step 1: One\rbody\r")
    plan = parse_plan(path)
    assert steps_of(plan) == [(1, "✅", "One", 3)]
    assert plan.step(1).content == "### Status: ✅ | Step 1: One\nbody\n"


def test_form_feed_and_unicode_separators_do_not_shift_line_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, "# T\x0c page\u2028same line\n\n### Status: ✅ | Step 1: One\n")
    assert parse_plan(path).step(1).line == 3


def test_step_without_body_and_file_without_final_newline(tmp_path: Path) -> None:
    path = write(tmp_path, "### Status: ✅ | Step 1: One\n### Status: ❌ | Step 2: Two")
    plan = parse_plan(path)
    assert plan.step(1).content == "### Status: ✅ | Step 1: One\n"
    assert plan.step(2).content == "### Status: ❌ | Step 2: Two"
    assert plan.overview == ""
    assert plan.assignment_context(2).startswith("## Implementation Steps (headers only)\n")


def test_closed_atx_heading_and_leading_zero_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, "### Status: ❌ | Step 01: Title ###\n### Status: ❌ | Step 2: C# #\n")
    plan = parse_plan(path)
    assert steps_of(plan) == [(1, "❌", "Title", 1), (2, "❌", "C#", 2)]
    set_step_status(path, 1, "✅")
    assert path.read_text().startswith("### Status: ✅ | Step 01: Title ###\n")


def test_headings_in_blockquotes_and_lists_do_not_match_anchored_pattern(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "> ### Status: ❌ | Step 5: quoted\n\n- ### Status: ❌ | Step 6: listed\n\n"
        "### Status: ❌ | Step 1: Real\n",
    )
    assert [s.number for s in parse_plan(path).steps] == [1]


def test_step_lookup_errors_name_the_plan(tmp_path: Path) -> None:
    plan = parse_plan(PLANS / "feature.md")
    with pytest.raises(PlanError, match=r"feature\.md: no step 7 \(steps: 1, 2, 3\)"):
        plan.step(7)
    dup = write(tmp_path, "### Status: | Step 1: a\n### Status:  | Step 1: b\n")
    with pytest.raises(PlanError, match=r"step 1 is defined 2 times \(lines 1, 2\)"):
        parse_plan(
            dup, SpecPlanConfig(step_header_pattern=r"^### Status: ?(.*?) ?\| Step (\d+): (.+)$")
        ).step(1)


def test_parse_errors_for_bad_input(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match=r"missing\.md: no such file"):
        parse_plan(tmp_path / "missing.md")
    with pytest.raises(PlanError, match="is a directory"):
        parse_plan(tmp_path)
    binary = tmp_path / "bin.md"
    binary.write_bytes(b"# x\n\x00\x01\x02")
    with pytest.raises(PlanError, match=r"bin\.md:2: binary file"):
        parse_plan(binary)
    cr_binary = tmp_path / "cr.md"
    cr_binary.write_bytes(b"a\rb\r\nc\x00")
    with pytest.raises(PlanError, match=r"cr\.md:3: binary file"):
        parse_plan(cr_binary)
    latin1 = tmp_path / "latin1.md"
    latin1.write_bytes("# Titel\n\nGr\xfc\xdfe\n".encode("latin-1"))
    with pytest.raises(PlanError, match=r"latin1\.md:3: not valid UTF-8 \(byte 0xfc\)"):
        parse_plan(latin1)
    empty = write(tmp_path, "# Nothing here\n\n## Implementation Steps\n")
    with pytest.raises(PlanError, match=r"no step headers found \(step_header_pattern: '\^###"):
        parse_plan(empty)
    word = write(tmp_path, "## [x] one. Title\n", name="word.md")
    with pytest.raises(PlanError, match=r"word\.md:1: step number 'one' is not an integer"):
        parse_plan(word, SpecPlanConfig(step_header_pattern=r"^## \[(.)\] (\w+)\. (.+)$"))


# --- pattern validation --------------------------------------------------------------------------


def test_default_pattern_compiles_with_three_groups() -> None:
    assert SpecPlanConfig().step_regex.groups == 3


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (
            r"^### (\d+: (.+)$",
            r"invalid regular expression '\^### \(\\d\+: \(\.\+\)\$': missing \)",
        ),
        (r"^### Step (\d+): (.+)$", r"has 2 capture groups; it must have exactly 3"),
        (r"^(x) (y) (\d+) (.+)$", r"has 4 capture groups; it must have exactly 3"),
        (r"^### Step \d+", r"has 0 capture groups; it must have exactly 3"),
    ],
)
def test_bad_step_patterns_are_rejected_clearly(pattern: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected) as info:
        compile_step_pattern(pattern, path=".flow/base.yaml", line=7)
    assert str(info.value).startswith(".flow/base.yaml:7: spec_plan.step_header_pattern: ")
    with pytest.raises(ConfigError, match=expected):
        _ = SpecPlanConfig(step_header_pattern=pattern).step_regex
    with pytest.raises(ConfigError):
        parse_plan(PLANS / "feature.md", SpecPlanConfig(step_header_pattern=pattern))


def test_named_groups_count_and_non_capturing_do_not() -> None:
    regex = compile_step_pattern(r"^(?:###) (?P<s>.*) (?P<n>\d+) (?P<t>.+)$")
    assert regex.groups == 3


# --- lint ----------------------------------------------------------------------------------------


def test_lint_clean_plans() -> None:
    assert lint_plan(PLANS / "feature.md") == []
    assert lint_plan(PLANS / "fences.md") == []


def test_lint_reports_every_problem_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.md"  # outside any project: named as given
    path.write_bytes((PLANS / "broken.md").read_bytes())
    shown = str(path)
    assert [str(p) for p in lint_plan(path)] == [
        f"{shown}: end marker '## Implementation Steps' not found; "
        "the overview is everything before the first step",
        f"{shown}:7: duplicate step 3: lines 5 and 7",
        f"{shown}:9: step 2 comes after step 3 (line 7); steps must be in ascending order",
        f"{shown}:11: heading looks like a step but does not match step_header_pattern",
        f"{shown}:13: step has an empty title",
        f"{shown}:13: missing steps 4-5 (gap after step 3)",
        f"{shown}:15: code fence ``` is never closed; everything after it is code, "
        "so no step header after this line is seen",
    ]


@pytest.mark.parametrize("name", ["überblick", "-x", "_draft", "my plan"])
def test_lint_a_file_name_that_cannot_name_the_plan_s_runs(tmp_path: Path, name: str) -> None:
    """The name becomes flows/<name>/ and the step branches' {plan_name}: ``run`` refuses it
    before anything is made, and ``plan lint`` says so first."""
    path = tmp_path / f"{name}.md"
    path.write_bytes((PLANS / "feature.md").read_bytes())
    assert [str(p) for p in lint_plan(path)] == [
        f"{path}: the plan's name {name!r} (its file name) cannot name its run folder and "
        "step branches: use ASCII letters, digits, '.', '_' or '-', starting with a letter or "
        "digit; rename the file"
    ]
    fine = tmp_path / "v2.1_feature-x.md"
    fine.write_bytes(path.read_bytes())
    assert lint_plan(fine) == []


def test_lint_missing_first_steps_and_single_gap(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "## Implementation Steps\n\n### Status: | Step 2: a\n### Status: | Step 4: b\n".replace(
            "Status: |", "Status: ❌ |"
        ),
    )
    assert [(p.line, p.message) for p in lint_plan(path)] == [
        (3, "missing step 1: plan starts at step 2"),
        (4, "missing step 3 (gap after step 2)"),
    ]


def test_lint_marker_after_first_step(tmp_path: Path) -> None:
    path = write(tmp_path, "# T\n### Status: ✅ | Step 1: a\n## Implementation Steps\n")
    assert [(p.line, p.message) for p in lint_plan(path)] == [
        (3, "end marker '## Implementation Steps' comes after the first step (line 2)")
    ]
    assert parse_plan(path).overview == "# T\n"


def test_lint_non_integer_number_and_stray_non_heading_match(tmp_path: Path) -> None:
    config = SpecPlanConfig(step_header_pattern=r"Step \[(.*)\] (\w+): (.+)$")
    path = write(
        tmp_path,
        "## Implementation Steps\n\n## Step [x] 1: a\n\n## Step [ ] two: b\n\n"
        "Paragraph Step [ ] 3: not a heading\n",
    )
    assert [(p.line, p.message) for p in lint_plan(path, config)] == [
        (5, "step number 'two' is not an integer"),
        (7, "matches step_header_pattern but is not a markdown heading; not a step"),
    ]


def test_lint_a_header_that_cannot_take_the_mark(tmp_path: Path) -> None:
    """``run`` writes ✅ into the header of a step that lands: a status group that cannot hold
    it (``[ x]``), or one that matched nothing on the header, would leave every landed step
    unmarked, so lint names each such header; a stacked step takes its ✅ on a mark line."""
    pattern = r"^## \[([ x])\] (\d+)\. (.+)$"
    config = SpecPlanConfig(top_level_end_marker="<!-- steps -->", step_header_pattern=pattern)
    text = "# T\n\n<!-- steps -->\n\n## [ ] 1. One\n\nBody.\n\n## [x] 2. Two\n## [ ] 3. Three\n"
    path = write(tmp_path, text)
    cannot = (
        f"cannot write status '✅': the header would no longer match step_header_pattern "
        f"'{pattern}'; a step that lands is never marked ✅ here"
    )
    assert [(p.line, p.message) for p in lint_plan(path, config)] == [(5, cannot), (9, cannot)]
    assert lint_plan(path, CUSTOM) == []  # "(.?)" holds ✅
    optional = SpecPlanConfig(
        top_level_end_marker="<!-- steps -->", step_header_pattern=r"^## (?:\[(x)\] )?(\d+)\. (.+)$"
    )
    path.write_text("<!-- steps -->\n## 1. One\n")
    assert [(p.line, p.message) for p in lint_plan(path, optional)] == [
        (
            2,
            "the status group of step_header_pattern did not match anything on this header; "
            "a step that lands is never marked ✅ here",
        )
    ]


def test_lint_no_steps_names_the_pattern(tmp_path: Path) -> None:
    path = write(
        tmp_path, "# T\n\n## Implementation Steps\n\n```\n### Status: ✅ | Step 1: x\n```\n"
    )
    (problem,) = lint_plan(path)
    assert problem.line is None
    assert problem.message.startswith("no step headers found (step_header_pattern: '^### Status:")


def test_lint_unclosed_fence_detection_is_exact(tmp_path: Path) -> None:
    closed_at_eof = write(
        tmp_path, "### Status: ✅ | Step 1: a\n## Implementation Steps\n```\nx\n```"
    )
    assert all("never closed" not in p.message for p in lint_plan(closed_at_eof))
    short_close = write(
        tmp_path, "## Implementation Steps\n### Status: ✅ | Step 1: a\n````\nx\n```\n", name="s.md"
    )
    assert [(p.line, p.message[:25]) for p in lint_plan(short_close)] == [
        (3, "code fence ```` is never ")
    ]
    quoted = write(
        tmp_path,
        "## Implementation Steps\n### Status: ✅ | Step 1: a\n> ```\n> x\n> ```\n",
        name="q.md",
    )
    assert lint_plan(quoted) == []
    opener_only = write(
        tmp_path, "## Implementation Steps\n### Status: ✅ | Step 1: a\n~~~", name="o.md"
    )
    assert [p.line for p in lint_plan(opener_only)] == [3]


def test_lint_unreadable_files_are_problems_not_exceptions(tmp_path: Path) -> None:
    assert lint_plan(tmp_path / "nope.md") == [
        Problem(str(tmp_path / "nope.md"), None, "no such file")
    ]
    binary = tmp_path / "b.md"
    binary.write_bytes(bytes(range(256)))
    (problem,) = lint_plan(binary)
    assert problem.line == 1 and "binary file" in problem.message


def test_problem_str() -> None:
    assert str(Problem("a.md", 3, "bad")) == "a.md:3: bad"
    assert str(Problem("a.md", None, "bad")) == "a.md: bad"


# --- status update -------------------------------------------------------------------------------


def assert_only_line_changed(before: bytes, after: bytes, index: int, new_line: bytes) -> None:
    old_lines = before.splitlines(keepends=True)
    new_lines = after.splitlines(keepends=True)
    assert len(old_lines) == len(new_lines)
    for i, (old, new) in enumerate(zip(old_lines, new_lines, strict=True)):
        if i == index:
            assert new == new_line
        else:
            assert old == new, f"line {i + 1} changed"


def test_set_status_changes_only_the_status_group(tmp_path: Path) -> None:
    path = tmp_path / "feature.md"
    shutil.copy(PLANS / "feature.md", path)
    before = path.read_bytes()
    set_step_status(path, 2, "✅")
    after = path.read_bytes()
    assert_only_line_changed(
        before, after, 15, "### Status: ✅ | Step 2: Implement API endpoints\n".encode()
    )
    assert parse_plan(path).step(2).status == "✅"
    # The fenced look-alike and other steps are untouched.
    assert b"### Status: \xe2\x9d\x8c | Step 9: Not a step" in after


def test_status_round_trip_is_stable(tmp_path: Path) -> None:
    path = tmp_path / "feature.md"
    shutil.copy(PLANS / "feature.md", path)
    original = path.read_bytes()
    set_step_status(path, 1, "❌")
    assert "### Status: ❌ | Step 1: Create database schema\n" in path.read_text()
    set_step_status(path, 1, "")
    assert "### Status:  | Step 1: Create database schema\n" in path.read_text()
    assert parse_plan(path).step(1).status == ""
    set_step_status(path, 1, "✅")
    assert path.read_bytes() == original


def test_set_status_crlf_bom_no_final_newline(tmp_path: Path) -> None:
    path = tmp_path / "crlf.md"
    text = "# Ünïcode plan ✨\r\n\r\n## Implementation Steps\r\n\r\n### Status: ❌ | Step 1: Grüße\r\nbody\r\n### Status: ❌ | Step 2: Ende"
    before = b"\xef\xbb\xbf" + text.encode("utf-8")
    path.write_bytes(before)
    set_step_status(path, 1, "✅")
    after = path.read_bytes()
    assert after == before.replace("❌ | Step 1".encode(), "✅ | Step 1".encode())
    assert after.startswith(b"\xef\xbb\xbf") and after.count(b"\r\n") == before.count(b"\r\n")
    set_step_status(path, 2, "✅")
    assert path.read_bytes().endswith("### Status: ✅ | Step 2: Ende".encode())


def test_set_status_keeps_mode_and_follows_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    shutil.copy(PLANS / "feature.md", real)
    real.chmod(0o640)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    set_step_status(link, 3, "✅")
    assert link.is_symlink()
    assert (real.stat().st_mode & 0o777) == 0o640
    assert parse_plan(real).step(3).status == "✅"


def test_set_status_custom_pattern(tmp_path: Path) -> None:
    path = tmp_path / "custom.md"
    shutil.copy(PLANS / "custom.md", path)
    set_step_status(path, 2, "x", CUSTOM)
    assert "## [x] 2. Second task\n" in path.read_text()
    with pytest.raises(PlanError, match="would no longer match"):
        set_step_status(path, 2, "xx", CUSTOM)  # (.?) holds one character at most


def test_set_status_rejects_what_would_break_the_header(tmp_path: Path) -> None:
    path = tmp_path / "feature.md"
    shutil.copy(PLANS / "feature.md", path)
    before = path.read_bytes()
    with pytest.raises(PlanError, match=r"feature\.md:12: cannot write status 'a \| b'"):
        set_step_status(path, 1, "a | b")
    with pytest.raises(PlanError, match="line break"):
        set_step_status(path, 1, "a\nb")
    with pytest.raises(PlanError, match=r"no step 9 \(steps: 1, 2, 3\)"):
        set_step_status(path, 9, "✅")
    assert path.read_bytes() == before


def test_set_status_refuses_duplicate_steps(tmp_path: Path) -> None:
    path = tmp_path / "broken.md"
    shutil.copy(PLANS / "broken.md", path)
    with pytest.raises(PlanError, match=r"step 3 is defined 2 times \(lines 5, 7\)"):
        set_step_status(path, 3, "✅")


def test_set_status_same_value_does_not_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "feature.md"
    shutil.copy(PLANS / "feature.md", path)
    os.utime(path, (1_000_000, 1_000_000))
    set_step_status(path, 1, "✅")
    assert path.stat().st_mtime == 1_000_000


def test_failed_replace_leaves_original_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "feature.md"
    shutil.copy(PLANS / "feature.md", path)
    before = path.read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        assert Path(src).read_bytes() != before  # the new content was fully written first
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        set_step_status(path, 2, "✅")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["feature.md"]


def test_temp_file_lives_next_to_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "feature.md"
    shutil.copy(PLANS / "feature.md", path)
    seen: list[str] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        seen.append(src)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    set_step_status(path, 2, "✅")
    (src,) = seen
    assert Path(src).parent == tmp_path and re.fullmatch(r"\.feature\.md\..*\.tmp", Path(src).name)


# --- the seed's one-space empty status, spacing kept, patterns shown as YAML ------------------

SEED_FORM = (
    "# P\n\n## Implementation Steps\n\n### Status: | Step 1: One\n\n### Status: ✅ | Step 2: Two\n"
)


def test_the_one_space_empty_status_parses_under_the_default_pattern(tmp_path: Path) -> None:
    path = write(tmp_path, SEED_FORM)
    assert steps_of(parse_plan(path)) == [(1, "", "One", 5), (2, "✅", "Two", 7)]
    assert lint_plan(path) == []


@pytest.mark.parametrize(
    ("line", "status", "written"),
    [
        ("### Status: | Step 1: One", "✅", "### Status: ✅ | Step 1: One"),
        ("### Status:  | Step 1: One", "✅", "### Status: ✅ | Step 1: One"),
        ("### Status:   ❌   | Step 1: One", "✅", "### Status:   ✅   | Step 1: One"),
        ("### Status: ✅ | Step 1: One", "", "### Status:  | Step 1: One"),
        ("### Status: ✅|Step 1: One", "❌", None),  # not a step under the default pattern
    ],
)
def test_a_status_write_keeps_the_lines_own_spacing(
    tmp_path: Path, line: str, status: str, written: str | None
) -> None:
    path = write(tmp_path, f"## Implementation Steps\n\n{line}\n\nbody\n")
    if written is None:
        with pytest.raises(PlanError, match=r"no step 1 \(steps: none\)"):
            set_step_status(path, 1, status)
        return
    set_step_status(path, 1, status)
    assert path.read_text() == f"## Implementation Steps\n\n{written}\n\nbody\n"
    assert parse_plan(path).step(1).status == status


def test_errors_show_the_pattern_as_written_in_yaml(tmp_path: Path) -> None:
    import yaml

    from gitflow_agents.plan import DEFAULT_STEP_PATTERN, yaml_pattern

    shown = yaml_pattern(DEFAULT_STEP_PATTERN)
    assert shown == r"'^### Status: ([^|]*?) ?\| Step (\d+): (.+)$'" and "\\\\" not in shown
    assert yaml.safe_load(f"step_header_pattern: {shown}")["step_header_pattern"] == (
        DEFAULT_STEP_PATTERN
    )
    assert yaml_pattern("it's") == "'it''s'"
    empty = write(tmp_path, "# Nothing\n")
    with pytest.raises(PlanError) as info:
        parse_plan(empty)
    assert f"step_header_pattern: {shown};" in str(info.value)


def test_the_pattern_that_needs_two_spaces_gets_a_hint_for_the_one_space_form(
    tmp_path: Path,
) -> None:
    """A project whose base.yaml still names the old default: run, prompt and plan lint say
    which line looks like a step and how to write the pattern that accepts it."""
    from gitflow_agents.plan import LEGACY_STEP_PATTERN

    legacy = SpecPlanConfig(step_header_pattern=LEGACY_STEP_PATTERN)
    path = write(tmp_path, SEED_FORM.replace("✅ | Step 2", "| Step 2"))
    with pytest.raises(PlanError) as info:
        parse_plan(path, legacy)
    message = str(info.value)
    assert "line 5 looks like a step header but does not match" in message
    assert "needs two spaces for an empty status" in message
    assert r"step_header_pattern: '^### Status: ([^|]*?) ?\| Step (\d+): (.+)$'" in message
    problems = [p for p in lint_plan(path, legacy) if p.line == 5]
    assert problems and "needs two spaces" in problems[0].message
    # With another step that matches, the plan is refused too: the step would go unseen.
    path.write_text(SEED_FORM.replace("| Step 1", "✅ | Step 1").replace("✅ | Step 2", "| Step 2"))
    with pytest.raises(PlanError) as info:
        parse_plan(path, legacy)
    assert info.value.line == 7
    assert "looks like a step but does not match" in str(info.value)
    assert "needs two spaces for an empty status" in str(info.value)
