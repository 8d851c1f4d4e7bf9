"""A chain's re-review after a fix reviews the fix commits only (chain/increment.py, issue 25).

The reviewer is tests/fakes/fake_measuring_reviewer: it runs the diff command its prompt names,
as a real agent does, and logs the prompt and what the command showed; each review round hands
in the next list of findings.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.conftest import FAKES, git, init_repo
from tests.helpers.chain import FAKE, _agent, configure, note, results, run, run_proc

NEEDS_FIX = {"severity": "error", "file": "README.md", "message": "needs a fix"}
NIT = {"severity": "info", "file": "src/new_module.py", "line": 1, "message": "name it better"}


def measuring(
    repo: Path, rounds: list[list[dict[str, Any]]], fixer: list[str] | None = None
) -> Path:
    """The chain's reviewer made the measuring one, handing in ``rounds``; ``fixer``: another
    fixer command. The reviewer's log."""
    configure(repo, reviewer="approve")
    findings, log = repo.parent / "findings.json", repo.parent / "reads.jsonl"
    findings.write_text(json.dumps({"rounds": rounds}))
    argv = [sys.executable, str(FAKES / "fake_measuring_reviewer"), str(findings), str(log)]
    config = repo / ".flow" / "base.yaml"
    text = config.read_text().replace(
        _agent("reviewer", "approve"), f"    adapter: command\n    command: {json.dumps(argv)}\n"
    )
    if fixer is not None:
        text = text.replace(
            _agent("fixer", "fix"), f"    adapter: command\n    command: {json.dumps(fixer)}\n"
        )
    config.write_text(text)
    return log


