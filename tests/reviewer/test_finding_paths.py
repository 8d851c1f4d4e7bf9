"""A finding's file is its path from the top of the repository, whatever the reviewer wrote
(docs/findings.md): an agent reviewer that names files by absolute path (Claude Code's tools
do) got absolute paths in SARIF's ``artifactLocation.uri``, rdjsonl and annotations, and
fingerprints that changed with the checkout's folder; ``/etc/passwd``, ``C:\\x\\a.py`` and
``file:///…`` went through too, and a ``../x.py`` made the whole review fail (git's "outside
repository" while reading the line for the fingerprint: exit 2, DID NOT COMPLETE). Now an absolute path inside the work tree is made relative,
once, where the report is parsed, and a path outside it is a bad field of the report: no
verdict, the reason naming ``findings[N].file``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import FAKES, Cli, git
from tests.helpers.files import commit_files
from tests.helpers.flow_config import command_agents


def _reviewer(repo: Path, file: str, unreviewed: tuple[str, ...] = ()) -> Path:
    """Agent ``rv`` hands in a report with one error finding on ``file``, line 2 (and the
    ``unreviewed_files`` given)."""
    report = repo.parent / "report.md"
    block = {
        "overall": "revise",
        "summary": "s",
        "findings": [{"severity": "error", "file": file, "line": 2, "message": "b is wrong"}],
        "unreviewed_files": list(unreviewed),
    }
    report.write_text(f"```json\n{json.dumps(block)}\n```\nREVIEW_RESULT: REVISE\n")
    agent = [sys.executable, str(FAKES / "fake_report_reviewer"), str(report)]
    (repo / ".flow").mkdir(exist_ok=True)
    (repo / ".flow" / "base.yaml").write_text(command_agents({"rv": agent}))
    (repo / ".git" / "info" / "exclude").write_text("/.flow/\n/flows/\n")
    return report


@pytest.fixture
def changed(repo: Path) -> Path:
    commit_files(repo, {"src/a.py": "a = 1\nb = 2\nc = 3\n"}, "a")
    return repo


def _review(cli: Cli, repo: Path, fmt: str) -> tuple[int, str, str]:
    result = cli.review("HEAD", "--agent", "rv", "--no-note", "--format", fmt, cwd=repo)
    return result.returncode, result.stdout, result.stderr


def test_an_absolute_path_inside_the_work_tree_is_the_path_from_its_top(
    changed: Path, cli: Cli
) -> None:
    top = git(changed, "rev-parse", "--show-toplevel").strip()
    _reviewer(changed, "src/a.py")
    code, out, err = _review(cli, changed, "json")
    assert code == 1, out + err
    relative = json.loads(out)["findings"][0]

    for written in (f"{top}/src/a.py", f"{changed}/src/./a.py", f"{top}/src/../src/a.py"):
        _reviewer(changed, written)
        code, out, err = _review(cli, changed, "sarif")
        assert code == 1, out + err
        (result,) = json.loads(out)["runs"][0]["results"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == "src/a.py"
        assert location["region"]["startLine"] == 2
        code, out, err = _review(cli, changed, "rdjsonl")
        assert json.loads(out)["location"]["path"] == "src/a.py"
        code, out, err = _review(cli, changed, "json")
        finding = json.loads(out)["findings"][0]
        assert finding["file"] == "src/a.py"
        assert finding["fingerprint"] == relative["fingerprint"]  # not the checkout's folder
        assert top not in out


@pytest.mark.parametrize(
    ("file", "why"),
    [
        ("/etc/passwd", "'/etc/passwd' is outside the repository "),
        ("C:\\x\\a.py", "is a Windows path, not one in the repository"),
        ("file:///src/a.py", "'file:///src/a.py' is a URI, not a path"),
        # a sibling package: git's "fatal: '../shared/x.py' is outside repository" made the
        # whole review DID NOT COMPLETE, exit 2 (reading the line for the fingerprint)
        ("../shared/x.py", "'../shared/x.py' is outside the repository; give the file's path"),
    ],
)
def test_a_path_outside_the_repository_is_a_bad_field_of_the_report(
    changed: Path, cli: Cli, file: str, why: str
) -> None:
    _reviewer(changed, file)
    code, out, err = _review(cli, changed, "sarif")
    assert code == 1, out + err
    run = json.loads(out)["runs"][0]
    assert run["results"] == []  # no location outside the repository reaches the upload
    assert "DID NOT COMPLETE" not in out + err and "fatal:" not in err
    code, out, err = _review(cli, changed, "json")
    data = json.loads(out)
    assert data["overall"] is None and data["gate"]["approved"] is False
    assert "outcome" not in data  # the review completed: its verdict is what is refused
    (reason,) = [r for r in data["gate"]["reasons"] if "findings[0].file" in r]
    assert "rv report:1: findings block: findings[0].file: " in reason
    assert why in reason


def test_unreviewed_files_are_checked_as_a_findings_file_is(changed: Path, cli: Cli) -> None:
    """``unreviewed_files`` was shown as the reviewer wrote it ("Findings, verdicts" 9 left it):
    an absolute path reached SARIF's ``artifactLocation.uri``. Now each is its path from the top
    (duplicates once), and one outside the repository is a bad field naming it."""
    top = git(changed, "rev-parse", "--show-toplevel").strip()
    _reviewer(changed, "src/a.py", (f"{top}/assets/big.bin", "./assets//big.bin", "docs/x.pdf"))
    code, out, err = _review(cli, changed, "json")
    assert code == 1, out + err
    assert json.loads(out)["unreviewedFiles"] == ["assets/big.bin", "docs/x.pdf"]
    code, out, err = _review(cli, changed, "sarif")
    notes = json.loads(out)["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    uris = [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in notes]
    assert uris == ["assets/big.bin", "docs/x.pdf"] and top not in out

    for file, why in (
        ("/etc/passwd", "'/etc/passwd' is outside the repository "),
        ("../shared/x.bin", "'../shared/x.bin' is outside the repository; give the file's path"),
        ("file:///x.bin", "'file:///x.bin' is a URI, not a path"),
    ):
        _reviewer(changed, "src/a.py", ("ok.bin", file))
        code, out, err = _review(cli, changed, "json")
        assert code == 1, out + err
        data = json.loads(out)
        assert data["overall"] is None and data["unreviewedFiles"] == []
        (reason,) = [r for r in data["gate"]["reasons"] if "unreviewed_files[1]" in r]
        assert reason.startswith("rv report:1: findings block: unreviewed_files[1]: "), reason
        assert why in reason
