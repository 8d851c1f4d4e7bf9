"""Every renderer's exact output for a small review, escaping, and schema validity."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest

from gitflow_agents import __version__
from gitflow_agents.findings import (
    Accepted,
    Finding,
    GateResult,
    Overall,
    Review,
    Severity,
    gate,
    review_from_dict,
)
from gitflow_agents.render import FORMATS, render
from gitflow_agents.render.annotations import escape_data, escape_property
from gitflow_agents.render.markdown import code, escape
from tests.conftest import DATA
from tests.helpers.sarif import SCHEMAS, schema_errors
from tests.helpers.sarif import schema as sarif_schema

SHA = "0123456789abcdef0123456789abcdef01234567"
BASE = "fedcba9876543210fedcba9876543210fedcba98"

REVIEW = Review(
    overall=Overall.REVISE,
    summary="A leaked key and a leftover debugger.",
    findings=(
        Finding(
            Severity.WARN,
            "breakpoint() left in",
            "app/main.py",
            10,
            12,
            suggestion="remove it",
            fingerprint="2222222222222222",
        ),
        Finding(
            Severity.ERROR,
            "AWS access key",
            "app/keys.py",
            3,
            rule="secret-aws",
            fingerprint="1111111111111111",
        ),
        Finding(Severity.INFO, "consider more tests", fingerprint="3333333333333333"),
    ),
    reviewed_sha=SHA,
    base_sha=BASE,
    unreviewed_files=("assets/big.bin",),
    reason="REVIEW_RESULT: REVISE on line 9",
)
GATE = gate(REVIEW, threshold=Severity.ERROR, head_sha=SHA)
APPROVED = Review(
    overall=Overall.APPROVE, reviewed_sha=SHA, reason="REVIEW_RESULT: APPROVED on line 1"
)
APPROVED_GATE = gate(APPROVED, threshold=Severity.ERROR, head_sha=SHA)
VERDICT = (
    "REVISE: 1 error, 1 warn, 1 info; the reviewer asks for changes (REVIEW_RESULT: REVISE); "
    "1 finding at or above error: 1 error"
)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


# --- terminal -----------------------------------------------------------------------------------


def test_terminal_plain_exact() -> None:
    assert render(REVIEW, GATE, "terminal") == (
        "A leaked key and a leftover debugger.\n"
        "\n"
        "app/keys.py\n"
        "  3  error  AWS access key  [secret-aws]\n"
        "\n"
        "app/main.py\n"
        "  10-12  warn   breakpoint() left in\n"
        "                suggestion: remove it\n"
        "\n"
        "(no file)\n"
        "  -  info   consider more tests\n"
        "\n"
        "not reviewed: assets/big.bin\n"
        f"{VERDICT}\n"
    )
    assert "\x1b" not in render(REVIEW, GATE, "terminal", color=False)


def test_terminal_color_is_the_plain_text_plus_ansi() -> None:
    colored = render(REVIEW, GATE, "terminal", color=True)
    assert "\x1b[1;31merror" in colored  # errors bold red
    assert "\x1b[33mwarn" in colored  # warnings yellow
    assert ANSI.sub("", colored) == render(REVIEW, GATE, "terminal")


def test_terminal_color_ignores_no_color_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # the caller decides (it reads NO_COLOR / isatty); the renderer does what it is told
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "dumb")
    assert "\x1b[" in render(REVIEW, GATE, "terminal", color=True)


def test_terminal_approved() -> None:
    assert render(APPROVED, APPROVED_GATE, "terminal") == "APPROVED: no findings\n"
    colored = render(APPROVED, APPROVED_GATE, "terminal", color=True)
    assert colored.startswith("\x1b[1;32m")  # green


def test_terminal_multiline_message_is_indented() -> None:
    review = Review(Overall.REVISE, findings=(Finding(Severity.WARN, "one\ntwo", "a.py", 7),))
    assert render(review, None, "terminal").splitlines()[:3] == [
        "a.py",
        "  7  warn   one",
        "            two",
    ]


CONTROLS = Review(
    Overall.REVISE,
    summary="summary \x07bell",
    findings=(
        Finding(Severity.INFO, "new TODO: tidy \x1b[8m", "a\x1b[2J.py", 1, rule="todo"),
        Finding(Severity.ERROR, "key\tadded\rover", "b.py", 2, suggestion="x\x9b2J\x00y"),
    ),
    unreviewed_files=("big\x7f.bin",),
)
"""Text of the reviewed change and of the reviewer with terminal control characters in it: ESC
(``\x1b[8m`` conceals every later line, ``\x1b[2J`` clears the screen), BEL, CR, NUL, DEL and
C1's one-byte CSI (``\x9b``)."""
_RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_terminal_shows_the_control_characters_of_the_reviewed_text_escaped() -> None:
    gated = gate(CONTROLS, threshold=Severity.ERROR, head_sha=None)
    plain = render(CONTROLS, gated, "terminal")
    assert not _RAW_CONTROL.search(plain), repr(plain)
    assert "new TODO: tidy \\x1b[8m" in plain and "a\\x1b[2J.py" in plain
    assert "summary \\x07bell" in plain and "key\tadded" in plain  # a tab stays a tab
    assert "x\\x9b2J\\x00y" in plain and "big\\x7f.bin" in plain
    assert plain.splitlines()[-1].startswith("REVISE: ")
    colored = render(CONTROLS, gated, "terminal", color=True)
    assert ANSI.sub("", colored) == plain  # the only escape codes are the colours'


def test_markdown_and_annotations_show_control_characters_escaped() -> None:
    markdown = render(CONTROLS, None, "markdown")
    assert not _RAW_CONTROL.search(markdown), repr(markdown)
    assert "tidy \\\\x1b[8m" in markdown  # its backslash escaped: it shows as tidy \x1b[8m
    assert "`a\\x1b[2J.py:1`" in markdown
    annotations = render(CONTROLS, None, "annotations")
    assert not _RAW_CONTROL.search(annotations), repr(annotations)
    assert "file=a\\x1b[2J.py" in annotations and "tidy \\x1b[8m" in annotations
    assert "key\tadded%0Dover" in annotations  # the runner's own escaping, as before


def test_bidirectional_controls_are_shown_escaped_in_every_format() -> None:
    """A right-to-left override in a finding's text shows as ``\\u202e`` (its words in their own
    order) in the terminal, markdown and annotations, as the marks do."""
    finding = Finding(Severity.ERROR, "new TODO: admin\u202e nimda \u200f", "a\u2066.py", 1)
    review = Review(Overall.REVISE, findings=(finding,))
    for format_ in ("terminal", "markdown", "annotations"):
        text = render(review, None, format_)
        assert not re.search("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", text), format_
        assert "\\u202e" in text and "\\u200f" in text and "\\u2066" in text, (format_, text)


# --- json ---------------------------------------------------------------------------------------


def test_json_shape() -> None:
    data = json.loads(render(REVIEW, GATE, "json"))
    assert list(data) == [
        "overall",
        "summary",
        "findings",
        "reviewedSha",
        "baseSha",
        "unreviewedFiles",
        "run",
        "reason",
        "accepted",
        "excludedFiles",
        "gate",
    ]
    assert data["overall"] == "revise"
    assert data["findings"][0] == {
        "severity": "warn",
        "message": "breakpoint() left in",
        "file": "app/main.py",
        "line": 10,
        "endLine": 12,
        "suggestion": "remove it",
        "fingerprint": "2222222222222222",
    }
    assert data["findings"][2] == {
        "severity": "info",
        "message": "consider more tests",
        "fingerprint": "3333333333333333",
    }
    assert data["gate"] == {
        "approved": False,
        "exitCode": 1,
        "threshold": "error",
        "reasons": [
            "the reviewer asks for changes (REVIEW_RESULT: REVISE)",
            "1 finding at or above error: 1 error",
        ],
    }
    assert "gate" not in json.loads(render(REVIEW, None, "json"))


# --- sarif --------------------------------------------------------------------------------------


ACCEPTED = APPROVED._replace(
    accepted=(
        Accepted(
            Finding(Severity.ERROR, "key", file="k.py", line=2, rule="aws-access-key"),
            "marker",
            "gitleaks:allow on the line",
        ),
        Accepted(Finding(Severity.WARN, "big", file="b.bin", rule="large-file"), "config", "x"),
        Accepted(Finding(Severity.INFO, "no file", rule="todo"), "baseline", "in b.json"),
    ),
)


STOPPED_WHY = "agent r did not complete the review: budget: review spent $0.062 of $0.05"
STOPPED = Review(
    overall=None,
    reviewed_sha=SHA,
    base_sha=BASE,
    run={"inputTokens": 9000, "costUsd": 0.062},
    reason=STOPPED_WHY,
    outcome="budget",
)
STOPPED_GATE = GateResult(approved=False, exit_code=5, reasons=(STOPPED_WHY,))


@pytest.mark.parametrize(("schema", "validator"), SCHEMAS)
@pytest.mark.parametrize(
    "review",
    [REVIEW, APPROVED, ACCEPTED, STOPPED],
    ids=["revise", "approved", "accepted", "did-not-complete"],
)
def test_sarif_is_valid(schema: str, validator: Any, review: Review) -> None:
    sarif = json.loads(render(review, gate(review, threshold=Severity.WARN, head_sha=SHA), "sarif"))
    assert schema_errors(sarif, schema, validator) == []


def test_sarif_schema_catches_a_broken_log() -> None:
    # the validation above can fail: a wrong level is rejected by the schema
    sarif = json.loads(render(REVIEW, GATE, "sarif"))
    sarif["runs"][0]["results"][0]["level"] = "warn"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(sarif, sarif_schema("sarif-schema-2.1.0.json"))


def test_sarif_content() -> None:
    run = json.loads(render(REVIEW, GATE, "sarif"))["runs"][0]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("gitflow-agents", __version__)
    assert [r["id"] for r in driver["rules"]] == ["review", "secret-aws"]
    assert run["results"] == [
        {
            "ruleId": "review",
            "ruleIndex": 0,
            "level": "warning",
            "message": {"text": "breakpoint() left in\n\nSuggestion: remove it"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": "app/main.py"},
                        "region": {"startLine": 10, "endLine": 12},
                    }
                }
            ],
            "partialFingerprints": {"gitflowAgentsFingerprint/v1": "2222222222222222"},
        },
        {
            "ruleId": "secret-aws",
            "ruleIndex": 1,
            "level": "error",
            "message": {"text": "AWS access key"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": "app/keys.py"},
                        "region": {"startLine": 3},
                    }
                }
            ],
            "partialFingerprints": {"gitflowAgentsFingerprint/v1": "1111111111111111"},
        },
    ]
    # every result has a location (GitHub rejects the whole upload otherwise)
    assert all(r["locations"] for r in run["results"])
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert [n["message"]["text"] for n in notes] == [
        "consider more tests",
        "not reviewed: assets/big.bin",
    ]
    assert run["properties"]["approved"] is False
    assert run["properties"]["reviewedSha"] == SHA


