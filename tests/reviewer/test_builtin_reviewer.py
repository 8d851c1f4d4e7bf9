"""The builtin offline reviewer: one test per rule on a real git diff, and a clean change."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from gitflow_agents.base.redact import mask
from gitflow_agents.base.secret_rules import entropy
from gitflow_agents.findings import Overall, Severity
from gitflow_agents.findings.rules import RULES
from gitflow_agents.git import queries as g
from gitflow_agents.reviewer import builtin, builtin_report, syntax
from gitflow_agents.reviewer.checks import CheckOptions
from tests.conftest import ROOT, git
from tests.helpers.builtin import locations, only, review
from tests.helpers.files import commit_files

# Built at run time so this file itself never holds a literal secret-shaped string.
AWS_KEY = "AKIA" + "Z7Q2XK4M9PLR3VBN"
GITHUB_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
SLACK_TOKEN = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp"
PRIVATE_KEY = "-----BEGIN " + "RSA PRIVATE KEY-----"
KEY_BODY = "MIIEowIBAAKCAQEAx7Qm2ZkP9sLw3Rt" + "Hq8vN4cY1uJ6bW0eT5gK2dF9sA7lZ3x"  # a PEM line


def test_clean_change_gets_no_finding(repo: Path) -> None:
    result = review(
        repo,
        {
            "app/main.py": 'import os\n\n\ndef main() -> str:\n    return os.environ["TOKEN"]\n',
            "config.json": '{"name": "demo", "tags": ["a", "b"]}\n',
            "ci.yaml": "on: push\njobs:\n  x:\n    run: echo ${{ github.sha }}\n---\nsecond: doc\n",
            "pyproject.toml": '[project]\nname = "demo"\n',
            "web/app.js": "export function add(a, b) {\n  return a + b;\n}\n",
            "docs/guide.rst": "Title\n=====\n\nThe password field is hidden.\n",
            "settings.py": 'password = os.environ.get("DB_PASSWORD")\ntoken = settings.API_TOKEN\n',
        },
    )
    assert result.findings == ()
    assert result.overall is Overall.APPROVE
    assert result.unreviewed_files == ()


@pytest.mark.parametrize(
    ("name", "content", "rule", "line"),
    [
        ("bad.py", "import os\n\ndef f(:\n    pass\n", "python-syntax", 3),
        ("bad.json", '{\n  "a": 1,\n}\n', "json-syntax", 3),
        ("bad.yaml", "ok: 1\n---\nlist: [1, 2\n", "yaml-syntax", 3),
        ("bad.toml", '[tool]\nname = "x"\nbroken = \n', "toml-syntax", 3),
    ],
)
def test_syntax_errors_at_the_error_line(
    repo: Path, name: str, content: str, rule: str, line: int
) -> None:
    if rule == "toml-syntax" and syntax.toml_parser() is None:
        pytest.skip("no TOML parser on this Python")
    result = review(repo, {name: content})
    found = only(result, rule)
    assert [(f.file, f.line, f.severity) for f in found] == [(name, line, Severity.ERROR)]
    assert result.overall is Overall.REVISE


def test_yaml_application_tags_are_not_errors(repo: Path) -> None:
    result = review(
        repo,
        {
            "cfn.yaml": "Value: !Ref Bucket\nList: !GetAZs ''\n",
            "mkdocs.yml": "x: !!python/name:material.extensions.emoji.twemoji\n",
        },
    )
    assert result.findings == ()


def test_yaml_values_the_safe_loader_refuses_are_findings_not_crashes(repo: Path) -> None:
    result = review(repo, {"dates.yaml": "start: 2024-13-45\n", "n.yaml": "ok: 1\nx: !!int abc\n"})
    assert sorted((f.rule, f.file, f.line) for f in result.findings) == [
        ("yaml-syntax", "dates.yaml", 1),
        ("yaml-syntax", "n.yaml", 2),
    ]
    assert "month must be in 1..12" in result.findings[0].message


def test_yaml_bombs_in_a_reviewed_file_are_findings(repo: Path) -> None:
    """The values are built only after the bounded syntax check (gitflow_agents/base/safe_yaml.py):
    an alias bomb, a merge-key bomb (PyYAML copies merged pairs, so it would build billions)
    and deep nesting are findings naming the line where the bound was crossed."""
    laughs = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    merges = ["m0: &m0 {x: 1, y: 2}"]
    for level in range(1, 10):
        laughs.append(
            f"{'abcdefghij'[level]}: &{'abcdefghij'[level]} ["
            + ", ".join([f"*{'abcdefghij'[level - 1]}"] * 9)
            + "]"
        )
        merges.append(f"m{level}: &m{level} {{<<: [" + ", ".join([f"*m{level - 1}"] * 9) + "]}")
    result = review(
        repo,
        {
            "laughs.yaml": "\n".join(laughs) + "\n",
            "merges.yaml": "\n".join(merges) + "\n",
            "deep.yaml": "x: " + "[" * 100_000 + "]" * 100_000 + "\n",
        },
    )
    found = sorted((f.rule, f.file, f.line, f.message) for f in result.findings)
    budget = "invalid YAML: aliases expand to more than 50,000 values (an alias bomb?)"
    assert found == [
        ("yaml-syntax", "deep.yaml", 1, "invalid YAML: nested more than 64 levels deep"),
        ("yaml-syntax", "laughs.yaml", 5, budget),
        ("yaml-syntax", "merges.yaml", 6, budget),
    ]


def test_what_the_stdlib_parsers_choke_on_is_a_finding_not_a_crash(repo: Path) -> None:
    """Found by the fuzz suite (benchmarks/fuzz.py, "reviewed files"): deep nesting makes the
    recursive parsers (json, tomllib, Python's) raise RecursionError / MemoryError, a long
    number Python's digit limit, and PyYAML's bool constructor a KeyError: each is a finding."""
    files: dict[str, str | bytes] = {
        "deep.json": "[" * 100_000 + "]" * 100_000 + "\n",
        "long.json": '{"n": ' + "9" * 5000 + "}\n",
        "deep.py": "x = " + "-" * 100_000 + "1\n",
        "maybe.yaml": "a: !!bool maybe\n",
    }
    expected = [
        ("json-syntax", "deep.json", "nested too deeply to parse"),
        ("json-syntax", "long.json", "invalid JSON: Exceeds the limit (4300 digits)"),
        ("python-syntax", "deep.py", "nested too deeply to parse"),
        ("yaml-syntax", "maybe.yaml", "invalid YAML: cannot build 'maybe'"),
    ]
    if syntax.toml_parser() is not None:
        files["deep.toml"] = "a = " + "[" * 100_000 + "]" * 100_000 + "\n"
        expected.insert(3, ("toml-syntax", "deep.toml", "nested too deeply to parse"))
    result = review(repo, files)
    found = sorted((f.rule, f.file, f.message) for f in result.findings if "syntax" in f.rule)
    assert [(rule, file) for rule, file, _ in found] == [(r, f) for r, f, _ in expected]
    for (_, _, message), (_, _, start) in zip(found, expected, strict=True):
        assert message.startswith(start), message


BOM = "\ufeff"  # a UTF-8 byte order mark, as Notepad and Visual Studio save files


def test_a_utf8_bom_is_no_syntax_error(repo: Path) -> None:
    """Python compiles a file that starts with a UTF-8 BOM, and json.loads of the bytes (what
    pre-commit-hooks' check-json does) reads one; the rules parse the file as they do. The
    debugger rule still reads the statements from the AST (a BOM file parses)."""
    result = review(
        repo,
        {
            "app.py": BOM + 'print("hello")\nbreakpoint()\n',
            "data.json": BOM + '{"a": 1}\n',
            "stub.pyi": BOM + "def f() -> int: ...\n",
        },
    )
    assert locations(result) == [("debugger", "app.py", 2)]
    assert result.findings[0].message == "Python debugger call left in: breakpoint()"


def test_a_bom_does_not_hide_a_syntax_error(repo: Path) -> None:
    """What follows the BOM is checked as before; a BOM with a coding declaration other than
    UTF-8 is an error, as Python says."""
    result = review(
        repo,
        {
            "bad.py": BOM + "def f(:\n",
            "bad.json": BOM + '{"a": 1,}\n',
            "latin.py": BOM + "# -*- coding: latin-1 -*-\nx = 1\n",
            "twice.json": BOM + BOM + "{}\n",
        },
    )
    found = sorted((f.rule, f.file, f.line) for f in result.findings)
    assert found == [
        ("json-syntax", "bad.json", 1),
        ("json-syntax", "twice.json", 1),
        ("python-syntax", "bad.py", 1),
        ("python-syntax", "latin.py", None),
    ]


def test_a_file_that_is_not_utf8_is_a_syntax_error_unless_its_coding_says_so(repo: Path) -> None:
    """Python refuses a file that is not UTF-8 without a coding declaration (PEP 263), JSON,
    YAML and TOML must be UTF-8 (``json.loads`` of the bytes, PyYAML and ``tomllib.load`` refuse
    the file, and so do pre-commit-hooks' check-ast, check-json, check-yaml and check-toml):
    the rules read the file's bytes, not a text with the bad bytes replaced."""
    if syntax.toml_parser() is None:
        pytest.skip("no TOML parser on this Python")
    latin1 = "caf\xe9".encode("latin-1")
    result = review(
        repo,
        {
            "latin1.py": b'x = 1\nname = "' + latin1 + b'"\n',
            "latin1.json": b'{\n  "name": "' + latin1 + b'"\n}\n',
            "latin1.yaml": b"a: 1\nname: " + latin1 + b"\n",
            "latin1.toml": b'a = 1\nname = "' + latin1 + b'"\n',
            # a coding declaration: Python reads the file as it says (pre-commit-hooks'
            # debug-statements fixture non_utf8.py holds cp1252 bytes the same way)
            "declared.py": b"# -*- coding: latin-1 -*-\nname = '" + latin1 + b"'\n",
            "utf8.json": '{"name": "caf\u00e9"}\n'.encode(),
        },
    )
    found = sorted((f.rule, f.file, f.line) for f in result.findings)
    assert found == [
        ("json-syntax", "latin1.json", 2),
        ("python-syntax", "latin1.py", 2),
        ("toml-syntax", "latin1.toml", 2),
        ("yaml-syntax", "latin1.yaml", 2),
    ]
    messages = {f.file: f.message for f in result.findings}
    assert messages["latin1.json"] == "invalid JSON: not UTF-8 (byte 0xe9)"
    assert messages["latin1.yaml"] == "invalid YAML: not UTF-8 (byte 0xe9)"


def test_a_file_already_not_utf8_is_not_blamed_on_a_change_elsewhere(repo: Path) -> None:
    """As for any syntax error the base version already had: reported only on an added line."""
    latin1 = "caf\xe9".encode("latin-1")
    before = b'{"name": "' + latin1 + b'",\n "n": 1}\n'
    result = review(
        repo,
        {"old.json": before.replace(b"1", b"2"), "new.json": before.replace(b"1", b"2")},
        base_files={"old.json": before},
    )
    assert locations(result) == [("json-syntax", "new.json", 1)]


@pytest.mark.parametrize(
    "path",
    [
        "tsconfig.json",
        "packages/web/tsconfig.build.json",
        "jsconfig.json",
        ".devcontainer/devcontainer.json",
        ".devcontainer.json",
        ".vscode/settings.json",
        ".eslintrc.json",  # ESLint: "JSON files also allow JavaScript-style comments"
        "web/.eslintrc.json",
        ".babelrc.json",  # Babel: parsed as JSON5
        "babel.config.json",
        "turbo.json",  # Turborepo: JSONC
        "apps/web/turbo.json",
        "deno.json",  # Deno: JSONC
        "typedoc.json",  # TypeDoc: "parsed as JSONC"
        "api-extractor.json",  # API Extractor: its template is commented
    ],
)
def test_json_with_comments_configs_are_not_json_syntax_errors(repo: Path, path: str) -> None:
    result = review(repo, {path: '{\n  // a comment, as the tool allows\n  "a": 1\n}\n'})
    assert only(result, "json-syntax") == []


@pytest.mark.parametrize(
    "path",
    [
        "biome.json",  # Biome reads biome.json as JSON; comments go in biome.jsonc
        "package.json",
        "my-turbo.json",
        "eslintrc.json",
        "config/deno.json.example.json",
        "tsconfig/data.json",
    ],
)
def test_plain_json_configs_are_still_checked(repo: Path, path: str) -> None:
    result = review(repo, {path: '{\n  // not JSON\n  "a": 1\n}\n'})
    assert locations(result) == [("json-syntax", path, 2)]


def test_syntax_error_that_was_already_there_is_not_blamed_on_the_change(repo: Path) -> None:
    broken = "def f(:\n    pass\n"
    result = review(repo, {"old.py": broken + "x = 1\n"}, base_files={"old.py": broken})
    assert only(result, "python-syntax") == []


def test_syntax_error_from_removed_lines_is_reported(repo: Path) -> None:
    result = review(
        repo,
        {"data.json": '{\n  "a": [1,\n  "b": 2\n}\n'},
        base_files={"data.json": '{\n  "a": [1],\n  "b": 2\n}\n'},
    )
    assert [f.rule for f in result.findings] == ["json-syntax"]


def test_merge_conflict_markers(repo: Path) -> None:
    text = "a\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> feature\n"
    result = review(repo, {"notes.txt": text})
    assert [(f.rule, f.line) for f in result.findings] == [
        ("merge-conflict-marker", 2),
        ("merge-conflict-marker", 4),
        ("merge-conflict-marker", 6),
    ]


def test_bidirectional_controls_that_reorder_code_are_errors_where_code_is(repo: Path) -> None:
    """Trojan Source (CVE-2021-42574): a right-to-left override or an isolate in an added line
    of code or configuration is an error on its line, and the terminal shows it escaped; the
    same in prose and translation catalogs, and the marks (U+200F), are not reported."""
    rlo, lri, pdi, rlm = "\u202e", "\u2066", "\u2069", "\u200f"
    code = f'ok = 1\nif role != "user{rlo} {lri}// admin only{pdi} {lri}":\n    grant()\n'
    result = review(
        repo,
        {
            "app/auth.py": code,
            "deploy.sh": f"echo {lri}done{pdi}\n",
            "docs/notes.md": f"Hebrew text {rlo}here\n",
            "locale/he.po": f'msgstr "{lri}shalom{pdi}"\n',
            "app/rtl.js": f'const title = "{rlm}";\n',
        },
    )
    assert locations(result) == [
        ("bidi-control", "app/auth.py", 2),
        ("bidi-control", "deploy.sh", 1),
    ]
    assert all(f.severity is Severity.ERROR for f in result.findings)
    assert "U+202E (RIGHT-TO-LEFT OVERRIDE)" in result.findings[0].message
    assert result.overall is Overall.REVISE


def test_private_key(repo: Path) -> None:
    result = review(repo, {"id_rsa": f"{PRIVATE_KEY}\n{KEY_BODY}\n"})
    assert locations(result) == [("private-key", "id_rsa", 1)]


def test_a_private_key_without_a_body_is_not_a_key(repo: Path) -> None:
    docs = f"{PRIVATE_KEY}\n...\n-----END RSA PRIVATE KEY-----\n"
    assert review(repo, {"docs.md": docs}).findings == ()


def test_a_private_key_in_a_string_with_escaped_line_ends_is_found(repo: Path) -> None:
    """A key in a JSON string (a Google service-account key file) or a string literal of code,
    its line ends escaped (``\\n``); a BEGIN line in such a string without a body is still no
    key."""
    end = "-----END RSA PRIVATE KEY-----"
    pem = f"{PRIVATE_KEY}\n{KEY_BODY}\n{KEY_BODY[::-1]}\n{end}\n"
    account = {"type": "service_account", "private_key": pem, "client_email": "a@b.c"}
    concatenated = "".join(f'    "{line}\\n"\n' for line in pem.splitlines())
    result = review(
        repo,
        {
            "service-account.json": json.dumps(account, indent=2) + "\n",
            "key_const.py": f"KEY = {json.dumps(pem)}\n",
            "concat.py": f"KEY = (\n{concatenated})\n",
            "docs.json": json.dumps({"key": f"{PRIVATE_KEY}\n...\n{end}\n"}) + "\n",
            "parse.py": (
                f'if text.startswith("{PRIVATE_KEY}\\n"):\n    body = text.split(chr(10))[1:-2]\n'
            ),
        },
    )
    assert locations(result) == [
        ("private-key", "concat.py", 2),
        ("private-key", "key_const.py", 1),
        ("private-key", "service-account.json", 3),
    ]
    assert {KEY_BODY, KEY_BODY[::-1]} <= result.secrets


def test_a_rotated_key_is_found_without_its_begin_line(repo: Path) -> None:
    """A key whose body lines change while its BEGIN line stays (requests 9ebebdef98a6): the
    file's new content says the lines are in a private key block; a certificate's are not."""
    end = "-----END RSA PRIVATE KEY-----"
    cert = "-----BEGIN CERTIFICATE-----"
    old_key = f"{PRIVATE_KEY}\n{KEY_BODY}\n{KEY_BODY[::-1]}\n{end}\n"
    old_cert = f"{cert}\n{KEY_BODY}\n-----END CERTIFICATE-----\n"
    new_body = KEY_BODY[5:] + KEY_BODY[:5]
    result = review(
        repo,
        {
            "key.pem": old_key.replace(KEY_BODY[::-1], new_body),
            "ca.pem": old_cert.replace(KEY_BODY, new_body),
        },
        base_files={"key.pem": old_key, "ca.pem": old_cert},
    )
    assert locations(result) == [("private-key", "key.pem", 3)]
    assert new_body in result.secrets
    assert new_body not in "".join(f.message for f in result.findings)


@pytest.mark.parametrize(
    ("secret", "rule"),
    [(AWS_KEY, "aws-access-key"), (GITHUB_TOKEN, "github-token"), (SLACK_TOKEN, "slack-token")],
)
def test_tokens_are_found_and_masked(repo: Path, secret: str, rule: str) -> None:
    result = review(repo, {"deploy.sh": f"#!/bin/sh\nexport CRED={secret}\n"})
    (found,) = result.findings
    assert (found.rule, found.line, found.severity) == (rule, 2, Severity.ERROR)
    assert secret not in found.message
    assert secret[:4] in found.message
    report = builtin_report.report(result, reviewed_sha="h", base_sha="b")
    assert secret not in report


def test_paths_with_spaces_are_checked(repo: Path) -> None:
    # git ends a ---/+++ header with a tab when the path has a space
    result = review(repo, {"deploy dir/my env.sh": f"export CRED={GITHUB_TOKEN}\n"})
    assert locations(result) == [("github-token", "deploy dir/my env.sh", 1)]


def commits(repo: Path, *changes: dict[str, str | None]) -> tuple[str, list[str]]:
    """Commit each change in turn (None deletes the file); (base sha, [commit shas])."""
    base = g.head_sha(repo)
    made = []
    for number, change in enumerate(changes, start=1):
        for name, content in change.items():
            path = repo / name
            if content is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"commit {number}")
        made.append(g.head_sha(repo))
    return base, made


def test_a_secret_added_and_removed_within_the_range_is_found(repo: Path) -> None:
    base, (leaked, removed, _) = commits(
        repo,
        {"t.py": f'TOKEN = "{GITHUB_TOKEN}"\n', "id_rsa": f"{PRIVATE_KEY}\n{KEY_BODY}\n"},
        {"t.py": None, "id_rsa": None},
        {"app.py": "x = 1\n"},
    )
    result = builtin.review_diff(repo, g.DiffSpec(base, removed))
    assert sorted((f.rule, f.file, f.line, f.severity) for f in result.findings) == [
        ("github-token", None, None, Severity.ERROR),  # t.py is gone: not a head location
        ("private-key", None, None, Severity.ERROR),
    ]
    token, key = sorted(result.findings, key=lambda f: f.rule or "")
    assert token.message.startswith(f"t.py:1 in commit {leaked[:12]} (commit 1): GitHub token")
    assert key.message.startswith(f"id_rsa:1 in commit {leaked[:12]} (commit 1): private key")
    assert GITHUB_TOKEN not in token.message
    assert "history" in token.message
    assert result.overall is Overall.REVISE
    # the net diff alone saw nothing: the file no longer exists
    assert builtin.review_diff(repo, g.DiffSpec(removed, g.head_sha(repo))).findings == ()


def test_history_scan_reports_a_secret_still_present_once(repo: Path) -> None:
    base, (_, head) = commits(
        repo,
        {"deploy.env": f"API={AWS_KEY}\n"},
        {"deploy.env": f"API={AWS_KEY}\nMORE=1\n"},
    )
    result = builtin.review_diff(repo, g.DiffSpec(base, head))
    assert locations(result) == [("aws-access-key", "deploy.env", 1)]
    assert "in commit" not in result.findings[0].message  # the net diff's own finding


def test_history_scan_leaves_a_line_moved_to_another_file_to_the_net_diff(repo: Path) -> None:
    """A file renamed by a later commit of the range: its lines are still added, at the new
    path, where the net diff reports them; no history finding for the old path. A line moved
    to a file where it is no secret (an unquoted value in code) is reported from history."""
    token_line = f'FAKE = "{GITHUB_TOKEN}"\n'
    unquoted = "API_KEY=q8Zr1xP2mL9vK4tWqZ\n"
    base, (leaked, _, head) = commits(
        repo,
        {"tests/fixture_a.py": token_line, "deploy.env": unquoted},
        {"tests/fixture_a.py": None, "tests/fixtures.py": token_line},  # git mv
        {"deploy.env": None, "deploy.py": unquoted},
    )
    result = builtin.review_diff(repo, g.DiffSpec(base, head))
    assert sorted(locations(result), key=str) == [
        ("github-token", "tests/fixtures.py", 1),
        ("high-entropy-secret", None, None),
    ]
    (history,) = only(result, "high-entropy-secret")
    assert history.message.startswith(f"deploy.env:1 in commit {leaked[:12]}")
    assert "in commit" not in only(result, "github-token")[0].message


@pytest.mark.parametrize(
    ("first", "final"),
    [
        # a marker added by a later commit, as docs/review.md says to accept a test key
        (
            {"fixture.py": f'TOKEN = "{GITHUB_TOKEN}"\n'},
            {"fixture.py": f'TOKEN = "{GITHUB_TOKEN}"  # gitleaks:allow\n'},
        ),
        # reformatted
        (
            {"fixture.py": f'TOKEN = "{GITHUB_TOKEN}"\n'},
            {"fixture.py": f'TOKEN="{GITHUB_TOKEN}"\n'},
        ),
        # moved to another file and edited on the way
        (
            {"conf.py": f'TOKEN = "{GITHUB_TOKEN}"\n'},
            {"conf.py": None, "tests/fixture.py": f'FAKE_TOKEN = "{GITHUB_TOKEN}"\n'},
        ),
        # a private key whose BEGIN line gets a marker: its body lines are unchanged
        (
            {"key.pem": f"{PRIVATE_KEY}\n{KEY_BODY}\n"},
            {"key.pem": f"{PRIVATE_KEY} gitleaks:allow\n{KEY_BODY}\n"},
        ),
    ],
)
def test_history_scan_leaves_a_secret_the_final_change_still_adds_to_the_net_diff(
    repo: Path, first: dict[str, str | None], final: dict[str, str | None]
) -> None:
    """A secret an earlier commit adds in a line a later one edits (a marker added to accept
    it, the line reformatted, moved to another file) is still added by the final change, where
    it is reported and accepted: no history finding claiming "the final change no longer adds
    it" (it blocked the review of an accepted test key for good)."""
    base, (_, head) = commits(repo, first, final)
    result = builtin.review_diff(repo, g.DiffSpec(base, head))
    (found,) = result.findings
    assert "in commit" not in found.message
    path = next(name for name, content in final.items() if content is not None)
    assert (found.file, found.line) == (path, 1)


def test_history_scan_reports_a_secret_removed_beside_one_still_added(repo: Path) -> None:
    """Only the values the final change adds are left to it: a second token on the edited
    line, which the final change no longer adds, is still a history finding."""
    other = "ghp_" + "Zz9yX8wV7uT6sR5qP4oN3mL2kJ1iH0gF9eD8"
    base, (leaked, head) = commits(
        repo,
        {"fixture.py": f'A = "{GITHUB_TOKEN}"; B = "{other}"\n'},
        {"fixture.py": f'A = "{GITHUB_TOKEN}"  # gitleaks:allow\n'},
    )
    result = builtin.review_diff(repo, g.DiffSpec(base, head))
    history = [f for f in result.findings if "in commit" in f.message]
    assert [(f.rule, f.file, f.occurrence) for f in history] == [("github-token", "fixture.py", 2)]
    assert history[0].message.startswith(f"fixture.py:1 in commit {leaked[:12]}")


def test_history_scan_keeps_the_file_when_it_still_exists(repo: Path) -> None:
    value = "q8Zr3kP9xW2mN7vB4tY6"
    base, (leaked, head) = commits(
        repo,
        {"settings.py": f'x = 1\nAPI_KEY = "{value}"\n'},
        {"settings.py": 'x = 1\nAPI_KEY = os.environ["API_KEY"]\n'},
    )
    result = builtin.review_diff(repo, g.DiffSpec(base, head))
    (found,) = result.findings
    assert (found.rule, found.file, found.line) == ("high-entropy-secret", "settings.py", None)
    assert f"settings.py:2 in commit {leaked[:12]}" in found.message


def test_aws_documentation_example_key_is_ignored(repo: Path) -> None:
    result = review(repo, {"README.md": "AKIA" + "IOSFODNN7EXAMPLE\n"})
    assert result.findings == ()


def test_high_entropy_assignment(repo: Path) -> None:
    value = "q8Zr3kP9xW2mN7vB4tY6"
    result = review(
        repo,
        {
            "settings.py": (
                f'API_KEY = "{value}"\n'
                'password = "aaaaaaaaaaaaaaaaaaaa"\n'  # long but no entropy
                'secret = "short"\n'
            )
        },
    )
    (found,) = result.findings
    assert (found.rule, found.line, found.severity) == ("high-entropy-secret", 1, Severity.WARN)
    assert value not in found.message
    assert result.overall is Overall.APPROVE  # a warning, below the default threshold


@pytest.mark.parametrize(
    ("name", "line"),
    [
        (".env", "API_KEY=q8Zr1xP2mL9vK4tWqZ"),
        ("config/.env.production", "export STRIPE_SECRET=sk9Qw2Er7Ty4Ui1Op3As"),
        ("deploy.sh", "export DB_PASSWORD=Zx9Qw2Er7Ty4Ui1Op3As"),
        ("compose.yaml", "    api_key: q8Zr1xP2mL9vK4tWqZ"),
        ("settings.ini", "client_secret = 7fG2kQ9xW4mZ8vB1nR5t"),
        ("app.cfg", "auth_token=aGVsbG8gd29ybGQh+c2VjcmV0=="),
        ("Dockerfile", "ENV SERVICE_TOKEN=Zx9Qw2Er7Ty4Ui1Op3As"),
        (".npmrc", "//registry.npmjs.org/:_authToken=q8Zr1xP2mL9vK4tWqZ"),
    ],
)
def test_high_entropy_unquoted_values_in_config_files(repo: Path, name: str, line: str) -> None:
    result = review(repo, {name: f"# settings\n{line}\n"})
    assert [(f.rule, f.file, f.line) for f in result.findings] == [("high-entropy-secret", name, 2)]
    value = re.split(r"[=:]\s*", line, maxsplit=1)[1] if name != ".npmrc" else line[-18:]
    assert value not in result.findings[0].message


def test_unquoted_values_with_no_operator_in_config_files(repo: Path) -> None:
    """A name heading its statement, a space, then its value: Dockerfile's legacy ``ENV name
    value``, an option on a shell command line, ``.netrc``'s only syntax. Options, their
    ``key=value`` arguments, host names, variables and placeholders stay silent."""
    result = review(
        repo,
        {
            "Dockerfile": (
                "FROM mysql:8\n"
                "ENV MYSQL_ROOT_PASSWORD Xk9mQ2vL7pR4tZwq\n"
                "ENV DB_PASSWORD_FILE /run/secrets/db_password\n"
                "ARG NPM_TOKEN\n"
            ),
            "ci/.netrc": (
                "machine api.heroku.com\n  login deploy@example.com\n"
                "  password 9f2c7a1e-4b8d-3f6a-0c5e-9b2d7f1a4c8e\n"
                "machine example.com login me password changeme\n"
            ),
            "scripts/login.sh": (
                "#!/bin/sh\n"
                "docker login --username ci --password Zq8vR3kP2mW7Lz1Xk9mQ registry.example.com\n"
                "docker login --password $DOCKER_PASSWORD\n"
                "docker login --password ${DOCKER_PASSWORD} --username ci\n"
                "aws ecr get-login-password --region us-east-1 | docker login --username AWS"
                " --password-stdin 123456789012.dkr.ecr.us-east-1.amazonaws.com\n"
                "openssl passwd -1 Xk9mQ2vL7pR4tZwq\n"
                "gh secret set NPM_TOKEN --body x\n"
                "echo the password expired2 yesterday\n"
            ),
            ".github/workflows/ci.yml": (
                "      - run: docker login -u x --password ${{ secrets.PW }} ghcr.io\n"
            ),
            "app.rb": "password Xk9mQ2vL7pR4tZwq\n",  # code, not a statement of a config file
        },
    )
    assert locations(result) == [
        ("high-entropy-secret", "Dockerfile", 2),
        ("high-entropy-secret", "ci/.netrc", 3),
        ("high-entropy-secret", "scripts/login.sh", 2),
    ]
    assert result.secrets == {
        "Xk9mQ2vL7pR4tZwq",
        "9f2c7a1e-4b8d-3f6a-0c5e-9b2d7f1a4c8e",
        "Zq8vR3kP2mW7Lz1Xk9mQ",
    }


def test_a_netrc_password_is_read_anywhere_on_its_line(repo: Path) -> None:
    """``.netrc`` (``_netrc`` on Windows) is often one line an entry: ``password`` follows
    netrc's own tokens, each keyword with its value. Not after ``macdef`` (a macro's body
    follows), in a comment, as another keyword's value, or outside a netrc file."""
    result = review(
        repo,
        {
            ".netrc": (
                "machine a.example.com login u password Xk9mQ2vL7pR4 "
                "machine b.example.com login v password Wm4tZq8vR3kP=\n"
                "default login x password Pq2vL7mR4tZw\n"
                "machine c.example.com login password account Xk9mQ2vL7pR4\n"
                "machine d.example.com macdef init password Zq8vR3kP2mW7\n"
                "# machine e.example.com login u password Lz1Xk9mQ2vL7\n"
                "machine f.example.com login me password changeme\n"
            ),
            "win/_netrc": "machine g.example.com login w password Qm4tZq8vR3kL\n",
            "setup.sh": "echo machine h.example.com login u password Rk2mW7Lz1Xk9 >> ~/.netrc\n",
        },
    )
    assert locations(result) == [
        ("high-entropy-secret", ".netrc", 1),
        ("high-entropy-secret", ".netrc", 1),
        ("high-entropy-secret", ".netrc", 2),
        ("high-entropy-secret", "win/_netrc", 1),
    ]
    assert result.secrets == {"Xk9mQ2vL7pR4", "Wm4tZq8vR3kP=", "Pq2vL7mR4tZw", "Qm4tZq8vR3kL"}


def test_a_go_typed_declaration_is_read_only_where_it_can_be_go(repo: Path) -> None:
    """Go's ``var name Type = "…"``: a quoted value anywhere, an unquoted one in code only. In a
    shell file ``--secret id=npmrc,src=…`` is an option and its ``key=value``, not a name, a
    type (``id``) and a value."""
    result = review(
        repo,
        {
            "build.sh": (
                "docker build --secret id=npmrc,src=$HOME/.npmrc2 .\n"
                "docker build --secret id=npmrc,src=/run/secrets/npmrc2 --secret id=k9,env=Xq7 .\n"
                'export password string = "Zq8vR3kP2mW7Lz1Xk9mQ"\n'
            ),
            "main.go": (
                'var password string = "Xk9mQ2vL7pR4tZwq"\n'
                'const apiKey string = "Wm4tZq8vR3kP2Lz1"\n'
                "var token string = os.Getenv(tokenEnv9)\n"
            ),
            "README.md": 'In Go: `var secret []byte = "Pq2vL7mR4tZwXk9m"`\n',
        },
    )
    assert locations(result) == [
        ("high-entropy-secret", "README.md", 1),
        ("high-entropy-secret", "build.sh", 3),
        ("high-entropy-secret", "main.go", 1),
        ("high-entropy-secret", "main.go", 2),
    ]
    assert result.secrets == {
        "Zq8vR3kP2mW7Lz1Xk9mQ",
        "Xk9mQ2vL7pR4tZwq",
        "Wm4tZq8vR3kP2Lz1",
        "Pq2vL7mR4tZwXk9m",
    }


def test_unquoted_words_urls_paths_and_names_are_not_secrets(repo: Path) -> None:
    result = review(
        repo,
        {
            ".env": (
                "SECRET_KEY_FILE=/run/secrets/django_secret_key_2\n"
                "TOKEN_URL=https://auth.example.com/oauth2/token?aud=x9\n"
                "PASSWORD_HINT=correct-horse-battery-staple\n"
                "API_TOKEN=${API_TOKEN}\n"
                "TOKEN_CACHE=~/cache/tokens/v2/store\n"
            ),
            "ci.yaml": (
                "password_policy: strong_passwords_only\n"
                "token_name: github-actions-deploy-bot2\n"
                "secret_dir: config/secrets/production2\n"
                "api_key: ${{ secrets.API_KEY }}\n"
            ),
            "tool.ini": "credential_helper = osxkeychain.credentialStore\n",
            # in code an unquoted value is a name, not a literal
            "app.py": "API_KEY=q8Zr1xP2mL9vK4tWqZ\ntoken = get_token_from_vault_v2()\n",
        },
    )
    assert result.findings == ()


def test_a_password_in_a_connection_string_in_code_is_found(repo: Path) -> None:
    """In code an unquoted value is code, but not inside a string literal: a JDBC URL's query,
    an ADO.NET or libpq connection string hold the password as a literal (the same string in
    appsettings.json is found)."""
    result = review(
        repo,
        {
            "Db.java": (
                'c = DriverManager.getConnection("jdbc:mysql://db:3306/app'
                '?user=app&password=Xk9mQ2vL7pR4tZw&useSSL=true");\n'
            ),
            "Db.cs": 'var c = new SqlConnection("Server=tcp:db;User ID=app;Password=Qw7rT9pL2xVb6kPz;");\n',
            "main.go": 'var dsn = "host=db user=app password=Zq8vR3kP2mW7Lz1X dbname=app"\n',
            "db.rb": "conn = PG.connect('host=db password=Zq8vR3kP2mW7Lz1X')\n",
        },
    )
    assert locations(result) == [
        ("high-entropy-secret", "Db.cs", 1),
        ("high-entropy-secret", "Db.java", 1),
        ("high-entropy-secret", "db.rb", 1),
        ("high-entropy-secret", "main.go", 1),
    ]
    assert {"Xk9mQ2vL7pR4tZw", "Qw7rT9pL2xVb6kPz", "Zq8vR3kP2mW7Lz1X"} == result.secrets


def test_connection_strings_in_code_without_a_literal_password_are_not_secrets(
    repo: Path,
) -> None:
    result = review(
        repo,
        {
            "db.py": (
                'a = f"host=db password={password} dbname=app"\n'
                'b = "host=db password=${DB_PASSWORD} dbname=app"\n'
                'c = "host=db password=%s dbname=app" % pw\n'
                'd = "host=db password=" + os.environ["DB_PASSWORD"]\n'
                'e = "password=settings.DB_PASSWORD"\n'
                'f = "UPDATE users SET password=crypt($1, gen_salt(bf)) WHERE id=$2"\n'
                'g = "Set password=<your password> in the config, e.g. password=changeme123"\n'
                "h = re.compile(r'AccountKey=[a-zA-Z0-9+\\/=]{88}')\n"  # detect-secrets' plugins
                "i = re.compile(r'_authToken=\\s*([a-zA-Z0-9-]+)')\n"
                '"Authorization: AWS4-HMAC-SHA256 Credential=mock_access_key/20220524/us-east-1"\n'
                "password=Xk9mQ2vL7pR4tZwq  # not in a string: code\n"
            ),
            "a.c": "char c = '\"'; int password=Xk9mQ2vL7pR4tZwq;\n",  # '"' is a character
            "a.js": "const u = `https://x/?token=${tok}&a=1`; fetch('/api?api_key=' + key)\n",
        },
    )
    assert result.findings == ()


# An AWS secret access key: 40 base64 characters, about half of them holding a "/".
AWS_SECRET = "Zx8kQ2/pL9vR4tYw7nB3" + "mC6dF1gH5jK0sA2eU8iO"


def test_aws_secret_access_keys_with_a_slash_are_found(repo: Path) -> None:
    """A "/" inside a random base64 value does not make it a path (``~/.aws/credentials``,
    settings); paths of words assigned to secret names stay paths."""
    result = review(
        repo,
        {
            ".aws/credentials": f"[default]\naws_secret_access_key = {AWS_SECRET}\n",
            "settings.py": f'AWS_SECRET_ACCESS_KEY = "{AWS_SECRET}"\n',
            "config.yaml": (
                f"secret_access_key: /{AWS_SECRET.replace('/', '')}\n"  # a leading "/"
                "secret: src/app/main.py\n"
                "password: /usr/local/bin\n"
                "token: ../x/y\n"
                "api_key: MyProject/Source/Win64/Release\n"
                "secret_key: secret/data/MyApp2/Prod\n"
                "auth_token: https://auth.example.com/oauth2/Zx8kQ2pL9vR4tYw7nB3\n"
            ),
        },
    )
    assert locations(result) == [
        ("high-entropy-secret", ".aws/credentials", 2),
        ("high-entropy-secret", "config.yaml", 1),
        ("high-entropy-secret", "settings.py", 1),
    ]
    assert not any(AWS_SECRET in f.message for f in result.findings)
    assert AWS_SECRET in result.secrets


def test_warning_blocks_at_warn_threshold(repo: Path) -> None:
    result = review(repo, {"x.py": "breakpoint()\n"}, threshold=Severity.WARN)
    assert result.overall is Overall.REVISE


def test_large_and_binary_files(repo: Path) -> None:
    result = review(
        repo,
        {"big.txt": "x" * 300 + "\n", "image.png": b"\x89PNG\x00\x00binary"},
        options=CheckOptions(max_file_bytes=200),
    )
    assert locations(result) == [("large-file", "big.txt", None)]
    assert set(result.unreviewed_files) == {"big.txt", "image.png"}
    assert any("image.png: binary" in note for note in result.notes)


def test_a_binary_file_added_over_the_limit_is_a_large_file(repo: Path) -> None:
    """pre-commit-hooks' check-added-large-files exists mostly for binaries: a binary added (or
    brought) over the limit gets the warning a text file gets; a small binary is only listed
    as not reviewed, and one over the limit before the change gets no finding."""
    blob = bytes(range(256)) * 2  # 512 bytes, NUL bytes included: git says binary
    result = review(
        repo,
        {
            "model.bin": blob,
            "small.png": b"\x89PNG\x00\x00",
            "grown.bin": blob,
            "old.bin": blob + b"x",
        },
        base_files={"grown.bin": b"\x00\x01", "old.bin": blob},
        options=CheckOptions(max_file_bytes=200),
    )
    assert locations(result) == [
        ("large-file", "grown.bin", None),
        ("large-file", "model.bin", None),
    ]
    assert only(result, "large-file")[0].severity is Severity.WARN
    assert set(result.unreviewed_files) == {"model.bin", "grown.bin", "small.png", "old.bin"}
    assert any("small.png: binary" in note for note in result.notes)
    blocked = review(
        repo, {"other.bin": blob}, threshold=Severity.WARN, options=CheckOptions(max_file_bytes=200)
    )
    assert blocked.overall is Overall.REVISE


def test_a_file_added_over_the_limit_is_still_read_by_the_secret_rules(repo: Path) -> None:
    """Its content is not reviewed (no syntax check, no other rule), but the secret rules are
    line checks: a key in a large file lands in the remote all the same. A ``-diff`` file
    whose content is text is read as text for them, as any other."""
    data = "".join(f"row {i}\n" for i in range(60))
    result = review(
        repo,
        {
            "dump.txt": f"aws = '{AWS_KEY}'\n" + data + "TODO: trim\n",
            "dump.json": "{" + data,  # no syntax error reported: it is not parsed
            "hidden.txt": data + f"token = '{GITHUB_TOKEN}'\n",
            ".gitattributes": "hidden.txt -diff\n",
        },
        options=CheckOptions(max_file_bytes=200),
    )
    assert locations(result) == [
        ("large-file", "dump.json", None),
        ("large-file", "dump.txt", None),
        ("aws-access-key", "dump.txt", 1),
        ("large-file", "hidden.txt", None),
        ("github-token", "hidden.txt", 61),
    ]
    assert result.overall is Overall.REVISE
    assert set(result.unreviewed_files) == {"dump.txt", "dump.json", "hidden.txt"}


def test_a_key_an_earlier_commit_adds_to_a_file_a_later_one_makes_large_is_found(
    repo: Path,
) -> None:
    """The history scan left a line the final change still adds to the net diff, which did not
    read it (the file is over the limit): the key was in no finding at all. A line the net diff
    does not read with the secret rules (a symlink's target) is no reason to drop it either."""
    base, (leaked, _, head) = commits(
        repo,
        {"settings.txt": f"aws_key = '{AWS_KEY}'\n", "link": f"x = '{GITHUB_TOKEN}'\n"},
        {"settings.txt": f"aws_key = '{AWS_KEY}'\n" + "".join(f"{i}\n" for i in range(60))},
        {"link": None},
    )
    git(repo, "rm", "-q", "--cached", "--ignore-unmatch", "link")
    (repo / "link").symlink_to(f"x = '{GITHUB_TOKEN}'")
    git(repo, "add", "link")
    git(repo, "commit", "-q", "-m", "a link")
    head = g.head_sha(repo)
    result = builtin.review_diff(
        repo, g.DiffSpec(base, head), options=CheckOptions(max_file_bytes=100)
    )
    assert locations(result) == [
        ("github-token", "link", None),
        ("large-file", "settings.txt", None),
        ("aws-access-key", "settings.txt", 1),
    ]
    assert result.overall is Overall.REVISE
    token = only(result, "github-token")[0]
    assert token.message.startswith(f"link:1 in commit {leaked[:12]}")


def test_a_file_large_before_the_change_is_not_a_new_large_file_and_its_added_lines_count(
    repo: Path,
) -> None:
    # boto3's CHANGELOG.rst (1.6 MB) got a large-file warning on every release commit
    before = "line\n" * 60
    result = review(
        repo,
        {"log.txt": before + f"token = '{AWS_KEY}'\n", "grown.txt": "y" * 300 + "\n"},
        base_files={"log.txt": before, "grown.txt": "y\n"},
        options=CheckOptions(max_file_bytes=200),
    )
    assert locations(result) == [
        ("large-file", "grown.txt", None),
        ("aws-access-key", "log.txt", 61),
    ]
    assert result.unreviewed_files == ("grown.txt",)
    assert any("log.txt: over the size limit already" in note for note in result.notes)


def test_a_file_large_before_the_change_is_listed_as_not_reviewed_when_its_syntax_goes_unchecked(
    repo: Path,
) -> None:
    """Its content is not parsed (it is over the size limit), so a change that breaks it cannot
    be approved in silence: a file with a syntax rule is named as not reviewed, with why. Its
    added lines are still reviewed (a Python file's debugger calls line by line); a file with
    no syntax rule, whose added lines are all there is to review, is not listed."""
    before = "{\n" + "".join(f'  "k{i}": 1,\n' for i in range(40)) + '  "end": 0\n}\n'
    code = "".join(f"x{i} = {i}\n" for i in range(40))
    log = "line\n" * 60
    end = "-----END RSA PRIVATE KEY-----"
    values = "".join(f"v{i}: {i}\n" for i in range(30)) + "key: |\n"
    keys = values + f"  {PRIVATE_KEY}\n  {KEY_BODY}\n  {end}\n"
    result = review(
        repo,
        {
            "schema.json": before.replace('"k3": 1,', '"k3": 1'),  # a comma lost
            "big.py": code + "breakpoint()\n",
            "log.txt": log + "more\n",
            "keys.yaml": keys.replace(KEY_BODY, KEY_BODY[::-1]),  # a rotated key: still read
        },
        base_files={"schema.json": before, "big.py": code, "log.txt": log, "keys.yaml": keys},
        options=CheckOptions(max_file_bytes=200),
    )
    assert locations(result) == [("debugger", "big.py", 41), ("private-key", "keys.yaml", 33)]
    assert set(result.unreviewed_files) == {"schema.json", "big.py", "keys.yaml"}
    assert any(
        note.startswith("schema.json: over the size limit already") and "syntax" in note
        for note in result.notes
    )
    assert any(note.startswith("log.txt: over the size limit already") for note in result.notes)


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("a.py", "    breakpoint()"),
        ("a.py", "import pdb"),
        ("a.py", "    import pdb; pdb.set_trace()"),
        ("a.js", "  console.log(value);"),
        ("a.ts", "  debugger;"),
    ],
)
def test_debugger_leftovers(repo: Path, name: str, line: str) -> None:
    result = review(repo, {name: f"x = 1\n{line}\n"})
    found = only(result, "debugger")
    assert [(f.line, f.severity) for f in found] == [(2, Severity.WARN)]


