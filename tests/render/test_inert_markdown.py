"""Agent text is inert markup in every markdown surface.

An agent's finding carries a code fence, ``</details>``, an ``<img>``, an HTML comment, a
mention, a heading, a list item and a link definition in every field (message, file, rule,
suggestion), and so do the summary, the reason, the files not reviewed and the questions.
Every markdown surface (the markdown format, the PR summary comment and job summary, the inline
review comments, the check run, the ``/agent fix`` reply) is parsed with markdown-it as GitHub
would: no HTML, heading, list item, image or link definition comes from agent text, no mention
stays live, and every fence closes where it should (our own ``</details>`` and the inline
comment's fingerprint marker are still HTML, not swallowed by an agent's fence).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from gitflow_agents.findings import Finding, GateResult, Overall, Review, Severity, gate
from gitflow_agents.github.action import checks, comment, review
from gitflow_agents.github.action.fix import FixOutcome
from gitflow_agents.github.action.fix_reply import fix_reply
from gitflow_agents.render import render
from gitflow_agents.render.markdown import code, escape, fence, one_line, suggestion_block

HOSTILE = (
    "```\n</details>\n<img src=x onerror=alert(1)>\n<!-- sneaky -->\n@octocat ping\n\n"
    "# HEADMARK\n- ITEMMARK\n[evilref]: http://evil.example\n![pixel](http://evil.example/p.png)"
    "\n~~~\n    indented\n1. ORDERMARK\n<script>alert(1)</script>"
)
AGENT_HTML = ("img", "sneaky", "script", "octocat", "MARK")


def hostile_review() -> Review:
    findings = (
        Finding(
            Severity.ERROR,
            f"MSG {HOSTILE}",
            file=f"FILEMARK{HOSTILE}",
            line=3,
            suggestion=f"```suggestion\nx = 1\n```\n</details>\n<!-- c -->\n@octocat\n{HOSTILE}",
            rule=f"RULEMARK\n\n{HOSTILE}",
        ).with_fingerprint(),
        Finding(
            Severity.WARN,
            f"second {HOSTILE}",
            file="app.py",
            line=2,
            suggestion=f"prose {HOSTILE}",
            rule="RULEMARK2 |\n\n| cell",
        ).with_fingerprint(),
        Finding(
            Severity.INFO,
            "third",
            file="app.py",
            line=3,
            suggestion="~~~python\n```\n</details>\n~~~",
        ).with_fingerprint(),
    )
    return Review(
        None,
        summary=f"SUM {HOSTILE}",
        findings=findings,
        reviewed_sha="a" * 40,
        unreviewed_files=(f"UNREV{HOSTILE}",),
        run={"questions": [f"Q {HOSTILE}"]},
        reason=f"REASON {HOSTILE}",
    )


def _flatten(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    for token in tokens:
        out.append(token)
        out += _flatten(token.children or [])
    return out


def assert_inert(body: str, *, details: int) -> list[Token]:
    """The structural checks; ``details``: how many ``<details>`` blocks are ours."""
    env: dict[str, Any] = {}
    tokens = _flatten(MarkdownIt("commonmark").enable("table").parse(body, env))
    assert not env.get("references"), env["references"]  # no link definition
    html = [t for t in tokens if t.type in ("html_block", "html_inline")]
    for token in html:
        for marker in AGENT_HTML:
            assert marker not in token.content, token.content
    opened = sum(t.content.count("<details") for t in html)
    closed = sum(t.content.count("</details>") for t in html)
    assert opened == closed == details, (opened, closed)  # no fence swallowed one of ours
    assert not [t for t in tokens if t.type == "image"]
    for token in tokens:
        if token.type == "text":
            assert "@octocat" not in token.content, token.content
    inlines = [t for t in tokens if t.type == "inline"]
    for index, token in enumerate(tokens):
        if token.type in ("heading_open", "list_item_open") and index + 1 < len(tokens):
            following = next(t for t in tokens[index + 1 :] if t.type == "inline")
            for marker in ("HEADMARK", "ITEMMARK", "ORDERMARK"):
                assert not following.content.startswith(marker), following.content
    for marker in ("RULEMARK", "FILEMARK"):  # only ever inside inline code
        for token in tokens:
            if token.type == "text" and token.content:
                assert marker not in token.content, (marker, token.content)
    assert inlines
    return tokens


REVIEW = hostile_review()
GATE = gate(REVIEW, threshold=Severity.ERROR, head_sha="a" * 40)


def test_the_markdown_format_is_inert() -> None:
    tokens = assert_inert(render(REVIEW, GATE, "markdown"), details=3)
    fences = [t for t in tokens if t.type == "fence"]
    # The suggestions are code (fenced again, longer than any fence inside), intact; one that
    # is more than one block is all code.
    assert any(t.content.startswith("```suggestion\nx = 1\n```\n</details>") for t in fences)
    assert any(t.info == "python" and t.content == "```\n</details>\n" for t in fences)


def test_the_summary_comment_and_job_summary_are_inert() -> None:
    body = comment.summary_body(
        REVIEW,
        GATE,
        rows=[comment.RunRow(flow="review", agent=f"AGENT {HOSTILE}", outcome="revise")],
        questions=[f"Q {HOSTILE}"],
        notices=[f"NOTE {HOSTILE}"],
        inline_note="**Inline:** 1 posted inline now.",
        footer="gitflow-agents · head aaaaaaaaaaaa",
    )
    tokens = assert_inert(body, details=3)
    assert tokens[0].type == "html_block" and tokens[0].content.startswith(comment.MARKER)
    cells = [t for t in tokens if t.type == "td_open"]
    assert len(cells) == 9  # the run-history row kept its nine cells
    assert_inert(body.removeprefix(comment.MARKER), details=3)  # the job summary's text


def test_every_inline_comment_is_inert_and_keeps_its_marker() -> None:
    for finding in REVIEW.findings:
        body = review.comment_body(finding)
        tokens = assert_inert(body, details=0)
        assert tokens[-1].type == "html_block", body  # the marker, not inside a fence
        assert review.fingerprints_in([body]) == {finding.fingerprint}
    clean = Finding(Severity.WARN, "m", "a.py", 1, suggestion="```suggestion\nx = '```'\n```")
    body = review.comment_body(clean.with_fingerprint())
    assert "\n\n````suggestion\nx = '```'\n````\n\n" in body  # still a one-click suggestion


def test_the_check_run_summary_is_inert() -> None:
    assert_inert(checks.output(REVIEW, GATE)["summary"], details=0)


def test_the_fix_reply_is_inert() -> None:
    outcome = FixOutcome(
        "pushed", f"MESSAGE {HOSTILE}", REVIEW, GATE, (), before=REVIEW, fix_sha="b" * 40
    )
    assert_inert(fix_reply(outcome, "maintainer", None), details=0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("</details><img src=x> @octocat", "&lt;/details&gt;&lt;img src=x&gt; @\u200boctocat"),
        ("```\nx", "\\`\\`\\`\nx"),
        ("a `b` c\\", "a \\`b\\` c\\\\"),
        ("  # not a heading", "\\# not a heading"),
        ("- a\n+ b\n* c\n1. d\n2) e", "\\- a\n\\+ b\n\\* c\n1\\. d\n2\\) e"),
        ("a\r\n===\rb", "a\n\\===\nb"),
        ("![x](http://t/p.png)", "!\\[x](http://t/p.png)"),
        ("[r]: http://x", "\\[r]: http://x"),
        ("plain text, kept", "plain text, kept"),
    ],
)
def test_escape(text: str, expected: str) -> None:
    assert escape(text) == expected


def test_one_line_code_and_fence() -> None:
    assert one_line("a\n\n| b\r\nc") == "a  | b c"
    assert code("r\n\nx`y") == "``r  x`y``"
    assert fence("a\n````\nb", "python extra") == ["`````python", "a", "````", "b", "`````"]
    assert fence("", "suggestion") == ["```suggestion", "```"]  # deletes the lines
    assert fence("x", "<img src=x>") == ["```", "x", "```"]


def test_suggestion_block() -> None:
    assert suggestion_block("remove it") is None
    assert suggestion_block("```suggestion\nx = 1\n```") == ("suggestion", "x = 1")
    assert suggestion_block("~~~\n```\n~~~\n") == ("", "```")
    # Not exactly one closed block: all of it is content, fenced again when shown.
    assert suggestion_block("```\na\n```\n</details>") == ("", "```\na\n```\n</details>")


def test_a_legitimate_review_renders_as_before() -> None:
    plain = Review(
        Overall.REVISE,
        summary="Two problems.",
        findings=(Finding(Severity.WARN, "use a constant", "a.py", 4, suggestion="X = 1"),),
    )
    text = render(plain, GateResult(False, 1), "markdown")
    assert "- `a.py:4` use a constant\n  Suggestion: X = 1\n" in text
    assert "> Two problems.\n" in text
    assert re.search(r"^<details>$", text, re.M)
