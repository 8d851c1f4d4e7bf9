"""A chain's review flows one way (issue 21, item 4): the builtin reviewer's findings reach the
gate and the record as it built them (no report written and parsed back), and an agent
reviewer's report is read once, so its own run record and the step's round say the same.

Real git, the fake agents of tests/fakes, the builtin reviewer in process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.conftest import FAKES
from tests.helpers.chain import call, configure, results
from tests.helpers.chain_accept import RUN, implementer, reviewer_of, setup


def agent_results(repo: Path, kind: str) -> list[dict[str, Any]]:
    runs = sorted((repo / "flows" / "feature" / "runs").glob("*/result.json"))
    found = [json.loads(p.read_text()) for p in runs]
    return [r for r in found if r.get("run", {}).get("kind") == kind]


def test_the_chains_builtin_findings_are_git_agent_reviews_findings(
    repo: Path, tmp_path: Path
) -> None:
    """The defect: the chain's builtin reviewer wrote its report and parsed it back, so its
    findings lost the reviewed lines' content, and their fingerprints (what a baseline or an
    acceptance matches on) differed from ``git agent-review``'s for the same commit. Now the
    round records the very findings ``git agent-review`` reports."""
    setup(repo, implementer(tmp_path, {"app.py": "def f():\n    breakpoint()\n"}))
    out = call(repo, *RUN, "--step", "1", "--max-iterations", "1")
    [result] = results(repo)
    reviewer = reviewer_of(result)
    assert reviewer["findings"], out.stdout + out.stderr
    reviewed = result["chain"]["rounds"][-1]["reviewedSha"]
    same = call(repo, "review", f"{result['chain']['baseSha']}..{reviewed}", "--format", "json")
    data = json.loads(same.stdout)
    assert [f["fingerprint"] for f in reviewer["findings"]] == [
        f["fingerprint"] for f in data["findings"]
    ]
    assert [(f["file"], f["line"], f["rule"]) for f in reviewer["findings"]] == [
        (f["file"], f["line"], f["rule"]) for f in data["findings"]
    ]


def test_a_reviewers_report_is_read_once_so_its_record_and_the_round_agree(
    repo: Path, tmp_path: Path
) -> None:
    """The defect: a chain reviewer's report was parsed twice, once for its run's result.json
    (without knowing the reviewed commit) and once for the gate. A report approving another
    commit than the one reviewed was "approve" in the reviewer's record and no verdict in the
    round. Now both come from the one read: the record says revise, as the gate does."""
    configure(repo)
    report = tmp_path / "report.md"
    block = {"overall": "approve", "findings": [], "reviewed_sha": "0" * 40}
    report.write_text(f"```json\n{json.dumps(block)}\n```\n\nREVIEW_RESULT: APPROVED\n")
    argv = [sys.executable, str(FAKES / "fake_report_reviewer"), str(report)]
    config = repo / ".flow" / "base.yaml"
    text = config.read_text()
    start = text.index("  reviewer:\n")
    config.write_text(
        text[:start] + f"  reviewer:\n    adapter: command\n    command: {json.dumps(argv)}\n"
    )
    out = call(repo, "run", "specs/feature.md", "--quiet", "--step", "1", "--max-iterations", "1")
    assert out.returncode == 1, out.stdout + out.stderr
    [result] = results(repo)
    round_reviewer = reviewer_of(result)
    assert round_reviewer["overall"] is None
    assert "is about commit" in round_reviewer["reason"]
    [review_run] = agent_results(repo, "review")
    assert review_run["overall"] == "revise"