def test_debugger_words_in_comments_and_other_files_are_fine(repo: Path) -> None:
    result = review(
        repo,
        {
            "a.py": "# call breakpoint() to debug\nlogger.console.log('x')\n",
            "notes.md": "use console.log( and breakpoint()\n",
            # openai-python: a test writes a script that prints
            "t.test.cjs": "fs.writeFileSync(p, 'console.log(JSON.stringify(a));');\n"
            'const s = `debugger; console.log("x\\`")`;\n',
        },
    )
    assert result.findings == ()


def test_a_debug_statement_after_a_closed_string_is_found(repo: Path) -> None:
    result = review(repo, {"a.js": "const s = 'it\\'s'; console.log(s);\n"})
    assert [f.line for f in only(result, "debugger")] == [1]


def test_new_todo_is_info(repo: Path) -> None:
    result = review(repo, {"a.py": "x = 1\n# TODO: handle empty input\n# FIXME\n"})
    assert [(f.rule, f.line, f.severity, f.message) for f in result.findings] == [
        ("todo", 2, Severity.INFO, "new TODO: handle empty input"),
        ("todo", 3, Severity.INFO, "new FIXME"),
    ]
    assert result.overall is Overall.APPROVE


def test_missing_final_newline_is_info(repo: Path) -> None:
    result = review(repo, {"a.txt": "one\ntwo"})
    assert [(f.rule, f.line, f.severity) for f in result.findings] == [
        ("no-final-newline", 2, Severity.INFO)
    ]


