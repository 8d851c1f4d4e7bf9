"""Verdict grammar, findings parsing, fingerprints, the gate and merging reviews."""

from __future__ import annotations

import json

import pytest

from gitflow_agents.findings import (
    FileLines,
    Finding,
    Overall,
    Review,
    Severity,
    fill_fingerprints,
    finding_from_dict,
    fingerprint,
    gate,
    merge_reviews,
    parse_review,
    parse_verdict,
    review_from_dict,
    suggestion_replacement,
)

# --- verdict grammar ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "verdict", "line"),
    [
        ("REVIEW_RESULT: APPROVED", Overall.APPROVE, 1),
        ("All good.\n\nREVIEW_RESULT: APPROVED\n", Overall.APPROVE, 3),
        ("REVIEW_RESULT: REVISE", Overall.REVISE, 1),
        ("REVIEW_RESULT: CHANGES_REQUESTED", Overall.REVISE, 1),
        ("   REVIEW_RESULT:   APPROVED   ", Overall.APPROVE, 1),  # indented, extra spaces
        ("\tREVIEW_RESULT:APPROVED", Overall.APPROVE, 1),
        ("REVIEW_RESULT: APPROVED\r\n", Overall.APPROVE, 1),  # CRLF
        # several markers: the last one wins, in both directions
        ("REVIEW_RESULT: REVISE\nfixed now\nREVIEW_RESULT: APPROVED", Overall.APPROVE, 3),
        ("REVIEW_RESULT: APPROVED\nbut wait\nREVIEW_RESULT: REVISE", Overall.REVISE, 3),
    ],
)
def test_verdict_marker_is_found(text: str, verdict: Overall, line: int) -> None:
    result = parse_verdict(text)
    assert (result.verdict, result.line) == (verdict, line)


def test_bold_marker_is_not_approval_and_says_why() -> None:
    result = parse_verdict("Summary\n\n**REVIEW_RESULT: APPROVED**\n")
    assert result.verdict is None
    assert result.line == 3
    assert result.reason == (
        "found `**REVIEW_RESULT: APPROVED**` on line 3: the marker must stand alone on its line"
    )


@pytest.mark.parametrize(
    "line",
    [
        "review_result: approved",  # lower case
        "REVIEW_RESULT: APPROVED with minor nits",  # trailing text
        "REVIEW_RESULT: APPROVED.",
        "REVIEW_RESULT: CHANGES_REQUIRED",  # the seed system's word, not ours
        "- REVIEW_RESULT: APPROVED",
        "> REVIEW_RESULT: APPROVED",
        "## REVIEW_RESULT: APPROVED",
        "`REVIEW_RESULT: APPROVED`",
    ],
)
def test_near_misses_are_not_approval(line: str) -> None:
    result = parse_verdict(f"text\n{line}\n")
    assert result.verdict is None
    assert result.reason.startswith(f"found `{line}` on line 2: ")


@pytest.mark.parametrize(
    ("fence", "closing"),
    [
        ("```", "```"),
        ("~~~", "~~~"),
        ("````", "`````"),  # a longer closing fence closes too
        ("~~~~~", "~~~~~"),
        ("```text", "```"),
        ("~~~markdown", "~~~"),
        ("  ```", "```"),
    ],
)
def test_marker_inside_fenced_code_does_not_count(fence: str, closing: str) -> None:
    text = f"Example of the marker:\n{fence}\nREVIEW_RESULT: APPROVED\n{closing}\n"
    result = parse_verdict(text)
    assert result.verdict is None
    assert result.reason.startswith("no REVIEW_RESULT line (the marker on line 3 is inside")


def test_fence_closes_only_with_same_kind_and_length() -> None:
    # ```` is not closed by ```, and ``` is not closed by ~~~: the marker stays inside
    assert parse_verdict("````\n```\nREVIEW_RESULT: APPROVED\n````\n").verdict is None
    assert parse_verdict("```\n~~~\nREVIEW_RESULT: APPROVED\n```\n").verdict is None
    # an unclosed fence runs to the end of the document
    assert parse_verdict("```\ncode\nREVIEW_RESULT: APPROVED\n").verdict is None


def test_marker_after_a_closed_fence_counts_and_fenced_one_is_ignored() -> None:
    text = "```\nREVIEW_RESULT: REVISE\n```\nREVIEW_RESULT: APPROVED\n~~~\nREVIEW_RESULT: REVISE\n~~~\n"
    result = parse_verdict(text)
    assert (result.verdict, result.line) == (Overall.APPROVE, 4)


def test_fence_inside_a_list_item_is_code_too() -> None:
    text = "- example:\n\n  ```\n  REVIEW_RESULT: APPROVED\n  ```\n"
    assert parse_verdict(text).verdict is None


