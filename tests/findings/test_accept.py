"""Accepting a builtin finding (docs/review.md, "Accepting a finding"): inline markers, the
``review:`` settings of ``.flow/``, the baseline file, and how every output counts what was
accepted. ``git agent-review`` in process on real git repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitflow_agents.findings import (
    Accepted,
    Finding,
    Review,
    Severity,
    fingerprint,
    gate,
    review_from_dict,
)
from gitflow_agents.findings.baseline import BASELINE_KIND, DEFAULT_BASELINE
from gitflow_agents.findings.settings import glob_regex
from gitflow_agents.reviewer import read_review_note
from tests.conftest import Cli, git
from tests.helpers.files import commit_files

__all__ = ["run"]

from tests.helpers.review import run

AWS = "AKIA" + "Z3X7Q2LMN4PQRS7T"
AWS_2 = "AKIA" + "Z3X7Q2LMN4PQRS8T"


def feature(repo: Path, files: dict[str, str]) -> str:
    git(repo, "checkout", "-q", "-b", "feature")
    return commit_files(repo, files)


def review_json(run: Cli, repo: Path, *args: str) -> tuple[int, dict[str, object]]:
    result = run.review("--format", "json", *args, cwd=repo)
    assert "Traceback" not in result.stderr
    return result.returncode, json.loads(result.stdout)


def rules(items: object) -> list[tuple[object, object]]:
    assert isinstance(items, list)
    return [(item["line"], item["rule"]) for item in items]


def accepted_by(data: dict[str, object]) -> list[tuple[object, object, object]]:
    items = data["accepted"]
    assert isinstance(items, list)
    return [(a["line"], a["rule"], a["accepted"]["by"]) for a in items]


# --- inline markers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        f'KEY = "{AWS}"  # gitleaks:allow',
        f'KEY = "{AWS}"  # pragma: allowlist secret',
        f'KEY = "{AWS}"  // pragma: whitelist secret',
        f'KEY = "{AWS}"  /* agent-review: ignore[aws-access-key] */',
        f'KEY = "{AWS}"  -- agent-review: ignore[todo, aws-access-key]',
        f'KEY = "{AWS}"  <!-- agent-review: ignore -->',
    ],
)
def test_a_marker_on_the_line_accepts_the_secret(run: Cli, repo: Path, line: str) -> None:
    head = feature(repo, {"keys.txt": line + "\n"})
    code, data = review_json(run, repo)
    assert code == 0
    assert data["findings"] == []
    assert accepted_by(data) == [(1, "aws-access-key", "marker")]
    assert data["overall"] == "approve"
    note = read_review_note(repo, head)
    assert note is not None and note.verdict == "approved"


def test_the_why_quotes_the_marker_as_written(run: Cli, repo: Path) -> None:
    """detect-secrets' older `whitelist` spelling is named as the user wrote it."""
    feature(repo, {"keys.txt": f'KEY = "{AWS}"  // pragma: whitelist secret\n'})
    _, data = review_json(run, repo)
    items = data["accepted"]
    assert isinstance(items, list)
    assert [a["accepted"]["why"] for a in items] == ["pragma: whitelist secret on the line"]


def test_detect_secrets_nextline_pragma_covers_only_the_next_line(run: Cli, repo: Path) -> None:
    feature(
        repo,
        {"keys.py": f'# pragma: allowlist nextline secret\nA = "{AWS}"\nB = "{AWS_2}"\n'},
    )
    code, data = review_json(run, repo)
    assert code == 1
    assert rules(data["findings"]) == [(3, "aws-access-key")]
    assert accepted_by(data) == [(2, "aws-access-key", "marker")]


def test_secret_markers_do_not_accept_other_rules(run: Cli, repo: Path) -> None:
    """gitleaks' and detect-secrets' markers are about secrets; our own names any rule."""
    feature(
        repo,
        {
            "a.py": "x = 1  # TODO gitleaks:allow\n"
            "y = 2  # TODO pragma: allowlist secret\n"
            "z = 3  # TODO agent-review: ignore[todo]\n",
        },
    )
    code, data = review_json(run, repo)
    assert rules(data["findings"]) == [(1, "todo"), (2, "todo")]
    assert accepted_by(data) == [(3, "todo", "marker")]
    assert code == 0  # info notes never block at the default threshold


