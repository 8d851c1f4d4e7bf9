"""In the Action, what the builtin reviewer accepts comes from the PR's base commit: a pull
request that adds a ``review.exclude`` or a baseline entry for its own secret is still blocked,
while the same settings merged into the base accept it (docs/github.md, "Configuration comes
from the base branch"). Markers on the PR's own lines count: they are in the diff, on the line."""

from __future__ import annotations

import json
from pathlib import Path

from gitflow_agents.findings import fingerprint
from gitflow_agents.findings.baseline import BASELINE_KIND, DEFAULT_BASELINE
from gitflow_agents.github.action.comment import MARKER
from tests.conftest import git
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.action_runner import Runner, add_pull, pr_event, runner, states

__all__ = ["gh", "runner"]

AWS = "AKIA" + "Z3X7Q2LMN4PQRS7T"
LINE = f'KEY = "{AWS}"'
EXCLUDE = "review:\n  rules:\n    aws-access-key:\n      exclude: [keys.py]\n"


def baseline_text() -> str:
    entry = {
        "file": "keys.py",
        "rule": "aws-access-key",
        "fingerprint": fingerprint("keys.py", "aws-access-key", "", LINE),
    }
    return json.dumps({"kind": BASELINE_KIND, "findings": [entry]}, indent=2) + "\n"


def base_files(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", "base settings")


def findings_file(runner: Runner) -> dict[str, list[dict[str, object]]]:
    data = json.loads(Path(runner.outputs()["findings-file"]).read_text())
    assert isinstance(data, dict)
    return data


def test_a_pr_cannot_accept_its_own_secret(runner: Runner, gh: GitHubStandIn, repo: Path) -> None:
    base_files(repo, {".flow/base.yaml": "review:\n  exclude: [fixtures/**]\n"})
    pull = add_pull(
        gh,
        repo,
        {
            "keys.py": LINE + "\n",
            ".flow/base.yaml": "review:\n  exclude: ['**']\n  rules:\n"
            "    aws-access-key: {enabled: false, exclude: [keys.py]}\n",
            DEFAULT_BASELINE: baseline_text(),
        },
    )
    git(repo, "checkout", "-q", "feature")  # the checkout holds the PR's settings
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == 1, result.stderr
    assert runner.outputs()["review-result"] == "revise"
    data = findings_file(runner)
    assert [(f["file"], f["rule"]) for f in data["findings"]] == [("keys.py", "aws-access-key")]
    assert data["accepted"] == []
    assert states(gh, pull.head_sha) == ["pending", "failure"]


def test_the_base_commit_settings_accept_it(runner: Runner, gh: GitHubStandIn, repo: Path) -> None:
    """The control for the test above: the same settings, merged before the PR, accept."""
    base_files(repo, {".flow/base.yaml": EXCLUDE})
    pull = add_pull(gh, repo, {"keys.py": LINE + "\n"})
    git(repo, "checkout", "-q", "feature")
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == 0, result.stderr
    data = findings_file(runner)
    assert data["findings"] == []
    assert [(a["file"], a["accepted"]["by"]) for a in data["accepted"]] == [("keys.py", "config")]  # type: ignore[index]
    assert f"{pull.base_sha[:12]}:.flow/base.yaml:4" in str(data["accepted"][0]["accepted"])
    assert states(gh, pull.head_sha) == ["pending", "success"]
    final = gh.statuses_for(pull.head_sha)[-1]["description"]
    assert final == "Approved: no findings, 1 accepted (1 config)"
    (comment,) = gh.comments_on(7)
    assert comment["body"].startswith(MARKER) and "Accepted (1)" in comment["body"]
    assert not gh.state.review_comments  # nothing accepted is posted inline


def test_a_base_baseline_accepts_and_a_marker_on_the_line_counts(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    base_files(repo, {DEFAULT_BASELINE: baseline_text()})
    other = "AKIA" + "Z3X7Q2LMN4PQRS8T"
    pull = add_pull(gh, repo, {"keys.py": f'{LINE}\nB = "{other}"  # gitleaks:allow\n'})
    git(repo, "checkout", "-q", "feature")
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == 0, result.stderr
    data = findings_file(runner)
    assert sorted((a["line"], a["accepted"]["by"]) for a in data["accepted"]) == [  # type: ignore[index]
        (1, "baseline"),
        (2, "marker"),
    ]
    sarif = json.loads(Path(runner.outputs()["sarif-file"]).read_text())
    kinds = [r["suppressions"][0]["kind"] for r in sarif["runs"][0]["results"]]
    assert sorted(kinds) == ["external", "inSource"]


def test_a_broken_base_setting_is_an_error_never_green(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    base_files(repo, {".flow/base.yaml": "review:\n  rules:\n    nope: {enabled: false}\n"})
    pull = add_pull(gh, repo, {"keys.py": LINE + "\n"})
    git(repo, "checkout", "-q", "feature")
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == 2, result.stderr
    assert f"{pull.base_sha[:12]}:.flow/base.yaml:3" in result.stderr
    assert "Traceback" not in result.stderr
    assert states(gh, pull.head_sha) == ["pending", "error"]