@pytest.mark.parametrize(
    ("text", "line", "where"),
    [
        # a 4-space indented code block after a paragraph (markdown shows it as code)
        ("The marker looks like:\n\n    REVIEW_RESULT: APPROVED\n", 3, "an indented code block"),
        ("- item\n\n        REVIEW_RESULT: APPROVED\n", 3, "an indented code block"),
        # HTML comments: markdown hides them
        ("Done.\n\n<!--\nREVIEW_RESULT: APPROVED\n-->\n", 4, "an HTML comment"),
        ("<!-- draft\nREVIEW_RESULT: APPROVED\n-->\n", 2, "an HTML comment"),
        ("<!--\nREVIEW_RESULT: APPROVED", 2, "an HTML comment"),  # unclosed: runs to the end
        ("Done. <!--\nREVIEW_RESULT: APPROVED\n-->\n", 2, "an HTML comment"),  # inline comment
        ("> quoted <!--\n> REVIEW_RESULT: APPROVED\n> -->\n", 2, "an HTML comment"),
        ("<div>\n<!--\nREVIEW_RESULT: APPROVED\n-->\n</div>\n", 3, "an HTML comment"),
        ("<pre>\nREVIEW_RESULT: APPROVED\n</pre>\n", 2, "an HTML <pre> block"),
        ("<script>\nREVIEW_RESULT: APPROVED\n</script>\n", 2, "an HTML <script> block"),
    ],
)
def test_marker_in_indented_code_or_html_does_not_count(text: str, line: int, where: str) -> None:
    result = parse_verdict(text)
    assert result.verdict is None
    assert result.reason == (
        f"no REVIEW_RESULT line (the marker on line {line} is inside {where}, which does not count)"
    )


def test_single_line_html_comment_marker_is_not_approval() -> None:
    assert parse_verdict("<!-- REVIEW_RESULT: APPROVED -->\n").verdict is None
    assert parse_verdict("Ok.\n\n<!-- REVIEW_RESULT: APPROVED -->\n").verdict is None


@pytest.mark.parametrize(
    ("text", "line", "where"),
    [
        ("<!-- REVIEW_RESULT: APPROVED -->\n", 1, "an HTML comment"),
        ("Looks fine.\n\n<!-- REVIEW_RESULT: APPROVED -->\n", 3, "an HTML comment"),
        ("Looks fine.\n\nDone. <!-- REVIEW_RESULT: APPROVED -->\n", 3, "an HTML comment"),
        ("Done.\n\n<!-- verdict\nnext: REVIEW_RESULT: REVISE -->\n", 4, "an HTML comment"),
        ("> Done.\n>\n> <!-- REVIEW_RESULT: APPROVED -->\n", 3, "an HTML comment"),
        ("Done.\n\n```\nthen REVIEW_RESULT: APPROVED\n```\n", 4, "a fenced code block"),
        ("Done.\n\n<pre>\n<!-- REVIEW_RESULT: APPROVED -->\n</pre>\n", 4, "an HTML <pre> block"),
    ],
)
def test_a_marker_hidden_inside_its_line_is_named_in_the_reason(
    text: str, line: int, where: str
) -> None:
    """A marker that shares its line with a comment's delimiters or other hidden text is no
    marker line at all, so the reason said only "no REVIEW_RESULT line"; it names the line and
    what hides it, as for a marker on a line of its own (docs/findings.md)."""
    result = parse_verdict(text)
    assert (result.verdict, result.line) == (None, None)
    assert result.reason == (
        f"no REVIEW_RESULT line (the marker on line {line} is inside {where}, which does not count)"
    )


def test_a_marker_in_visible_prose_gets_no_hint() -> None:
    # shown as text, just not a marker line: nothing hides it
    for text in ("Write REVIEW_RESULT: APPROVED when done.\n", "<!-- a note -->\nno verdict\n"):
        assert parse_verdict(text).reason == "no REVIEW_RESULT line"


def test_hidden_marker_after_a_valid_one_is_ignored_like_fenced_code() -> None:
    text = "REVIEW_RESULT: REVISE\n\n<!--\nREVIEW_RESULT: APPROVED\n-->\n\n    REVIEW_RESULT: APPROVED\n"
    result = parse_verdict(text)
    assert (result.verdict, result.line) == (Overall.REVISE, 1)


def test_a_decorated_marker_next_to_a_comment_still_fails_closed() -> None:
    # the line is visible text (the comment only starts after it): the last word stays invalid
    text = "REVIEW_RESULT: APPROVED\n\nREVIEW_RESULT: REVISE <!--\nnote\n-->\n"
    result = parse_verdict(text)
    assert (result.verdict, result.line) == (None, 3)