AWKWARD_PATHS = (
    "src dir/my file.py",  # a space
    "a#b.py",  # '#' starts a fragment
    "pct%20x.py",  # a literal '%'
    "café/naïve.py",  # non-ASCII
    "q?x.py",  # '?' starts a query
    "a:b/c.py",  # ':' in the first segment reads as a scheme
    "plain/path.py",
)
"""Repository paths a URI reference cannot hold as they are (SARIF 2.1.0 §3.10.2: RFC 3986)."""

# RFC 3986 relative-ref's path: unreserved / pct-encoded / sub-delims / ":" / "@" and "/"
_URI_PATH = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-F]{2})*")


@pytest.mark.parametrize("path", AWKWARD_PATHS)
def test_sarif_uris_are_uri_references_that_read_back_as_the_repository_path(path: str) -> None:
    """Every ``artifactLocation.uri`` (a result's, an accepted result's, a file not reviewed)
    is a relative URI reference, percent-encoded as code scanning resolves it against the
    repository: a URI reader gets the path back, whole, with no query or fragment."""
    from urllib.parse import unquote, urlsplit

    found = Finding(Severity.ERROR, "broken", path, 1, rule="python-syntax", fingerprint="1" * 16)
    kept = Finding(Severity.WARN, "fine", path, 2, rule="todo", fingerprint="2" * 16)
    review = Review(
        Overall.REVISE,
        findings=(found,),
        accepted=(Accepted(kept, "marker", "agent-review: ignore on the line"),),
        unreviewed_files=(path,),
    )
    run = json.loads(render(review, None, "sarif"))["runs"][0]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    uris = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]
    ]
    uris += [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in notes]
    assert len(uris) == 3
    for uri in uris:
        assert _URI_PATH.fullmatch(uri), uri
        parts = urlsplit(uri)
        assert (parts.scheme, parts.netloc, parts.query, parts.fragment) == ("", "", "", "")
        assert unquote(parts.path) == path
    assert notes[0]["message"]["text"] == f"not reviewed: {path}"  # text stays as it is


