"""Hypothesis strategies for hostile inputs: mostly-valid documents with one or more nasty parts
(what finds bugs past the first parser), and plain garbage.

Each strategy produces ``bytes`` for files (so encodings, NULs and line endings vary) or plain
values for argv and JSON.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import strategies as st

NEWLINES = st.sampled_from(["\n", "\r\n", "\r"])

# Scalars YAML resolves and then may fail to construct, or that later code chokes on.
NASTY_SCALARS = [
    "2026-13-45",
    "2026-01-02",
    "2026-02-30 25:61:61",
    "!!int abc",
    "!!float x",
    "!!bool maybe",
    "!!null x",
    "!!timestamp 2026-99-99",
    "!!binary ===",
    "!!set {a}",
    "!!omap [a]",
    "!!python/name:os.system",
    "!!python/object/apply:os.system ['true']",
    "!Custom x",
    "*undefined",
    '"\\0"',
    '"a\\0b"',
    '"\\ud800"',
    '"\\udfff x"',
    "~",
    "null",
    "yes",
    "0x1F",
    "0o777",
    "1e999",
    "-.inf",
    ".nan",
    "1" * 5000,
    "-" * 3,
    "[" * 200,
    "{" * 200,
    "&a [*a]",
    "'unterminated",
    '"bad \\q escape"',
    "\t tab",
    "@../../outside",
    "@/etc/passwd",
    "@.flow",
    "",
]
KEYS = [
    "agents",
    "builder",
    "reviewer",
    "adapter",
    "command",
    "model",
    "type",
    "options",
    "allow_env",
    "env",
    "system_prompt",
    "defaults",
    "stuck_timeout_secs",
    "max_wait_secs",
    "flow_dir",
    "default_branch",
    "specs_folder",
    "completion_workflow",
    "template",
    "report",
    "filename",
    "chain",
    "reviewers",
    "max_iterations",
    "branch_pattern",
    "spec_plan",
    "step_header_pattern",
    "shared_files",
    "<<",
    "name",
    "description",
    "agentId",
    "output",
    "kind",
    "temperature",
    "tools",
    "includes",
    "instructions",
    "skills",
    "title",
    "agent_flow",
    "agent_status",
]

scalar_text = st.one_of(
    st.sampled_from(NASTY_SCALARS),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=20).map(json.dumps),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12),
)
key_text = st.one_of(st.sampled_from(KEYS), st.text(min_size=1, max_size=8))


@st.composite
def yaml_lines(draw: st.DrawFn, depth: int = 0) -> list[str]:
    """Block-style YAML lines: keys from the config and asset schemas, nasty scalars."""
    lines: list[str] = []
    indent = "  " * depth
    for _ in range(draw(st.integers(1, 4))):
        key = draw(key_text)
        choice = draw(st.integers(0, 5 if depth < 3 else 2))
        if choice <= 2:
            lines.append(f"{indent}{key}: {draw(scalar_text)}")
        elif choice == 3:
            lines.append(f"{indent}{key}:")
            lines += [f"{indent}  - {draw(scalar_text)}" for _ in range(draw(st.integers(0, 3)))]
        else:
            lines.append(f"{indent}{key}:")
            lines += draw(yaml_lines(depth + 1))
    return lines


def alias_bomb(levels: int) -> str:
    names = "abcdefghij"[:levels]
    rows = [f"{names[0]}: &{names[0]} [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for prev, name in itertools.pairwise(names):
        rows.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    return "\n".join(rows)


def merge_bomb(levels: int) -> str:
    """Merge keys PyYAML copies instead of sharing: 9 ** levels pairs once built."""
    rows = ["m0: &m0 {x: 1, y: 2}"]
    rows += [f"m{i}: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * 9)}]}}" for i in range(1, levels + 1)]
    return "\n".join(rows)


EXTRAS = st.sampled_from(
    [
        alias_bomb(9),
        alias_bomb(5),
        merge_bomb(9),
        "x: &x {a: 1}\ny: &y {<<: *x}\nz: {<<: [*x, *y, *y]}",
        "x: " + "[" * 100_000 + "]" * 100_000,
        "deep: " + "[" * 5000 + "]" * 5000,
        "deep: " + "{a: " * 300 + "1" + "}" * 300,
        "x: &x\n  y: *x",
        "a: 1\n---\nb: 2",
        "a: 1\na: 2",
        "? [complex, key]\n: v",
        "1: int key",
        "base: &b {model: x}\nuse:\n  <<: *b",
        "merge:\n  <<: [1, 2]",
        "\x00",
        "\ufeff---",
        "%YAML 1.1\n---",
        "!!map {a: 1}",
        "- just\n- a list",
        "just a string",
    ]
)


@st.composite
def yaml_text(draw: st.DrawFn, base: str = "") -> str:
    """A YAML document: ``base`` (a real file) with a line swapped or nasty lines added, or
    generated lines, or an extreme one (alias bomb, deep nesting, NUL…)."""
    mode = draw(st.integers(0, 3))
    if mode == 0 and base:
        lines = base.splitlines()
        index = draw(st.integers(0, max(0, len(lines) - 1)))
        head, sep, _ = lines[index].partition(":")
        if sep:
            lines[index] = f"{head}: {draw(scalar_text)}"
        return "\n".join(lines) + "\n"
    if mode == 1 and base:
        return base + "\n".join(draw(yaml_lines())) + "\n"
    if mode == 2:
        return draw(EXTRAS) + "\n"
    return "\n".join(draw(yaml_lines())) + "\n"


@st.composite
def encoded(draw: st.DrawFn, text: str) -> bytes:
    """``text`` with its line endings, a BOM, a stray NUL or invalid UTF-8 varied."""
    newline = draw(NEWLINES)
    data = text.replace("\n", newline).encode("utf-8", "surrogatepass")
    damage = draw(st.integers(0, 6))
    if damage == 0:
        data = b"\xef\xbb\xbf" + data
    elif damage == 1:
        at = draw(st.integers(0, len(data)))
        data = (
            data[:at]
            + draw(st.sampled_from([b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80"]))
            + data[at:]
        )
    return data


PLAN_LINES = [
    "# Plan: {t}",
    "## Implementation Steps",
    "### Status: ✅ | Step {n}: {t}",
    "### Status:  | Step {n}: {t}",
    "### Status: ❌ | Step {n}: {t} ###",
    "### Status: {t} | Step {n}: {t}",
    "### Status: | Step {n}: {t}",
    "Status: ✅ | Step {n}: not a heading",
    "    ### Status: ✅ | Step {n}: indented code",
    "```",
    "~~~~",
    "```python",
    "> ### Status: ✅ | Step {n}: quoted",
    "- ### Status: ✅ | Step {n}: in a list",
    "<!-- ### Status: ✅ | Step {n}: -->",
    "<div>",
    "{t}",
    "",
    "Step {n}",
    "***",
    "---",
]


VALID_PLAN = (
    "# Plan: P\n\nOverview.\n\n## Implementation Steps\n\n"
    "### Status: ✅ | Step 1: First\n\nDo it.\n\n### Status:  | Step 2: Second\n\nThen.\n"
)


@st.composite
def plan_text(draw: st.DrawFn) -> str:
    """A valid plan with nasty lines inserted (half the time), or nasty lines alone."""
    numbers = st.one_of(
        st.integers(-3, 20).map(str),
        st.sampled_from(["99999999999999999999999", "٣", "1.5", "x", "", "0"]),
    )
    words = st.text(max_size=15).filter(lambda t: "\n" not in t and "\r" not in t)
    lines = VALID_PLAN.splitlines() if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 25))):
        template = draw(st.sampled_from(PLAN_LINES))
        line = template.format(n=draw(numbers), t=draw(words))
        lines.insert(draw(st.integers(0, len(lines))), line)
    return "\n".join(lines) + draw(st.sampled_from(["\n", ""]))


REPORT_PARTS = [
    "REVIEW_RESULT: APPROVED",
    "REVIEW_RESULT: REVISE",
    "REVIEW_RESULT: CHANGES_REQUESTED",
    "**REVIEW_RESULT: APPROVED**",
    "review_result: approved",
    "REVIEW_RESULT: APPROVED please",
    "```",
    "```json",
    "~~~",
    "    REVIEW_RESULT: APPROVED",
    "<!--",
    "-->",
    "<!-- REVIEW_RESULT: APPROVED -->",
    "<pre>",
    "</pre>",
    "<details>",
    "</details>",
    "- [error] src/a.py:12: bad",
    "- [warn] `b.py:99999999999999999999999`: huge line",
    "- [info] c.py:3-1: reversed range",
    "- [x] done",
    "- [ERROR] :1: no file",
    "<SUMMARY>done</SUMMARY>",
    "<STATUS>completed</STATUS>",
    "<STATUS>needs_input</STATUS>",
    "<STATUS>",
    "<QUESTIONS>",
    "- why?",
    "<FILES_CREATED>a.py</FILES_CREATED>",
    "## Summary",
    "CHECKED_CRITERIA: 0, 2, 99999999999999999999",
    "TESTS_RAN: pytest",
    "TESTS_PASSED: yes",
    "[link](https://example.com/x)",
    "@someone please look",
    "ghp_" + "a" * 36,
    "AKIAABCDEFGHIJKLMNOP",
]


def findings_json(draw: st.DrawFn) -> str:
    value = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(),
        st.text(max_size=10),
        st.lists(st.integers(), max_size=2),
    )
    finding = st.dictionaries(
        st.sampled_from(["severity", "message", "file", "line", "end_line", "rule", "suggestion"]),
        value,
        max_size=6,
    )
    data = st.dictionaries(
        st.sampled_from(["overall", "summary", "findings", "reviewed_sha", "base_sha", "run"]),
        st.one_of(value, st.lists(finding, max_size=3), st.sampled_from(["approve", "revise"])),
        max_size=6,
    )
    return json.dumps(draw(data), default=str)


@st.composite
def report_text(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.integers(0, 6))
        if kind == 0:
            parts.append("```json\n" + findings_json(draw) + "\n```")
        elif kind == 1:
            parts.append(draw(st.text(max_size=40)))
        else:
            parts.append(draw(st.sampled_from(REPORT_PARTS)))
    return "\n".join(parts)


def hostile_json() -> st.SearchStrategy[Any]:
    """JSON values of every type, nested a little, strings with lone surrogates."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**80), 2**80),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
        st.sampled_from(["\ud800", "x\udfffy", "running", "queued", "succeeded", "review"]),
    )
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.dictionaries(st.text(max_size=6), children, max_size=3),
        ),
        max_leaves=8,
    )


JSON_EXTRAS = [
    "[" * 100000,
    '{"a":' * 5000 + "1" + "}" * 5000,
    "NaN",
    '{"started": Infinity}',
    '{"started": 1e999}',
    '{"pid": ' + "9" * 5000 + "}",
    '{"x": "\\ud800"}',
    "",
    "not json",
    '"a string"',
]


@st.composite
def json_document(draw: st.DrawFn, shape: dict[str, st.SearchStrategy[Any]]) -> bytes:
    """A JSON file: an object with the ``shape`` keys (values of any type, often the right
    one), or an extreme text, as UTF-8 bytes (sometimes damaged)."""
    mode = draw(st.integers(0, 5))
    if mode == 0:
        text = draw(st.sampled_from(JSON_EXTRAS))
    elif mode == 1:
        text = json.dumps(draw(hostile_json()))
    else:
        data = {}
        for key, right in shape.items():
            if draw(st.booleans()):
                data[key] = draw(st.one_of(right, hostile_json()))
        text = json.dumps(data, ensure_ascii=draw(st.booleans()))
    return draw(encoded(text))
