"""``run PLAN --step N --pr``: a plan step as a pull request, on a real bare origin.

Real git (the checkout's ``origin`` is a local bare repository, pushes are real pushes), fake
agents (tests/fakes/fake_flow_agent), and real PyGithub against the stand-in, which opens the
pull requests on that origin, validates every REST call against GitHub's OpenAPI description and
every GraphQL query against GitHub's schema, and plays auto-merge with real git.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKES, CliResult, git
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.chain import FAKE, call, run_proc
from tests.helpers.opened_step import Opened, opened_step, restore
from tests.helpers.step_pr import (
    BRANCH,
    env,
    implementer_runs,
    independent_steps_runner,
    kill_9_between_the_push_and_the_pull_request,
    origin_sha,
    paid,
    plan_status,
    run_pr,
    setup_repo,
    statuses,
    summaries,
)
from tests.standin_pulls import play_auto_merge

__all__ = ["env", "gh", "opened_step"]

# --- approved: branch, one pull request, history, status on exactly the head, auto-merge ----


def test_an_approved_step_becomes_one_pull_request_that_auto_merge_lands(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    main_before = git(repo, "rev-parse", "main").strip()
    out = run_pr(repo, "--step", "1", "--auto-merge", "squash")
    assert out.returncode == 0, out.stdout + out.stderr
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert head is not None
    # The branch: the reviewed work plus the commit marking step 1 done; the approval note on it.
    assert plan_status(git(repo, "show", f"{head}:specs/feature.md"), 1) == "✅"
    assert plan_status(git(repo, "show", f"{head}^:specs/feature.md"), 1) == "❌"
    assert git(repo, "rev-parse", "main").strip() == main_before  # no local merge
    [pull] = gh.state.pulls.values()
    assert (pull.head_ref, pull.base_ref, pull.state) == (BRANCH, "main", "open")
    assert pull.title == "[feature] Step 1: Add the module"
    assert "Add src/new_module.py." in pull.body and "specs/feature.md" in pull.body
    assert pull.head_sha == head and pull.labels == []
    assert statuses(gh, head) == ["pending", "success"]
    # The sticky comment: verdict, and the run history with every agent and the whole step.
    [summary] = summaries(gh, pull.number)
    assert "#### Run history" in summary
    history = summary.split("#### Run history", 1)[1]
    assert "| implement |" in history and "| review |" in history and "| chain |" in history
    assert "approve" in history and head[:12] in summary
    # Auto-merge through GraphQL (the query validated against GitHub's schema by the stand-in).
    assert pull.auto_merge == {"merge_method": "squash", "enabled_by": "gitflow-bot"}
    [graphql] = gh.requests("POST", "^/graphql$")
    assert graphql.body["variables"]["input"]["expectedHeadOid"] == head
    assert f"PR #{pull.number}" in out.stdout and "auto-merge (squash): enabled" in out.stdout
    # GitHub merges once the status is green: step 1 is ✅ on main, the branch is gone.
    [event] = play_auto_merge(gh)
    assert event["ref"] == "refs/heads/main" and event["before"] != event["after"]
    merged = origin_sha(gh, "refs/heads/main")
    assert merged == event["after"] and pull.merged
    assert plan_status(git(gh.state.origin, "show", f"{merged}:specs/feature.md"), 1) == "✅"
    assert origin_sha(gh, f"refs/heads/{BRANCH}") is None


def test_a_second_run_of_a_started_step_runs_no_agent_and_writes_nothing(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    repo = restore(opened_step, tmp_path, gh)  # run --pr --step 1 ran: its pull request open
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    writes, runs = len(gh.writes()), implementer_runs(repo)
    again = run_pr(repo, "--step", "1")
    assert again.returncode == 0, again.stderr
    assert f"step 1 already started: branch {BRANCH} on origin (PR #1)" in again.stdout
    assert implementer_runs(repo) == runs and len(gh.writes()) == writes
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == head


def test_force_finishes_a_started_step_without_a_second_pull_request_or_a_forced_push(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    repo = restore(opened_step, tmp_path, gh)  # run --pr --step 1 ran: its pull request open
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert head is not None
    again = run_pr(repo, "--step", "1", "--force")
    assert again.returncode == 0, again.stdout + again.stderr
    after = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert after is not None
    assert git(repo, "merge-base", "--is-ancestor", head, after) == ""  # a fast-forward
    assert len(gh.state.pulls) == 1 and len(summaries(gh, 1)) == 1
    assert len(gh.requests("POST", "/pulls$")) == 1
    assert statuses(gh, after)[-1] == "success"


def test_a_post_stored_then_502_opens_one_pull_request(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    gh.fail("POST", r"/pulls$", 502, store=True)
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(gh.state.pulls) == 1
    assert [r.status for r in gh.requests("POST", "/pulls$")] == [502]
    assert len(summaries(gh, 1)) == 1


def test_a_422_already_exists_finds_the_open_pull_request(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Someone opened the pull request between our look for it and our POST."""
    from tests.github_standin import Pull
    from tests.standin_pulls import branch_sha

    def open_it() -> None:
        assert gh.state.origin is not None
        head, base = branch_sha(gh.state.origin, BRANCH), branch_sha(gh.state.origin, "main")
        assert head is not None and base is not None
        gh.state.pulls[1] = Pull(
            1, head, base, [], author="someone-else", head_ref=BRANCH, live=True
        )

    repo = setup_repo(tmp_path, gh)
    gh.before.append(("POST", re.compile(r"/pulls$"), open_it))
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(gh.state.pulls) == 1
    statuses_of_posts = [r.status for r in gh.requests("POST", "/pulls$")]
    assert statuses_of_posts == [422]