def test_only_added_lines_are_checked(repo: Path) -> None:
    base = {"a.py": "breakpoint()\n# TODO old\n"}
    result = review(repo, {"a.py": "breakpoint()\n# TODO old\nx = 1\n"}, base_files=base)
    assert result.findings == ()


def test_every_rule_is_documented() -> None:
    doc = (ROOT / "docs" / "review.md").read_text()
    for rule in RULES:
        assert f"`{rule}`" in doc


def test_report_carries_verdict_and_findings_json(repo: Path) -> None:
    result = review(repo, {"a.py": "def f(:\n"})
    text = builtin_report.report(result, reviewed_sha="abc", base_sha="def")
    assert text.rstrip().splitlines()[-1] == "REVIEW_RESULT: REVISE"
    block = text.split("```json\n", 1)[1].split("```", 1)[0]
    data = json.loads(block)
    assert data["overall"] == "revise"
    assert data["reviewed_sha"] == "abc"
    assert data["findings"][0]["rule"] == "python-syntax"
    assert data["findings"][0]["fingerprint"]


def test_fingerprint_survives_line_shifts(repo: Path) -> None:
    first = review(repo, {"a.py": "breakpoint()\n"})
    second = review(repo, {"a.py": "x = 0\ny = 1\nbreakpoint()\n"}, base_files={"a.py": "x = 0\n"})
    (before,), (after,) = only(first, "debugger"), only(second, "debugger")
    assert (before.line, after.line) == (1, 3)
    assert before.fingerprint == after.fingerprint