def test_sarif_file_level_finding_sits_on_line_one() -> None:
    review = Review(Overall.REVISE, findings=(Finding(Severity.WARN, "too big", "big.bin"),))
    result = json.loads(render(review, None, "sarif"))["runs"][0]["results"][0]
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    assert result["properties"] == {"fileLevel": True}


# --- rdjsonl ------------------------------------------------------------------------------------


def test_rdjsonl_exact() -> None:
    assert render(REVIEW, GATE, "rdjsonl") == (
        '{"message": "breakpoint() left in\\n\\nSuggestion: remove it", "location": {"path":'
        ' "app/main.py", "range": {"start": {"line": 10}, "end": {"line": 12}}}, "severity":'
        ' "WARNING", "source": {"name": "gitflow-agents"}}\n'
        '{"message": "AWS access key", "location": {"path": "app/keys.py", "range": {"start":'
        ' {"line": 3}, "end": {"line": 3}}}, "severity": "ERROR", "source": {"name":'
        ' "gitflow-agents"}, "code": {"value": "secret-aws"}}\n'
        '{"message": "consider more tests", "severity": "INFO", "source": {"name":'
        ' "gitflow-agents"}}\n'
    )


def test_rdjsonl_lines_validate_against_the_diagnostic_schema() -> None:
    suggesting = Finding(
        Severity.WARN, "use a constant", "a.py", 4, 5, suggestion="```suggestion\nX = 1\n```"
    )
    review = Review(Overall.REVISE, findings=(*REVIEW.findings, suggesting))
    schema = json.loads((DATA / "rdjson" / "diagnostic.schema.json").read_text())
    lines = render(review, None, "rdjsonl").splitlines()
    assert len(lines) == 4
    for line in lines:
        jsonschema.validate(json.loads(line), schema)
    last = json.loads(lines[-1])
    assert last["suggestions"] == [
        {"range": {"start": {"line": 4}, "end": {"line": 5}}, "text": "X = 1\n"}
    ]
    assert last["message"] == "use a constant"  # replacement text is not repeated as prose
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"message": "x", "severity": "WARN"}, schema)


