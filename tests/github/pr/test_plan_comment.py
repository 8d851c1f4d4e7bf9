"""The plan at a glance on GitHub (issue 22, item 6): one sticky plan comment on a tracking
issue, or the job summary, kept by ``run --step N --pr`` and ``plan tend``.

Real git (a bare ``origin``), fake agents, real PyGithub against the stand-in (which validates
every request and answer against GitHub's OpenAPI description).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from gitflow_agents.git import lease as git_lease
from gitflow_agents.github.action.comment import GITHUB_LIMIT
from gitflow_agents.github.pr.plan_comment import (
    CHART_LEFT_OUT,
    StepGlance,
    plan_body,
    plan_marker,
    upsert_plan_comment,
)
from gitflow_agents.plan.model import Plan
from gitflow_agents.render.mermaid import PlanNode
from tests.conftest import git
from tests.github.pr.test_tend import opened, tend
from tests.github_standin import GitHubStandIn, client_for, gh
from tests.helpers.chain import call
from tests.helpers.origin_commit import commit_on_origin
from tests.helpers.step_pr import (
    BRANCH,
    env,
    independent_steps_runner,
    origin_sha,
    paid,
    run_pr,
    setup_repo,
)

__all__ = ["env", "gh"]

ISSUE = 5
MARKER = plan_marker("specs/feature.md")


def plan_comments(gh: GitHubStandIn) -> list[dict[str, object]]:
    return [c for c in gh.comments_on(ISSUE) if str(c["body"]).startswith(MARKER)]


def the_comment(gh: GitHubStandIn) -> dict[str, object]:
    [found] = plan_comments(gh)
    return found


def node(body: str, step: int) -> tuple[str, str]:
    """(label, class) of step ``step``'s node in the comment's chart."""
    match = re.search(rf'^    n\d+\["Step {step}#58; [^"]*"\]:::(\w+)$', body, re.M)
    assert match is not None, body
    return match[0], match[1]


def mark_done(tmp_path: Path, step: int) -> None:
    """Step ``step`` ✅ on origin's main (its pull request merged)."""
    origin, plan = tmp_path / "origin.git", "specs/feature.md"
    text = git(origin, "show", f"main:{plan}").replace(
        f"### Status: ❌ | Step {step}:", f"### Status: ✅ | Step {step}:"
    )
    commit_on_origin(origin, "main", plan, text, f"step {step} done")


def test_created_once_then_edited_in_place_as_the_plan_moves(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gh.state.issues.add(ISSUE)
    repo = setup_repo(tmp_path, gh)
    out = run_pr(repo, "--step", "1", "--plan-issue", str(ISSUE))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"plan comment on #{ISSUE}: created" in out.stdout
    body = str(the_comment(gh)["body"])
    (pull,) = gh.state.pulls.values()
    assert node(body, 1)[1] == "warn" and f"PR #35;{pull.number} approved, merging" in body
    assert node(body, 2) == (
        '    n2["Step 2#58; Polish<br/>waiting for 1"]:::wait',
        "wait",
    )
    assert "```mermaid\nflowchart LR\n" in body and "    n1 --> n2\n" in body
    assert (
        f"| 1: Add the module | 🟡 PR #{pull.number} approved, merging | [#{pull.number}](" in body
    )
    assert "| 2: Polish | ⚪ waiting for 1 | — |" in body
    first_id = the_comment(gh)["id"]
    # the same state again, from another workflow run: the comment is left as it is, no write
    monkeypatch.setenv("GITHUB_RUN_ID", "77")
    writes = len(gh.writes())
    again = tend(repo, "--plan-issue", str(ISSUE))
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"plan comment on #{ISSUE}: unchanged" in again.stdout
    assert len(gh.writes()) == writes
    # step 1 merged: the same comment now shows it done and step 2 ready
    mark_done(tmp_path, 1)
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(fresh))
    moved = tend(fresh, "--plan-issue", str(ISSUE))
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert f"plan comment on #{ISSUE}: updated" in moved.stdout
    done = the_comment(gh)
    assert done["id"] == first_id
    assert node(str(done["body"]), 1)[1] == "ok" and node(str(done["body"]), 2)[1] == "ready"
    assert "1 of 2 steps done" in str(done["body"])


def test_a_red_pull_request_is_red(tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]) -> None:
    gh.state.issues.add(ISSUE)
    repo, head = opened(tmp_path, gh)
    client = client_for(gh)
    client.create_status(
        gh.full_name, head, state="failure", context="gitflow-agents/review", description="no"
    )
    out = tend(repo, "--plan-issue", str(ISSUE))
    assert out.returncode == 1, out.stdout + out.stderr  # the tend's own verdict: one stays red
    body = str(the_comment(gh)["body"])
    label, cls = node(body, 1)
    assert cls == "bad" and "red#58; PR #35;1 failure" in label


