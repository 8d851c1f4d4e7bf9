"""``merge_group`` events: the queue's group reviewed, the verdict on the group's head commit.

Runner-shaped like tests/github/action/test_github_action.py. ``origin`` is a local bare repository holding
``main`` and the queue's branch ``gh-readonly-queue/main/pr-7-<base>``; the workspace is what
actions/checkout makes of a ``merge_group`` run: a depth-1 clone of the group's head, without the
base commit (so the action must fetch it). Every payload is GitHub's example with the group's
commits (tests/github_events.py), validated against GitHub's webhook schema.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NamedTuple

import pytest

from gitflow_agents.base.errors import ExitCode, InputError
from gitflow_agents.github.action.event import decide
from gitflow_agents.github.action.runner import Options
from gitflow_agents.github.api.values import MergeGroup
from tests.conftest import git
from tests.github_events import merge_group_event
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.action_runner import BROKEN, FINE, Runner, flow_config, has, states
from tests.helpers.flow_config import budgeted_gate

__all__ = ["gh"]


class Group(NamedTuple):
    base: str
    head: str
    ref: str
    workspace: Path
    origin: Path


def queue(
    repo: Path,
    tmp_path: Path,
    files: dict[str, str],
    *,
    clone: bool = True,
    earlier: tuple[dict[str, str], ...] = (),
) -> Group:
    """The merge queue's group: one commit with ``files`` on top of ``main`` (after a commit
    for each of ``earlier``; an empty text deletes the file), on the queue's branch in
    ``origin``; the workspace a depth-1 clone of the group's head."""
    base = git(repo, "rev-parse", "HEAD").strip()
    branch = f"gh-readonly-queue/main/pr-7-{base}"
    git(repo, "checkout", "-q", "-b", branch)
    for number, change in enumerate(earlier):
        for name, text in change.items():
            if text:
                (repo / name).write_text(text)
            else:
                (repo / name).unlink()
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"earlier {number}")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", "Merge pull request #7 from octo/feature")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(origin))
    workspace = tmp_path / "workspace"
    if clone:
        url = origin.as_uri()
        git(tmp_path, "clone", "-q", "--depth", "1", "--branch", branch, url, str(workspace))
    return Group(base, head, f"refs/heads/{branch}", workspace, origin)


def event(gh: GitHubStandIn, group: Group, **kwargs: str) -> dict[str, object]:
    return merge_group_event(gh.full_name, group.head, group.base, head_ref=group.ref, **kwargs)


def group_runner(tmp_path: Path, gh: GitHubStandIn, group: Group) -> Runner:
    gh.state.origin = group.origin  # GitHub knows only what reached origin
    return Runner(tmp_path, gh, group.workspace)