def test_an_ignore_for_another_rule_accepts_nothing(run: Cli, repo: Path) -> None:
    feature(repo, {"keys.py": f'KEY = "{AWS}"  # agent-review: ignore[todo]\n'})
    code, data = review_json(run, repo)
    assert code == 1
    assert rules(data["findings"]) == [(1, "aws-access-key")]
    assert data["accepted"] == []


def test_a_marker_on_another_line_accepts_nothing(run: Cli, repo: Path) -> None:
    feature(repo, {"keys.py": f'# gitleaks:allow\nKEY = "{AWS}"\n'})
    code, data = review_json(run, repo)
    assert code == 1 and data["accepted"] == []


def test_markers_work_for_the_staged_changes_of_the_hook(run: Cli, repo: Path) -> None:
    (repo / "keys.py").write_text(f'KEY = "{AWS}"  # gitleaks:allow\n')
    git(repo, "add", "keys.py")
    result = run.review("--hook", "--format", "json", cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert accepted_by(json.loads(result.stdout)) == [(1, "aws-access-key", "marker")]


# --- .flow/ review settings -------------------------------------------------------------------


def flow(repo: Path, text: str) -> None:
    (repo / ".flow").mkdir(exist_ok=True)
    (repo / ".flow" / "base.yaml").write_text(text)


def test_paths_under_review_exclude_are_not_reviewed(run: Cli, repo: Path) -> None:
    flow(repo, "review:\n  exclude: [tests/fixtures/**, '*.pem.txt']\n")
    feature(
        repo,
        {
            "tests/fixtures/deep/keys.py": f'KEY = "{AWS}"\n',
            "docs/key.pem.txt": f"{AWS}\n",
            "app.py": f'KEY = "{AWS_2}"\n',
        },
    )
    code, data = review_json(run, repo)
    assert code == 1
    assert [f["file"] for f in data["findings"]] == ["app.py"]  # type: ignore[attr-defined, index]
    # never reviewed, so nothing to accept: counted instead (.flow/base.yaml is reviewed)
    assert data["accepted"] == []
    assert data["excludedFiles"] == 2
    assert "2 files excluded by review.exclude" in str(data["summary"])


def test_a_rule_switched_off_is_accepted_and_a_severity_override_gates(
    run: Cli, repo: Path
) -> None:
    flow(
        repo,
        "review:\n"
        "  rules:\n"
        "    aws-access-key: {enabled: false}\n"
        "    todo: {severity: error}\n"
        "    github-token: {exclude: [docs]}\n",
    )
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
    feature(
        repo,
        {"keys.py": f'KEY = "{AWS}"\n', "a.py": "x = 1  # TODO\n", "docs/t.md": token + "\n"},
    )
    code, data = review_json(run, repo)
    assert code == 1
    assert [(f["file"], f["rule"], f["severity"]) for f in data["findings"]] == [  # type: ignore[attr-defined, index]
        ("a.py", "todo", "error")
    ]
    assert sorted((a["file"], a["accepted"]["by"]) for a in data["accepted"]) == [  # type: ignore[attr-defined, index]
        ("docs/t.md", "config"),
        ("keys.py", "config"),
    ]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("review:\n  rules:\n    github-tokn: {enabled: false}\n", ".flow/base.yaml:3"),
        ("review:\n  rules:\n    todo: {severity: off}\n", "write enabled: false"),
        ("review:\n  exclude: ['/']\n", ".flow/base.yaml:2"),
        ("review:\n  exlude: [a]\n", ".flow/base.yaml:2"),
    ],
)
def test_a_bad_review_setting_is_one_line_with_file_and_line(
    run: Cli, repo: Path, text: str, where: str
) -> None:
    flow(repo, text)
    feature(repo, {"keys.py": f'KEY = "{AWS}"\n'})
    result = run.review(cwd=repo)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert where in result.stderr and "review." in result.stderr


def test_a_layer_with_more_than_review_is_still_checked_whole(run: Cli, repo: Path) -> None:
    """Review settings alone are checked against their section's shape; a layer with chain
    settings too is checked against the whole shape, so a typo there is named as before."""
    flow(repo, "review:\n  exclude: [a]\nchain:\n  implementr: builder\n")
    feature(repo, {"keys.py": "x = 1\n"})
    result = run.review(cwd=repo)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert ".flow/base.yaml:4: chain.implementr" in result.stderr


