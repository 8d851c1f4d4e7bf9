"""The structured XML reply: parsing, tolerance, the heuristic fallback, display."""

from __future__ import annotations

import pytest

from gitflow_agents.findings.reply import (
    RESPONSE_PROTOCOL,
    TAGS,
    AgentReply,
    ReplyStatus,
    format_reply,
    parse_reply,
    parse_status,
)

SEED_REPLY = """\
<SUMMARY>
Created a Python word counter script that reads text files and counts words with error handling.
</SUMMARY>

<ACTIONS>
- Created file: word_counter.py
- Implemented word counting function with file reading
- Added error handling for missing files
- Included command-line interface
</ACTIONS>

<FILES_CREATED>
/Users/kooshapari/agents/claude/word_counter.py
</FILES_CREATED>

<FILES_MODIFIED>
</FILES_MODIFIED>

<QUESTIONS>
</QUESTIONS>

<STATUS>
completed
</STATUS>
"""


def test_seed_example_parses() -> None:
    reply = parse_reply(SEED_REPLY)
    assert reply.structured
    assert reply.status is ReplyStatus.COMPLETED
    assert reply.summary.startswith("Created a Python word counter script")
    assert reply.actions == (
        "Created file: word_counter.py",
        "Implemented word counting function with file reading",
        "Added error handling for missing files",
        "Included command-line interface",
    )
    assert reply.files_created == ("/Users/kooshapari/agents/claude/word_counter.py",)
    assert reply.files_modified == ()
    assert reply.questions == ()
    assert reply.warnings == ()


def test_seed_example_display() -> None:
    assert format_reply(parse_reply(SEED_REPLY)) == (
        "✅ Status: completed\n"
        "Summary: Created a Python word counter script that reads text files and counts words"
        " with error handling.\n"
        "\n"
        "Actions Taken:\n"
        "  • Created file: word_counter.py\n"
        "  • Implemented word counting function with file reading\n"
        "  • Added error handling for missing files\n"
        "  • Included command-line interface\n"
        "\n"
        "Files Created:\n"
        "  📄 /Users/kooshapari/agents/claude/word_counter.py\n"
    )


def test_display_without_icons() -> None:
    reply = AgentReply(
        summary="s",
        files_modified=("a.py",),
        questions=("why?",),
        status=ReplyStatus.NEEDS_INPUT,
        structured=True,
    )
    assert format_reply(reply, icons=False) == (
        "Status: needs_input\nSummary: s\n\nFiles Modified:\n  ~ a.py\n\nQuestions:\n  ? why?\n"
    )


def test_tags_wrapped_in_prose_and_a_code_fence() -> None:
    text = "I did the work. Here is my report:\n\n```xml\n" + SEED_REPLY + "```\n\nThanks!"
    reply = parse_reply(text)
    assert reply.status is ReplyStatus.COMPLETED
    assert reply.files_created == ("/Users/kooshapari/agents/claude/word_counter.py",)


def test_echoed_template_then_real_answer_last_wins() -> None:
    reply = parse_reply(RESPONSE_PROTOCOL + "\n\n<SUMMARY>Real.</SUMMARY>\n<STATUS>failed</STATUS>")
    assert reply.summary == "Real."
    assert reply.status is ReplyStatus.FAILED


@pytest.mark.parametrize(
    "text",
    [
        "<SUMMARY>no close <STATUS>completed</STATUS>",
        "<SUMMARY>a < b && c > d</SUMMARY><STATUS>completed",
        "</SUMMARY></STATUS><<<>>>",
        "<summary>lower case</summary>\n<status> Completed </status>",
        "<SUMMARY><SUMMARY>nested</SUMMARY></SUMMARY><STATUS>done</STATUS>",
        "\x00<ACTIONS>\n- \x01\n",
    ],
)
def test_malformed_xml_never_raises(text: str) -> None:
    reply = parse_reply(text)
    assert isinstance(reply, AgentReply)
    format_reply(reply)


def test_unclosed_tag_is_a_warning_and_content_stops_at_next_tag() -> None:
    reply = parse_reply("<SUMMARY>half a sentence\n<STATUS>completed</STATUS>")
    assert reply.summary == "half a sentence"
    assert reply.status is ReplyStatus.COMPLETED
    assert reply.warnings == ("<SUMMARY> is not closed",)


def test_unknown_and_missing_status() -> None:
    assert parse_reply("<STATUS>maybe</STATUS>").status is None
    assert "unknown <STATUS> 'maybe'" in parse_reply("<STATUS>maybe</STATUS>").warnings[0]
    assert parse_reply("<SUMMARY>x</SUMMARY>").warnings == ("no <STATUS> tag",)


@pytest.mark.parametrize(
    ("word", "status"),
    [
        ("completed", ReplyStatus.COMPLETED),
        ("**Completed**", ReplyStatus.COMPLETED),
        ("needs_input", ReplyStatus.NEEDS_INPUT),
        ("needs input", ReplyStatus.NEEDS_INPUT),
        ("FAILED", ReplyStatus.FAILED),
        ("completed | needs_input | failed", None),  # the template, copied verbatim
    ],
)
def test_status_spellings(word: str, status: ReplyStatus | None) -> None:
    assert parse_status(word) is status


def test_list_items_drop_bullets_and_placeholders() -> None:
    reply = parse_reply("<QUESTIONS>\n1. First?\n* Second?\nNone\nN/A\n</QUESTIONS>")
    assert reply.questions == ("First?", "Second?")


def test_fallback_when_no_tags() -> None:
    text = (
        "I'll help you create a word counter script.\n\n"
        "```python\ndef count_words(filename):\n    return 0  # Created file: fake.py\n```\n\n"
        "I've saved this as word_counter.py in your workspace. I also updated config.yaml.\n"
    )
    reply = parse_reply(text)
    assert not reply.structured
    assert reply.summary == "I'll help you create a word counter script."
    assert reply.files_created == ("word_counter.py",)  # not fake.py: that was inside code
    assert reply.files_modified == ("config.yaml",)
    assert reply.status is ReplyStatus.COMPLETED
    assert format_reply(reply).endswith("(unstructured reply: fields guessed from the text)\n")


def test_fallback_status_guesses() -> None:
    assert parse_reply("Done. Should I add tests for Y?").status is ReplyStatus.NEEDS_INPUT
    assert parse_reply("I tried.\n\nThe build failed and I could not fix it.").status is (
        ReplyStatus.FAILED
    )
    assert parse_reply("").status is ReplyStatus.FAILED


def test_protocol_text_names_every_tag() -> None:
    for tag in TAGS:
        assert f"<{tag}>" in RESPONSE_PROTOCOL and f"</{tag}>" in RESPONSE_PROTOCOL
    assert "completed | needs_input | failed" in RESPONSE_PROTOCOL