def test_marker_as_visible_text_of_an_html_block_counts() -> None:
    # <div>/<details> blocks show their text; an agent closing </details> right above the
    # marker must not lose its verdict
    assert parse_verdict("<div>\nREVIEW_RESULT: APPROVED\n</div>\n").verdict is Overall.APPROVE
    text = "<details>\n<summary>notes</summary>\nfine\n</details>\nREVIEW_RESULT: APPROVED\n"
    assert parse_verdict(text).line == 5
    # the end of a comment, then the marker on the next line: visible
    assert parse_verdict("<!-- hidden -->\nREVIEW_RESULT: REVISE\n").verdict is Overall.REVISE


def test_a_report_that_is_only_an_indented_marker_is_the_marker() -> None:
    # nothing around it for it to be an example in (the tab-indented case above, with spaces)
    assert parse_verdict("    REVIEW_RESULT: APPROVED\n").verdict is Overall.APPROVE


def test_lazy_continuation_is_not_code() -> None:
    # four spaces right after a paragraph line continue the paragraph: shown as text, counts
    assert parse_verdict("Summary\n    REVIEW_RESULT: APPROVED\n").verdict is Overall.APPROVE


def test_no_marker() -> None:
    result = parse_verdict("Looks good to me, approved!\n")
    assert result == type(result)(None, None, "no REVIEW_RESULT line")
    assert parse_verdict("").reason == "no REVIEW_RESULT line"


def test_prose_mentioning_the_marker_is_ignored() -> None:
    text = "I will write REVIEW_RESULT: APPROVED below.\nREVIEW_RESULT: APPROVED\n"
    assert parse_verdict(text).verdict is Overall.APPROVE


def test_decorated_marker_after_a_valid_one_withdraws_it() -> None:
    # fail closed: the reviewer's last word is a marker we cannot accept
    result = parse_verdict("REVIEW_RESULT: APPROVED\n\n**REVIEW_RESULT: REVISE**\n")
    assert result.verdict is None
    assert result.line == 3


# --- findings sources -----------------------------------------------------------------------

JSON_REPORT = """\
# Review

Two problems.

```json
{
  "overall": "revise",
  "summary": "a key and a debugger",
  "findings": [
    {"severity": "error", "file": "app/keys.py", "line": 3, "message": "AWS key", "rule": "secret-aws"},
    {"severity": "warning", "file": "app/main.py", "line": 10, "end_line": 12,
     "message": "breakpoint() left in", "suggestion": "remove it"},
    {"severity": "info", "message": "consider more tests"}
  ],
  "unreviewed_files": ["big.bin"]
}
```

REVIEW_RESULT: REVISE
"""


def test_json_block_findings() -> None:
    review = parse_review(JSON_REPORT, reviewed_sha="a" * 40, base_sha="b" * 40)
    assert review.overall is Overall.REVISE
    assert review.summary == "a key and a debugger"
    assert [(f.severity, f.file, f.line, f.end_line, f.rule) for f in review.findings] == [
        (Severity.ERROR, "app/keys.py", 3, None, "secret-aws"),
        (Severity.WARN, "app/main.py", 10, 12, None),
        (Severity.INFO, None, None, None, None),
    ]
    assert review.findings[1].suggestion == "remove it"
    assert review.unreviewed_files == ("big.bin",)
    assert (review.reviewed_sha, review.base_sha) == ("a" * 40, "b" * 40)
    assert all(len(f.fingerprint) == 16 for f in review.findings)


def test_last_valid_json_block_wins_and_unrelated_json_is_ignored() -> None:
    text = (
        '```json\n{"overall": "revise", "findings": [{"severity": "error", "message": "old"}]}\n```\n'
        '```json\n{"overall": "approve", "findings": []}\n```\n'
        '```json\n{"name": "an example package.json"}\n```\n'
        "REVIEW_RESULT: APPROVED\n"
    )
    review = parse_review(text)
    assert review.overall is Overall.APPROVE
    assert review.findings == ()


def test_invalid_json_block_is_not_approved_and_names_the_line() -> None:
    text = (
        'Intro\n```json\n{"overall": "approve",\n "findings": [,]}\n```\nREVIEW_RESULT: APPROVED\n'
    )
    review = parse_review(text, source="flows/x/report.complete.md")
    assert review.overall is None
    assert review.reason.startswith(
        "flows/x/report.complete.md:4: findings block is not valid JSON"
    )


def test_absurdly_nested_json_block_is_not_approved_and_does_not_raise() -> None:
    review = parse_review("```json\n" + "[" * 100_000 + "\n```\nREVIEW_RESULT: APPROVED\n")
    assert review.overall is None
    assert review.reason.startswith("report.md:1: findings block")