def test_entropy_and_mask() -> None:
    assert entropy("aaaa") == 0
    assert entropy("abcd") == 2
    masked = mask("AKIA1234567890ABCDEF")
    assert masked.startswith("AKIA") and "1234567890" not in masked


@pytest.mark.skipif(sys.version_info >= (3, 11), reason="Python 3.11+ always has tomllib")
def test_toml_without_a_parser_is_noted_as_unreviewed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tomli", None)  # import tomli -> ImportError
    assert syntax.toml_parser() is None
    result = review(repo, {"x.toml": "a = \n"})
    assert result.unreviewed_files == ("x.toml",)
    assert result.findings == ()
    assert "needs Python 3.11+ or tomli" in result.notes[0]


@pytest.fixture
def imported_root(repo: Path) -> tuple[str, str]:
    """``repo`` with branch ``feat``: main merged with an unrelated history whose root commit
    adds a key and whose next commit removes it; (main, feat)."""
    main = g.head_sha(repo)
    git(repo, "checkout", "-q", "--orphan", "imported")
    git(repo, "rm", "-q", "-rf", ".")
    commit_files(repo, {"s.py": f'KEY = "{AWS_KEY}"\n'}, "imported root")
    git(repo, "rm", "-q", "s.py")
    commit_files(repo, {"b.txt": "b\n"}, "drop the key")
    git(repo, "checkout", "-q", "-b", "feat", "main")
    git(repo, "merge", "-q", "--allow-unrelated-histories", "-m", "merge", "imported")
    return main, g.head_sha(repo)