def reads(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def reviewed(repo: Path) -> list[str]:
    """The heads the rounds of the last step run reviewed (the implementer's, then the fix's)."""
    finished = [r for r in results(repo) if r["chain"]["rounds"]][-1]
    return [r["reviewedSha"] for r in finished["chain"]["rounds"]]


def test_round_two_reviews_only_the_fix_and_its_verdict_covers_the_step(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    log = measuring(repo, [[NEEDS_FIX, NIT], []])
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    first, second = reads(log)
    built, fixed = reviewed(repo)
    assert git(repo, "rev-parse", f"{fixed}~1").strip() == built  # the fix: one commit
    assert first["command"].startswith("git diff ") and first["command"].endswith(f" {built}")
    assert "+def hello():" in first["diffText"]  # round 1: the whole step
    assert second["command"].startswith(f"git diff {built} {fixed} -- ")
    assert "+fixed" in second["diffText"]  # the fix's hunk
    assert "def hello" not in second["diffText"]  # the implementer's hunk, reviewed in round 1
    assert "- src/new_module.py" in second["text"]  # the step's files as context
    assert "name it better" in second["text"]  # the finding still open
    [result] = results(repo)
    rounds = result["chain"]["rounds"]
    assert [r["kind"] for r in rounds] == ["full", "incremental"]
    assert [r["reviewers"][0]["kind"] for r in rounds] == ["full", "incremental"]
    assert rounds[1]["reviewedSha"] == fixed
    # the verdict covers the whole step: the untouched nit is carried, the fixed error is gone
    assert [f["message"] for f in rounds[1]["reviewers"][0]["findings"]] == ["name it better"]
    assert "1 open finding(s) carried over, 1 fixed" in rounds[1]["reviewers"][0]["kindReason"]
    assert (note(repo, fixed) or {}).get("verdict") == "approved"
    assert len(second["diffText"]) < len(first["diffText"])


def test_an_approving_fix_review_with_a_carried_error_is_reviewed_whole(tmp_path: Path) -> None:
    """An error on a line the fix did not change is not the fix review's to drop: the reviewer
    approving the fix is followed by a review of the whole step, whose verdict decides."""
    repo = init_repo(tmp_path / "repo")
    error = {**NIT, "severity": "error"}
    log = measuring(repo, [[error], [], []])
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    commands = [r["command"] for r in reads(log)]
    assert [" -- " in c for c in commands] == [False, True, False]  # full, the fix, full
    [result] = results(repo)
    [_, second] = result["chain"]["rounds"]
    assert second["kind"] == "full" and second["approved"] is True
    assert "decided by a review of the whole step" in second["reviewers"][0]["kindReason"]


def test_a_target_merged_in_before_the_re_review_is_a_full_review(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    mover = tmp_path / "mover"
    mover.write_text(
        "import subprocess, sys\n"
        f"subprocess.run(['git', '-C', {str(repo)!r}, 'commit', '-q', '--allow-empty', '-m', 'moved'], check=True)\n"
        f"sys.exit(subprocess.run([sys.executable, {str(FAKE)!r}, 'fixer', 'fix']).returncode)\n"
    )
    log = measuring(repo, [[NEEDS_FIX], []], fixer=[sys.executable, str(mover)])
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    _, second = reads(log)
    assert "def hello" in second["diffText"]  # the whole step again
    [result] = results(repo)
    rounds = result["chain"]["rounds"]
    assert [r["kind"] for r in rounds] == ["full", "full"]
    assert "the base changed" in rounds[1]["reviewers"][0]["kindReason"]


def test_a_round_after_a_landing_that_found_the_target_moved_says_why_it_is_full(
    tmp_path: Path,
) -> None:
    """The first review moves main: its approval cannot land, main is merged in and the step
    reviewed again, whole. That round said "the step's first review round"."""
    repo = init_repo(tmp_path / "repo")
    log = measuring(repo, [[], []])
    config = repo / ".flow" / "base.yaml"
    measure = json.dumps([sys.executable, str(FAKES / "fake_measuring_reviewer")])[:-1]
    mover = tmp_path / "mover"
    mover.write_text(  # moves main once, then reviews as the measuring reviewer
        "import os, subprocess, sys\n"
        f"if not os.path.exists({str(tmp_path / 'moved')!r}):\n"
        f"    open({str(tmp_path / 'moved')!r}, 'w').close()\n"
        f"    subprocess.run(['git', '-C', {str(repo)!r}, 'commit', '-q', '--allow-empty', '-m', 'moved'], check=True)\n"
        "sys.exit(subprocess.run(sys.argv[1:]).returncode)\n"
    )
    wrapped = json.dumps([sys.executable, str(mover)])[:-1]
    config.write_text(config.read_text().replace(measure, f"{wrapped}, {measure[1:]}"))
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    assert len(reads(log)) == 2
    [result] = results(repo)
    reasons = [r["reviewers"][0]["kindReason"] for r in result["chain"]["rounds"]]
    assert reasons == [
        "full: the step's first review round",
        "full: review 1 approved, but its landing found main moved on: main merged in, a new base",
    ]
    assert [r["kind"] for r in result["chain"]["rounds"]] == ["full", "full"]


def test_a_run_killed_between_rounds_reviews_the_fix_when_run_again(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    killer, marker = tmp_path / "killer", tmp_path / "killed-once"
    killer.write_text(
        "import os, signal, subprocess, sys\n"
        f"code = subprocess.run([sys.executable, {str(FAKE)!r}, 'fixer', 'fix']).returncode\n"
        f"if not os.path.exists({str(marker)!r}):\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n"
        "sys.exit(code)\n"
    )
    log = measuring(repo, [[NEEDS_FIX, NIT], []], fixer=[sys.executable, str(killer)])
    killed = run_proc(repo, "--step", "1")
    assert killed.returncode == -9, killed.stderr + killed.stdout
    assert len(reads(log)) == 1
    again = run(repo, "--step", "1")
    assert again.returncode == 0, again.stderr + again.stdout
    _, second = reads(log)  # round 1's review is reused, not run again
    built, fixed = reviewed(repo)
    assert second["command"].startswith(f"git diff {built} {fixed} -- ")
    assert "def hello" not in second["diffText"]
    finished = [r for r in results(repo) if r["chain"]["rounds"]][-1]
    rounds = finished["chain"]["rounds"]
    assert [(r["kind"], r["reviewedSha"]) for r in rounds] == [
        ("full", built),
        ("incremental", fixed),
    ]


def test_review_incremental_false_reviews_every_round_whole(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    log = measuring(repo, [[NEEDS_FIX], []])
    with (repo / ".flow" / "base.yaml").open("a") as config:
        config.write("review:\n  incremental: false\n")
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    assert "def hello" in reads(log)[1]["diffText"]
    [result] = results(repo)
    second = result["chain"]["rounds"][1]
    assert second["kind"] == "full"
    assert "review.incremental is false" in second["reviewers"][0]["kindReason"]


def test_the_next_fixer_is_told_the_findings_carried_over(tmp_path: Path) -> None:
    """A carried finding is in no report of the round that carried it: the fixer hears of it
    from its assignment, in the reviewer's own line form (``reviewer.agent.open_finding_line``)."""
    repo = init_repo(tmp_path / "repo")
    other = {"severity": "error", "file": "README.md", "message": "still wrong"}
    measuring(repo, [[NEEDS_FIX, NIT], [other], []])
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    told = {
        path.parent.name: path.read_text()
        for path in (repo / "flows").glob("*/agents/*fix*/system_prompt.md")
    }
    assert len(told) == 2, sorted(told)
    first, second = (told[name] for name in sorted(told))
    assert "Still open from an earlier review" not in first
    assert "Still open from an earlier review" in second
    assert "- info src/new_module.py:1: name it better" in second