def test_json_block_with_bad_field_is_not_approved() -> None:
    text = '```json\n{"findings": [{"severity": "urgent", "message": "x"}]}\n```\nREVIEW_RESULT: APPROVED\n'
    review = parse_review(text)
    assert review.overall is None
    assert "findings[0].severity: unknown severity 'urgent'" in review.reason


def test_contradiction_between_marker_and_json_is_not_approved() -> None:
    text = JSON_REPORT.replace("REVIEW_RESULT: REVISE", "REVIEW_RESULT: APPROVED")
    review = parse_review(text)
    assert review.overall is None
    assert review.reason == "report says APPROVED but its findings block says revise"
    assert len(review.findings) == 3  # the findings are still reported


def test_contradiction_the_other_way_round() -> None:
    text = '```json\n{"overall": "approve", "findings": []}\n```\nREVIEW_RESULT: REVISE\n'
    review = parse_review(text)
    assert review.overall is None
    assert review.reason == "report says REVISE but its findings block says approve"


def test_json_block_about_another_commit_is_not_approved() -> None:
    text = '```json\n{"overall": "approve", "findings": [], "reviewed_sha": "1111111"}\n```\nREVIEW_RESULT: APPROVED\n'
    assert parse_review(text, reviewed_sha="1111111abc").overall is Overall.APPROVE
    review = parse_review(text, reviewed_sha="2222222abc")
    assert review.overall is None
    assert "1111111" in review.reason


def test_bullet_line_findings() -> None:
    text = (
        "Findings:\n"
        "- [error] src/app.py:12: hard-coded password\n"
        "* [WARN] `src/util.py:3-5`: too complex\n"
        "- [critical] lib/x.js:7: eval of user input\n"
        "- [note] lib/y.js:8:15: column numbers are accepted and dropped\n"
        "- [info] add a changelog entry\n"
        "- [x] checked the tests (a checklist, not a finding)\n"
        "- [ ] open item\n"
        "```\n- [error] inside.py:1: in a code block\n```\n"
        "REVIEW_RESULT: REVISE\n"
    )
    review = parse_review(text)
    assert [(f.severity.value, f.file, f.line, f.end_line, f.message) for f in review.findings] == [
        ("error", "src/app.py", 12, None, "hard-coded password"),
        ("warn", "src/util.py", 3, 5, "too complex"),
        ("error", "lib/x.js", 7, None, "eval of user input"),
        ("info", "lib/y.js", 8, None, "column numbers are accepted and dropped"),
        ("info", None, None, None, "add a changelog entry"),
    ]


@pytest.mark.parametrize(
    ("written", "path"),
    [
        ("src/a.py", "src/a.py"),
        ("./src//a.py", "src/a.py"),
        ("src/x/../a.py", "src/a.py"),
        ("/work/repo/src/a.py", "src/a.py"),  # absolute inside the work tree: Claude Code's
        ("/work/repo/./src/a.py", "src/a.py"),
    ],
)
def test_a_findings_file_is_its_path_from_the_top_of_the_repository(
    written: str, path: str
) -> None:
    block = {"findings": [{"severity": "error", "file": written, "line": 2, "message": "m"}]}
    text = f"```json\n{json.dumps(block)}\n```\nREVIEW_RESULT: REVISE\n"
    review = parse_review(text, root="/work/repo")
    assert review.overall is Overall.REVISE, review.reason
    assert [f.file for f in review.findings] == [path]
    bullets = parse_review(f"- [error] {written}:2: m\nREVIEW_RESULT: REVISE\n", root="/work/repo")
    assert [f.file for f in bullets.findings] == [path]
    relative = parse_review(text.replace(written, path), root="/work/repo")
    assert review.findings[0].fingerprint == relative.findings[0].fingerprint


@pytest.mark.parametrize(
    ("written", "why"),
    [
        ("/etc/passwd", "'/etc/passwd' is outside the repository /work/repo; give the file's"),
        ("/work/repo-other/a.py", "is outside the repository /work/repo"),
        ("/work/repo/../x.py", "is outside the repository /work/repo"),
        ("../shared/x.py", "'../shared/x.py' is outside the repository; give the file's path"),
        ("src/../../x.py", "is outside the repository"),
        ("..", "is outside the repository"),
        ("src/..", "'src/..' names no file"),
        ("C:\\x\\a.py", "is a Windows path, not one in the repository"),
        ("C:/x/a.py", "is a Windows path"),
        ("\\\\host\\share\\a.py", "is a Windows path"),
        ("file:///work/repo/a.py", "is a URI, not a path"),
        ("https://example.com/a.py", "is a URI, not a path"),
    ],
)
def test_a_findings_file_outside_the_repository_is_a_bad_field(written: str, why: str) -> None:
    block = {
        "overall": "approve",
        "findings": [
            {"severity": "info", "file": "ok.py", "message": "fine"},
            {"severity": "info", "file": written, "message": "m"},
        ],
    }
    text = f"Intro\n```json\n{json.dumps(block)}\n```\nREVIEW_RESULT: APPROVED\n"
    review = parse_review(text, root="/work/repo")
    assert review.overall is None  # as for any bad field: no verdict, never a crash
    assert review.reason.startswith("report.md:2: findings block: findings[1].file: ")
    assert why in review.reason


