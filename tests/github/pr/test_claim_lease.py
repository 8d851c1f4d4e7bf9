"""Claims that expire with their runner (issue 22, item 3): the lease on origin names who
claimed a step, and ``run --pr`` takes a claim whose workflow run ended (Actions API, the
stand-in's workflow runs) or whose lease stopped renewing; exactly one taker wins, and a live
run is never taken over.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from gitflow_agents.git import lease as git_lease
from gitflow_agents.github.pr import lease as leases
from gitflow_agents.runs.spend import Spend
from tests.conftest import git
from tests.github_standin import GitHubStandIn, client_for, gh
from tests.helpers.chain import call
from tests.helpers.step_pr import (
    BRANCH,
    env,
    implementer_runs,
    lease_on_origin,
    origin_sha,
    run_pr,
    setup_repo,
)

__all__ = ["env", "gh"]


def lost_claim(repo: Path, holder: dict[str, object], *, age: float = 0) -> str:
    """A runner's claim of step 1 as ``run --pr`` makes it (the branch at main on origin, its
    lease naming ``holder``), the runner then gone; ``age``: seconds since its last renewal."""
    main = git(repo, "rev-parse", "origin/main").strip()
    git(repo, "push", "-q", "origin", f"{main}:refs/heads/{BRANCH}")
    holder = {**holder, "claimedSha": main}
    assert git_lease.push_lease(repo, BRANCH, holder, "")[0] is not None
    if age:  # rewrite it as if written ``age`` seconds ago
        found = git_lease.read_lease(repo, BRANCH)
        assert found is not None
        tree = git(repo, "hash-object", "-t", "tree", "/dev/null").strip()
        message = json.dumps({**found.holder, "at": found.written - age})
        old = git(repo, "commit-tree", tree, "-m", message).strip()
        ref = git_lease.lease_ref(BRANCH)
        git(repo, "push", "-q", "origin", f"--force-with-lease={ref}:{found.sha}", f"{old}:{ref}")
    return main


def test_a_claim_names_its_workflow_run_in_its_lease(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_RUN_ID", "501")
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "2")
    repo = setup_repo(tmp_path, gh)
    assert run_pr(repo, "--step", "1").returncode == 0
    lease = lease_on_origin(gh)
    assert (lease["runId"], lease["runAttempt"], lease["repository"]) == (501, 2, gh.full_name)
    assert isinstance(lease["pid"], int) and lease["host"]


def test_a_claim_whose_workflow_run_ended_without_a_pull_request_is_taken_once(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = setup_repo(tmp_path, gh)
    lost_claim(repo, {"runId": 77, "runAttempt": 1, "repository": gh.full_name})
    gh.state.workflow_runs[77] = {"status": "completed", "conclusion": "cancelled"}
    monkeypatch.setenv("GITHUB_RUN_ID", "78")
    fresh = setup_repo(tmp_path, gh, name="fresh")  # another runner's fresh clone
    out = run_pr(fresh, "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "taking over" in out.stdout and "workflow run 77" in out.stdout
    assert implementer_runs(fresh) == 1
    [pull] = gh.state.pulls.values()
    assert pull.head_sha == origin_sha(gh, f"refs/heads/{BRANCH}")
    assert lease_on_origin(gh)["runId"] == 78
    assert gh.requests("GET", "/actions/runs/77$")
    # the same command again: the step is started by a live claim with a pull request
    again = run_pr(fresh, "--step", "1")
    assert again.returncode == 0 and "already started" in again.stdout
    assert implementer_runs(fresh) == 1


@pytest.mark.parametrize("status", ["in_progress", "queued"])
def test_a_live_workflow_run_is_never_taken_over_however_old_its_lease(
    tmp_path: Path,
    gh: GitHubStandIn,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    status: str,
) -> None:
    repo = setup_repo(tmp_path, gh)
    lost_claim(repo, {"runId": 77, "runAttempt": 1, "repository": gh.full_name}, age=10_000)
    gh.state.workflow_runs[77] = {"status": status}
    monkeypatch.setenv(leases.TTL_ENV, "60")
    out = run_pr(setup_repo(tmp_path, gh, name="fresh"), "--step", "1")
    assert out.returncode == 0 and "already started" in out.stdout
    assert "taking over" not in out.stdout and gh.state.pulls == {}


def test_a_rerun_attempt_ends_the_claim_of_the_attempt_before(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    lost_claim(repo, {"runId": 77, "runAttempt": 1, "repository": gh.full_name})
    gh.state.workflow_runs[77] = {"status": "in_progress", "run_attempt": 2}
    out = run_pr(setup_repo(tmp_path, gh, name="fresh"), "--step", "1")
    assert out.returncode == 0 and "taking over" in out.stdout, out.stdout + out.stderr


def test_a_lease_that_stopped_renewing_frees_the_claim_after_the_ttl(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = setup_repo(tmp_path, gh)
    lost_claim(repo, {"host": "elsewhere", "pid": 1}, age=120)
    monkeypatch.setenv(leases.TTL_ENV, "600")
    fresh = setup_repo(tmp_path, gh, name="fresh")
    young = run_pr(fresh, "--step", "1")
    assert young.returncode == 0 and "already started" in young.stdout
    monkeypatch.setenv(leases.TTL_ENV, "60")
    old = run_pr(fresh, "--step", "1")
    assert old.returncode == 0 and "stopped renewing" in old.stdout, old.stdout + old.stderr
    assert len(gh.state.pulls) == 1 and implementer_runs(fresh) == 1


def test_a_claim_with_an_open_pull_request_or_no_lease_is_not_free(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = setup_repo(tmp_path, gh)
    main = git(repo, "rev-parse", "origin/main").strip()
    git(repo, "push", "-q", "origin", f"{main}:refs/heads/{BRANCH}")  # no lease: an older claim
    monkeypatch.setenv(leases.TTL_ENV, "0.001")
    out = run_pr(setup_repo(tmp_path, gh, name="fresh"), "--step", "1")
    assert out.returncode == 0 and "already started" in out.stdout
    client = client_for(gh)
    found = git_lease.Lease("0" * 40, {"host": "h", "pid": 1}, 0.0)
    assert leases.why_free(found, client, gh.full_name, True, 1.0) is None
    assert leases.why_free(found, client, gh.full_name, False, 1.0) is not None


def test_of_two_takers_of_one_free_claim_exactly_one_wins(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    lost_claim(repo, {"host": "elsewhere", "pid": 1})
    found = git_lease.read_lease(repo, BRANCH)
    assert found is not None
    clones = [setup_repo(tmp_path, gh, name=f"taker{i}") for i in range(2)]
    won: list[leases.Held | None] = [None, None]
    start = threading.Barrier(2)

    def take(index: int) -> None:
        start.wait()
        won[index] = leases.take(clones[index], BRANCH, {"taker": index}, found.sha, {})

    threads = [threading.Thread(target=take, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [held for held in won if held is not None]
    assert len(winners) == 1
    assert lease_on_origin(gh)["taker"] == won.index(winners[0])


def test_a_held_lease_renews_until_it_is_taken(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    held = leases.take(repo, BRANCH, {"host": "here", "pid": 1}, "", {})
    assert held is not None
    first = held.sha
    assert held.renew() and held.sha != first and lease_on_origin(gh)["host"] == "here"
    other = setup_repo(tmp_path, gh, name="other")
    assert leases.take(other, BRANCH, {"host": "there"}, held.sha, {}) is not None
    assert not held.renew()  # taken: this run's renewal is refused, never forced
    assert lease_on_origin(gh)["host"] == "there"


def test_renewing_renews_while_the_block_runs(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    held = leases.take(repo, BRANCH, {"host": "here", "pid": 1}, "", {})
    assert held is not None
    renewed = threading.Event()
    renew = held.renew

    def counting() -> bool:
        ok = renew()
        renewed.set()
        return ok

    held.renew = counting  # type: ignore[method-assign]
    with leases.renewing(held, ttl=0.03):
        assert renewed.wait(30)


def test_leases_are_read_together_and_a_broken_one_is_left_out(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """``read_leases``: the leases of several branches in one listing and one fetch; a branch
    without one, and one whose lease is not a holder's record (anyone who may push can write
    it), are not in the answer."""
    repo = setup_repo(tmp_path, gh)
    for branch, host in (("agents/feature/step-1", "one"), ("agents/feature/step-2", "two")):
        assert git_lease.push_lease(repo, branch, {"host": host}, "")[0] is not None
    tree = git(repo, "hash-object", "-t", "tree", "/dev/null").strip()
    broken = git(repo, "commit-tree", tree, "-m", "[1, 2").strip()
    git(repo, "push", "-q", "origin", f"{broken}:{git_lease.lease_ref('agents/feature/step-3')}")
    branches = [f"agents/feature/step-{n}" for n in (1, 2, 3, 4)]
    found = git_lease.read_leases(setup_repo(tmp_path, gh, name="reader"), branches)
    assert {branch: lease.holder["host"] for branch, lease in found.items()} == {
        "agents/feature/step-1": "one",
        "agents/feature/step-2": "two",
    }
    assert git_lease.read_leases(repo, []) == {}


@pytest.mark.parametrize("at", ["NaN", "Infinity", "-Infinity"])
def test_a_lease_whose_time_is_not_a_number_is_unreadable_and_never_frees_its_claim(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], at: str
) -> None:
    """A lease saying ``"at": NaN`` (or ±Infinity: json reads them; anyone who may push can
    write one) crashed ``plan matrix --ready`` and ``run --pr`` with exit 70 (``int(age)`` of
    a NaN): it is read as any unreadable lease, its claim never free."""
    repo = setup_repo(tmp_path, gh)
    main = git(repo, "rev-parse", "origin/main").strip()
    tree = git(repo, "hash-object", "-t", "tree", "/dev/null").strip()
    forged = git(repo, "commit-tree", tree, "-m", f'{{"at": {at}, "host": "h", "pid": 1}}')
    ref = git_lease.lease_ref(BRANCH)
    git(repo, "push", "-q", "origin", f"{forged.strip()}:{ref}", f"{main}:refs/heads/{BRANCH}")
    fresh = setup_repo(tmp_path, gh, name="fresh")
    assert git_lease.read_lease(fresh, BRANCH) is None
    assert git_lease.read_leases(fresh, [BRANCH]) == {}
    steps, said = ready(fresh)
    assert steps == [] and "started (branch on origin): 1" in said
    out = run_pr(fresh, "--step", "1")
    assert out.returncode == 0 and "already started" in out.stdout, out.stdout + out.stderr
    assert implementer_runs(fresh) == 0 and not gh.state.pulls
    again = run_pr(fresh, "--step", "1")  # no claim record left "claiming" to note
    assert again.returncode == 0 and "note:" not in again.stdout, again.stdout + again.stderr
    assert not list((fresh / "flows").glob("*/runs/*/claim.json"))


def test_what_a_lease_records_as_spent_is_kept_by_the_next_holder_and_added_to(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """``Held.published`` adds the run's spend to what the lease recorded (``carried`` from
    the lease it took); a run that ran no agent (None) adds nothing, and an unreadable record
    reads as none."""
    repo = setup_repo(tmp_path, gh)
    first = leases.take(repo, BRANCH, {"host": "one"}, "", {})
    assert first is not None
    first.published(3, Spend(input_tokens=10, output_tokens=2, cost_usd=0.5))
    found = git_lease.read_lease(repo, BRANCH)
    assert found is not None and leases.carried(found) == {"spend": lease_on_origin(gh)["spend"]}
    second = leases.take(repo, BRANCH, {"host": "two", **leases.carried(found)}, found.sha, {})
    assert second is not None
    second.published(3, None)
    assert leases.lease_spend(lease_on_origin(gh)) == Spend(10, 2, 0.5)
    second.published(3, Spend(input_tokens=5, output_tokens=None, cost_usd=None))
    assert leases.lease_spend(lease_on_origin(gh)) == Spend(
        15, 2, 0.5, tokens_partial=True, cost_partial=True
    )
    assert leases.lease_spend({"spend": "a lot"}) is None and leases.carried(None) == {}


def test_a_bad_ttl_is_a_usage_error() -> None:
    from gitflow_agents.base.errors import UsageError

    assert leases.claim_ttl({}) == leases.DEFAULT_TTL
    assert leases.claim_ttl({leases.TTL_ENV: "90"}) == 90
    assert leases.claim_ttl({leases.TTL_ENV: "86400"}) == 86400
    for bad in ("0", "-1", "soon", "nan", "inf", "1e300", "1" + "0" * 400, "86401"):
        with pytest.raises(UsageError):
            leases.claim_ttl({leases.TTL_ENV: bad})


def ready(repo: Path) -> tuple[list[int], str]:
    out = call(repo, "plan", "matrix", "--ready", "specs/feature.md")
    assert out.returncode == 0, out.stdout + out.stderr
    return [row["step"] for row in json.loads(out.stdout)["include"]], out.stderr


def test_ready_lists_a_step_whose_workflow_run_ended_as_free(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    lost_claim(repo, {"runId": 77, "runAttempt": 1, "repository": gh.full_name})
    gh.state.workflow_runs[77] = {"status": "in_progress"}
    assert ready(repo)[0] == []  # a live run's claim: started
    gh.state.workflow_runs[77] = {"status": "completed", "conclusion": "failure"}
    steps, said = ready(repo)
    assert steps == [1] and "free: 1 (its workflow run 77" in said


def test_ready_without_a_token_judges_the_lease_by_its_age_only(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    repo = setup_repo(tmp_path, gh)
    lost_claim(repo, {"runId": 77, "runAttempt": 1, "repository": gh.full_name}, age=120)
    monkeypatch.setenv(leases.TTL_ENV, "600")
    assert ready(repo)[0] == []
    monkeypatch.setenv(leases.TTL_ENV, "60")
    assert ready(repo)[0] == [1]
    assert not gh.requests("GET", "/actions/runs/")


def test_a_published_step_is_never_free_by_age(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = setup_repo(tmp_path, gh)
    assert run_pr(repo, "--step", "1").returncode == 0
    [pull] = gh.state.pulls.values()
    assert lease_on_origin(gh)["pull"] == pull.number
    monkeypatch.setenv(leases.TTL_ENV, "0.001")
    monkeypatch.delenv("GITHUB_TOKEN")
    assert ready(setup_repo(tmp_path, gh, name="fresh"))[0] == []


def test_an_ended_run_whose_branch_has_an_open_pull_request_is_finished_not_left_pending(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Its lease has no ``pull`` (written only once publishing finished): the run died after
    opening the pull request, so a re-run finishes it on that pull request (issue 22, item
    5; before, "already started", exit 0, and the pull request stayed pending for good)."""
    repo = setup_repo(tmp_path, gh)
    lost_claim(repo, {"runId": 77, "runAttempt": 1, "repository": gh.full_name})
    gh.state.workflow_runs[77] = {"status": "completed", "conclusion": "success"}
    git(repo, "checkout", "-q", "-b", "work", "origin/main")
    (repo / "work.txt").write_text("the lost runner's pushed work\n")
    git(repo, "add", "work.txt")
    git(repo, "commit", "-q", "-m", "work")
    git(repo, "push", "-q", "origin", f"HEAD:refs/heads/{BRANCH}")
    client_for(gh).pulls.create(gh.full_name, head=BRANCH, base="main", title="t", body="b")
    fresh = setup_repo(tmp_path, gh, name="fresh")
    out = run_pr(fresh, "--step", "1")
    assert out.returncode == 0 and "taking over" in out.stdout, out.stdout + out.stderr
    assert "holds finished work" in out.stdout and implementer_runs(fresh) == 0
    [pull] = gh.state.pulls.values()
    assert pull.head_sha == origin_sha(gh, f"refs/heads/{BRANCH}")
    assert lease_on_origin(gh)["pull"] == pull.number