def test_plan_lint_checks_the_review_section(run: Cli, repo: Path) -> None:
    assert run.main("init", cwd=repo).returncode == 0
    base = repo / ".flow" / "base.yaml"
    lines = len(base.read_text().splitlines())
    base.write_text(base.read_text() + "review:\n  rules:\n    no-such-rule: {enabled: false}\n")
    result = run.main("plan", "lint", "specs/example-plan.md", cwd=repo)
    assert result.returncode == 2
    assert f".flow/base.yaml:{lines + 3}: review.rules.no-such-rule" in result.stdout


@pytest.mark.parametrize(
    ("glob", "yes", "no"),
    [
        ("*.md", ["README.md", "docs/a.md"], ["README.mdx", "md"]),
        ("tests/fixtures", ["tests/fixtures/a.py", "tests/fixtures"], ["x/tests/fixtures/a"]),
        ("fixtures/", ["fixtures/a", "a/fixtures/b"], ["fixturesx/a", "fixtures", "a/fixtures"]),
        ("/vendor", ["vendor/x.js"], ["lib/vendor/x.js"]),
        ("docs/*.txt", ["docs/a.txt"], ["docs/sub/a.txt", "x/docs/a.txt"]),
        ("**/keys/*.py", ["keys/a.py", "x/y/keys/a.py"], ["keys/sub/a.py"]),
        ("src/**/gen.py", ["src/gen.py", "src/a/b/gen.py"], ["gen.py"]),
        ("a?.py", ["ab.py", "d/ac.py"], ["a/.py", "abc.py"]),
    ],
)
def test_globs_read_like_gitignore_lines(glob: str, yes: list[str], no: list[str]) -> None:
    pattern = glob_regex(glob)
    assert [p for p in yes if not pattern.fullmatch(p)] == []
    assert [p for p in no if pattern.fullmatch(p)] == []


# --- the baseline -----------------------------------------------------------------------------