def test_unreviewed_files_are_paths_from_the_top_or_a_bad_field() -> None:
    block = {"overall": "approve", "unreviewed_files": ["/work/repo/big.bin", "./big.bin", "b/c"]}
    text = f"```json\n{json.dumps(block)}\n```\nREVIEW_RESULT: APPROVED\n"
    review = parse_review(text, root="/work/repo")
    assert review.overall is Overall.APPROVE, review.reason
    assert review.unreviewed_files == ("big.bin", "b/c")
    for written in ("/etc/passwd", "../x.bin", "C:\\x.bin", "https://example.com/x"):
        block["unreviewed_files"] = ["ok.bin", written]
        text = f"```json\n{json.dumps(block)}\n```\nREVIEW_RESULT: APPROVED\n"
        review = parse_review(text, root="/work/repo")
        assert review.overall is None and review.unreviewed_files == ()
        assert review.reason.startswith("report.md:1: findings block: unreviewed_files[1]: ")


def test_without_the_work_tree_an_absolute_path_is_refused_and_a_bullet_names_its_line() -> None:
    block = {"findings": [{"severity": "error", "file": "/work/repo/a.py", "message": "m"}]}
    text = f"```json\n{json.dumps(block)}\n```\nREVIEW_RESULT: REVISE\n"
    review = parse_review(text)
    assert review.overall is None
    assert "findings[0].file: '/work/repo/a.py' is outside the repository; give" in review.reason
    bullets = (
        "Findings:\n- [warn] a.py:1: fine\n- [error] ../x.py:3: sibling\nREVIEW_RESULT: REVISE\n"
    )
    review = parse_review(bullets, root="/work/repo")
    assert review.overall is None
    assert review.reason.startswith("report.md:3: finding: '../x.py' is outside the repository")


def test_xml_reply_supplies_summary_and_findings() -> None:
    text = (
        "Here is my review.\n\n"
        "<SUMMARY>\nOne leaked token.\n</SUMMARY>\n"
        "<ACTIONS>\n- Analyzed: the diff\n</ACTIONS>\n"
        "<FINDINGS>\n- [error] config/settings.py:4: GitHub token committed\n</FINDINGS>\n"
        "<STATUS>\ncompleted\n</STATUS>\n\n"
        "REVIEW_RESULT: REVISE\n"
    )
    review = parse_review(text)
    assert review.overall is Overall.REVISE
    assert review.summary == "One leaked token."
    assert [(f.file, f.line) for f in review.findings] == [("config/settings.py", 4)]


def test_xml_status_failed_withdraws_an_approval() -> None:
    text = "<SUMMARY>Could not finish</SUMMARY>\n<STATUS>failed</STATUS>\nREVIEW_RESULT: APPROVED\n"
    review = parse_review(text)
    assert review.overall is None
    assert review.reason == "the reply's <STATUS> is failed, so its verdict does not stand"


def test_parse_review_without_marker() -> None:
    review = parse_review('```json\n{"overall": "approve", "findings": []}\n```\n')
    assert review.overall is None
    assert review.reason == "no REVIEW_RESULT line"


# --- fingerprints -----------------------------------------------------------------------------


def _lookup(lines: dict[tuple[str, int], str]):  # type: ignore[no-untyped-def]
    return lambda file, line: lines.get((file, line))


def test_fingerprint_survives_lines_moving() -> None:
    before = parse_review(
        "- [error] a.py:3: secret\nREVIEW_RESULT: REVISE",
        line_content=_lookup({("a.py", 3): "KEY = 'AKIA...'"}),
    )
    after = parse_review(
        "- [error] a.py:40: secret\nREVIEW_RESULT: REVISE",
        line_content=_lookup({("a.py", 40): "   KEY  =  'AKIA...'"}),  # moved and re-indented
    )
    assert before.findings[0].fingerprint == after.findings[0].fingerprint


