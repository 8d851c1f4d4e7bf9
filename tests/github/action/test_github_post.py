"""The two-job split: a read-only job reviews, a second job posts its findings file.

The review job runs with a read-only token (``permissions: contents: read``): it degrades to
annotations and the job summary and writes ``findings-file``. The posting job has no checkout
(an empty working directory), downloads that file and runs ``gitflow-agents action
--post-findings FILE`` with a token that may write: sticky comment, inline review and the final
status, at most three writes, nothing new on a re-run; it gates the verdict again itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.findings import Finding, Overall, Review, Severity, gate
from gitflow_agents.github.action.comment import RunRow
from gitflow_agents.github.action.publish import load_findings, write_result_files
from gitflow_agents.github.action.review import InlineOutcome, inline_note
from tests.github_standin import GitHubStandIn, Pull, gh
from tests.helpers.action_runner import BROKEN, FINE, Runner, add_pull, pr_event, runner, states

__all__ = ["gh", "runner"]


@pytest.fixture
def poster(tmp_path: Path, gh: GitHubStandIn) -> Runner:
    """The posting job: its own runner files, and no repository at all in its workspace."""
    empty = tmp_path / "post" / "workspace"
    empty.mkdir(parents=True)
    return Runner(tmp_path / "post", gh, empty)


def review_job(runner: Runner, gh: GitHubStandIn, pull: Pull) -> Path:
    result = runner.run("pull_request", pr_event(gh, pull), "tok-read", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    outputs = runner.outputs()
    assert outputs["degraded"] == "true"
    return Path(outputs["findings-file"])


def post(poster: Runner, gh: GitHubStandIn, pull: Pull, findings: Path, *args: str) -> Any:
    return poster.run(
        "pull_request", pr_event(gh, pull), "tok-actions", "--post-findings", str(findings), *args
    )


def test_review_read_only_then_post_from_a_second_job(
    runner: Runner, poster: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN, "fine.py": FINE})
    findings = review_job(runner, gh, pull)
    assert gh.comments_on(7) == [] and gh.statuses_for(pull.head_sha) == []
    before = len(gh.writes())  # the review job's one refused write

    result = post(poster, gh, pull, findings)
    assert result.returncode == 1, result.stderr  # revise; the default fail-on fails this job
    assert "Traceback" not in result.stderr
    assert not re.search(r"^::error file=", result.stdout, re.M)  # annotations: review job only
    writes = gh.writes()[before:]
    assert len(writes) == 3, [(w.method, w.path) for w in writes]
    assert states(gh, pull.head_sha) == ["failure"]  # no pending: the verdict is already known
    (summary,) = gh.comments_on(7)
    assert "Run history" in summary["body"] and "PR #7" in summary["body"]
    assert len(gh.state.reviews) == 1
    assert all(c["path"] == "broken.py" for c in gh.state.review_comments.values())
    outputs = poster.outputs()
    assert outputs["review-result"] == "revise"
    assert outputs["findings-file"] == str(findings)
    assert outputs["degraded"] == "false" and outputs["github-writes"] == "3"
    assert "gitflow-agents review: REVISE" in poster.summary.read_text()

    again = post(poster, gh, pull, findings)
    assert again.returncode == 1, again.stderr
    assert len(gh.comments_on(7)) == 1 and len(gh.state.reviews) == 1
    assert poster.outputs()["inline-posted"] == "0"


def test_an_approved_findings_file_turns_the_status_green(
    runner: Runner, poster: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    findings = review_job(runner, gh, pull)
    result = post(poster, gh, pull, findings)
    assert result.returncode == 0, result.stderr
    assert states(gh, pull.head_sha) == ["success"]
    assert poster.outputs()["review-result"] == "approved"


ERROR = {"severity": "error", "file": "fine.py", "line": 2, "message": "magic number"}


def rewrite(path: Path, **changes: Any) -> Path:
    data = json.loads(path.read_text())
    data.update(changes)
    out = path.with_name("edited.json")
    out.write_text(json.dumps(data))
    return out


def test_a_findings_file_for_another_commit_cannot_approve(
    runner: Runner, poster: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    other = rewrite(review_job(runner, gh, pull), reviewedSha=pull.base_sha)
    result = post(poster, gh, pull, other)
    assert result.returncode == 1, result.stderr
    assert "cannot approve this commit" in result.stdout
    assert states(gh, pull.head_sha) == ["failure"]


@pytest.mark.parametrize("overall", ["approve", "APPROVED", "Approved"])
def test_the_markers_word_approves_as_approve_does(
    runner: Runner, poster: Runner, gh: GitHubStandIn, repo: Path, overall: str
) -> None:
    """``APPROVED`` is the verdict marker's word for approve (``CHANGES_REQUESTED`` for
    revise): the same verdict, gated again like any other."""
    pull = add_pull(gh, repo, {"fine.py": FINE})
    result = post(poster, gh, pull, rewrite(review_job(runner, gh, pull), overall=overall))
    assert result.returncode == 0, result.stderr
    assert states(gh, pull.head_sha) == ["success"]


@pytest.mark.parametrize(
    ("changes", "label", "why"),
    [
        # the marker's word with an error finding: the finding blocks, as for "approve"
        (
            {"overall": "APPROVED", "findings": [ERROR]},
            "not-approved",
            "1 finding at or above error",
        ),
        ({"overall": "CHANGES_REQUESTED"}, "revise", "the reviewer asks for changes"),
        # a file that says its review did not complete cannot approve, whatever its overall
        (
            {"overall": "APPROVED", "outcome": "budget"},
            "not-approved",
            "the review did not complete (budget)",
        ),
    ],
)
def test_a_findings_file_claiming_approved_is_gated_again(
    runner: Runner,
    poster: Runner,
    gh: GitHubStandIn,
    repo: Path,
    changes: dict[str, Any],
    label: str,
    why: str,
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    result = post(poster, gh, pull, rewrite(review_job(runner, gh, pull), **changes))
    assert result.returncode == 1, result.stderr
    assert states(gh, pull.head_sha) == ["failure"]
    assert poster.outputs()["review-result"] == label
    (summary,) = gh.comments_on(7)
    assert why in summary["body"] and "✅" not in summary["body"]


def test_an_overall_outside_the_vocabulary_is_a_malformed_file(
    runner: Runner, poster: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    edited = rewrite(review_job(runner, gh, pull), overall="LGTM")
    result = post(poster, gh, pull, edited)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{edited}: not a findings file: overall: expected approve or revise" in result.stderr
    assert states(gh, pull.head_sha) == ["error"]
    assert poster.outputs()["review-result"] == "error"


def test_the_posting_job_gates_with_its_own_threshold(
    runner: Runner, poster: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """The review job approved (threshold error); the file's ``gate`` says approved. The posting
    job's threshold is warn, so a warn finding blocks: the file's own gate is not trusted."""
    pull = add_pull(gh, repo, {"fine.py": FINE})
    findings = review_job(runner, gh, pull)
    data = json.loads(findings.read_text())
    assert data["gate"]["approved"] is True
    warn = {"severity": "warn", "file": "fine.py", "line": 2, "message": "magic number"}
    edited = rewrite(findings, findings=[warn])
    result = post(poster, gh, pull, edited, "--severity-threshold", "warn")
    assert result.returncode == 1, result.stderr
    assert states(gh, pull.head_sha) == ["failure"]


def test_a_missing_findings_file_sets_error_and_exits_2(
    poster: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    missing = tmp_path / "nowhere" / "findings.json"
    result = post(poster, gh, pull, missing)
    assert result.returncode == 2
    assert f"{missing}: cannot read the findings file" in result.stderr
    assert "Traceback" not in result.stderr
    assert states(gh, pull.head_sha) == ["error"]
    assert poster.outputs()["review-result"] == "error"


def test_a_malformed_findings_file_names_the_key(
    poster: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    bad = tmp_path / "findings.json"
    bad.write_text(json.dumps({"overall": "approve", "findings": [{"severity": "loud"}]}))
    result = post(poster, gh, pull, bad)
    assert result.returncode == 2
    assert "not a findings file: findings[0]" in result.stderr
    assert states(gh, pull.head_sha) == ["error"]


def test_hostile_run_history_is_shown_safely(
    runner: Runner, poster: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    findings = review_job(runner, gh, pull)
    hostile = [{"flow": "review", "agent": "@everyone <b>x</b> | y", "tokens": "lots", "step": []}]
    result = post(poster, gh, pull, rewrite(findings, runHistory=hostile))
    assert result.returncode == 0, result.stderr
    (summary,) = gh.comments_on(7)
    assert "@everyone" not in summary["body"] and "<b>" not in summary["body"]


# ---------------------------------------------------------------------------------------------
# The findings file itself (no network, no git)
# ---------------------------------------------------------------------------------------------


def test_a_findings_file_round_trips_review_and_run_history(tmp_path: Path) -> None:
    result = Review(
        Overall.REVISE,
        findings=(Finding(Severity.ERROR, "boom", "a.py", 3).with_fingerprint(),),
        reviewed_sha="c" * 40,
    )
    verdict = gate(result, threshold=Severity.ERROR, head_sha="c" * 40)
    row = RunRow("review", "builtin", "revise", "PR #7", 1, 2, 10, 1, 0.5, 1200, 0.01)
    findings_file, sarif_file = write_result_files(tmp_path / "out", result, verdict, [row])
    assert json.loads(sarif_file.read_text())["version"] == "2.1.0"
    loaded, rows = load_findings(findings_file)
    assert loaded.findings == result.findings and loaded.reviewed_sha == result.reviewed_sha
    assert rows == [row]


def test_run_history_values_of_the_wrong_type_become_unknown(tmp_path: Path) -> None:
    path = tmp_path / "findings.json"
    hostile = [
        {"flow": "review", "agent": ["x"], "tokens": "lots", "iterations": True, "step": []},
        "not a row",
        {"durationSeconds": 2, "costUsd": False, "filesChanged": 3},
    ]
    path.write_text(json.dumps({"overall": "approve", "findings": [], "runHistory": hostile}))
    _, rows = load_findings(path)
    assert rows == [
        RunRow("review", "—", "—"),
        RunRow("review", "—", "—", files_changed=3, duration_s=2.0),
    ]


def test_the_inline_note_counts_each_fate_and_escapes_githubs_reasons() -> None:
    one = (Finding(Severity.WARN, "w", "a.py", 1),)
    note = inline_note(
        InlineOutcome(posted=one, already=one * 2, summary_only=one, refused=("<b>@x</b>",))
    )
    assert note.startswith(
        "**Inline:** 1 posted inline now; 2 already inline from an earlier run; "
        "1 listed here only (outside the diff or over the cap)."
    )
    assert "GitHub refused some inline comments" in note
    assert "<b>" not in note and "@x" not in note
    assert inline_note(InlineOutcome()) == ""
