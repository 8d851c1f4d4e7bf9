"""split_frontmatter: exact split, line numbers in the file, and one clear error for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.base.errors import InputError
from gitflow_agents.base.frontmatter import Frontmatter, split_frontmatter


def read(tmp_path: Path, name: str, content: bytes) -> str:
    """Write ``content`` to a real file and read it back the way a loader would (bytes, utf-8)."""
    path = tmp_path / name
    path.write_bytes(content)
    return path.read_bytes().decode("utf-8")


def test_frontmatter_split_keeps_raw_and_body_exact(tmp_path: Path) -> None:
    text = read(tmp_path, "a.md", b"---\nname: x  # comment\nlist: [1, 2]\n---\n# Body\n\ntext\n")
    front = split_frontmatter(text, path="a.md")
    assert front.raw == "name: x  # comment\nlist: [1, 2]\n"
    assert front.data == {"name": "x", "list": [1, 2]}
    assert front.body == "# Body\n\ntext\n"
    assert front.body_line == 5
    assert text == "---\n" + front.raw + "---\n" + front.body


def test_no_frontmatter_gives_whole_text_as_body(tmp_path: Path) -> None:
    text = read(tmp_path, "b.md", b"# Title\n---\nnot: frontmatter\n---\n")
    assert split_frontmatter(text, path="b.md") == Frontmatter(
        raw=None, data={}, body=text, body_line=1
    )


def test_crlf_and_bom_are_tolerated(tmp_path: Path) -> None:
    text = read(tmp_path, "c.md", b"\xef\xbb\xbf---\r\nname: x\r\n---\r\nbody\r\n")
    front = split_frontmatter(text, path="c.md")
    assert front.data == {"name": "x"}
    assert front.raw == "name: x\r\n"
    assert front.body == "body\r\n"
    assert front.body_line == 4


def test_empty_frontmatter_and_body_at_end_of_file() -> None:
    front = split_frontmatter("---\n---", path="d.md")
    assert (front.raw, front.data, front.body, front.body_line) == ("", {}, "", 3)


def test_comment_only_frontmatter_is_an_empty_mapping() -> None:
    assert split_frontmatter("---\n# nothing yet\n---\nbody", path="e.md").data == {}


def test_malformed_yaml_reports_the_line_in_the_file(tmp_path: Path) -> None:
    # Line 1 is '---', so the bad third YAML line is line 4 of the file.
    text = read(tmp_path, "f.md", b"---\nname: ok\ndescription: fine\nmodel: a: b\n---\nbody\n")
    with pytest.raises(InputError) as info:
        split_frontmatter(text, path="agents/f.agent.md")
    assert info.value.path == "agents/f.agent.md"
    assert info.value.line == 4
    assert str(info.value).startswith("agents/f.agent.md:4: invalid YAML in frontmatter:")


def test_malformed_yaml_line_counts_crlf_lines(tmp_path: Path) -> None:
    text = read(tmp_path, "g.md", b"---\r\na: 1\r\nb: [x\r\nc: 2\r\n---\r\n")
    with pytest.raises(InputError) as info:
        split_frontmatter(text, path="g.md")
    assert info.value.line is not None and info.value.line >= 3


def test_list_frontmatter_is_rejected() -> None:
    with pytest.raises(InputError, match=r"must be a YAML mapping .* not a list") as info:
        split_frontmatter("---\n- a\n- b\n---\nbody\n", path="h.md")
    assert info.value.line == 2


def test_scalar_frontmatter_is_rejected() -> None:
    with pytest.raises(InputError, match="not a string"):
        split_frontmatter("---\njust text\n---\n", path="i.md")


def test_non_string_keys_are_rejected() -> None:
    with pytest.raises(InputError, match="keys must be strings"):
        split_frontmatter("---\n1: one\n---\n", path="j.md")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("---\nname: A\ndescription: one\ndescription: two\n---\n", 4),
        ("---\nname: A\noutput:\n  kind: text\n  kind: json\n---\n", 5),
        ("---\nname: A\nlist:\n  - {a: 1, a: 2}\n---\n", 4),
    ],
)
def test_a_key_given_twice_is_an_error_at_its_second_line(text: str, line: int) -> None:
    """As in `.flow/` (the last value won, silently)."""
    with pytest.raises(InputError, match="duplicate key") as info:
        split_frontmatter(text, path="d.md")
    assert info.value.line == line


def test_a_merge_key_may_repeat_and_an_anchor_is_no_duplicate() -> None:
    text = "---\nbase: &b {x: 1}\nmore: &m {y: 2}\nboth:\n  <<: *b\n  <<: *m\n---\n"
    assert split_frontmatter(text, path="m.md").data["both"] == {"x": 1, "y": 2}


@pytest.mark.parametrize("text", ["---\nname: x\nbody never closed\n", "---", "---\n"])
def test_unclosed_frontmatter_is_an_error_at_line_1(text: str) -> None:
    with pytest.raises(InputError, match="never closed") as info:
        split_frontmatter(text, path="k.md")
    assert (info.value.path, info.value.line) == ("k.md", 1)


def test_delimiter_must_be_exactly_three_dashes() -> None:
    front = split_frontmatter("----\nname: x\n----\n", path="l.md")
    assert front.raw is None
    # "----" inside the YAML does not close it; a closing "---" may carry trailing spaces.
    closing = split_frontmatter("---\nname: x\nrule: |\n  ----\n---  \nbody", path="l.md")
    assert closing.data == {"name": "x", "rule": "----\n"}
    assert closing.body == "body"


def test_key_lines_locate_nested_keys_and_items() -> None:
    text = "---\nname: a\noutput:\n  kind: plan\nincludes:\n  skills:\n    - one\n    - two\n---\n"
    lines = split_frontmatter(text, path="m.md").key_lines()
    assert lines["name"] == 2
    assert lines["output.kind"] == 4
    assert lines["includes.skills"] == 6
    assert lines["includes.skills.1"] == 8