def test_fingerprint_differs_when_content_or_file_or_rule_differs() -> None:
    base = fingerprint("a.py", "secret-aws", "m", "KEY = 1")
    assert fingerprint("a.py", "secret-aws", "m", "KEY = 2") != base
    assert fingerprint("b.py", "secret-aws", "m", "KEY = 1") != base
    assert fingerprint("a.py", "secret-gh", "m", "KEY = 1") != base
    # the second finding of a rule on a line has its own; the first keeps the line's
    assert fingerprint("a.py", "secret-aws", "m", "KEY = 1", occurrence=1) == base
    assert fingerprint("a.py", "secret-aws", "m", "KEY = 1", occurrence=2) != base
    # without a rule, the normalised message identifies the finding (numbers do not count)
    assert fingerprint(None, None, "Line 3 too long", "") == fingerprint(
        None, None, "line 97   too long", ""
    )


def test_findings_on_lines_that_read_the_same_get_fingerprints_of_their_own() -> None:
    """Two lines of a file reading ``breakpoint()``: numbered in line order, as code scanning's
    primaryLocationLineHash numbers identical lines. The first keeps the fingerprint it has
    alone (a baseline entry recorded for it still holds); a subset already numbered (some
    accepted) keeps its numbers; findings without a line are one per file and rule."""
    lines = {("a.py", 2): "    breakpoint()", ("a.py", 14): "  breakpoint()", ("a.py", 20): "x"}
    alone = fingerprint("a.py", "debugger", "m", "breakpoint()")

    def found(line: int | None, rule: str = "debugger", occurrence: int = 1) -> Finding:
        return Finding(Severity.WARN, "m", "a.py", line, rule=rule, occurrence=occurrence)

    # listed out of line order: the numbers follow the lines
    late, early, other = fill_fingerprints([found(14), found(2), found(20)], _lookup(lines))
    assert (early.occurrence, late.occurrence, other.occurrence) == (1, 2, 1)
    assert early.fingerprint == alone != late.fingerprint
    assert late.fingerprint == fingerprint("a.py", "debugger", "m", "breakpoint()", 2)
    # the second copy alone (the first not reviewed, or accepted): still the second
    assert [f.occurrence for f in fill_fingerprints([found(14)], _lookup(lines))] == [2]
    # what is left once the first is accepted is filled again: the second stays the second
    again = fill_fingerprints([late._replace(fingerprint="")], _lookup(lines))
    assert again == (late,)
    # two secrets on each of two lines that read the same: four fingerprints, the first
    # line's two as they are alone
    secrets = [found(n, "jwt", k) for n in (14, 2) for k in (1, 2)]
    filled = fill_fingerprints(secrets, _lookup(lines))
    assert [(f.line, f.occurrence) for f in filled] == [(14, 3), (14, 4), (2, 1), (2, 2)]
    assert len({f.fingerprint for f in filled}) == 4
    assert filled[3].fingerprint == fingerprint("a.py", "jwt", "m", "breakpoint()", 2)
    # no line: no numbering, one identity per file and rule
    unlined = fill_fingerprints([found(None), found(None)], _lookup(lines))
    assert [f.occurrence for f in unlined] == [1, 1]
    assert unlined[0].fingerprint == unlined[1].fingerprint
    # ... and so are they when only the second line's are reviewed, or filled again
    later = fill_fingerprints([found(14, "jwt", 2), found(14, "jwt", 1)], _lookup(lines))
    assert [f.occurrence for f in later] == [4, 3]
    assert fill_fingerprints([f._replace(fingerprint="") for f in later], _lookup(lines)) == later


def test_a_lines_copies_are_numbered_by_the_file_not_by_what_is_reviewed() -> None:
    """Code scanning's rule: a finding is numbered by the lines of the file (at the reviewed
    head) above it that read the same, whitespace normalised, whichever findings the review
    has; a second ``breakpoint()`` added below a baselined one is never the baselined first
    (the hole: a review of only the new line numbered it 1)."""
    text = ["def f():", "    breakpoint()", "", "def g():", "\tbreakpoint()  ", "breakpoint ()"]
    lines = {("a.py", n): line for n, line in enumerate(text, start=1)}
    alone = fingerprint("a.py", "debugger", "m", "breakpoint()")

    def found(line: int, file: str = "a.py") -> Finding:
        return Finding(Severity.WARN, "m", file, line, rule="debugger")

    # only the second copy is reviewed (whitespace around it differs): it is the second
    (second,) = fill_fingerprints([found(5)], _lookup(lines))
    assert second.occurrence == 2
    assert second.fingerprint == fingerprint("a.py", "debugger", "m", "breakpoint()", 2) != alone
    # both reviewed: 1 and 2, the same fingerprints as each alone; a line reading otherwise
    # ("breakpoint ()") is a first copy of its own
    both = fill_fingerprints([found(6), found(5), found(2)], _lookup(lines))
    assert [f.occurrence for f in both] == [1, 2, 1]
    assert both[1] == second and both[2].fingerprint == alone
    # the same review run again gives the same fingerprints, and so does filling again what
    # acceptance left
    assert fill_fingerprints([found(6), found(5), found(2)], _lookup(lines)) == both
    assert fill_fingerprints([second._replace(fingerprint="")], _lookup(lines)) == (second,)
    # the reviewer's lookup reads a file's lines at once: the same numbers
    whole = FileLines(lambda file: text if file == "a.py" else [])
    assert fill_fingerprints([found(6), found(5), found(2)], whole) == both
    # another file's copies do not count
    other = {("b.py", 1): "breakpoint()", **lines}
    assert fill_fingerprints([found(1, "b.py")], _lookup(other))[0].occurrence == 1
    # no line text (no lookup, a line past the end, a deleted file): numbered among the
    # findings given, as before
    assert [f.occurrence for f in fill_fingerprints([found(5)])] == [1]
    assert [f.occurrence for f in fill_fingerprints([found(40), found(30)], _lookup(lines))] == [
        2,
        1,
    ]