def test_without_a_token_it_is_a_usage_error_before_any_agent_runs(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = setup_repo(tmp_path, gh)
    monkeypatch.delenv("GITHUB_TOKEN")
    monkeypatch.delenv("GITHUB_REPOSITORY")
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 2
    assert "GITHUB_TOKEN or GH_TOKEN" in out.stderr and "GITHUB_REPOSITORY" in out.stderr
    assert origin_sha(gh, f"refs/heads/{BRANCH}") is None
    assert not (repo / "flows").exists()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://x-access-token:SECRET@127.0.0.1:1/o/r.git", "(https://***@127.0.0.1:1/o/r.git)"),
        ("{tmp}/gone.git", "({tmp}/gone.git)"),
    ],
)
def test_an_unreachable_origin_is_named_with_its_url_masked(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], url: str, shown: str
) -> None:
    repo = setup_repo(tmp_path, gh)
    git(repo, "remote", "set-url", "origin", url.format(tmp=tmp_path))
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert f"cannot reach origin {shown.format(tmp=tmp_path)}: " in out.stderr
    assert "SECRET" not in out.stderr and "does not exist" not in out.stderr
    assert not (repo / "flows").exists()


def test_a_target_missing_on_a_reachable_origin_is_named(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    out = run_pr(repo, "--step", "1", "--target", "release")
    assert out.returncode == 2
    assert "the target branch release does not exist on origin" in out.stderr


def test_a_branch_moved_on_origin_during_the_run_exits_4_and_nothing_is_forced(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """The implementer, while it works, has someone else push to the claimed branch."""
    other = tmp_path / "other"
    script = tmp_path / "push_then_edit.py"
    script.write_text(
        "import subprocess, sys, os\n"
        f"other, origin = {str(other)!r}, {str(tmp_path / 'origin.git')!r}\n"
        "subprocess.run(['git', '-C', other, 'fetch', '-q', 'origin'], check=True)\n"
        f"subprocess.run(['git', '-C', other, 'checkout', '-q', '-B', 'x', 'origin/{BRANCH}'], check=True)\n"
        "open(os.path.join(other, 'theirs.txt'), 'w').write('theirs\\n')\n"
        "subprocess.run(['git', '-C', other, 'add', 'theirs.txt'], check=True)\n"
        "subprocess.run(['git', '-C', other, 'commit', '-q', '-m', 'theirs'], check=True)\n"
        f"subprocess.run(['git', '-C', other, 'push', '-q', 'origin', 'x:{BRANCH}'], check=True)\n"
        f"os.execv(sys.executable, [sys.executable, {str(FAKE)!r}, 'implementer', 'edit'])\n"
    )
    repo = setup_repo(tmp_path, gh, implementer=[sys.executable, str(script)])
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(other))
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 4, out.stdout + out.stderr
    assert "moved on (someone else pushed to it)" in out.stderr
    theirs = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert git(gh.state.origin, "log", "-1", "--format=%s", theirs).strip() == "theirs"
    assert gh.state.pulls == {}


def test_two_runs_racing_for_one_step_run_its_agents_once(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Two runners (two clones), started together: the claim lets exactly one work."""
    first = setup_repo(tmp_path, gh, name="runner-a")
    second = setup_repo(tmp_path, gh, name="runner-b")
    from tests.conftest import run_cli

    results: dict[str, CliResult] = {}

    def start(name: str, repo: Path) -> None:
        results[name] = run_cli(
            "run", "specs/feature.md", "--quiet", "--pr", "--step", "1", cwd=repo, env=env
        )

    threads = [
        threading.Thread(target=start, args=("a", first)),
        threading.Thread(target=start, args=("b", second)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.returncode for r in results.values()] == [0, 0], results
    started = [r for r in results.values() if "already started" in r.stdout]
    assert len(started) == 1, results
    assert implementer_runs(first) + implementer_runs(second) == 1
    assert len(gh.state.pulls) == 1


def test_kill_9_between_the_push_and_the_pull_request_then_force_finishes_it(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    pushed = kill_9_between_the_push_and_the_pull_request(repo, gh, env)
    runs = implementer_runs(repo)
    out = run_pr(repo, "--step", "1", "--force")
    assert out.returncode == 0, out.stdout + out.stderr
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == pushed  # the pushed mark is kept
    assert implementer_runs(repo) == runs  # the approved work is reused, not run again
    [pull] = gh.state.pulls.values()
    assert pull.head_sha == pushed and statuses(gh, pushed)[-1] == "success"


def test_a_rejected_step_leaves_a_labelled_pull_request_with_failure_and_inline_findings(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    from gitflow_agents.github.pr.publish import CHANGES_LABEL

    repo = setup_repo(tmp_path, gh, reviewer="revise")
    out = run_pr(repo, "--step", "1", "--max-iterations", "1", "--auto-merge", "merge")
    assert out.returncode == 1, out.stdout + out.stderr
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert head is not None
    # Marked ✅ on the branch all the same: merging the PR once it is fixed marks the step done.
    assert plan_status(git(repo, "show", f"{head}:specs/feature.md"), 1) == "✅"
    [pull] = gh.state.pulls.values()
    assert pull.state == "open" and pull.labels == [CHANGES_LABEL] and not pull.draft
    assert statuses(gh, head) == ["pending", "failure"]
    assert pull.auto_merge is None and gh.requests("POST", "^/graphql$") == []
    [comment] = gh.state.review_comments.values()
    assert comment["path"] == "README.md" and "needs a fix" in comment["body"]
    assert comment["commit_id"] == head
    [summary] = summaries(gh, pull.number)
    assert "REVISE" in summary.upper() and "revise (1 finding)" in summary


def test_auto_merge_refused_after_its_retries_exits_4_and_a_re_run_finishes_it(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Exit 4 (GitHub failed), not 0: an approved pull request without auto-merge would stall
    the wave with every job green. Its head stays ``pending`` (nothing merges unseen), and a
    re-run, once GitHub allows it, enables auto-merge and sets the verdict, nothing redone."""
    repo = setup_repo(tmp_path, gh)
    gh.state.allow_auto_merge = False
    gh.state.issues.add(5)
    out = run_proc(repo, "--pr", "--step", "1", "--auto-merge", "rebase", "--plan-issue", "5")
    assert out.returncode == 4, out.stdout + out.stderr
    assert "auto-merge (rebase): not enabled" in out.stdout
    assert "could not be enabled on PR #1" in out.stderr
    (glance,) = gh.comments_on(5)  # the plan at a glance, though the run failed after it
    assert "| 1: " in str(glance["body"]) and "PR #1" in str(glance["body"])
    [pull] = gh.state.pulls.values()
    assert pull.state == "open" and pull.auto_merge is None
    assert statuses(gh, pull.head_sha) == ["pending"]
    assert play_auto_merge(gh) == []
    runs = implementer_runs(repo)
    gh.state.allow_auto_merge = True
    again = run_pr(repo, "--step", "1", "--auto-merge", "rebase")
    assert again.returncode == 0, again.stdout + again.stderr
    assert implementer_runs(repo) == runs and len(gh.state.pulls) == 1
    assert pull.auto_merge is not None and "taking over" in again.stdout
    assert statuses(gh, pull.head_sha)[-1] == "success"


def test_draft_opens_the_pull_request_as_a_draft(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    out = run_pr(repo, "--step", "1", "--draft")
    assert out.returncode == 0, out.stdout + out.stderr
    [pull] = gh.state.pulls.values()
    assert pull.draft
    assert gh.requests("POST", "/pulls$")[0].body["draft"] is True


def test_auto_merge_and_draft_without_pr_are_usage_errors(
    tmp_path: Path, gh: GitHubStandIn
) -> None:
    repo = setup_repo(tmp_path, gh)
    out = call(repo, "run", "specs/feature.md", "--step", "1", "--auto-merge", "squash")
    assert out.returncode == 2 and "--auto-merge and --draft go with --pr" in out.stderr


def test_agent_fix_turns_a_rejected_step_pull_request_green(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """The existing ``/agent fix`` on a step PR: the implementer leaves a syntax error the builtin
    reviewer rejects; the fixer's commit lands on the step branch (on top of the ✅ mark), the
    review of the new head approves it, its status is green, and merging it marks step 1 ✅."""
    from tests.helpers.action_runner import BROKEN, Runner, comment_event

    script = tmp_path / "broken_then_edit.py"
    script.write_text(
        "import os, sys\n"
        f"open('broken.py', 'w').write({BROKEN!r})\n"
        f"os.execv(sys.executable, [sys.executable, {str(FAKE)!r}, 'implementer', 'edit'])\n"
    )
    fixer = [sys.executable, str(FAKES / "fake_fixer"), "fix", "{system_prompt_file}"]
    repo = setup_repo(
        tmp_path, gh, reviewer="builtin", implementer=[sys.executable, str(script)], fixer=fixer
    )
    assert run_pr(repo, "--step", "1", "--max-iterations", "1").returncode == 1
    rejected = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert rejected is not None and statuses(gh, rejected) == ["pending", "failure"]
    [finding] = gh.state.review_comments.values()
    assert finding["path"] == "broken.py"
    workspace = setup_repo(tmp_path, gh, name="workspace")  # the fix job's checkout
    gh.state.permissions["maintainer"] = "write"
    runner = Runner(tmp_path, gh, workspace)
    event = comment_event(gh, 1, "maintainer", "/agent fix")
    out = runner.run_with({}, "issue_comment", event, "--fixer", "fixer")
    assert out.returncode == 0, out.stdout + out.stderr
    assert runner.outputs()["fix-result"] == "pushed"
    fixed = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert fixed is not None and git(workspace, "rev-parse", f"{fixed}^").strip() == rejected
    assert statuses(gh, fixed)[-1] == "success"
    assert plan_status(git(workspace, "show", f"{fixed}:specs/feature.md"), 1) == "✅"
    [pull] = gh.state.pulls.values()
    # Green now: the changes-requested label goes, with one request; a re-run of the same
    # comment's job finds nothing to fix and the label gone, and removes nothing again.
    assert pull.labels == [] and len(gh.requests("DELETE", "/labels/")) == 1
    again = runner.run_with({}, "issue_comment", event, "--fixer", "fixer")
    assert again.returncode == 0, again.stdout + again.stderr
    assert runner.outputs()["fix-result"] == "nothing-to-fix"
    assert len(gh.requests("DELETE", "/labels/")) == 1
    pull.auto_merge = {"merge_method": "merge", "enabled_by": "maintainer"}  # a human's click
    [event] = play_auto_merge(gh)
    assert gh.state.origin is not None
    merged = git(gh.state.origin, "show", f"{event['after']}:specs/feature.md")
    assert plan_status(merged, 1) == "✅"


@pytest.mark.parametrize(
    ("inputs", "code", "says"),
    [
        ({"mode": "run", "plan": "specs/feature.md", "step": "1", "auto-merge": "squash"}, 0, ""),
        ({"mode": "run", "plan": "specs/feature.md"}, 2, "mode run needs the plan and step"),
        ({"mode": "merge"}, 2, "unknown mode 'merge'"),
    ],
)
def test_the_actions_mode_run_runs_the_step_as_a_pull_request(
    tmp_path: Path,
    gh: GitHubStandIn,
    env: dict[str, str],
    inputs: dict[str, str],
    code: int,
    says: str,
) -> None:
    """The real ``run:`` text of action.yml under ``bash -eo pipefail``, as a runner runs it;
    the step's outputs: how it ended, its pull request and head, what its agents spent."""
    repo = setup_repo(tmp_path, gh, implementer=paid("implementer", "edit"),
                      reviewer_argv=paid("reviewer", "approve"))  # fmt: skip
    proc, outputs = action_run(tmp_path, repo, env, inputs)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert says in proc.stdout
    if code == 0:
        [pull] = gh.state.pulls.values()
        assert pull.author == "github-actions[bot]" and pull.auto_merge is not None
        assert statuses(gh, pull.head_sha) == ["pending", "success"]
        assert f"PR #{pull.number}" in proc.stdout  # the log lines stay in the job log
        assert outputs["step-result"] == "approved" and outputs["run-id"]
        assert (outputs["pull-request"], outputs["head-sha"]) == (str(pull.number), pull.head_sha)
        spent = [outputs[k] for k in ("cost-usd", "input-tokens", "output-tokens")]
        assert spent == ["0.02", "2000", "400"] and outputs["cost-estimated"] == "false"
        assert "github-error" not in outputs
    else:  # refused by the script itself: nothing ran, no outputs
        assert gh.state.pulls == {} and origin_sha(gh, f"refs/heads/{BRANCH}") is None
        assert outputs == {}


def action_run(
    tmp_path: Path, repo: Path, env: dict[str, str], inputs: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """action.yml's step run in ``repo`` with ``inputs``; its process, and the outputs it set."""
    from tests.helpers.action_runner import read_outputs, review_step

    script, step_env = review_step(tmp_path, {"github-token": "tok-actions", **inputs})
    output = tmp_path / "github_output"
    output.touch()
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=repo,
        env={
            **os.environ,
            **env,
            **step_env,
            "GITHUB_ACTIONS": "true",
            "GITHUB_OUTPUT": str(output),
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc, read_outputs(output.read_text())


STEP_1 = {"mode": "run", "plan": "specs/feature.md", "step": "1"}


@pytest.mark.parametrize(
    ("agents", "config", "inputs", "code", "ended"),
    [
        # the reviewer asks for changes every round: a pull request that is not approved
        ({"reviewer": "revise"}, "chain: {max_iterations: 1}\n", {}, 1, "rejected"),
        # the implementer fails (after it said what it spent): no pull request
        ({"implementer": paid("implementer", "crash")}, "", {}, 3, "failed"),
        # the budget lets no agent start: nothing claimed, nothing spent
        ({}, "budget: {plan: {usd: 0}}\n", {}, 5, "budget"),
        # approved, then GitHub refuses auto-merge after its retries (exit 4)
        # (the builtin reviewer spends 0: the sum is the implementer's)
        (
            {"reviewer": "builtin", "implementer": paid("implementer", "edit")},
            "",
            {"auto-merge": "rebase"},
            4,
            "approved",
        ),
    ],
)
def test_the_actions_mode_run_sets_its_outputs_however_the_step_ends(
    tmp_path: Path,
    gh: GitHubStandIn,
    env: dict[str, str],
    agents: dict[str, Any],
    config: str,
    inputs: dict[str, str],
    code: int,
    ended: str,
) -> None:
    repo = setup_repo(tmp_path, gh, **agents)
    (repo / ".flow" / "base.yaml").write_text((repo / ".flow" / "base.yaml").read_text() + config)
    gh.state.allow_auto_merge = False
    proc, outputs = action_run(tmp_path, repo, env, {**STEP_1, **inputs})
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert outputs["step-result"] == ended
    pulls = list(gh.state.pulls.values())
    assert outputs["pull-request"] == "".join(str(p.number) for p in pulls)
    assert outputs["head-sha"] == "".join(p.head_sha for p in pulls)
    spent = [outputs[k] for k in ("cost-usd", "input-tokens", "output-tokens")]
    if "implementer" in agents:  # what it said it spent
        assert spent == ["0.01", "1000", "200"] and outputs["run-id"]
    elif ended == "budget":  # no agent started
        assert spent == ["0", "0", "0"] and outputs["run-id"] == ""
    else:  # agents that do not say what they spent: unknown, never 0
        assert spent == ["", "", ""]
    if code == 4:
        assert "could not be enabled on PR #1" in outputs["github-error"]
        assert "auto-merge (rebase): not enabled" in proc.stdout
    else:
        assert "github-error" not in outputs


@pytest.mark.parametrize(("mode", "code"), [("crash", 3), ("noop", 1)])
def test_a_run_that_ends_without_a_verdict_gives_its_claim_back(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], mode: str, code: int
) -> None:
    """An implementer that fails (3) or changes nothing (1): no pull request, and the branch on
    origin is deleted (it was still the claimed commit), so a later wave can start the step."""
    repo = setup_repo(tmp_path, gh, implementer=[sys.executable, str(FAKE), "implementer", mode])
    out = run_pr(repo, "--step", "1")
    assert out.returncode == code, out.stdout + out.stderr
    assert f"the claim of {BRANCH} on origin was released" in out.stdout
    assert origin_sha(gh, f"refs/heads/{BRANCH}") is None and gh.state.pulls == {}


# --- a spent budget: the next step is not claimed -------------------------------------------


def origin_refs(gh: GitHubStandIn) -> list[str]:
    assert gh.state.origin is not None
    return git(gh.state.origin, "for-each-ref", "--format=%(refname)").split()


def step_runs(repo: Path) -> int:
    """The step runs recorded in ``repo`` (each agent run has a record of its own too)."""
    found = 0
    for path in (repo / "flows" / "feature" / "runs").glob("*/result.json"):
        found += json.loads(path.read_text()).get("run", {}).get("kind") == "chain"
    return found


def test_a_spent_plan_budget_claims_no_further_step(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Steps 1 and 2 are ready together; step 1's implementer and reviewer spend the plan's
    $0.02. Step 2 is asked of the budget before its claim, as `run` asks: not started, exit 5,
    nothing of it pushed to origin (another runner would see it started and skip it). Run
    again, with the budget fresh, step 2 is claimed and run then, step 1 left as it is."""
    setup_repo(tmp_path, gh, "seed", implementer=paid("implementer", "edit"),
               reviewer_argv=paid("reviewer", "approve"))  # fmt: skip
    repo = independent_steps_runner(tmp_path, gh)
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text() + "budget:\n  plan: {usd: 0.02}\n")
    out = run_pr(repo, "--all")
    assert out.returncode == 5, out.stdout + out.stderr
    assert "step 2 not started: budget: plan spent $0.020 of $0.02" in out.stdout
    assert "no agent started" not in out.stdout
    assert [ref for ref in origin_refs(gh) if "step-2" in ref] == []
    assert len(gh.state.pulls) == 1 and step_runs(repo) == 1
    again = run_pr(repo, "--all")  # a budget holds for one command: step 2 runs now, once
    assert again.returncode == 0, again.stdout + again.stderr
    assert "started (branch on origin): 1;" in again.stdout and len(gh.state.pulls) == 2


@pytest.mark.parametrize(
    ("budget", "option", "says"),
    [
        ("plan: {usd: 0}", (), "budget: plan is $0 (nothing may be spent)"),
        ("plan: {tokens: 0}", (), "budget: plan is 0 tokens (nothing may be used)"),
        ("", ("--budget-usd", "0"), "budget: step is $0 (nothing may be spent)"),
    ],
)
def test_a_budget_of_0_claims_no_step(
    tmp_path: Path,
    gh: GitHubStandIn,
    env: dict[str, str],
    budget: str,
    option: tuple[str, ...],
    says: str,
) -> None:
    """A limit of 0 (the plan's, or the step's own through `--budget-usd 0`) lets no agent
    start: the step is not claimed and no run of it recorded, not claimed and given back."""
    repo = setup_repo(tmp_path, gh)
    if budget:
        config = repo / ".flow" / "base.yaml"
        config.write_text(config.read_text() + f"budget:\n  {budget}\n")
    out = run_pr(repo, "--all", *option)
    assert out.returncode == 5, out.stdout + out.stderr
    assert f"step 1 not started: {says}" in out.stdout
    assert origin_refs(gh) == ["refs/heads/main"] and gh.state.pulls == {}
    assert step_runs(repo) == 0
