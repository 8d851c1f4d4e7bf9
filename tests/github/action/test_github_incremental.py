"""Incremental review in the Action (issue 25, item 1): on ``synchronize`` an agent reviewer
builds on the review of ``before`` that our summary comment records; the comment and the
findings file say which kind ran; a force-push, another event, or a head the comment does not
remember get a full review; re-running an event gives the same review.

The pull request is the three-push scenario of ``tests/helpers/incremental.py``; GitHub is the
stand-in, the webhook payloads GitHub's examples (``tests/data/github-webhooks``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.findings import Finding, Overall, Review, Severity
from gitflow_agents.github.action.comment import MARKER, recorded_states, state_line
from tests.conftest import git
from tests.github_standin import GitHubStandIn, Pull, gh
from tests.helpers.action_runner import Runner, pr_event, pr_files, runner, states
from tests.helpers.incremental import AGENT, Scenario, finding, line_of, reviewer_config

__all__ = ["gh", "runner"]


@pytest.fixture
def scene(repo: Path, tmp_path: Path) -> Scenario:
    return Scenario(repo, tmp_path / "scene")


def push_event(
    gh: GitHubStandIn, scene: Scenario, head: str, before: str | None, action: str = "synchronize"
) -> dict[str, Any]:
    """The stand-in's PR #7 at ``head``, and the event of a push that moved it there from
    ``before`` (None: the PR was opened)."""
    pull = gh.add_pull(Pull(7, head, scene.base, pr_files(scene.repo, scene.base, head)))
    if before is None:
        return pr_event(gh, pull, "opened")
    return pr_event(gh, pull, action, before=before, after=head)


def act(runner: Runner, event: dict[str, Any]) -> dict[str, Any]:
    """Run the Action on ``event``; the findings file it wrote."""
    result = runner.run("pull_request", event, "tok-actions", "--agent", AGENT)
    assert result.returncode in (0, 1), result.stderr
    data: dict[str, Any] = json.loads(Path(runner.outputs()["findings-file"]).read_text())
    return data


def sticky(gh: GitHubStandIn) -> str:
    (comment,) = gh.comments_on(7)
    body: str = comment["body"]
    return body


def three_pushes(runner: Runner, gh: GitHubStandIn, scene: Scenario) -> list[dict[str, Any]]:
    one = scene.push(0, "push 1")
    scene.say([finding(0), finding(599, "warn")])
    first = act(runner, push_event(gh, scene, one, None))
    two = scene.push(1, "push 2: fix scale_0")
    scene.say([])
    second = act(runner, push_event(gh, scene, two, one))
    three = scene.push(2, "push 3: fix scale_1")
    third = act(runner, push_event(gh, scene, three, two))
    return [first, second, third]


def test_synchronize_reviews_only_the_pushed_commits(
    runner: Runner, gh: GitHubStandIn, scene: Scenario
) -> None:
    first, second, third = three_pushes(runner, gh, scene)
    assert [r["kind"] for r in (first, second, third)] == ["full", "incremental", "incremental"]
    assert "synchronize" in first["kindReason"]  # an opened PR is reviewed whole
    full, *incremental = scene.reads()
    for read in incremental:
        assert read["input"] <= 0.3 * full["input"], (read["input"], full["input"])
    # the verdict is the whole PR's: the open warning carried over, the fixed error is gone
    assert [(f["rule"], f["line"]) for f in third["findings"]] == [("scale-599", line_of(599))]
    head = git(scene.repo, "rev-parse", "HEAD").strip()
    assert third["reviewedSha"] == head and states(gh, head) == ["pending", "success"]
    body = sticky(gh)
    assert "**Review:** incremental: the 1 commit since the last reviewed head" in body
    # the heads it remembers, newest first: a re-run of an older push finds its own
    pushes = git(scene.repo, "rev-list", "--max-count=3", "HEAD").split()
    assert [s["reviewedSha"] for s in recorded_states(body)] == pushes


def test_a_force_push_gets_a_full_review(
    runner: Runner, gh: GitHubStandIn, scene: Scenario
) -> None:
    one = scene.push(0, "push 1")
    act(runner, push_event(gh, scene, one, None))
    git(scene.repo, "reset", "-q", "--hard", scene.base)
    rewritten = scene.push(1, "push 1, rewritten")
    again = act(runner, push_event(gh, scene, rewritten, one))
    assert again["kind"] == "full"
    assert f"the last reviewed head {one[:12]} is not an ancestor" in again["kindReason"]
    assert "is not an ancestor" in sticky(gh)
    assert scene.reads()[-1]["diff"] > 10_000


def test_a_head_the_comment_does_not_remember_gets_a_full_review(
    runner: Runner, gh: GitHubStandIn, scene: Scenario
) -> None:
    one = scene.push(0, "push 1")  # never reviewed (the workflow did not run)
    two = scene.push(1, "push 2")
    again = act(runner, push_event(gh, scene, two, one))
    assert again["kind"] == "full"
    assert f"records no review of {one[:12]}" in again["kindReason"]


def test_re_running_an_event_gives_the_same_review(
    runner: Runner, gh: GitHubStandIn, scene: Scenario
) -> None:
    one = scene.push(0, "push 1")
    scene.say([finding(7, "warn")])
    act(runner, push_event(gh, scene, one, None))
    two = scene.push(1, "push 2")
    scene.say([])
    event = push_event(gh, scene, two, one)
    once = act(runner, event)
    body = sticky(gh)
    twice = act(runner, event)  # a re-run of the same workflow run
    assert (once["kind"], once["findings"]) == (twice["kind"], twice["findings"])
    assert twice["kind"] == "incremental"
    first_read, second_read = scene.reads()[-2:]
    assert first_read == second_read
    assert recorded_states(sticky(gh)) == recorded_states(body)  # the same state, once


def test_the_base_commit_can_switch_it_off(
    runner: Runner, gh: GitHubStandIn, scene: Scenario
) -> None:
    git(scene.repo, "checkout", "-q", "main")
    config = scene.repo / ".flow" / "base.yaml"
    config.write_text(config.read_text() + "review:\n  incremental: false\n")
    git(scene.repo, "commit", "-q", "-am", "no incremental review")
    scene.base = git(scene.repo, "rev-parse", "HEAD").strip()
    git(scene.repo, "checkout", "-q", "feature")
    git(scene.repo, "reset", "-q", "--hard", scene.base)
    one = scene.push(0, "push 1")
    act(runner, push_event(gh, scene, one, None))
    two = scene.push(1, "push 2")
    again = act(runner, push_event(gh, scene, two, one))
    assert (again["kind"], again["kindReason"]) == ("full", "full: review.incremental is false")


def test_the_state_line_stays_one_html_comment_and_within_its_size() -> None:
    hostile = Finding(Severity.WARN, "ends here --> <script>&", "a.py", 1, fingerprint="f1")
    review = Review(Overall.REVISE, findings=(hostile,), reviewed_sha="a" * 40, base_sha="b" * 40)
    line = state_line(review, AGENT, [])
    assert line.count("-->") == 1 and "<script>" not in line
    (state,) = recorded_states(f"{MARKER}\n{line}\nrest")
    assert state["openFindings"][0]["message"] == hostile.message
    # too many findings to remember: the head stays known, without its findings (a full
    # review next time); older heads give way first
    many = review._replace(findings=(hostile,) * 400)
    older = [{"reviewedSha": "c" * 40, "openFindings": []}]
    (kept,) = recorded_states(state_line(many, AGENT, older))
    assert kept["reviewedSha"] == "a" * 40 and kept["openFindings"] is None
    assert recorded_states("no state here") == []
    assert recorded_states("<!-- gitflow-agents:state {not json} -->") == []


def test_a_base_commit_that_stops_excluding_a_file_gets_a_full_review(
    runner: Runner, gh: GitHubStandIn, scene: Scenario
) -> None:
    """The base branch stops excluding ``gen/`` (``review.exclude``) while the merge-base stays:
    the next push gets a full review, whose diff shows ``gen/settings.py``, never reviewed
    before; the state records what chose the files (``scopeDigest``)."""

    def on_main(globs: str) -> str:
        git(scene.repo, "checkout", "-q", "main")
        config = scene.repo / ".flow" / "base.yaml"
        config.write_text(
            reviewer_config(scene.findings, scene.log) + f"review:\n  exclude: {globs}\n"
        )
        git(scene.repo, "commit", "-q", "-am", f"exclude {globs}")
        git(scene.repo, "checkout", "-q", "feature")
        return git(scene.repo, "rev-parse", "main").strip()

    scene.base = on_main("[gen/]")
    git(scene.repo, "reset", "-q", "--hard", scene.base)
    (scene.repo / "gen").mkdir()
    (scene.repo / "gen" / "settings.py").write_text('PASSWORD = "hunter2"\n')
    git(scene.repo, "add", "gen")
    one = scene.push(0, "push 1")
    act(runner, push_event(gh, scene, one, None))
    assert "gen/settings.py" not in scene.reads()[-1]["diffText"]
    assert recorded_states(sticky(gh))[0]["scopeDigest"].startswith("sha256:")
    scene.base = on_main("[]")  # the pull request's base moves on; its merge-base does not
    two = scene.push(1, "push 2")
    again = act(runner, push_event(gh, scene, two, one))
    assert again["kind"] == "full", again["kindReason"]
    assert "review.exclude changed" in again["kindReason"]
    assert "gen/settings.py" in scene.reads()[-1]["diffText"]


def test_a_state_without_the_scope_digest_gets_a_full_review(
    runner: Runner, gh: GitHubStandIn, scene: Scenario
) -> None:
    """A state an older version wrote (no ``scopeDigest``) may have left any file out: full."""
    one = scene.push(0, "push 1")
    act(runner, push_event(gh, scene, one, None))
    (comment,) = gh.comments_on(7)
    comment["body"] = comment["body"].replace('"scopeDigest":', '"oldKey":')
    two = scene.push(1, "push 2")
    again = act(runner, push_event(gh, scene, two, one))
    assert again["kind"] == "full"
    assert "does not record its review.exclude" in again["kindReason"]
