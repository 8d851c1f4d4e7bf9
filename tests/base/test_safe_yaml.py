"""The one YAML reader (gitflow_agents/base/safe_yaml.py): bounded work, plain values, one-line errors
for every malformed input, through every YAML surface (config layers, frontmatter, the builtin
reviewer's syntax check)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.base.errors import ConfigError, ExitCode, InputError
from gitflow_agents.base.frontmatter import split_frontmatter
from gitflow_agents.base.safe_yaml import (
    ALIAS_BUDGET,
    MAX_DEPTH,
    TAB_MESSAGE,
    YamlProblem,
    check_syntax,
    load,
)
from tests.conftest import Cli
from tests.helpers.yaml_parsers import parser

__all__ = ["parser"]  # autouse: every test with libyaml and PyYAML's own parser

# The "billion laughs": 9 levels of 9 aliases, 10^8 strings once expanded, from 342 bytes.
ALIAS_BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def problem(text: str) -> YamlProblem:
    with pytest.raises(YamlProblem) as info:
        load(text)
    return info.value


def test_plain_values_and_merge_keys() -> None:
    text = "base: &b {x: 1, y: [a, b]}\nuse:\n  <<: *b\n  y: 2\nwhen: 2026-01-02\nt: yes\n"
    assert load(text) == {
        "base": {"x": 1, "y": ["a", "b"]},
        "use": {"x": 1, "y": 2},
        "when": "2026-01-02",  # a date stays the string it looks like
        "t": True,
    }
    assert load("") is None
    assert load("# only a comment\n") is None


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("a: 1\nb: !!int abc\n", 1, "'abc' is not an integer"),
        ("a: !!float x\n", 0, "'x' is not a number"),
        ("a: !!bool maybe\n", 0, "'maybe' is not a boolean"),
        ("a: !!timestamp 2026-13-45\n", 0, "unsupported tag !!timestamp"),
        ("a: !!binary AAAA\n", 0, "unsupported tag !!binary"),
        ("a: !!set {x}\n", 0, "unsupported tag !!set"),
        ("a: !!python/name:os.system\n", 0, "unsupported tag !!python/name:os.system"),
        ("a: !Ref b\n", 0, "unsupported tag !Ref"),
        ('a: "x\\0y"\n', 0, "contains a NUL character"),
        ("a: 1\n# \x00\n", 1, "contains a NUL character"),
        ("a: *nothing\n", 0, "alias *nothing names no anchor defined before it"),
        ("a: &x [*x]\n", 0, "recursive YAML alias *x"),
        ("[" * (MAX_DEPTH + 1), 0, f"nested more than {MAX_DEPTH} levels deep"),
        ("a: 1\n---\nb: 2\n", 1, "expected a single document in the stream"),
        ("a: [1\n", 1, None),  # a syntax error in the parser's words (libyaml's or PyYAML's)
        ("a: 1\nb: {c: 1\nd: 2\n", 2, None),
        ("a:\n\tb: 1\n", 1, TAB_MESSAGE),
        ("a:\n  b: 1\n\tc: 2\n", 2, TAB_MESSAGE),
        ("a: " + "1" * 5000 + "\n", 0, "is not an integer"),
        ("? [a]\n: 1\n", 0, "a key must be a plain value"),
        ("a: 1\nb: \x9e\n", 1, "contains the control character U+009E"),
        ("a: \x01\n", 0, "contains the control character U+0001"),
    ],
)
def test_malformed_yaml_is_one_problem_with_its_line(
    text: str, line: int, message: str | None
) -> None:
    error = problem(text)
    assert message in error.message if message is not None else error.message.strip()
    assert "\n" not in error.message
    assert error.line == line


def test_lone_surrogate_is_refused() -> None:
    assert "lone surrogate" in problem("a: '\ud800'\n").message


BUDGET_MESSAGE = f"aliases expand to more than {ALIAS_BUDGET:,} values (an alias bomb?)"
# Values the aliases of ALIAS_BOMB's rows b, c, d add: 90, 819, 7,380; each alias of row e adds
# 7,381, so the 6th of them crosses the budget: the reader stops on row e (0-based line 4),
# never expanding rows f to i. Its speed is measured in benchmarks/hostile_sizes.py.
BOMB_STOPS_AT = 4


def test_alias_bomb_is_stopped_by_the_expansion_budget() -> None:
    error = problem(ALIAS_BOMB)
    assert error.message == BUDGET_MESSAGE
    assert error.line == BOMB_STOPS_AT
    assert len(ALIAS_BOMB) < 600


def test_moderate_aliases_are_fine() -> None:
    text = "d: &d {" + ", ".join(f"k{i}: {i}" for i in range(50)) + "}\n"
    text += "".join(f"a{i}: *d\n" for i in range(100))
    assert load(text)["a99"]["k49"] == 49


def test_syntax_check_builds_nothing_and_keeps_the_same_bounds() -> None:
    """The builtin reviewer's check: application tags and values no tag can hold pass (its
    own loader judges those), but nesting and alias expansion have the bounds of ``load``, so
    the loader that builds the values afterwards has bounded work (a merge-key bomb too)."""
    check_syntax("a: !Ref b\n---\nc: !!python/name:os.system\n")
    check_syntax("a: 2026-13-45\nb: !!int abc\n")
    check_syntax("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    check_syntax("a: &x {k: 1}\nb: *x\n---\nc: &x [1]\nd: *x\n")  # anchors per document
    with pytest.raises(YamlProblem) as info:
        check_syntax(ALIAS_BOMB)
    assert (info.value.message, info.value.line) == (BUDGET_MESSAGE, BOMB_STOPS_AT)
    with pytest.raises(YamlProblem, match=f"nested more than {MAX_DEPTH} levels deep"):
        check_syntax("[" * 5000 + "]" * 5000)
    with pytest.raises(YamlProblem, match="recursive YAML alias"):
        check_syntax("a: &x [*x]\n")
    with pytest.raises(YamlProblem, match="names no anchor"):
        check_syntax("a: *x\n")
    with pytest.raises(YamlProblem, match="names no anchor"):
        check_syntax("a: &x 1\n---\nb: *x\n")
    with pytest.raises(YamlProblem):
        check_syntax("a: [\n")


def test_frontmatter_errors_name_the_file_line() -> None:
    with pytest.raises(InputError) as info:
        split_frontmatter("---\ntitle: x\ndate: !!int abc\n---\nbody\n", path="card.md")
    assert str(info.value) == "card.md:3: invalid YAML in frontmatter: 'abc' is not an integer"
    with pytest.raises(InputError, match="alias bomb"):
        split_frontmatter("---\n" + ALIAS_BOMB + "---\n", path="a.md")
    front = split_frontmatter("---\nwhen: 2026-13-45\n---\n", path="card.md")
    assert front.data == {"when": "2026-13-45"}


def test_config_alias_bomb_exits_2_through_the_cli(repo: Path, cli_run: Cli) -> None:
    """Exit 2, stopped by the expansion budget (the time: benchmarks/hostile_sizes.py)."""
    assert cli_run.main("init", cwd=repo).returncode == 0
    base = repo / ".flow" / "base.yaml"
    lines = base.read_text().count("\n")
    base.write_text(base.read_text() + ALIAS_BOMB)
    result = cli_run.main("status", cwd=repo)
    assert result.returncode == ExitCode.USAGE
    where = f".flow/base.yaml:{lines + BOMB_STOPS_AT + 1}"
    assert result.stderr == f"gitflow-agents: error: {where}: invalid YAML: {BUDGET_MESSAGE}\n"


def test_agents_flow_frontmatter_alias_bomb_exits_2(repo: Path, cli_run: Cli) -> None:
    assert cli_run.main("init", cwd=repo).returncode == 0
    agent = repo / ".agents-flow" / "agents" / "bomb.agent.md"
    agent.parent.mkdir(parents=True)
    agent.write_text("---\nagentId: bomb\n" + ALIAS_BOMB + "---\nYou review.\n")
    result = cli_run.main("prompt", "--agent", "bomb", "--task", "t", cwd=repo)
    assert result.returncode == ExitCode.USAGE
    assert BUDGET_MESSAGE in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("defaults:\n  stuck_timeout_secs: 2026-13-45\n", "stuck_timeout_secs: expected"),
        ("flow_dir: !!int x\n", "invalid YAML: 'x' is not an integer"),
        ('flow_dir: "a\\0b"\n', "contains a NUL character"),
        ("x: " + "[" * 100 + "]" * 100 + "\n", "nested more than"),
    ],
)
def test_config_values_yaml_cannot_hold_are_config_errors(
    tmp_path: Path, yaml_text: str, message: str
) -> None:
    (tmp_path / ".flow").mkdir()
    (tmp_path / ".flow" / "base.yaml").write_text(yaml_text)
    from gitflow_agents.config import load_flow_config

    with pytest.raises(ConfigError) as info:
        load_flow_config(tmp_path)
    assert str(info.value).startswith((".flow/base.yaml:1: ", ".flow/base.yaml:2: "))
    assert message in str(info.value)


# Issue 19: libyaml 0.2.6 (PyYAML 6.0.4) stops at 1,000 levels of its own, and on one line it
# gets there before handing out the 65th level; PyYAML's own parser is quadratic in that depth.
DEEP_DEPTHS = [1000, 8000, 100_000]  # 100,000 levels: a 200 KB file


def deep(depth: int, before: str = "") -> str:
    return before + "x: " + "[" * depth + "]" * depth + "\n"


@pytest.mark.parametrize("depth", DEEP_DEPTHS)
@pytest.mark.parametrize("before", ["", "a: 1\nb: [2]\n", "é: ü\n# 😀\n"])
def test_deep_nesting_on_one_line_is_our_refusal_at_its_line(depth: int, before: str) -> None:
    """With either parser: our bound, our words, the line (the libyaml path reads again only the
    text before libyaml's error, so a 200 KB file is refused in milliseconds:
    benchmarks/hostile_sizes.py)."""
    text = deep(depth, before)
    line = before.count("\n")
    for read in (load, check_syntax):
        with pytest.raises(YamlProblem) as info:
            read(text)
        assert (info.value.message, info.value.line) == (
            f"nested more than {MAX_DEPTH} levels deep",
            line,
        )


def test_a_libyaml_error_is_never_parsed_again_by_pyyamls_own_parser(
    parser: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old error path parsed the whole text (up to 1 MiB) again with PyYAML's pure-Python
    parser to word the message, which took minutes for deep nesting."""
    import yaml

    if parser == "pure" or not hasattr(yaml, "CSafeLoader"):
        pytest.skip("the libyaml path")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("PyYAML's own parser ran")

    monkeypatch.setattr(yaml.parser.Parser, "__init__", refuse)
    for text in (deep(2000), "a: [1\n", "a: 1\n" * 1000 + "b: {c\n", "a:\n\tb: 1\n"):
        for read in (load, check_syntax):
            with pytest.raises(YamlProblem):
                read(text)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a:\n  b: 1\n  " + "[" * 5000 + "]" * 5000 + "\n", 2),  # and a key without ':'
        ("x: " + "[" * 100 + "}\n", 0),  # a syntax error after the 65th level
        ("x: [\n" + " [\n" * 5000 + "]" * 5001 + "\n", MAX_DEPTH - 1),  # x: is level 1
        ("x: " + "{a: [" * 50_000 + "\n", 0),
        ("x: " + "{[" * 5000 + "\n", 0),
    ],
)
def test_other_deep_shapes_are_refused_at_their_line(text: str, line: int) -> None:
    for read in (load, check_syntax):
        with pytest.raises(YamlProblem) as info:
            read(text)
        assert info.value.line == line