def test_write_baseline_records_the_findings_and_later_reviews_report_only_new_ones(
    run: Cli, repo: Path
) -> None:
    head = feature(repo, {"keys.py": f'KEY = "{AWS}"\n', "a.py": "x = 1  # TODO\n"})
    result = run.review("--write-baseline", cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 finding(s) added, 2 recorded" in result.stderr
    assert "APPROVED: no findings, 2 accepted (2 baseline)" in result.stdout
    assert read_review_note(repo, head) is None  # recording is not approving
    path = repo / DEFAULT_BASELINE
    data = json.loads(path.read_text())
    assert data["kind"] == BASELINE_KIND
    assert [(f["file"], f["rule"]) for f in data["findings"]] == [
        ("a.py", "todo"),
        ("keys.py", "aws-access-key"),
    ]
    assert set(data["findings"][0]) == {"file", "rule", "fingerprint"}  # no line numbers

    # A second run changes nothing, not even the file's mtime.
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    again = run.review("--write-baseline", cwd=repo)
    assert again.returncode == 0 and "0 finding(s) added, 2 recorded" in again.stderr
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before

    # A new secret is reported; the recorded one is accepted, and lines moving keeps it so.
    commit_files(repo, {"keys.py": f'# moved down\nKEY = "{AWS}"\nOTHER = "{AWS_2}"\n'})
    code, out = review_json(run, repo)
    assert code == 1
    assert rules(out["findings"]) == [(3, "aws-access-key")]
    assert ("keys.py", 2, "baseline") in [
        (a["file"], a["line"], a["accepted"]["by"])  # type: ignore[index]
        for a in out["accepted"]  # type: ignore[attr-defined]
    ]


@pytest.mark.parametrize("kept", [True, False], ids=["file-kept", "file-deleted"])
def test_write_baseline_accepts_a_secret_only_an_earlier_commit_adds(
    run: Cli, repo: Path, kept: bool
) -> None:
    """Such a finding has no line (docs/review.md: accept it with the baseline); the fingerprint
    acceptance compares is the one the outputs show and the baseline records."""
    feature(repo, {"keys.py": f'KEY = "{AWS}"\n'})
    if kept:
        commit_files(repo, {"keys.py": "KEY = None\n"})
    else:
        (repo / "keys.py").unlink()
        commit_files(repo, {})
    code, before = review_json(run, repo)
    findings = before["findings"]
    assert code == 1 and isinstance(findings, list)
    assert [(f.get("line"), f["rule"]) for f in findings] == [(None, "aws-access-key")]
    written = run.review("--write-baseline", cwd=repo)
    assert "1 finding(s) added, 1 recorded" in written.stderr
    assert written.returncode == 0, written.stdout
    code, after = review_json(run, repo)
    assert code == 0
    assert after["findings"] == []
    assert [a["accepted"]["by"] for a in after["accepted"]] == ["baseline"]  # type: ignore[index,union-attr]
    assert after["accepted"][0]["fingerprint"] == findings[0]["fingerprint"]  # type: ignore[index]


def test_each_secret_of_a_line_is_reported_gated_and_baselined_apart(run: Cli, repo: Path) -> None:
    """Two secret-named values on one line (the second was never looked for): two findings,
    two fingerprints. A baseline holding only the first (written when it was the line's only
    finding) still accepts it and leaves the second reported, until it is recorded too."""
    flow(repo, "review:\n  rules:\n    high-entropy-secret: {severity: error}\n")
    line = '{"db_password": "Xk29slQp7aBq", "api_secret": "Zx8kQ2pL9vR4tYw7nB3m"}'
    feature(repo, {"b.json": line + "\n"})
    code, data = review_json(run, repo)
    findings = data["findings"]
    assert code == 1 and isinstance(findings, list)
    assert rules(findings) == [(1, "high-entropy-secret"), (1, "high-entropy-secret")]
    first, second = (f["fingerprint"] for f in findings)
    assert first == fingerprint("b.json", "high-entropy-secret", "", line) != second

    entry = {"file": "b.json", "rule": "high-entropy-secret", "fingerprint": first}
    (repo / DEFAULT_BASELINE).write_text(json.dumps({"kind": BASELINE_KIND, "findings": [entry]}))
    code, data = review_json(run, repo)
    assert code == 1
    assert [f["fingerprint"] for f in data["findings"]] == [second]  # type: ignore[attr-defined, index]
    assert accepted_by(data) == [(1, "high-entropy-secret", "baseline")]
    written = run.review("--write-baseline", cwd=repo)
    assert "1 finding(s) added, 2 recorded" in written.stderr
    assert written.returncode == 0, written.stdout
    code, data = review_json(run, repo)
    assert code == 0 and data["findings"] == []


def test_two_lines_that_read_the_same_are_two_findings_everywhere(run: Cli, repo: Path) -> None:
    """Two ``breakpoint()`` lines: two fingerprints in every output (SARIF's
    partialFingerprints too, or code scanning shows one alert). A baseline written when they
    shared one fingerprint keeps accepting the first; the second is reported with the
    fingerprint it had beside the first, so --write-baseline records what later reviews
    compare."""
    text = "def f():\n    breakpoint()\n    return 1\n\n\ndef g():\n    breakpoint()\n"
    feature(repo, {"a.py": text})
    code, data = review_json(run, repo, "--severity-threshold", "warn")
    findings = data["findings"]
    assert code == 1 and isinstance(findings, list)
    assert rules(findings) == [(2, "debugger"), (7, "debugger")]
    first, second = (f["fingerprint"] for f in findings)
    assert first == fingerprint("a.py", "debugger", "", "breakpoint()") != second
    assert [f.get("occurrence") for f in findings] == [None, 2]
    sarif = json.loads(run.review("--format", "sarif", cwd=repo).stdout)
    partial = [r["partialFingerprints"] for r in sarif["runs"][0]["results"]]
    assert [p["gitflowAgentsFingerprint/v1"] for p in partial] == [first, second]

    entry = {"file": "a.py", "rule": "debugger", "fingerprint": first}  # an older baseline
    (repo / DEFAULT_BASELINE).write_text(json.dumps({"kind": BASELINE_KIND, "findings": [entry]}))
    code, data = review_json(run, repo, "--severity-threshold", "warn")
    assert code == 1
    assert [(f["line"], f["fingerprint"]) for f in data["findings"]] == [(7, second)]  # type: ignore[attr-defined, index]
    assert accepted_by(data) == [(2, "debugger", "baseline")]
    written = run.review("--write-baseline", cwd=repo)
    assert "1 finding(s) added, 2 recorded" in written.stderr, written.stderr
    code, data = review_json(run, repo, "--severity-threshold", "warn")
    assert code == 0 and data["findings"] == []
    assert accepted_by(data) == [(2, "debugger", "baseline"), (7, "debugger", "baseline")]


def test_a_second_copy_added_below_a_baselined_line_is_reported(run: Cli, repo: Path) -> None:
    """The baseline accepts the file's one ``breakpoint()``; a later commit adds a second one
    to the file. The review of that commit alone has only the new line's finding, and it is
    numbered by the file's lines that read the same above it (code scanning's rule), so it is
    the second copy, not the baselined first (/tmp/t25r/repro-1.sh: it was accepted). The same
    review run again gives the same fingerprints."""
    commit_files(repo, {"src/a.py": "def f():\n    breakpoint()\n    return 1\n"})
    written = run.review("HEAD", "--write-baseline", cwd=repo)
    assert "1 finding(s) added, 1 recorded" in written.stderr, written.stderr
    git(repo, "add", DEFAULT_BASELINE)
    git(repo, "commit", "-q", "-m", "accept the existing breakpoint")
    with (repo / "src/a.py").open("a") as file:
        file.write("\n\ndef g():\n    breakpoint()\n    return 2\n")
    git(repo, "commit", "-q", "-am", "g: a new breakpoint")

    code, data = review_json(run, repo, "HEAD", "--severity-threshold", "warn")
    assert code == 1
    assert rules(data["findings"]) == [(7, "debugger")]
    assert data["accepted"] == []
    (found,) = data["findings"]  # type: ignore[misc]
    assert found["occurrence"] == 2
    assert found["fingerprint"] == fingerprint("src/a.py", "debugger", "", "breakpoint()", 2)
    sarif = json.loads(run.review("HEAD", "--format", "sarif", cwd=repo).stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["partialFingerprints"]["gitflowAgentsFingerprint/v1"] == found["fingerprint"]
    assert review_json(run, repo, "HEAD", "--severity-threshold", "warn") == (code, data)
    # recorded, it is accepted; the first stays accepted by the entry written for it alone
    written = run.review("HEAD", "--write-baseline", cwd=repo)
    assert "1 finding(s) added, 2 recorded" in written.stderr, written.stderr
    code, data = review_json(run, repo, "HEAD~3..HEAD", "--severity-threshold", "warn")
    assert code == 0 and data["findings"] == []
    assert accepted_by(data) == [(2, "debugger", "baseline"), (7, "debugger", "baseline")]


@pytest.mark.parametrize("accepting", ["marker", "config"])
def test_a_secret_accepted_before_its_file_is_renamed_stays_accepted(
    run: Cli, repo: Path, accepting: str
) -> None:
    """A later commit of the branch moves the file (git mv): the line is still added, at its
    new path, and accepted there as it was; no history finding for the old path."""
    line = f'FAKE = "{AWS}"' + ("  # gitleaks:allow" if accepting == "marker" else "")
    if accepting == "config":
        flow(repo, "review:\n  rules:\n    aws-access-key: {exclude: [tests/]}\n")
    feature(repo, {"tests/fixture_a.py": line + "\n"})
    git(repo, "mv", "tests/fixture_a.py", "tests/fixtures.py")
    git(repo, "commit", "-q", "-m", "rename fixture")
    code, data = review_json(run, repo)
    assert (code, data["findings"]) == (0, [])
    assert [(a["file"], a["accepted"]["by"]) for a in data["accepted"]] == [  # type: ignore[attr-defined, index]
        ("tests/fixtures.py", accepting)
    ]


def test_write_baseline_keeps_what_the_file_holds(run: Cli, repo: Path) -> None:
    feature(repo, {"keys.py": f'KEY = "{AWS}"\n'})
    assert run.review("--write-baseline", cwd=repo).returncode == 0
    commit_files(repo, {"other.py": f'KEY = "{AWS_2}"\n'})
    result = run.review("HEAD", "--write-baseline", cwd=repo)  # only the last commit
    assert result.returncode == 0
    assert "1 finding(s) added, 2 recorded" in result.stderr
    recorded = json.loads((repo / DEFAULT_BASELINE).read_text())["findings"]
    assert [f["file"] for f in recorded] == ["keys.py", "other.py"]


def test_an_explicit_baseline_file(run: Cli, repo: Path) -> None:
    feature(repo, {"keys.py": f'KEY = "{AWS}"\n'})
    (repo / "sub").mkdir()
    result = run.review("--write-baseline", "b.json", cwd=repo / "sub")
    assert result.returncode == 0 and (repo / "sub" / "b.json").is_file()
    assert not (repo / DEFAULT_BASELINE).exists()
    assert run.review(cwd=repo).returncode == 1  # not at the default path
    code, data = review_json(run, repo, "--baseline", "sub/b.json")
    assert code == 0
    assert accepted_by(data) == [(1, "aws-access-key", "baseline")]


@pytest.mark.parametrize(
    ("args", "text", "expected"),
    [
        (("--baseline", "missing.json"), None, "missing.json"),
        (("--write-baseline", "main..HEAD"), None, "main..HEAD"),
        (("--agent", "reviewer", "--baseline", "b.json"), None, "builtin"),
        ((), "{not json", f"{DEFAULT_BASELINE}:1"),
        ((), '{"kind": "other"}', DEFAULT_BASELINE),
        ((), json.dumps({"kind": BASELINE_KIND, "findings": [{"file": 1}]}), "findings[0].file"),
        (("--write-baseline",), "[]", DEFAULT_BASELINE),
    ],
)
def test_baseline_problems_are_one_line_exit_2(
    run: Cli, repo: Path, args: tuple[str, ...], text: str | None, expected: str
) -> None:
    feature(repo, {"keys.py": f'KEY = "{AWS}"\n'})
    if text is not None:
        (repo / DEFAULT_BASELINE).write_text(text)
    result = run.review(*args, cwd=repo)
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stderr and "Traceback" not in result.stderr
    if text is not None:
        assert (repo / DEFAULT_BASELINE).read_text() == text  # never silently replaced


# --- outputs ----------------------------------------------------------------------------------


def marked_repo(repo: Path) -> None:
    feature(repo, {"keys.py": f'A = "{AWS}"  # gitleaks:allow\nB = "{AWS_2}"\n'})


def test_terminal_and_annotations_count_the_accepted(run: Cli, repo: Path) -> None:
    marked_repo(repo)
    terminal = run.review(cwd=repo).stdout
    assert "accepted: keys.py:1 [aws-access-key]: gitleaks:allow on the line" in terminal
    assert "REVISE: 1 error, 1 accepted (1 marker);" in terminal
    annotations = run.review("--format", "annotations", cwd=repo).stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in annotations] == ["::error", "::error"]
    assert "1 accepted (1 marker)" in annotations[-1]
    assert "line=1" not in "".join(annotations)  # an accepted finding is no annotation


def test_sarif_marks_accepted_results_with_suppressions(run: Cli, repo: Path) -> None:
    marked_repo(repo)
    sarif = json.loads(run.review("--format", "sarif", cwd=repo).stdout)["runs"][0]
    results = {
        r["locations"][0]["physicalLocation"]["region"]["startLine"]: r for r in sarif["results"]
    }
    assert "suppressions" not in results[2]
    assert results[1]["suppressions"] == [
        {"kind": "inSource", "status": "accepted", "justification": "gitleaks:allow on the line"}
    ]
    assert sarif["properties"]["accepted"] == 1


def test_markdown_lists_the_accepted_closed(run: Cli, repo: Path) -> None:
    marked_repo(repo)
    text = run.review("--format", "markdown", cwd=repo).stdout
    assert "1 error · 1 accepted (1 marker)" in text
    accepted = text[text.index("<summary>☑️ Accepted (1)</summary>") :]
    assert "`keys.py:1`" in accepted and "accepted: gitleaks:allow on the line" in accepted
    assert AWS not in text


def test_accepted_findings_round_trip_and_never_gate() -> None:
    secret = Finding(Severity.ERROR, "key", file="k.py", line=1, rule="aws-access-key")
    review = Review(
        overall=None,
        accepted=(Accepted(secret.with_fingerprint("x"), "baseline", "recorded in b.json"),),
        reviewed_sha="a" * 40,
    )
    back = review_from_dict(json.loads(json.dumps(review.to_dict())))
    assert back.accepted == review.accepted
    approve = review_from_dict({**review.to_dict(), "overall": "approve"})
    assert gate(approve, threshold=Severity.INFO, head_sha="a" * 40).approved
    with pytest.raises(ValueError, match=r"accepted\[0\]\.accepted\.by"):
        review_from_dict({"accepted": [{**secret.to_dict(), "accepted": {"by": "magic"}}]})


@pytest.mark.parametrize("fmt", ["json", "markdown", "sarif", "terminal"])
def test_accepted_findings_are_masked_like_findings(fmt: str) -> None:
    from gitflow_agents.render import render

    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
    finding = Finding(Severity.ERROR, f"token {token} here", file="k.py", line=1, rule="x")
    review = Review(overall=None, accepted=(Accepted(finding, "marker", f"why {token}"),))
    text = render(review, None, fmt)
    assert "ghp_****" in text or "ghp_*" in text
    assert token not in text
