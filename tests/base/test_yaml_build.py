"""The builtin reviewer's one-pass YAML value check (gitflow_agents/reviewer/yaml_build.py)
against what it replaced: PyYAML's safe loader building every value after the syntax pass."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gitflow_agents.base.safe_yaml import YamlProblem, check_syntax
from gitflow_agents.reviewer.syntax import SyntaxProblem, _yaml
from tests.helpers.yaml_parsers import parser  # noqa: F401 - autouse: every test with libyaml and PyYAML's own parser

_CORE = "tag:yaml.org,2002:"


def _old_loader() -> type[Any]:
    """The reviewer's loader before the one-pass check: application tags opaque; and a key
    repeated in one mapping refused, through PyYAML's own hook (``construct_mapping``, which
    builds every mapping and set: a mapping under an application tag is not built), comparing
    the keys written in the mapping as PyYAML builds them, its ``<<`` merge keys and the pairs
    they merge left out."""

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == _CORE + "merge" or key_node.tag.startswith("!"):
                    continue
                if key_node.tag == _CORE + "value":  # PyYAML's flatten makes it a string
                    key = (_CORE + "str", key_node.value)
                elif isinstance(key_node, yaml.ScalarNode):
                    key = (key_node.tag, self.construct_object(key_node))
                else:
                    continue  # a list or mapping as a key: PyYAML refuses it anyway
                if key in seen:
                    raise yaml.constructor.ConstructorError(None, None, "found duplicate key")
                seen.add(key)
            return super().construct_mapping(node, deep)

    def _opaque(loader: Any, suffix: str, node: Any) -> None:
        return None

    Loader.add_multi_constructor("!", _opaque)
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", _opaque)
    return Loader


OLD = _old_loader()


def old_builds(text: str) -> bool:
    try:
        for _ in yaml.load_all(text, Loader=OLD):
            pass
    except Exception:  # what the old check turned into a finding
        return False
    return True


def new_builds(text: str) -> bool:
    try:
        _yaml(text, "x.yaml")
    except SyntaxProblem:
        return False
    return True


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: [yes, ~, 1.5, 0x1f, 190:20:30, .inf, 2024-01-02, 2001-12-14t21:59:43.10-05:00]\n",
        "a: 2024-13-45\n",
        "a: 2001-12-14 21:59:43 +99:00\n",
        "a: !!int abc\n",
        "a: !!bool maybe\n",
        "a: !!float abc\n",
        "a: !!timestamp abc\n",
        "a: !!null abc\n",
        "a: !!binary aGVsbG8=\n",
        "a: " + "9" * 5000 + "\n",
        "a: &x 1\nb: &x 2\n",
        "&x [&x 1]\n",
        "a: &x 1\n---\nb: &x 2\n",
        "a: =\n",
        "=: 1\n",
        "a: <<\n",
        "[<<]\n",
        "? [a]\n: 1\n",
        "? {a: 1}\n: 1\n",
        "? !Ref [a]\n: 1\n",
        "? !!set {a}\n: 1\n",
        "a: &x [1]\nb: {*x : 1}\n",
        "a: {<<: 1}\n",
        "a: {<<: [1]}\n",
        "a: {<<: [{b: 1}, {c: !!int x}]}\n",
        "a: &a {b: 1}\nc: {<<: *a, d: 2}\n",
        "a: &a [{b: 1}]\nc: {<<: *a}\n",
        "a: &a {<<: 1}\nb: 2\n",
        "a: !Ref {<<: 1}\n",
        "a: {<<: !Ref {x: !!int abc}}\n",
        "a: !Ref [&x !!int abc]\nb: *x\n",
        "a: !Ref [!!int abc]\n",
        "a: !Ref {? [1] : 2}\n",
        "? !!merge <<\n: {a: 1}\n",
        "a: !!set [1]\n",
        "a: !!set {x, y}\n",
        "a: !!str [1]\n",
        "a: !!seq {b: 1}\n",
        "a: !!map [1]\n",
        "a: !!omap [{a: 1}, {b: 2}]\n",
        "a: !!omap [{a: 1, b: 2}]\n",
        "a: !!pairs [1]\n",
        "a: !!omap {a: 1}\n",
        "a: !<tag:x> 1\n",
        "a: !!foo 1\n",
        "a: !!python/tuple [1]\n",
        "a: !!python/name:os.system\n",
        "x: ! 12\n",
        "Value: !Ref Bucket\nList: !GetAZs ''\nSub: !Sub ['${a}', {a: !GetAtt b.c}]\n",
        "a: 1\n---\nb: !!int x\n",
    ],
)
def test_one_pass_refuses_what_the_safe_loader_refused(text: str) -> None:
    assert new_builds(text) is old_builds(text)


def test_the_finding_names_the_line_of_the_value() -> None:
    for text, line, message in [
        ("a: 1\nb:\n  c: !!int abc\n", 3, None),
        ("a: 1\n---\nb: 2024-13-45\n", 3, None),
        ("a:\n  - x\n  - !!bool maybe\n", 3, "invalid YAML: cannot build 'maybe'"),
        ("a: &x 1\nb: &x 2\n", 2, "invalid YAML: the anchor &x is defined twice"),
        ("a: 1\n? [k]\n: v\n", 2, "invalid YAML: a sequence cannot be a key (PyYAML builds it "),
        ("a: 1\nb: {<<: 1}\n", 2, "invalid YAML: << merges a mapping or a list of mappings, "),
        ("a: 1\nb: !!foo x\n", 2, "invalid YAML: no constructor for the tag "),
        ("a:\n  b: 1\n  c: 2\n  b: 3\n", 4, "invalid YAML: duplicate key 'b' (first on line 2)"),
        ("a: 1\n---\nb: {x: 1, y: 2,\n  x: 3}\n", 4, "invalid YAML: duplicate key 'x' "),
        ("a: 1\nb:\n  1: x\n  0x1: y\n", 4, "invalid YAML: duplicate key '0x1' (first on l"),
        ("&k a: 1\n*k : 2\n", 2, "invalid YAML: duplicate key 'a' (first on line 1)"),
        ("s: !!set {a, b,\n  a}\n", 2, "invalid YAML: duplicate key 'a' (first on line 1)"),
    ]:
        with pytest.raises(SyntaxProblem) as info:
            _yaml(text, "x.yaml")
        assert info.value.line == line, text
        assert message is None or info.value.message.startswith(message), info.value.message


@pytest.mark.parametrize(
    "text",
    [
        # merge keys: what they merge may repeat a key the mapping writes (it wins), and a
        # mapping may hold several of them
        "base: &b {x: 1, y: 2}\nmore: &m {z: 3}\none: {<<: *b, x: 5}\n"
        "two:\n  <<: *b\n  <<: *m\n  y: 4\nthree: {<<: [*b, *m], z: 0}\n",
        "a: {x: 1}\nb: {x: 1}\n---\na: 2\n",  # the same key in other mappings, documents
        "- {name: a}\n- {name: b}\n",
        "k: {'1': a, 1: b, 1.0: c, '': d, null: e}\n",  # different tags: different keys
        "k: !Custom {a: 1, a: 2}\n",  # an application tag's mapping is not built
        "base: &b !Custom {a: 1, a: 2}\nuse: {<<: *b}\n",
    ],
)
def test_what_repeats_no_key_of_one_mapping_is_no_finding(text: str) -> None:
    assert new_builds(text) and old_builds(text)


def test_a_syntax_error_anywhere_comes_before_a_value_that_cannot_be_built() -> None:
    """As with the old two passes: the syntax of the whole stream first."""
    with pytest.raises(SyntaxProblem) as info:
        _yaml("a: !!int abc\n---\nb: [1\n", "x.yaml")
    assert info.value.line != 1
    with pytest.raises(YamlProblem):
        check_syntax("a: !!int abc\n---\nb: [1\n")


TAGS = ["", "", "", "!!str ", "!!int ", "!!bool ", "!!null ", "!!float ", "!!timestamp ",
        "!!seq ", "!!map ", "!!set ", "!!foo ", "!Ref ", "!!python/tuple "]  # fmt: skip
# !!omap and !!pairs: the parametrized cases (their items are the known difference).
SCALARS = ["a", "1", "yes", "~", "1.5", "2024-01-02", "2024-13-45", "maybe", "<<", "=", "''",
           "'1'", "true", "0x1", "null", "2024-1-2"]  # fmt: skip


@st.composite
def flow_node(draw: st.DrawFn, depth: int = 0) -> str:
    """A flow-style node with tags, anchors and aliases (anchors a..c, merges ``<<``)."""
    prefix = draw(st.sampled_from(["", "", "&a ", "&b ", "&c "])) + draw(st.sampled_from(TAGS))
    shape = draw(st.integers(0, 4 if depth < 3 else 1))
    if shape == 0:
        return prefix + draw(st.sampled_from(SCALARS))
    if shape == 1:
        return draw(st.sampled_from(["*a", "*b", "*c"])) if not prefix else prefix + "x"
    items = draw(st.lists(flow_node(depth + 1), max_size=3))
    if shape == 2:
        return prefix + "[" + ", ".join(items) + "]"
    keys = draw(st.lists(st.one_of(st.just("<<"), flow_node(depth + 1)), max_size=3))
    pairs = [f"? {key} : {value}" for key, value in zip(keys, items, strict=False)]
    return prefix + "{" + ", ".join(pairs) + "}"


@settings(max_examples=100, derandomize=True, deadline=None)
@given(st.lists(flow_node(), min_size=1, max_size=3))
def test_one_pass_agrees_with_the_safe_loader_on_generated_documents(nodes: list[str]) -> None:
    text = "".join(f"k{i}: {node}\n" for i, node in enumerate(nodes))
    try:
        check_syntax(text)
    except YamlProblem:
        return  # a syntax finding either way
    assert new_builds(text) is old_builds(text), text


KEYS = ["a", "'a'", "!!str a", "!Ref a", "1", "0x1", "'1'", "1.0", "~", "null", "''", "true",
        "yes", "<<", "=", "*s", "*m", "2024-01-02", "[k]"]  # fmt: skip


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.lists(st.lists(st.sampled_from(KEYS), min_size=1, max_size=4), min_size=1, max_size=3))
def test_repeated_keys_agree_with_the_safe_loader_on_generated_documents(
    mappings: list[list[str]],
) -> None:
    """Keys of one mapping drawn from a few that PyYAML builds equal or not (tags, numbers
    written two ways, merge keys, aliases): the one-pass check refuses a repeated key exactly
    when the reference loader's ``construct_mapping`` hook does."""
    head = "anchors: [&s a, &m {x: 1}]\n"
    text = head + "".join(
        f"k{i}: {{{', '.join(f'? {key} : {n}' for n, key in enumerate(keys))}}}\n"
        for i, keys in enumerate(mappings)
    )
    assert new_builds(text) is old_builds(text), text