def test_deep_nesting_in_config_and_frontmatter_names_file_and_line(
    tmp_path: Path, repo: Path, cli_run: Cli
) -> None:
    assert cli_run.main("init", cwd=repo).returncode == 0
    base = repo / ".flow" / "base.yaml"
    lines = base.read_text().count("\n")
    base.write_text(base.read_text() + deep(100_000))
    result = cli_run.main("status", cwd=repo)
    assert result.returncode == ExitCode.USAGE
    assert result.stderr == (
        f"gitflow-agents: error: .flow/base.yaml:{lines + 1}: invalid YAML: nested more than "
        f"{MAX_DEPTH} levels deep\n"
    )
    with pytest.raises(InputError) as info:
        split_frontmatter("---\ntitle: x\n" + deep(100_000) + "---\nbody\n", path="card.md")
    assert str(info.value) == (
        f"card.md:3: invalid YAML in frontmatter: nested more than {MAX_DEPTH} levels deep"
    )


def test_git_agent_review_refuses_a_deep_yaml_file_as_a_finding(repo: Path, cli_run: Cli) -> None:
    """The issue's case: a commit adding a 200 KB ``x: [[[…]]]`` file (the time it takes:
    benchmarks/hostile_sizes.py)."""
    import json

    from gitflow_agents import git_agent_review
    from tests.conftest import git

    (repo / "conf").mkdir()
    (repo / "conf" / "deep.yaml").write_text("# generated\nok: 1\n" + deep(100_000))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "deep")
    result = cli_run._call(git_agent_review.main, ("HEAD~1..HEAD", "--format", "json"), repo, None)
    assert result.returncode == 1, result.stderr
    found = [
        (f["rule"], f["file"], f["line"], f["message"])
        for f in json.loads(result.stdout)["findings"]
    ]
    assert found == [
        (
            "yaml-syntax",
            "conf/deep.yaml",
            3,
            f"invalid YAML: nested more than {MAX_DEPTH} levels deep",
        )
    ]
