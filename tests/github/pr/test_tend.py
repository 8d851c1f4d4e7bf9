"""``plan tend PLAN``: open step pull requests kept mergeable and reviewed (issue 22, item 1).

Real git (the checkout's ``origin`` is a local bare repository), fake agents
(tests/fakes/fake_flow_agent: the approving reviewer, the fixer that resolves a conflicted merge
by keeping both sides, the one that leaves the markers), and real PyGithub against the stand-in,
which plays auto-merge on a strict target (a behind pull request waits, as on GitHub).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import CliResult, git
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.chain import FAKE, call
from tests.helpers.opened_step import Opened, opened_step, restore
from tests.helpers.origin_commit import commit_on_origin
from tests.helpers.prepared_pulls import opened_resolving_step
from tests.helpers.step_pr import (
    BRANCH,
    env,
    lease_on_origin,
    origin_sha,
    paid,
    run_pr,
    setup_repo,
    statuses,
    summaries,
)
from tests.standin_pulls import play_auto_merge
from tests.standin_rules import strict_rule

__all__ = ["env", "gh", "opened_resolving_step", "opened_step"]

CONFLICT = "gitflow-agents: conflict"


def tend(repo: Path, *args: str) -> CliResult:
    return call(repo, "plan", "tend", "specs/feature.md", "--quiet", "--kill-grace", "0.2", *args)


def land_on_main(tmp_path: Path, name: str, path: str, text: str) -> str:
    """A human's commit pushed to origin's main (a sibling merged, a teammate pushed)."""
    return commit_on_origin(tmp_path / "origin.git", "main", path, text, f"{name} edits {path}")


def push_to_branch(tmp_path: Path, name: str, path: str, text: str) -> str:
    """A human's commit pushed to the step branch itself."""
    return commit_on_origin(tmp_path / "origin.git", BRANCH, path, text, "a human's fix")


def opened(
    tmp_path: Path, gh: GitHubStandIn, once: Opened | None = None, **config: object
) -> tuple[Path, str]:
    """A checkout whose step 1 is an open, approved pull request; its head. With ``once`` (the
    agents' default configuration), that of ``opened_step`` copied here."""
    if once is not None:
        assert not config
        repo = restore(once, tmp_path, gh)
    else:
        repo = setup_repo(tmp_path, gh, **config)  # type: ignore[arg-type]
        out = run_pr(repo, "--step", "1")
        assert out.returncode == 0, out.stdout + out.stderr
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert head is not None and statuses(gh, head)[-1] == "success"
    return repo, head


def parents(repo: Path, sha: str) -> list[str]:
    git(repo, "fetch", "-q", "origin")
    return git(repo, "rev-list", "--parents", "-n1", sha).split()[1:]


def reviews_run(repo: Path) -> int:
    found = 0
    for path in (repo / "flows" / "feature" / "runs").glob("*/result.json"):
        found += json.loads(path.read_text()).get("run", {}).get("kind") == "review"
    return found


# --- behind: merged, reviewed, status on exactly the new head, auto-merge re-armed -----------