@pytest.mark.parametrize(
    "setting", ["log.showRoot=false", "i18n.logOutputEncoding=UTF-16", "log.follow=true"]
)
def test_history_scan_is_the_same_whatever_the_user_s_git_settings(
    repo: Path, imported_root: tuple[str, str], setting: str
) -> None:
    """What the root commit of a range adds is scanned also when the user's configuration
    would hide its patch (``log.showRoot``) or print the log in another encoding."""
    key, value = setting.split("=")
    git(repo, "config", key, value)
    result = builtin.review_diff(repo, g.DiffSpec(*imported_root))
    (found,) = result.findings
    assert (found.rule, found.file) == ("aws-access-key", None)
    assert found.message.startswith("s.py:1 in commit ")
    assert result.overall is Overall.REVISE


def test_added_lines_are_numbered_whatever_the_user_s_diff_settings(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``diff.interHunkContext`` and ``GIT_DIFF_OPTS`` would put context lines into the ``-U0``
    patch; the added lines keep their own numbers (where markers and fingerprints are read)."""
    commit_files(repo, {"app.env": "".join(f"K{n}=1\n" for n in range(1, 9))})
    git(repo, "config", "diff.interHunkContext", "5")
    monkeypatch.setenv("GIT_DIFF_OPTS", "--unified=3")
    lines = [f"K{n}=1\n" for n in range(1, 9)]
    lines[1], lines[5] = "K2=2\n", f"API={AWS_KEY}\n"
    result = review(repo, {"app.env": "".join(lines)})
    assert locations(result) == [("aws-access-key", "app.env", 6)]