def test_a_live_claim_is_running_and_a_stale_one_is_not(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No pull request yet: a claimed branch whose lease renews is running; once its lease
    stopped renewing for longer than the claim's time to live, the step is ready again."""
    gh.state.issues.add(ISSUE)
    repo = setup_repo(tmp_path, gh)
    git(repo, "push", "-q", "origin", f"main:refs/heads/{BRANCH}")
    holder = {"host": "runner-7", "pid": 4242, "repository": gh.full_name}
    assert git_lease.push_lease(repo, BRANCH, holder, "")[0] is not None
    out = tend(repo, "--plan-issue", str(ISSUE))
    assert out.returncode == 0, out.stdout + out.stderr
    label, cls = node(str(the_comment(gh)["body"]), 1)
    assert cls == "warn" and "claimed by runner-7 pid 4242" in label
    monkeypatch.setenv("GITFLOW_AGENTS_CLAIM_TTL", "0.001")
    stale = tend(repo, "--plan-issue", str(ISSUE))
    assert stale.returncode == 0, stale.stdout + stale.stderr
    assert node(str(the_comment(gh)["body"]), 1)[1] == "ready"


def test_two_updaters_at_once_leave_one_comment(gh: GitHubStandIn) -> None:
    """Another runner's create lands between our read and our create: both comments exist for
    a moment; ours, the later, is deleted, and the oldest carries our body."""
    gh.state.issues.add(ISSUE)
    ours, theirs = client_for(gh), client_for(gh)
    racer = f"{MARKER}\nthe other runner's view\n"
    gh.before.append(
        (
            "POST",
            re.compile(rf"/issues/{ISSUE}/comments$"),
            lambda: gh.add_issue_comment(ISSUE, "gitflow-bot", racer),
        )
    )
    body = f"{MARKER}\nour view\n"
    made = upsert_plan_comment(ours, gh.full_name, ISSUE, body, MARKER)
    assert made.action == "updated" and made.removed_duplicates == 1
    assert [c["body"] for c in plan_comments(gh)] == [body]
    # the other runner, looking again after its own create, finds the one comment and keeps it
    again = upsert_plan_comment(theirs, gh.full_name, ISSUE, racer, MARKER)
    assert again.action == "updated" and [c["body"] for c in plan_comments(gh)] == [racer]


def _update(gh: GitHubStandIn, start: threading.Barrier, body: str) -> None:
    client = client_for(gh)
    start.wait()
    upsert_plan_comment(client, gh.full_name, ISSUE, body, MARKER)


def test_two_updaters_in_threads_leave_one_comment_every_time(gh: GitHubStandIn) -> None:
    gh.state.issues.add(ISSUE)
    for attempt in range(6):
        for cid in [c["id"] for c in gh.comments_on(ISSUE)]:
            del gh.state.issue_comments[int(str(cid))]
        start = threading.Barrier(2)
        bodies = [f"{MARKER}\nrunner {n}, attempt {attempt}\n" for n in (1, 2)]

        threads = [threading.Thread(target=_update, args=(gh, start, body)) for body in bodies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert [c["body"] for c in plan_comments(gh)] in ([bodies[0]], [bodies[1]]), attempt


def test_a_comment_with_the_marker_by_someone_else_is_never_edited(gh: GitHubStandIn) -> None:
    gh.state.issues.add(ISSUE)
    foreign = gh.add_issue_comment(ISSUE, "someone-else", f"{MARKER}\nquoting the marker\n")
    body = f"{MARKER}\nour view\n"
    made = upsert_plan_comment(client_for(gh), gh.full_name, ISSUE, body, MARKER)
    assert made.action == "created" and made.comment_id != foreign["id"]
    bodies = {c["id"]: c["body"] for c in plan_comments(gh)}
    assert bodies == {foreign["id"]: f"{MARKER}\nquoting the marker\n", made.comment_id: body}


def test_two_plans_share_one_issue_each_with_its_own_comment(gh: GitHubStandIn) -> None:
    gh.state.issues.add(ISSUE)
    other = plan_marker("specs/other.md")
    client = client_for(gh)
    upsert_plan_comment(client, gh.full_name, ISSUE, f"{MARKER}\none\n", MARKER)
    upsert_plan_comment(client, gh.full_name, ISSUE, f"{other}\ntwo\n", other)
    assert len(gh.comments_on(ISSUE)) == 2
    inner = plan_marker("a--->b <!-- x\n-->")[len("<!-- ") : -len(" -->")]
    assert "--" not in inner.removeprefix("gitflow-agents:plan") and ">" not in inner


def test_without_an_issue_a_workflow_run_appends_to_its_job_summary(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("an earlier step's summary\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    repo, _ = opened(tmp_path, gh)
    out = tend(repo)
    assert out.returncode == 0 and "plan at a glance: in the job summary" in out.stdout
    text = summary.read_text()
    assert text.startswith("an earlier step's summary\n")
    assert text.count(MARKER) == 2  # run --pr's, then the tend's: each run appends its own
    assert not gh.comments_on(ISSUE)


def test_an_unknown_issue_is_a_warning_and_the_step_still_succeeds(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    out = run_pr(repo, "--step", "1", "--plan-issue", "99")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "warning: the plan at a glance was not updated:" in out.stderr
    assert origin_sha(gh, f"refs/heads/{BRANCH}") is not None


@pytest.mark.parametrize("value", ["0", "-3", "x"])
def test_a_bad_issue_number_is_a_usage_error(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], value: str
) -> None:
    repo = setup_repo(tmp_path, gh)
    out = tend(repo, "--plan-issue", value)
    assert out.returncode == 2 and "--plan-issue" in out.stderr
    assert not gh.log


def test_plan_issue_goes_with_pr(tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]) -> None:
    repo = setup_repo(tmp_path, gh)
    out = call(repo, "run", "specs/feature.md", "--step", "1", "--plan-issue", "3")
    assert out.returncode == 2 and "--plan-issue goes with --pr" in out.stderr


def test_a_plan_too_big_for_one_comment_keeps_its_table_and_says_so(tmp_path: Path) -> None:
    title = "<>&`|#;:" * 40  # every character an entity code in the chart
    steps = [
        StepGlance(PlanNode(n, title, "waiting", "waiting for 1", (1,) if n > 1 else ()))
        for n in range(1, 201)
    ]
    body = plan_body(Plan(tmp_path / "p.md", "p", "", ()), "specs/p.md", steps)
    assert len(body) <= GITHUB_LIMIT and body.startswith(plan_marker("specs/p.md"))
    assert CHART_LEFT_OUT in body and "```" not in body
    assert "| 1: " in body and "Cut to stay under" in body  # the table, cut at its end


def test_the_open_pull_requests_and_their_states_are_one_read_and_rest_says_the_same(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Two open step pull requests: the plan comment reads them with their heads' statuses in
    one GraphQL query (the tend in one more), no status read per pull request; a token refused
    GraphQL reads them through REST and draws the same comment (left unchanged)."""
    gh.state.issues.add(ISSUE)
    repo = independent_steps_runner(tmp_path, gh)
    out = call(repo, "run", "specs/feature.md", "--quiet", "--all", "--pr", "--plan-issue", "5")
    assert out.returncode == 0 and len(gh.state.pulls) == 2, out.stdout + out.stderr
    body = str(the_comment(gh)["body"])
    assert "approved, merging" in node(body, 1)[0] and "approved, merging" in node(body, 2)[0]
    before, writes = len(gh.log), len(gh.writes())
    assert tend(repo, "--plan-issue", str(ISSUE)).returncode == 0
    made = gh.log[before:]
    assert [r.path for r in made].count("/graphql") == 2  # the tend's, the plan comment's
    assert not [r for r in made if r.path.endswith("/statuses")]
    assert len(gh.writes()) == writes  # nothing changed: nothing written
    gh.fail("POST", "graphql$", 403, times=10)
    before = len(gh.log)
    again = tend(repo, "--plan-issue", str(ISSUE))
    assert again.returncode == 0 and f"#{ISSUE}: unchanged" in again.stdout, again.stdout
    assert str(the_comment(gh)["body"]) == body
    statuses = [r for r in gh.log[before:] if r.method == "GET" and r.path.endswith("/statuses")]
    assert len(statuses) == 2 * 2  # through REST: each head, for the tend and for the comment


def row(body: str, step: int) -> str:
    (found,) = [line for line in body.splitlines() if line.startswith(f"| {step}: ")]
    return found


def test_each_step_shows_what_its_runs_spent_and_the_plan_their_sum(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Each step run records what it spent in its branch's lease on origin when it publishes
    its pull request; the plan comment shows each step's and their sum, from origin, so a
    runner that ran neither step (a fresh clone) shows the same, after step 1 is merged too.
    Running the wave again spends nothing and counts nothing twice."""
    gh.state.issues.add(ISSUE)
    setup_repo(tmp_path, gh, "seed", implementer=paid("implementer", "edit"), reviewer="builtin")
    repo = independent_steps_runner(tmp_path, gh)
    out = call(repo, "run", "specs/feature.md", "--quiet", "--all", "--pr", "--plan-issue", "5")
    assert out.returncode == 0 and len(gh.state.pulls) == 2, out.stdout + out.stderr
    body = str(the_comment(gh)["body"])
    for step in (1, 2):
        assert row(body, step).endswith(" | $0.0100 · tokens 1,000/200 |"), body
    assert "steps done · spent $0.0200 · tokens 2,000/400 by the runs that published" in body
    again = call(repo, "run", "specs/feature.md", "--quiet", "--all", "--pr", "--plan-issue", "5")
    assert again.returncode == 0 and "started (branch on origin): 1, 2" in again.stdout
    assert str(the_comment(gh)["body"]) == body
    mark_done(tmp_path, 1)
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(fresh))
    assert tend(fresh, "--plan-issue", str(ISSUE)).returncode == 0
    body = str(the_comment(gh)["body"])
    assert "1 of 2 steps done · spent $0.0200 · tokens 2,000/400" in body
    assert row(body, 1).endswith(" | $0.0100 · tokens 1,000/200 |"), body