def test_json_fingerprints_are_recomputed_not_trusted() -> None:
    text = '```json\n{"overall": "revise", "findings": [{"severity": "warn", "message": "m", "fingerprint": "made-up"}]}\n```\nREVIEW_RESULT: REVISE\n'
    assert parse_review(text).findings[0].fingerprint == fingerprint(None, None, "m")


def test_a_findings_occurrence_round_trips_and_is_checked() -> None:
    second = Finding(Severity.WARN, "m", file="a.py", line=1, rule="r", occurrence=2)
    data = second.with_fingerprint("x").to_dict()
    assert data["occurrence"] == 2
    assert "occurrence" not in second._replace(occurrence=1).to_dict()
    assert finding_from_dict(data) == second.with_fingerprint("x")
    assert finding_from_dict(data)._replace(fingerprint="").with_fingerprint("x") == (
        second.with_fingerprint("x")
    )
    for bad in (0, "2", True):
        with pytest.raises(ValueError, match="occurrence"):
            finding_from_dict({**data, "occurrence": bad})


def test_review_round_trips_through_json() -> None:
    review = parse_review(JSON_REPORT, reviewed_sha="c" * 40)
    again = review_from_dict(json.loads(json.dumps(review.to_dict())))
    assert again == review


# --- gate -------------------------------------------------------------------------------------

SHA = "0123456789abcdef0123456789abcdef01234567"


def _review(overall: Overall | None, *severities: Severity, sha: str | None = SHA) -> Review:
    findings = tuple(
        Finding(severity=s, message=f"m{i}", file="f.py", line=i + 1).with_fingerprint()
        for i, s in enumerate(severities)
    )
    return Review(overall=overall, findings=findings, reviewed_sha=sha, reason="why")


def test_gate_approves_a_clean_approval() -> None:
    result = gate(_review(Overall.APPROVE), threshold=Severity.ERROR, head_sha=SHA)
    assert (result.approved, result.exit_code, result.reasons) == (True, 0, ())


@pytest.mark.parametrize(
    ("threshold", "severities", "approved"),
    [
        (Severity.ERROR, (Severity.WARN, Severity.INFO), True),
        (Severity.ERROR, (Severity.ERROR,), False),
        (Severity.WARN, (Severity.INFO,), True),
        (Severity.WARN, (Severity.WARN,), False),
        (Severity.INFO, (Severity.INFO,), False),
    ],
)
def test_gate_threshold(
    threshold: Severity, severities: tuple[Severity, ...], approved: bool
) -> None:
    result = gate(_review(Overall.APPROVE, *severities), threshold=threshold, head_sha=None)
    assert result.approved is approved
    assert result.exit_code == (0 if approved else 1)
    if not approved:
        assert f"at or above {threshold.value}" in result.reasons[0]


def test_gate_wrong_sha() -> None:
    result = gate(_review(Overall.APPROVE), threshold=Severity.ERROR, head_sha="f" * 40)
    assert not result.approved
    assert result.reasons == ("the review is about 0123456789ab, not HEAD ffffffffffff",)
    # an abbreviated id of the same commit is the same commit
    assert gate(_review(Overall.APPROVE), threshold=Severity.ERROR, head_sha=SHA[:10]).approved


def test_gate_review_without_sha_when_head_is_known() -> None:
    result = gate(_review(Overall.APPROVE, sha=None), threshold=Severity.ERROR, head_sha=SHA)
    assert not result.approved
    assert "does not say which commit" in result.reasons[0]