def test_a_behind_pull_request_gets_the_target_merged_in_reviewed_and_lands(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    repo, head = opened(tmp_path, gh, opened_step)
    gh.state.branch_rules["main"] = [strict_rule(strict=True)]  # GitHub waits for behind ones
    other = land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    (pull,) = gh.state.pulls.values()
    pull.auto_merge = {"merge_method": "squash", "enabled_by": "gitflow-bot"}
    assert play_auto_merge(gh) == [] and not pull.merged  # behind a strict target: it waits
    out = tend(repo, "--auto-merge", "squash")
    assert out.returncode == 0, out.stdout + out.stderr
    new = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert new is not None and new != head
    assert parents(repo, new) == [head, other]  # a normal merge commit: nothing rewritten
    assert statuses(gh, new) == ["pending", "success"]
    assert f"behind main ({head[:12]}): tending it" in out.stdout
    assert pull.auto_merge is not None  # re-armed on the new head
    [event] = play_auto_merge(gh)
    assert pull.merged and event["after"] == origin_sha(gh, "refs/heads/main")
    assert "landed meanwhile" in git(gh.state.origin, "show", f"{event['after']}:OTHER.md")  # type: ignore[arg-type]


def test_a_tends_spend_adds_to_what_the_step_run_spent_in_its_lease(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """The step run's implementer and reviewer spent $0.02 (the lease records it with the pull
    request); tending the behind pull request reviews it again, $0.01 more: the lease the tend
    leaves holds both, and a tend with nothing to do adds nothing."""
    agents = {
        "implementer": paid("implementer", "edit"),
        "reviewer_argv": paid("reviewer", "approve"),
    }
    repo, _ = opened(tmp_path, gh, **agents)
    spent = lease_on_origin(gh)["spend"]
    assert spent == {
        "inputTokens": 2000,
        "outputTokens": 400,
        "costUsd": 0.02,
        "costEstimated": False,
        "tokensPartial": False,
        "costPartial": False,
    }
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    out = tend(repo)
    assert out.returncode == 0 and "tending it" in out.stdout, out.stdout + out.stderr
    lease = lease_on_origin(gh)
    assert "tend" not in lease and lease["pull"] == 1
    assert lease["spend"] == {**spent, "inputTokens": 3000, "outputTokens": 600, "costUsd": 0.03}
    assert tend(repo).returncode == 0
    assert lease_on_origin(gh)["spend"] == lease["spend"]


def test_a_tend_again_is_a_no_op_with_reads_only(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    repo, _ = opened(tmp_path, gh, opened_step)
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    assert tend(repo).returncode == 0
    head, writes, reviews = (
        origin_sha(gh, f"refs/heads/{BRANCH}"),
        len(gh.writes()),
        reviews_run(repo),
    )
    again = tend(repo)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "green on" in again.stdout and "1 green" in again.stdout
    assert len(gh.writes()) == writes and reviews_run(repo) == reviews
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == head
    # from a fresh clone too: the answer is origin's, not this checkout's
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(fresh))
    assert tend(fresh).returncode == 0 and len(gh.writes()) == writes


def test_an_up_to_date_green_pull_request_costs_one_graphql_read(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    """The open pull requests and their heads' statuses: one GraphQL query for the plan."""
    repo, head = opened(tmp_path, gh, opened_step)
    before = len(gh.log)
    out = tend(repo)
    assert out.returncode == 0, out.stdout + out.stderr
    made = gh.log[before:]
    assert [(r.method, r.path) for r in made] == [("POST", "/graphql")], made
    assert "query OpenPullRequests" in made[0].body["query"]
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == head


def test_a_token_without_graphql_tends_through_rest_reads(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    """GraphQL refused (403): the list of open pull requests and the head's statuses through
    REST, as before; the same verdict."""
    repo, head = opened(tmp_path, gh, opened_step)
    gh.fail("POST", "graphql$", 403, times=5)
    before = len(gh.log)
    out = tend(repo)
    assert out.returncode == 0 and "1 green" in out.stdout, out.stdout + out.stderr
    reads = [r.path for r in gh.log[before:] if r.method == "GET"]
    assert reads == ["/repos/octo/demo/pulls", f"/repos/octo/demo/commits/{head}/statuses"]


# --- conflicts --------------------------------------------------------------------------------


def test_a_conflict_the_fixer_resolves_is_reviewed_and_lands(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_resolving_step: Opened
) -> None:
    repo, head = opened(tmp_path, gh, opened_resolving_step)  # the fixer: "fixer resolve"
    # the implementer appended to README.md; a teammate changed the same line on main
    land_on_main(tmp_path, "teammate", "README.md", "# demo\nby a teammate\n")
    out = tend(repo, "--auto-merge", "merge")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "conflicting in README.md" in out.stdout
    new = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert new is not None and parents(repo, new)[0] == head
    readme = git(repo, "show", f"{new}:README.md")
    assert "by a teammate" in readme and "<<<<<<<" not in readme
    assert statuses(gh, new)[-1] == "success"
    [event] = play_auto_merge(gh)
    assert event["after"] == origin_sha(gh, "refs/heads/main")


def test_an_unresolved_conflict_stays_red_labelled_with_the_files_named(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    repo, head = opened(tmp_path, gh, opened_step)  # the fixer "fix" leaves the conflict markers
    land_on_main(tmp_path, "teammate", "README.md", "# demo\nby a teammate\n")
    out = tend(repo)
    assert out.returncode == 1, out.stdout + out.stderr
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == head  # nothing pushed, nothing forced
    assert statuses(gh, head)[-1] == "failure"
    (pull,) = gh.state.pulls.values()
    assert CONFLICT in pull.labels and pull.state == "open"
    [summary] = summaries(gh, pull.number)
    assert "main into agents/feature/step-1 conflicts in README.md, and the fixer" in summary
    # it waits for a human now: a second tend runs no agent and writes nothing
    writes, reviews = len(gh.writes()), reviews_run(repo)
    again = tend(repo)
    assert again.returncode == 1 and "waits for a human" in again.stdout
    assert len(gh.writes()) == writes and reviews_run(repo) == reviews
    # a human resolves it on the branch: the new head is reviewed, the label goes
    human = tmp_path / "resolver"
    git(tmp_path, "clone", "-q", "-b", BRANCH, str(tmp_path / "origin.git"), str(human))
    git(human, "-c", "user.name=H", "-c", "user.email=h@x", "merge", "-q", "origin/main",
        "-X", "ours", "-m", "resolved")  # fmt: skip
    git(human, "push", "-q", "origin", BRANCH)
    resolved = tend(repo)
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
    assert CONFLICT not in pull.labels
    assert statuses(gh, git(human, "rev-parse", "HEAD").strip())[-1] == "success"


def test_a_fixer_that_fails_on_the_conflict_is_exit_3_and_the_pull_request_red(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo, head = opened(tmp_path, gh, fixer=[sys.executable, "-c", "raise SystemExit(3)"])
    land_on_main(tmp_path, "teammate", "README.md", "# demo\nby a teammate\n")
    out = tend(repo)
    assert out.returncode == 3, out.stdout + out.stderr
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == head and statuses(gh, head)[-1] == "failure"
    (pull,) = gh.state.pulls.values()
    assert CONFLICT in pull.labels and "1 red" in out.stdout


# --- a human's push ----------------------------------------------------------------------------


def test_a_human_commit_on_the_branch_is_reviewed_and_kept(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    repo, head = opened(tmp_path, gh, opened_step)
    pushed = push_to_branch(tmp_path, "human", "NOTES.md", "a human's note\n")
    assert statuses(gh, pushed) == [] and parents(repo, pushed) == [head]
    out = tend(repo)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "a head no review judged" in out.stdout
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == pushed  # reviewed as it is, not rewritten
    assert statuses(gh, pushed) == ["pending", "success"]
    # then the target moves: the merge keeps the human's commit
    other = land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    assert tend(repo).returncode == 0
    new = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert new is not None and parents(repo, new) == [pushed, other]


# --- exactly once ------------------------------------------------------------------------------


def _tend_process(repo: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", "plan", "tend", "specs/feature.md", "--quiet"],
        cwd=repo, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip


def test_two_tends_at_once_one_acts(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    repo, head = opened(tmp_path, gh, opened_step)
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    other = tmp_path / "runner-2"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(other))
    held = gh.hold("POST", r"/statuses/")  # the first tend stops at its pending status
    first = _tend_process(repo, env)
    try:
        assert held.arrived.wait(120), first.communicate(timeout=5)
        second = tend(other)  # meanwhile, on another runner
    finally:
        held.release()
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, out.decode() + err.decode()
    assert second.returncode == 0, second.stdout + second.stderr
    assert "waits: a tend" in second.stdout
    new = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert new is not None and parents(repo, new)[0] == head
    assert reviews_run(other) == 0 and statuses(gh, new)[-1] == "success"


def test_a_tend_killed_mid_way_is_finished_by_the_next(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    repo, head = opened(tmp_path, gh, opened_step)
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    held = gh.hold("POST", r"/statuses/")  # after its push, before any status
    first = _tend_process(repo, env)
    try:
        assert held.arrived.wait(120), first.communicate(timeout=5)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        held.release()
    pushed = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert pushed is not None and pushed != head and statuses(gh, pushed) == []
    out = tend(repo)
    assert out.returncode == 0, out.stdout + out.stderr
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == pushed  # continued, not merged twice
    assert statuses(gh, pushed)[-1] == "success"
    again = tend(repo)  # the next tend finds it green
    assert again.returncode == 0 and "1 green" in again.stdout, again.stdout + again.stderr


RACING_REVIEWER = """\
import json, os, subprocess, sys, time
from pathlib import Path

flag, origin, fake = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
if flag.exists():  # another tend takes the lease over while this review runs
    flag.unlink()
    git = ["git", "-C", origin]
    tree = subprocess.run([*git, "mktree"], input="", capture_output=True, text=True).stdout
    holder = {"host": "elsewhere", "pid": 1, "pull": 1, "tend": "theirs", "at": time.time()}
    made = subprocess.run([*git, "-c", "user.name=T", "-c", "user.email=t@x", "commit-tree",
                           tree.strip(), "-m", json.dumps(holder)],
                          capture_output=True, text=True, check=True).stdout.strip()
    ref = "refs/gitflow-agents/claims/agents/feature/step-1"
    subprocess.run([*git, "update-ref", ref, made], check=True)
    time.sleep(20)
os.execv(sys.executable, [sys.executable, fake, "reviewer", "approve"])
"""


def test_a_tend_whose_lease_another_takes_pushes_and_publishes_nothing(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script, flag = tmp_path / "racing_reviewer.py", tmp_path / "race"
    script.write_text(RACING_REVIEWER)
    reviewer = [sys.executable, str(script), str(flag), str(tmp_path / "origin.git"), str(FAKE)]
    repo, head = opened(tmp_path, gh, reviewer_argv=reviewer)
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    flag.write_text("")
    monkeypatch.setenv("GITFLOW_AGENTS_CLAIM_TTL", "0.6")  # renewals every 0.2 s
    writes = len(gh.writes())
    out = tend(repo)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "was taken over by" in out.stdout and "nothing was pushed or published" in out.stdout
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == head and len(gh.writes()) == writes


def test_a_running_step_run_is_left_alone(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    """A step run whose lease has no pull request yet (its chain runs) is never tended."""
    repo, head = opened(tmp_path, gh, opened_step)
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    from gitflow_agents.git import lease as git_lease
    from gitflow_agents.github.pr import lease as leases

    found = git_lease.read_lease(repo, BRANCH)
    assert found is not None
    record = {k: v for k, v in found.holder.items() if k not in ("pull", "at")}
    record["pid"] = os.getpid()  # alive, and its lease fresh
    assert leases.take(repo, BRANCH, record, found.sha, {}) is not None
    out = tend(repo)
    assert out.returncode == 0 and "waits: its step run" in out.stdout
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == head


# --- the stand-in's mergeable_state, as GitHub computes it from the branches --------------------


def mergeable_state(gh: GitHubStandIn, number: int) -> str:
    request = urllib.request.Request(
        f"{gh.repo_url}/pulls/{number}", headers={"Authorization": "token tok-write"}
    )
    with urllib.request.urlopen(request, timeout=5) as answer:  # validated against the OpenAPI
        state: str = json.loads(answer.read())["mergeable_state"]
    return state


def test_the_stand_in_plays_clean_behind_blocked_and_dirty(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    repo, head = opened(tmp_path, gh, opened_step)
    assert mergeable_state(gh, 1) == "clean"
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    assert mergeable_state(gh, 1) == "clean"  # not strict: GitHub would merge it as it is
    gh.state.branch_rules["main"] = [strict_rule(strict=True)]
    assert mergeable_state(gh, 1) == "behind"
    assert tend(repo).returncode == 0
    assert mergeable_state(gh, 1) == "clean"
    pushed = push_to_branch(tmp_path, "human", "NOTES.md", "a human's note\n")
    assert statuses(gh, pushed) == [] and mergeable_state(gh, 1) == "blocked"
    assert tend(repo).returncode == 0
    land_on_main(tmp_path, "teammate-2", "README.md", "# demo\nby a teammate\n")
    assert mergeable_state(gh, 1) == "dirty" and head != pushed


def test_the_stand_ins_auto_merge_leaves_a_conflicting_pull_request_open(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    """GitHub's auto-merge waits on a ``dirty`` pull request (non-strict target too)."""
    _, head = opened(tmp_path, gh, opened_step)
    land_on_main(tmp_path, "teammate", "README.md", "# demo\nby a teammate\n")
    (pull,) = gh.state.pulls.values()
    pull.auto_merge = {"merge_method": "squash", "enabled_by": "gitflow-bot"}
    assert mergeable_state(gh, 1) == "dirty" and statuses(gh, head)[-1] == "success"
    assert play_auto_merge(gh) == []
    assert pull.state == "open" and not pull.merged


def test_the_stand_ins_rebase_merge_replays_the_commits_of_a_clean_pull_request(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    repo, head = opened(tmp_path, gh, opened_step)
    (pull,) = gh.state.pulls.values()
    pull.auto_merge = {"merge_method": "rebase", "enabled_by": "gitflow-bot"}
    [event] = play_auto_merge(gh)
    assert pull.merged and event["after"] != head  # replayed: new commits, the same tree
    assert git(repo, "fetch", "-q", "origin") == ""
    assert git(repo, "rev-parse", f"{event['after']}^{{tree}}") == git(
        repo, "rev-parse", f"{head}^{{tree}}"
    )


def test_a_conflict_resolved_in_a_merge_commit_is_red_for_rebase_auto_merge(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_resolving_step: Opened
) -> None:
    """GitHub refuses to rebase-merge a branch whose merge commit resolves a conflict, so
    auto-merge would wait for good: the tend says so and exits 1 instead of 0 (a stalled wave
    is red, not green)."""
    repo, _ = opened(tmp_path, gh, opened_resolving_step)  # the fixer: "fixer resolve"
    land_on_main(tmp_path, "teammate", "README.md", "# demo\nby a teammate\n")
    out = tend(repo, "--auto-merge", "rebase")
    assert "conflicting in README.md" in out.stdout  # resolved, reviewed, green
    (pull,) = gh.state.pulls.values()
    # not armed for a rebase it could never land (decisions "Spend" 80)
    assert statuses(gh, pull.head_sha)[-1] == "success" and pull.auto_merge is None
    assert play_auto_merge(gh) == []  # GitHub: "This branch cannot be rebased safely"
    assert out.returncode == 1, out.stdout + out.stderr
    said = "cannot be rebase-merged: its merge commit"
    assert said in out.stdout and "1 red" in out.stdout
    again = tend(repo, "--auto-merge", "rebase")  # every later tend: red, and nothing more
    assert again.returncode == 1 and said in again.stdout
    squash = tend(repo, "--auto-merge", "squash")  # the advice: a squash lands it
    assert squash.returncode == 0, squash.stdout + squash.stderr
    [event] = play_auto_merge(gh)
    assert pull.merged, event


def test_run_pr_with_rebase_auto_merge_says_its_conflict_resolving_merge_cannot_land(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_resolving_step: Opened
) -> None:
    """``run --pr --auto-merge rebase`` whose chain resolved a conflict with the moved target
    in a merge commit: GitHub would never rebase-merge it, so the run says so and exits 1, as
    ``plan tend`` does, instead of 0 with a pull request that waits for good."""
    repo, _ = opened(tmp_path, gh, opened_resolving_step)  # the fixer: "fixer resolve"
    land_on_main(tmp_path, "teammate", "README.md", "# demo\nby a teammate\n")
    out = run_pr(repo, "--step", "1", "--force", "--auto-merge", "rebase")
    text = out.stdout + out.stderr
    (pull,) = gh.state.pulls.values()
    assert statuses(gh, pull.head_sha)[-1] == "success", text  # reviewed and approved
    assert out.returncode == 1, text
    assert "cannot be rebase-merged: its merge commit" in out.stdout
    again = run_pr(repo, "--step", "1", "--force", "--auto-merge", "squash")
    assert again.returncode == 0, again.stdout + again.stderr  # a squash would land it
