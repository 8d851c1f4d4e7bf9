"""Accepting a finding where the builtin reviewer gates a chain (docs/chains.md, "Accepting a
finding"): ``run``, ``run --pr`` and ``flow review`` accept what ``git agent-review`` accepts,
in the same order, and count it; the settings and the baseline come from the config the run
reads (your work tree; the target's commit with ``--pr``), never from the step's own commits.

Real git, the fake agents of tests/fakes, the builtin reviewer in process; ``--pr`` against the
GitHub stand-in as in tests/github/pr/test_step_pr.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import git
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.chain import FAKE, call, results
from tests.helpers.chain_accept import RUN, _agent, implementer, reviewer_of, setup
from tests.helpers.step_pr import BRANCH, env, run_pr, setup_repo, summaries

__all__ = ["env", "gh"]

# a GitHub token of the real shape (split, so this file is not itself a finding)
TOKEN = "ghp_" + "Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6"


def test_a_marked_test_key_is_accepted_by_the_chain_as_by_git_agent_review(
    repo: Path, tmp_path: Path
) -> None:
    """The defect: a step whose code carries a deliberate test key marked ``gitleaks:allow``
    was rejected by the chain and approved by ``git agent-review``. Now both approve it and
    count the accepted finding: the round in result.json, the history line."""
    line = f'TOKEN = "{TOKEN}"  # gitleaks:allow (a deliberate test key)\n'
    setup(repo, implementer(tmp_path, {"tests/keys.py": line}))
    out = call(repo, *RUN, "--step", "1", "--max-iterations", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    [result] = results(repo)
    assert result["chain"]["outcome"] == "approved"
    reviewer = reviewer_of(result)
    assert reviewer["overall"] == "approve" and reviewer["findings"] == []
    [accepted] = reviewer["accepted"]
    assert accepted["file"] == "tests/keys.py" and accepted["line"] == 1
    assert accepted["rule"] == "github-token" and accepted["accepted"]["by"] == "marker"
    assert TOKEN not in json.dumps(result)  # recorded, and masked like every finding
    assert "(1 finding accepted)" in result["run"]["historyLine"]
    history = (repo / "flows" / "feature" / "history.md").read_text()
    assert "step 1 approved after 1 review (1 finding accepted)" in history
    # git agent-review of the same range says the same
    reviewed = result["chain"]["rounds"][-1]["reviewedSha"]
    same = call(repo, "review", f"{result['chain']['baseSha']}..{reviewed}", "--format", "json")
    assert same.returncode == 0, same.stdout + same.stderr
    data = json.loads(same.stdout)
    assert data["findings"] == [] and len(data["accepted"]) == 1
    assert data["accepted"][0]["fingerprint"] == accepted["fingerprint"]


def test_a_step_cannot_accept_its_own_secret(repo: Path, tmp_path: Path) -> None:
    """An implementer that adds a key together with a ``review:`` exclude for it, a rule
    switched off and a baseline recording it: all on the step branch, none of it counts,
    since a local run reads what it accepts from your work tree."""
    sly = "review:\n  exclude: [keys.py]\n  rules:\n    github-token:\n      enabled: false\n"
    key = {"keys.py": f'TOKEN = "{TOKEN}"\n'}
    setup(repo, implementer(tmp_path, key, baseline=True, then={".flow/base.yaml": sly}))
    out = call(repo, *RUN, "--step", "1", "--max-iterations", "1")
    assert out.returncode == 1, out.stdout + out.stderr
    [result] = results(repo)
    assert result["chain"]["outcome"] == "rejected"
    reviewer = reviewer_of(result)
    assert reviewer["accepted"] == []
    assert [f["rule"] for f in reviewer["findings"]] == ["github-token"]
    # the step's branch does hold the exclude and the baseline it wrote for itself
    branch = result["chain"]["branch"]
    assert "exclude: [keys.py]" in git(repo, "show", f"{branch}:.flow/base.yaml")
    baseline = json.loads(git(repo, "show", f"{branch}:.agent-review-baseline.json"))
    assert [e["file"] for e in baseline["findings"]] == ["keys.py"]
    assert "accepted" not in result["run"]["historyLine"]


def test_settings_added_after_a_rejection_count_on_the_re_run(repo: Path, tmp_path: Path) -> None:
    """Rejected; you accept the fixture key in your .flow/base.yaml; the same command again
    approves in its first round: the implementer is reused, the builtin review is not (a
    reused REVISE would have sent the fixer after a finding you accepted). A third run finds
    the step done."""
    setup(repo, implementer(tmp_path, {"fixtures/keys.py": f'TOKEN = "{TOKEN}"\n'}))
    first = call(repo, *RUN, "--step", "1", "--max-iterations", "1")
    assert first.returncode == 1, first.stdout + first.stderr
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text() + "review:\n  rules:\n    github-token:\n      exclude: [fixtures/]\n"
    )
    again = call(repo, *RUN, "--step", "1")
    assert again.returncode == 0, again.stdout + again.stderr
    second = results(repo)[-1]
    chain = second["chain"]
    assert chain["outcome"] == "approved" and chain["iterations"] == 1 and chain["fixes"] == 0
    kinds = {(a["kind"], a["reused"]) for a in chain["agents"]}
    assert kinds == {("implement", True), ("review", False)}
    [accepted] = reviewer_of(second)["accepted"]
    assert accepted["accepted"]["by"] == "config"
    assert "review.rules.github-token.exclude 'fixtures/'" in accepted["accepted"]["why"]
    assert ".flow/base.yaml:" in accepted["accepted"]["why"]
    third = call(repo, *RUN, "--step", "1")
    assert third.returncode == 0 and "already ✅" in third.stdout


def test_flow_review_counts_what_the_builtin_reviewer_accepted(repo: Path, tmp_path: Path) -> None:
    """``flow review`` with the builtin reviewer beside an agent reviewer: the marked key is
    accepted, counted in the verdict line and listed in --json (merged over reviewers)."""
    setup(repo, implementer(tmp_path, {}))
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text()
        + f"  other:\n{_agent([sys.executable, str(FAKE), 'reviewer', 'approve'])}"
    )
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "keys.py").write_text(f'TOKEN = "{TOKEN}"  # agent-review: ignore[github-token]\n')
    git(repo, "add", "keys.py")
    git(repo, "commit", "-q", "-m", "a test key")
    args = ("flow", "review", "--range", f"{base}..HEAD", "--reviewers", "offline,other")
    out = call(repo, *args, "--quiet")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "APPROVED:" in out.stdout and "1 accepted (1 marker)" in out.stdout
    data = json.loads(call(repo, *args, "--quiet", "--json").stdout)
    assert data["approved"] is True and data["findings"] == []
    assert [a["accepted"]["by"] for a in data["accepted"]] == ["marker"]


def test_run_pr_reads_what_it_accepts_from_the_target_never_the_pull_request(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """``run --pr``: the target's committed ``review:`` settings accept the fixture key; the
    step's own exclude (on the pull request's head) and your checkout's uncommitted one do
    not accept the other key, so the step is rejected with one finding and one accepted, and
    the pull request's summary comment counts and lists the accepted one."""
    files = {
        "fixtures/keys.py": f'TOKEN = "{TOKEN}"\n',
        "keys.py": f'TOKEN = "{TOKEN}"\n',
        # appended under the target's ``review:`` (a second ``review:`` key is a yaml-syntax error)
        ".flow/base.yaml": "  exclude: [keys.py]\n",
    }
    repo = setup_repo(tmp_path, gh, reviewer="builtin", implementer=implementer(tmp_path, files))
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text() + "review:\n  rules:\n    github-token:\n      exclude: [fixtures/]\n"
    )
    git(repo, "commit", "-q", "-am", "accept the fixtures")
    git(repo, "push", "-q", "origin", "main")
    config.write_text(config.read_text().replace("[fixtures/]", "[fixtures/, keys.py]"))
    out = run_pr(repo, "--step", "1", "--max-iterations", "1")
    assert out.returncode == 1, out.stdout + out.stderr
    result = next(r for r in results(repo) if r["chain"]["step"] == 1)
    reviewer = reviewer_of(result)
    assert [f["file"] for f in reviewer["findings"]] == ["keys.py"]
    [accepted] = reviewer["accepted"]
    assert accepted["file"] == "fixtures/keys.py" and accepted["accepted"]["by"] == "config"
    target = git(repo, "rev-parse", "origin/main").strip()
    assert f"{target[:12]}:.flow/base.yaml" in accepted["accepted"]["why"]
    assert "exclude: [keys.py]" in git(repo, "show", f"origin/{BRANCH}:.flow/base.yaml")
    [summary] = summaries(gh, 1)
    assert "Accepted (1)" in summary and "1 accepted (1 config)" in summary


def test_a_broken_baseline_in_the_work_tree_is_exit_2_naming_it(repo: Path, tmp_path: Path) -> None:
    """Bad input the builtin review reads: one line naming the file, exit 2, and the step's
    record says it failed; with the file fixed the same command approves (the implementer is
    reused)."""
    line = f'TOKEN = "{TOKEN}"  # gitleaks:allow\n'
    setup(repo, implementer(tmp_path, {"tests/keys.py": line}))
    (repo / ".agent-review-baseline.json").write_text(
        '{"kind": "gitflow-agents/review-baseline/v1",\n  "findings": [}\n'
    )
    out = call(repo, *RUN, "--step", "1", "--max-iterations", "1")
    assert out.returncode == 2, out.stdout + out.stderr
    assert ".agent-review-baseline.json:2" in out.stderr and "Traceback" not in out.stderr
    [result] = results(repo)
    assert result["chain"]["outcome"] == "failed" and result["chain"]["exitCode"] == 2
    (repo / ".agent-review-baseline.json").unlink()
    again = call(repo, *RUN, "--step", "1", "--max-iterations", "1")
    assert again.returncode == 0, again.stdout + again.stderr