def test_gate_no_verdict_and_revise() -> None:
    none = gate(_review(None), threshold=Severity.ERROR, head_sha=None)
    assert (none.approved, none.exit_code, none.reasons) == (False, 1, ("why",))
    revise = gate(_review(Overall.REVISE), threshold=Severity.ERROR, head_sha=None)
    assert (revise.approved, revise.exit_code) == (False, 1)
    assert "REVISE" in revise.reasons[0]


def test_gate_a_review_that_did_not_complete_is_not_approved_whatever_it_says() -> None:
    """``outcome`` says the reviewer stopped before its verdict; an ``overall`` beside it (a
    findings file edited or forged for the posting job) is a contradiction: fail closed."""
    stopped = _review(Overall.APPROVE)._replace(outcome="budget")
    result = gate(stopped, threshold=Severity.ERROR, head_sha=SHA)
    assert (result.approved, result.exit_code) == (False, 1)
    assert result.reasons == (
        "the review did not complete (budget), so its verdict approve does not count",
    )


def test_merge_reviews() -> None:
    shared = Finding(Severity.WARN, "dup", "f.py", 1).with_fingerprint()
    a = Review(Overall.APPROVE, findings=(shared,), reviewed_sha=SHA, unreviewed_files=("x",))
    b = Review(Overall.APPROVE, findings=(shared,), reviewed_sha=SHA, unreviewed_files=("x", "y"))
    merged = merge_reviews([a, b])
    assert merged.overall is Overall.APPROVE
    assert merged.findings == (shared,)
    assert merged.unreviewed_files == ("x", "y")
    assert merged.reviewed_sha == SHA
    c = Review(Overall.REVISE, reviewed_sha=SHA)
    assert merge_reviews([a, c]).overall is Overall.REVISE
    assert merge_reviews([a, c]).reason == "reviewer 2 asks for changes"
    d = Review(None, reason="no REVIEW_RESULT line")
    assert merge_reviews([a, d]).overall is None
    assert merge_reviews([a, d]).reason == "reviewer 2: no REVIEW_RESULT line"
    other = Review(Overall.APPROVE, reviewed_sha="f" * 40)
    assert merge_reviews([a, other]).overall is None
    assert merge_reviews([]).overall is None


def test_suggestion_replacement_only_for_suggestion_blocks() -> None:
    prose = Finding(Severity.WARN, "m", "a.py", 3, suggestion="remove the call")
    block = Finding(Severity.WARN, "m", "a.py", 3, suggestion="```suggestion\nx = 1\n```")
    assert suggestion_replacement(prose) is None
    assert suggestion_replacement(block) == "x = 1\n"


def test_findings_json_is_read_in_either_spelling_and_written_camel_case() -> None:
    """Output keys are camelCase; a reviewer's block may use DESIGN.md's snake_case."""
    snake = {
        "overall": "revise",
        "findings": [
            {"severity": "warn", "message": "m", "file": "a.py", "line": 2, "end_line": 4}
        ],
        "reviewed_sha": "a" * 40,
        "base_sha": "b" * 40,
        "unreviewed_files": ["big.bin"],
    }
    review = review_from_dict(snake)
    assert (review.reviewed_sha, review.base_sha) == ("a" * 40, "b" * 40)
    assert review.findings[0].end_line == 4 and review.unreviewed_files == ("big.bin",)
    data = review.to_dict()
    assert {"reviewedSha", "baseSha", "unreviewedFiles"} <= set(data)
    assert not {"reviewed_sha", "base_sha", "unreviewed_files"} & set(data)
    assert data["findings"][0]["endLine"] == 4
    assert review_from_dict(data) == review


@pytest.mark.parametrize(
    "data",
    [
        {"overall": "approve", "reviewedSha": "a" * 40, "reviewed_sha": "b" * 40},
        {
            "findings": [
                {"severity": "info", "message": "m", "line": 1, "endLine": 2, "end_line": 3}
            ]
        },
    ],
)
def test_two_spellings_that_disagree_are_refused(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="disagree"):
        review_from_dict(data)


def test_findings_reads_reports_only_when_asked() -> None:
    """``findings`` imports the report reader (``report``, ``verdict``, ``reply``) when one of
    its names is first used (a builtin review needs none, issue 20): every name it lists is there,
    the very object its module defines, and an unknown name is an AttributeError."""
    import gitflow_agents.findings as findings
    from gitflow_agents.findings import report, verdict

    for name in findings.__all__:
        assert getattr(findings, name) is not None
    assert findings.parse_review is report.parse_review
    assert findings.FindingsError is report.FindingsError
    assert findings.parse_verdict is verdict.parse_verdict
    with pytest.raises(AttributeError):
        findings.no_such_name  # type: ignore[attr-defined]  # noqa: B018