def test_a_clean_group_gets_success_on_its_head_and_nothing_else(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    group = queue(repo, tmp_path, {"fine.py": FINE})
    assert not has(group.workspace, group.base)  # actions/checkout: the head only
    runner = group_runner(tmp_path, gh, group)
    result = runner.run("merge_group", event(gh, group))
    assert result.returncode == 0, result.stderr
    assert states(gh, group.head) == ["pending", "success"]
    assert states(gh, group.base) == []
    assert has(group.workspace, group.base)  # fetched, objects only
    assert git(group.workspace, "status", "--porcelain") == ""
    outputs = runner.outputs()
    assert outputs["review-result"] == "approved"
    assert outputs["head-sha"] == group.head
    assert (outputs["comment-id"], outputs["inline-posted"], outputs["degraded"]) == (
        "",
        "0",
        "false",
    )
    assert outputs["github-writes"] == "2"
    # No pull request: no comment, no review; the one read is of the PR the ref names (its
    # approval could be reused: test_reuse.py), which GitHub does not have here.
    assert [r.method for r in gh.writes()] == ["POST", "POST"]
    assert [r.path for r in gh.requests("GET", r"/pulls/")] == ["/repos/octo/demo/pulls/7"]
    summary = runner.summary.read_text()
    assert "APPROVED" in summary and "it has no pull request" in summary
    assert group.head[:12] in summary


def test_a_group_holding_a_defect_gets_failure(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    group = queue(repo, tmp_path, {"fine.py": FINE, "pkg/broken.py": BROKEN})
    runner = group_runner(tmp_path, gh, group)
    result = runner.run("merge_group", event(gh, group))
    assert result.returncode == 1, result.stderr
    assert states(gh, group.head) == ["pending", "failure"]
    assert re.search(r"^::error file=pkg/broken\.py,line=\d+", result.stdout, re.MULTILINE)
    outputs = runner.outputs()
    assert outputs["review-result"] == "revise" and outputs["errors"] != "0"
    findings = json.loads(Path(outputs["findings-file"]).read_text())
    assert findings["reviewedSha"] == group.head
    assert {f["file"] for f in findings["findings"]} == {"pkg/broken.py"}
    (status,) = [s for s in gh.statuses_for(group.head) if s["state"] == "failure"]
    assert status["description"].startswith("Not approved")
    assert status["target_url"] == "https://github.example/octo/demo/actions/runs/4242"
    assert gh.comments_on(7) == [] and gh.state.reviews == {}


def test_a_rerun_of_the_same_group_sets_the_status_again_and_nothing_more(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """As the PR flow: a re-run sets ``pending`` and the verdict again (a status of the same
    context replaces the last one), and finds the base it fetched the first time."""
    group = queue(repo, tmp_path, {"broken.py": BROKEN})
    runner = group_runner(tmp_path, gh, group)
    assert runner.run("merge_group", event(gh, group)).returncode == 1
    first = len(gh.writes())
    second = runner.run("merge_group", event(gh, group))
    assert second.returncode == 1, second.stderr
    assert len(gh.writes()) == 2 * first == 4
    assert states(gh, group.head) == ["pending", "failure", "pending", "failure"]


def test_a_status_write_stored_behind_a_502_is_sent_again_as_the_pr_flow_does(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    group = queue(repo, tmp_path, {"fine.py": FINE})
    gh.fail("POST", r"/statuses/", 502, times=1, store=True)
    runner = group_runner(tmp_path, gh, group)
    result = runner.run("merge_group", event(gh, group))
    assert result.returncode == 0, result.stderr
    # The stored pending and its repeat: a commit status is repeated as it is (docs/github.md,
    # "Reliability"); the last status of the context is what the queue reads.
    assert states(gh, group.head) == ["pending", "pending", "success"]


def test_a_run_killed_before_its_verdict_leaves_no_green_and_the_rerun_finishes(
    gh: GitHubStandIn, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worst moment: ``pending`` is set and the job is cancelled before the verdict. The
    queue sees ``pending`` (never green); the re-run sets the verdict."""
    from gitflow_agents.github.action import status

    group = queue(repo, tmp_path, {"fine.py": FINE})
    runner = group_runner(tmp_path, gh, group)

    def cancelled(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(status, "set_final", cancelled)
        killed = runner.run("merge_group", event(gh, group))
    assert killed.returncode == 130
    assert states(gh, group.head) == ["pending"]
    again = runner.run("merge_group", event(gh, group))
    assert again.returncode == 0, again.stderr
    assert states(gh, group.head) == ["pending", "pending", "success"]


def test_github_down_exits_4_and_never_green(gh: GitHubStandIn, repo: Path, tmp_path: Path) -> None:
    group = queue(repo, tmp_path, {"fine.py": FINE})
    runner = group_runner(tmp_path, gh, group)
    gh.fail("POST", r"/statuses/", 502, times=100)
    result = runner.run("merge_group", event(gh, group))
    assert result.returncode == 4, result.stderr
    assert "HTTP 502" in result.stderr and "Traceback" not in result.stderr
    assert states(gh, group.head) == []


@pytest.mark.parametrize("reason", ["merged", "invalidated", "dequeued"])
def test_a_destroyed_group_is_skipped_with_its_reason(
    gh: GitHubStandIn, repo: Path, tmp_path: Path, reason: str
) -> None:
    group = queue(repo, tmp_path, {"fine.py": FINE})
    runner = group_runner(tmp_path, gh, group)
    result = runner.run("merge_group", event(gh, group, action="destroyed", reason=reason))
    assert result.returncode == 0, result.stderr
    outputs = runner.outputs()
    assert outputs["review-result"] == "skipped"
    assert outputs["reason"] == f"merge_group action 'destroyed' ({reason}) requests no checks"
    assert gh.requests() == []


def test_a_base_missing_from_origin_is_one_clear_error_and_an_error_status(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    group = queue(repo, tmp_path, {"fine.py": FINE})
    runner = group_runner(tmp_path, gh, group)
    gone = "f" * 40  # a base origin does not have (a force-pushed target, another repository)
    payload = merge_group_event(gh.full_name, group.head, gone, head_ref=group.ref)
    result = runner.run("merge_group", payload)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.strip()]
    assert f"the merge group's base commit {gone[:12]} is not in the checkout" in line
    assert "fetch-depth: 0" in line
    assert states(gh, group.head) == ["pending", "error"]
    assert runner.outputs()["review-result"] == "error"


def test_a_key_a_queued_commit_adds_and_a_later_one_removes_is_found_past_the_depth_1_checkout(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """The checkout holds the group's head alone: the commits before it are past its shallow
    boundary, where the history scan did not look. The action deepens the checkout until the
    whole range is there, and the key an earlier commit added is found."""
    key = "AKIA" + "Z7Q2XK4M9PLR3VBN"
    earlier = ({"keys.py": f'KEY = "{key}"\n'}, {"keys.py": ""})
    group = queue(repo, tmp_path, {"fine.py": FINE}, earlier=earlier)
    runner = group_runner(tmp_path, gh, group)
    for _ in range(2):  # a re-run finds the history it deepened
        result = runner.run("merge_group", event(gh, group))
        assert result.returncode == 1, result.stderr
        assert "keys.py:1 in commit" in result.stdout
    assert states(gh, group.head) == ["pending", "failure", "pending", "failure"]
    assert git(group.workspace, "rev-list", "--count", f"{group.base}..{group.head}") == "3\n"


def test_a_shallow_checkout_origin_cannot_deepen_is_one_clear_error(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    group = queue(repo, tmp_path, {"fine.py": FINE}, earlier=({"a.py": "x = 1\n"},))
    git(group.workspace, "fetch", "-q", "origin", group.base)  # the base is there; no more
    git(group.workspace, "remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    result = group_runner(tmp_path, gh, group).run("merge_group", event(gh, group))
    assert result.returncode == 2, result.stderr
    assert "shallow boundary" in result.stderr and "fetch-depth: 0" in result.stderr
    assert states(gh, group.head) == ["pending", "error"]


def test_a_full_checkout_fetches_nothing(gh: GitHubStandIn, repo: Path, tmp_path: Path) -> None:
    """``fetch-depth: 0`` (or a runner that kept an earlier clone): both commits are there."""
    group = queue(repo, tmp_path, {"fine.py": FINE}, clone=False)
    git(tmp_path, "clone", "-q", str(group.origin), str(group.workspace))
    git(group.workspace, "remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    runner = group_runner(tmp_path, gh, group)
    result = runner.run("merge_group", event(gh, group))
    assert result.returncode == 0, result.stderr  # no fetch: origin is gone
    assert states(gh, group.head) == ["pending", "success"]


def test_a_group_that_swaps_its_reviewer_is_reviewed_by_the_base_one(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(flow_config("revise"))
    git(repo, "add", ".flow")
    git(repo, "commit", "-q", "-m", "configure the reviewer")
    group = queue(repo, tmp_path, {"calc.py": "x = 1\n", ".flow/base.yaml": flow_config("approve")})
    runner = group_runner(tmp_path, gh, group)
    result = runner.run("merge_group", event(gh, group), "tok-actions", "--agent", "gate")
    assert result.returncode == 1, result.stderr
    assert states(gh, group.head) == ["pending", "failure"]


def test_an_agent_reviewer_stopped_by_its_budget_says_what_it_spent_in_the_outputs(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """As for a pull request (tests/github/action/test_github_base_config.py): exit 5 and the
    tokens the stopped reviewer spent in the outputs."""
    budgeted_gate(repo, "budget:\n  agent: {tokens: 2500}\n")
    group = queue(repo, tmp_path, {"calc.py": "x = 1\n"})
    runner = group_runner(tmp_path, gh, group)
    result = runner.run("merge_group", event(gh, group), "tok-actions", "--agent", "gate")
    assert result.returncode == 5, result.stdout + result.stderr
    outputs = runner.outputs()
    assert outputs["review-result"] == "error" and int(outputs["input-tokens"]) >= 2500
    # the outputs docs/github.md lists for a group, set by an error too
    assert (outputs["comment-id"], outputs["inline-posted"]) == ("", "0")
    assert outputs["head-sha"] == group.head


def test_a_group_review_that_did_not_complete_says_why_in_the_job_summary_and_an_annotation(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """The run's page shows why the group got an ``error`` status: the job summary says the
    review did not complete, why and what its agent spent; an ``::error`` annotation says
    why (not only the error line on stderr, which is in the step's log alone)."""
    budgeted_gate(repo, "budget:\n  agent: {tokens: 2500}\n")
    group = queue(repo, tmp_path, {"calc.py": "x = 1\n"})
    runner = group_runner(tmp_path, gh, group)
    result = runner.run("merge_group", event(gh, group), "tok-actions", "--agent", "gate")
    assert result.returncode == 5, result.stdout + result.stderr
    summary = runner.summary.read_text()
    assert "DID NOT COMPLETE" in summary and f"The review of `{group.head[:12]}`" in summary
    assert "budget: agent spent" in summary and "| budget |" in summary.replace("`", "")
    assert "no approval reused" in summary
    assert re.search(
        rf"^::error title=gitflow-agents::the review of {group.head[:12]} did not complete: "
        r".*budget: agent spent",
        result.stdout,
        re.M,
    ), result.stdout


def test_a_read_only_token_degrades_without_crashing(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    group = queue(repo, tmp_path, {"broken.py": BROKEN})
    runner = group_runner(tmp_path, gh, group)
    result = runner.run("merge_group", event(gh, group), "tok-read", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert re.search(
        r"^::warning title=gitflow-agents::cannot set the pending", result.stdout, re.M
    )
    outputs = runner.outputs()
    assert outputs["degraded"] == "true" and outputs["review-result"] == "revise"
    assert "The status was not set" in runner.summary.read_text()
    assert gh.statuses_for(group.head) == [] and len(gh.writes()) == 1


def test_the_posting_job_sets_the_status_from_the_review_jobs_file(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    group = queue(repo, tmp_path, {"broken.py": BROKEN})
    runner = group_runner(tmp_path, gh, group)
    review_job = runner.run("merge_group", event(gh, group), "tok-read", "--fail-on", "never")
    assert review_job.returncode == 0, review_job.stderr
    findings = Path(runner.outputs()["findings-file"])
    posted = runner.run(
        "merge_group", event(gh, group), "tok-actions", "--post-findings", str(findings)
    )
    assert posted.returncode == 1, posted.stderr
    assert states(gh, group.head) == ["failure"]  # no pending: the verdict is known
    # Another group's head, on origin (GitHub refuses a status on a commit it does not have).
    later = another_group(repo, group)
    other = merge_group_event(gh.full_name, later, group.base, head_ref=group.ref)
    stale = runner.run("merge_group", other, "tok-actions", "--post-findings", str(findings))
    assert stale.returncode == 1
    assert "cannot approve this commit" in stale.stdout
    assert states(gh, later) == ["failure"]


def another_group(repo: Path, group: Group) -> str:
    """A second group's head on top of ``group``'s base, pushed to origin; its sha."""
    git(repo, "checkout", "-q", "--detach", group.base)
    (repo / "other.py").write_text("y = 2\n")
    git(repo, "add", "other.py")
    git(repo, "commit", "-q", "-m", "Merge pull request #8 from octo/other")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    git(repo, "push", "-q", str(group.origin), f"{head}:refs/heads/gh-readonly-queue/main/pr-8")
    return head


def test_a_group_head_github_does_not_have_is_one_error_line_exit_4(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """An event naming a head origin never received (a hand-made payload, another repository):
    GitHub answers the pending status 422 "No commit found for SHA"; the action says so in one
    line, exits 4, and nothing is written. The re-run with the real head then succeeds."""
    group = queue(repo, tmp_path, {"fine.py": FINE})
    runner = group_runner(tmp_path, gh, group)
    unknown = "e" * 40
    payload = merge_group_event(gh.full_name, unknown, group.base, head_ref=group.ref)
    result = runner.run("merge_group", payload)
    assert result.returncode == ExitCode.GITHUB == 4
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    (line,) = [x for x in result.stderr.splitlines() if x.strip()]
    assert line == (
        f"gitflow-agents: error: GitHub API: POST /repos/{gh.full_name}/statuses/"
        f"{unknown[:12]}: HTTP 422: No commit found for SHA: {unknown}"
    )
    assert gh.state.statuses == [] and len(gh.requests("POST", "/statuses/")) == 1
    again = runner.run("merge_group", event(gh, group))
    assert again.returncode == 0, again.stderr
    assert states(gh, group.head) == ["pending", "success"]


def test_decide_for_merge_group_events(gh: GitHubStandIn, tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    payload = merge_group_event(gh.full_name, "a" * 40, "b" * 40)
    trigger = decide("merge_group", payload, path, Options())
    assert trigger.kind == "group"
    assert trigger.group == MergeGroup(
        "a" * 40, "b" * 40, payload["merge_group"]["head_ref"], "refs/heads/main"
    )
    bot = decide(
        "merge_group", {**payload, "sender": {"login": "x[bot]", "type": "Bot"}}, path, Options()
    )
    assert bot.kind == "group"  # a skipped required check would keep the queue waiting
    del payload["merge_group"]["base_sha"]
    with pytest.raises(InputError, match=r"merge_group\.base_sha: missing"):
        decide("merge_group", payload, path, Options())


# --- hostile or broken shas (issue 19) -------------------------------------------------------


@pytest.mark.parametrize("which", ["head_sha", "base_sha"])
@pytest.mark.parametrize("token", ["tok-read", "tok-actions"])
def test_a_sha_that_is_a_git_option_runs_nothing_and_is_one_error_line(
    gh: GitHubStandIn, repo: Path, tmp_path: Path, which: str, token: str
) -> None:
    """``--upload-pack=…`` as a sha would be an option of ``git fetch`` (a command runs),
    whether or not the status write is refused: refused before any git call or GitHub write."""
    group = queue(repo, tmp_path, {"fine.py": FINE})
    runner = group_runner(tmp_path, gh, group)
    marker = tmp_path / "ran"
    payload = event(gh, group)
    payload["merge_group"][which] = f"--upload-pack=touch {marker};"  # type: ignore[index]
    result = runner.run("merge_group", json.dumps(payload), token)
    assert not marker.exists()
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.strip()]
    assert f"event.json: merge_group.{which}: expected a commit id" in line
    assert "upload-pack" not in line  # the value is not echoed
    assert gh.state.statuses == [] and gh.writes() == []


@pytest.mark.parametrize(
    "sha", ["a" * 39 + "\x00", "\x00", "A" * 40 + " ", "g" * 40, "a" * 41, "HEAD", "main", ""]
)
def test_a_sha_that_is_not_an_object_id_is_a_usage_error(
    gh: GitHubStandIn, tmp_path: Path, sha: str
) -> None:
    path = tmp_path / "event.json"
    for which in ("head_sha", "base_sha"):
        payload = merge_group_event(gh.full_name, "a" * 40, "b" * 40)
        payload["merge_group"][which] = sha
        with pytest.raises(InputError, match=rf"merge_group\.{which}: expected a commit id"):
            decide("merge_group", payload, path, Options())
    sha256 = decide(
        "merge_group", merge_group_event(gh.full_name, "c" * 64, "D" * 64), path, Options()
    )
    assert sha256.group is not None and sha256.group.base_sha == "d" * 64  # SHA-256 repositories


def test_a_nul_in_a_sha_is_exit_2_not_a_crash(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    group = queue(repo, tmp_path, {"fine.py": FINE})
    runner = group_runner(tmp_path, gh, group)
    payload = event(gh, group)
    payload["merge_group"]["head_sha"] = group.head[:20] + "\x00" + group.head[21:]  # type: ignore[index]
    result = runner.run("merge_group", json.dumps(payload), "tok-read")
    assert result.returncode == 2, result.stderr
    assert "merge_group.head_sha: expected a commit id" in result.stderr
    assert "crash" not in result.stderr and gh.writes() == []


def test_a_group_whose_base_is_its_head_is_never_green(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """Nothing between base and head: no review ran, so no success; an ``error`` status with
    the reason (docs/github.md, "Merge queue"), exit 2 naming the key. A re-run does the same."""
    group = queue(repo, tmp_path, {"fine.py": FINE})
    runner = group_runner(tmp_path, gh, group)
    payload = merge_group_event(gh.full_name, group.head, group.head, head_ref=group.ref)
    for _ in range(2):
        result = runner.run("merge_group", payload)
        assert result.returncode == 2, result.stderr
        (line,) = [x for x in result.stderr.splitlines() if x.strip()]
        assert "event.json: merge_group.base_sha: " in line and "nothing to review" in line
        assert runner.outputs()["review-result"] == "error"
    assert states(gh, group.head) == ["error", "error"]
    [status] = gh.statuses_for(group.head)[:1]
    assert "nothing to review" in status["description"]


def test_a_ref_that_is_a_refspec_with_a_destination_writes_no_local_ref(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """``base_ref`` is fetched as a refspec: ``refs/heads/main:refs/heads/evil`` would write a
    branch into the runner's checkout. Such a ref is not used; the commit is fetched by id."""
    group = queue(repo, tmp_path, {"fine.py": FINE})
    runner = group_runner(tmp_path, gh, group)
    payload = event(gh, group)
    payload["merge_group"]["base_ref"] = "refs/heads/main:refs/heads/evil"  # type: ignore[index]
    result = runner.run("merge_group", json.dumps(payload))
    assert result.returncode == 0, result.stderr
    assert git(group.workspace, "for-each-ref", "--format=%(refname)", "refs/heads/evil") == ""
    assert states(gh, group.head) == ["pending", "success"]


@pytest.mark.parametrize("key", ["head", "base"])
def test_a_pull_requests_sha_is_held_to_the_same_rule(tmp_path: Path, key: str) -> None:
    from tests.github_events import pull_request_event

    payload = pull_request_event("octo/demo", 7, "a" * 40, "b" * 40)
    payload["pull_request"][key]["sha"] = "--output=/tmp/x"
    with pytest.raises(InputError, match=rf"pull_request\.{key}\.sha: expected a commit id"):
        decide("pull_request", payload, tmp_path / "event.json", Options())


def test_github_failing_on_the_groups_final_status_sets_error_and_writes_the_outputs(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """The pending status is set, the verdict's status then fails after every retry: exit 4,
    the error status is tried (best effort), and the step summary and outputs
    (``github-error``) are still written."""
    group = queue(repo, tmp_path, {"fine.py": FINE})
    runner = group_runner(tmp_path, gh, group)

    def fail_from_the_next_status() -> None:  # the pending status goes through
        fail = lambda: gh.fail("POST", r"/statuses/", 503, times=20)  # noqa: E731
        gh.before.append(("POST", re.compile(r"/statuses/"), fail))

    gh.before.append(("POST", re.compile(r"/statuses/"), fail_from_the_next_status))
    result = runner.run("merge_group", event(gh, group))
    assert result.returncode == ExitCode.GITHUB, result.stderr
    assert states(gh, group.head) == ["pending"]
    assert "could not set the error status" in result.stdout
    outputs = runner.outputs()
    assert outputs["github-error"] and outputs["review-result"] == "error"
    assert (outputs["inline-posted"], outputs["comment-id"]) == ("0", "")
    assert "it has no pull request" in runner.summary.read_text()