def test_rdjsonl_empty_review_is_empty() -> None:
    assert render(APPROVED, APPROVED_GATE, "rdjsonl") == ""


# --- annotations --------------------------------------------------------------------------------


def test_annotations_exact() -> None:
    assert render(REVIEW, GATE, "annotations") == (
        "::error file=app/keys.py,line=3,title=gitflow-agents%3A secret-aws::AWS access key\n"
        "::warning file=app/main.py,line=10,endLine=12,title=gitflow-agents::"
        "breakpoint() left in%0A%0ASuggestion: remove it\n"
        "::notice title=gitflow-agents::consider more tests\n"
        f"::error title=gitflow-agents review::{VERDICT}\n"
    )
    assert render(APPROVED, APPROVED_GATE, "annotations") == (
        "::notice title=gitflow-agents review::APPROVED: no findings\n"
    )


def test_annotation_escaping() -> None:
    assert escape_data("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext: a,b"
    assert escape_property("dir:a,b%\n") == "dir%3Aa%2Cb%25%0A"
    review = Review(
        Overall.REVISE,
        findings=(Finding(Severity.ERROR, "50%\nbad", "we:ird,name.py", 2, rule="r:1,2"),),
    )
    first = render(review, None, "annotations").splitlines()[0]
    assert first == (
        "::error file=we%3Aird%2Cname.py,line=2,title=gitflow-agents%3A r%3A1%2C2::50%25%0Abad"
    )


# --- markdown -----------------------------------------------------------------------------------


def test_markdown_exact() -> None:
    assert render(REVIEW, GATE, "markdown") == (
        "### ❌ gitflow-agents review: REVISE\n"
        "\n"
        "1 error, 1 warn, 1 info · reviewed `0123456789ab` against `fedcba987654`"
        " · threshold `error`\n"
        "\n"
        "- the reviewer asks for changes (REVIEW_RESULT: REVISE)\n"
        "- 1 finding at or above error: 1 error\n"
        "\n"
        "> A leaked key and a leftover debugger.\n"
        "\n"
        "<details open>\n"
        "<summary>🔴 Errors (1)</summary>\n"
        "\n"
        "- `app/keys.py:3` AWS access key (`secret-aws`)\n"
        "\n"
        "</details>\n"
        "\n"
        "<details>\n"
        "<summary>🟡 Warnings (1)</summary>\n"
        "\n"
        "- `app/main.py:10-12` breakpoint() left in\n"
        "  Suggestion: remove it\n"
        "\n"
        "</details>\n"
        "\n"
        "<details>\n"
        "<summary>🔵 Info (1)</summary>\n"
        "\n"
        "- consider more tests\n"
        "\n"
        "</details>\n"
        "\n"
        "**Files not reviewed** (1): `assets/big.bin`\n"
    )


def test_markdown_approved() -> None:
    assert render(APPROVED, APPROVED_GATE, "markdown") == (
        "### ✅ gitflow-agents review: APPROVED\n"
        "\n"
        "no findings · reviewed `0123456789ab` · threshold `error`\n"
    )


def test_markdown_defuses_untrusted_text() -> None:
    assert escape("</details><img src=x> @octocat") == (
        "&lt;/details&gt;&lt;img src=x&gt; @\u200boctocat"
    )
    assert code("a`b") == "``a`b``"
    review = Review(
        None,
        reason="no REVIEW_RESULT line",
        findings=(Finding(Severity.ERROR, "</details> ping @team", "x.py", 1),),
    )
    text = render(review, None, "markdown")
    assert text.count("</details>") == 1  # only our own closing tag
    assert "@\u200bteam" in text
    assert text.startswith("### ❌ gitflow-agents review: NOT APPROVED\n")
    assert "- no REVIEW_RESULT line\n" in text


# --- dispatcher ---------------------------------------------------------------------------------


def test_every_format_renders_and_unknown_is_refused() -> None:
    assert FORMATS == ("terminal", "json", "sarif", "rdjsonl", "annotations", "markdown")
    for fmt in FORMATS:
        assert isinstance(render(REVIEW, GATE, fmt), str)
    with pytest.raises(ValueError, match=r"unknown output format 'xml'.*terminal, json"):
        render(REVIEW, GATE, "xml")


# --- a review that did not complete --------------------------------------------------------------


def test_a_review_that_did_not_complete_says_so_in_every_format() -> None:
    """No verdict because the reviewer did not complete (``Review.outcome``): SARIF's invocation
    is unsuccessful with an error notification and no result; JSON is the findings object with
    its ``outcome``; the texts say DID NOT COMPLETE and why, with no "no findings" count."""
    run = json.loads(render(STOPPED, STOPPED_GATE, "sarif"))["runs"][0]
    assert run["results"] == [] and run["tool"]["driver"]["rules"] == []
    assert run["invocations"] == [
        {
            "executionSuccessful": False,
            "toolExecutionNotifications": [{"level": "error", "message": {"text": STOPPED_WHY}}],
        }
    ]
    assert run["properties"] == {
        "approved": False,
        "verdict": f"DID NOT COMPLETE: {STOPPED_WHY}",
        "reviewedSha": SHA,
        "baseSha": BASE,
        "outcome": "budget",
    }
    data = json.loads(render(STOPPED, STOPPED_GATE, "json"))
    assert (data["overall"], data["outcome"], data["reason"]) == (None, "budget", STOPPED_WHY)
    assert data["run"] == {"inputTokens": 9000, "costUsd": 0.062}
    assert data["gate"] == {
        "approved": False,
        "exitCode": 5,
        "threshold": "error",
        "reasons": [STOPPED_WHY],
    }
    assert review_from_dict(data) == STOPPED  # read back (the Action's findings file)
    assert render(STOPPED, STOPPED_GATE, "terminal") == f"DID NOT COMPLETE: {STOPPED_WHY}\n"
    assert render(STOPPED, STOPPED_GATE, "annotations") == (
        "::error title=gitflow-agents review::DID NOT COMPLETE: agent r did not complete the "
        "review: budget: review spent $0.062 of $0.05\n"
    )
    markdown = render(STOPPED, STOPPED_GATE, "markdown")
    assert markdown.startswith("### ❌ gitflow-agents review: DID NOT COMPLETE\n")
    assert "no findings" not in markdown and f"\n- {STOPPED_WHY}\n" in markdown
    assert render(STOPPED, STOPPED_GATE, "rdjsonl") == ""  # no diagnostic: nothing was found


def test_a_completed_review_has_no_outcome() -> None:
    assert "outcome" not in json.loads(render(REVIEW, GATE, "json"))
    run = json.loads(render(REVIEW, GATE, "sarif"))["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is True
    assert "outcome" not in run["properties"]
