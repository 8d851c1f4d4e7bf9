"""``plan tend``: how tended step pull requests land (issue 22): a clean merge commit edited by
hand is refused for ``--auto-merge rebase`` (GitHub refuses to rebase it: auto-merge would wait
for good), a green pull request with nothing armed is armed by ``--auto-merge``, and on a
target that requires up-to-date branches one behind pull request is brought up to date per
merge. Real git, fake agents, real PyGithub against the stand-in (as tests/github/pr/test_tend.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CliResult, git
from tests.github.pr.test_tend import land_on_main, opened, tend
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.opened_step import Opened, opened_step, restore
from tests.helpers.prepared_pulls import two_opened_steps
from tests.helpers.step_pr import BRANCH, env, run_pr, statuses
from tests.standin_pulls import play_auto_merge
from tests.standin_rules import strict_rule

__all__ = ["env", "gh", "opened_step", "two_opened_steps"]


def merge_main_by_hand(tmp_path: Path, name: str, edits: dict[str, str]) -> str:
    """A human merges origin's main into the step branch (a clean merge), writes ``edits`` into
    that merge commit (``--amend``: an "evil merge" when there are any), and pushes it."""
    human = tmp_path / name
    git(tmp_path, "clone", "-q", "-b", BRANCH, str(tmp_path / "origin.git"), str(human))
    git(human, "merge", "-q", "--no-edit", "origin/main")
    if edits:
        for path, text in edits.items():
            (human / path).write_text(text)
        git(human, "add", "-A")
        git(human, "commit", "-q", "--amend", "--no-edit")
    git(human, "push", "-q", "origin", BRANCH)
    return git(human, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("edited", [False, True], ids=["untouched", "edited"])
def test_a_clean_merge_edited_by_hand_is_red_for_rebase_auto_merge(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened, edited: bool
) -> None:
    """An "evil merge": GitHub's rebase replays only the non-merge commits, which leaves out
    edits written into a clean merge commit, so GitHub refuses it ("This branch cannot be rebased
    safely") and a rebase auto-merge would wait for good; the tend says so, names the commit and
    exits 1. The same merge untouched lands by rebase (exit 0). The advice, a squash, lands it."""
    repo, _ = opened(tmp_path, gh, opened_step)
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    edits = {"README.md": "# demo\nedited inside the merge\n"} if edited else {}
    merge = merge_main_by_hand(tmp_path, "human", edits)
    out = tend(repo, "--auto-merge", "rebase")
    text = out.stdout + out.stderr
    assert statuses(gh, merge)[-1] == "success", text  # reviewed and approved as it is
    said = f"cannot be rebase-merged: its merge commit {merge[:12]} differs from the clean merge"
    if not edited:
        assert out.returncode == 0 and "cannot be rebase-merged" not in text, text
        return
    assert out.returncode == 1 and said in out.stdout and "1 red" in out.stdout, text
    assert gh.state.pulls[1].auto_merge is None  # not armed: GitHub would refuse its rebase
    squash = tend(repo, "--auto-merge", "squash")  # the advice: a squash lands it as reviewed
    assert squash.returncode == 0, squash.stdout + squash.stderr
    assert (gh.state.pulls[1].auto_merge or {}).get("merge_method") == "squash", squash.stdout
    [event] = play_auto_merge(gh)
    assert gh.state.pulls[1].merged, event


def test_run_pr_with_rebase_auto_merge_refuses_a_clean_merge_edited_by_hand(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    repo, _ = opened(tmp_path, gh, opened_step)
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    merge = merge_main_by_hand(tmp_path, "human", {"README.md": "# demo\nedited in the merge\n"})
    out = run_pr(repo, "--step", "1", "--force", "--auto-merge", "rebase")
    text = out.stdout + out.stderr
    (pull,) = gh.state.pulls.values()
    assert statuses(gh, pull.head_sha)[-1] == "success", text
    assert out.returncode == 1, text
    assert f"its merge commit {merge[:12]} differs from the clean merge" in out.stdout, text
    assert pull.auto_merge is None  # not armed: GitHub would refuse its rebase


# --- a rebase auto-merge armed by an earlier run, on a head before the edited merge ------------


def disarms(gh: GitHubStandIn) -> int:
    """How many ``disablePullRequestAutoMerge`` mutations GitHub was sent."""
    return sum(
        "disablePullRequestAutoMerge" in (r.body or {}).get("query", "")
        for r in gh.requests("POST", "graphql$")
    )


def armed_then_edited(tmp_path: Path, gh: GitHubStandIn, opened_step: Opened) -> tuple[Path, str]:
    """An earlier ``run --pr --auto-merge rebase`` armed rebase auto-merge on the approved head
    (GitHub has not merged it yet: say another required check still runs); then a human merges
    main into the branch, edits the merge and pushes it. GitHub keeps auto-merge armed across a
    push by someone with write access. The checkout, and the edited merge commit."""
    repo, _ = opened(tmp_path, gh, opened_step)
    earlier = run_pr(repo, "--step", "1", "--force", "--auto-merge", "rebase")
    assert earlier.returncode == 0, earlier.stdout + earlier.stderr
    assert (gh.state.pulls[1].auto_merge or {}).get("merge_method") == "rebase"
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    merge = merge_main_by_hand(tmp_path, "human", {"README.md": "# demo\nedited in the merge\n"})
    assert gh.state.pulls[1].auto_merge is not None
    return repo, merge


@pytest.mark.parametrize("command", ["run --pr", "plan tend"])
def test_a_rebase_auto_merge_armed_before_a_hand_edited_merge_is_disarmed(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened, command: str
) -> None:
    """The new head is approved (``success``): with the earlier rebase auto-merge still armed,
    it would wait for good on a rebase GitHub refuses. The run refusing rebase for that
    head disables it first (GraphQL ``disablePullRequestAutoMerge``) and says so; the same
    command again finds nothing armed and sends nothing."""
    repo, merge = armed_then_edited(tmp_path, gh, opened_step)

    def again() -> CliResult:
        if command == "run --pr":
            return run_pr(repo, "--step", "1", "--force", "--auto-merge", "rebase")
        return tend(repo, "--auto-merge", "rebase")

    out = again()
    text = out.stdout + out.stderr
    pull = gh.state.pulls[1]
    assert out.returncode == 1, text
    assert f"its merge commit {merge[:12]} differs from the clean merge" in out.stdout, text
    assert statuses(gh, pull.head_sha)[-1] == "success", text  # reviewed and approved
    assert pull.auto_merge is None, text  # disarmed: nothing rebase-merges the head unseen
    assert "auto-merge (rebase): disabled" in out.stdout, text
    assert play_auto_merge(gh) == [] and not pull.merged
    assert disarms(gh) == 1
    second = again()
    assert second.returncode == 1, second.stdout + second.stderr
    assert pull.auto_merge is None and disarms(gh) == 1  # nothing armed: nothing sent
    assert play_auto_merge(gh) == []


@pytest.mark.parametrize("command", ["run --pr", "plan tend"])
def test_a_disarm_github_fails_leaves_the_head_pending_and_exits_4(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened, command: str
) -> None:
    """GitHub failing the disable call after its retries: the verdict is not written (green, the
    head would wait on the armed rebase for good), the run says why and exits 4; the same command
    once GitHub answers finishes it."""
    repo, _ = armed_then_edited(tmp_path, gh, opened_step)

    def again() -> CliResult:
        if command == "run --pr":
            return run_pr(repo, "--step", "1", "--force", "--auto-merge", "rebase")
        return tend(repo, "--auto-merge", "rebase")

    gh.fail("POST", "graphql/disablePullRequestAutoMerge", 502, times=20)
    out = again()
    text = out.stdout + out.stderr
    pull = gh.state.pulls[1]
    assert out.returncode == 4, text
    assert statuses(gh, pull.head_sha)[-1] == "pending", text
    assert pull.auto_merge is not None and play_auto_merge(gh) == []
    assert "before this head could not be disabled (GitHub API: POST graphql" in text, text
    assert "its status stays pending, not green with a rebase armed" in text, text
    gh.faults.clear()
    second = again()
    assert second.returncode == 1, second.stdout + second.stderr
    assert pull.auto_merge is None and statuses(gh, pull.head_sha)[-1] == "success"


@pytest.mark.parametrize("method", ["rebase", "squash"])
def test_a_tend_disarms_a_rebase_auto_merge_it_finds_on_a_green_edited_merge(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened, method: str
) -> None:
    """A head already green (nothing to publish) whose pull request someone armed for rebase
    (GitHub has not merged it yet: say another required check still runs): the tend that
    refuses rebase for it disables that too, with one read of the pull request; a later tend
    sends nothing more (the list of open pull requests says nothing is armed). Armed for
    squash it stays: a squash lands the head as it was reviewed."""
    repo, _ = opened(tmp_path, gh, opened_step)
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    merge_main_by_hand(tmp_path, "human", {"README.md": "# demo\nedited in the merge\n"})
    assert tend(repo).returncode == 0  # reviewed, green, nothing armed
    pull = gh.state.pulls[1]
    pull.auto_merge = {"merge_method": method, "enabled_by": "alice"}  # armed in GitHub's UI
    out = tend(repo, "--auto-merge", "rebase")
    text = out.stdout + out.stderr
    assert out.returncode == 1 and "green on" in out.stdout and "1 red" in out.stdout, text
    if method == "squash":
        assert pull.auto_merge is not None and disarms(gh) == 0, text
        return
    assert pull.auto_merge is None and disarms(gh) == 1, text
    assert "step 1: PR #1 auto-merge (rebase): disabled" in out.stdout, text
    reads = len(gh.requests("GET", "/pulls/1$"))
    assert tend(repo, "--auto-merge", "rebase").returncode == 1 and disarms(gh) == 1
    assert len(gh.requests("GET", "/pulls/1$")) == reads  # the list says nothing is armed


def test_a_disarm_github_applied_before_its_answer_was_lost_is_not_sent_again(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    """A 502 after GitHub disabled it: the pull request is read before a retry, shows nothing
    armed, and the run goes on as if the answer had come (exit 1, the head green)."""
    repo, _ = armed_then_edited(tmp_path, gh, opened_step)
    gh.fail("POST", "graphql/disablePullRequestAutoMerge", 502, store=True)
    out = tend(repo, "--auto-merge", "rebase")
    text = out.stdout + out.stderr
    pull = gh.state.pulls[1]
    assert out.returncode == 1 and "1 red" in out.stdout, text
    assert pull.auto_merge is None and statuses(gh, pull.head_sha)[-1] == "success", text
    assert disarms(gh) == 1


def test_on_an_up_to_date_target_a_tend_brings_one_behind_pull_request_up_to_date_at_a_time(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], two_opened_steps: Opened
) -> None:
    """With the up-to-date rule GitHub merges one pull request at a time, and each merge leaves
    the others behind again: the tend tends the first behind one and the next waits for the
    push of its merge, instead of merging and reviewing every sibling after every merge."""
    repo = restore(two_opened_steps, tmp_path, gh)  # steps 1 and 2 open, auto-merge armed
    gh.state.branch_rules["main"] = [strict_rule(strict=True)]
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    assert play_auto_merge(gh) == []  # both behind: GitHub waits
    out = tend(repo, "--auto-merge", "squash")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "step 1: PR #1 behind main" in out.stdout and "tending it" in out.stdout
    assert "step 2: PR #2 behind main: waits for PR #1 to land" in out.stdout
    assert "1 green, 1 waiting, 0 red" in out.stdout
    [merged] = play_auto_merge(gh)  # PR 1, up to date and green
    assert gh.state.pulls[1].merged and not gh.state.pulls[2].merged
    again = tend(repo, "--auto-merge", "squash")  # the workflow the merge's push starts
    assert again.returncode == 0 and "step 2: PR #2 behind main" in again.stdout, again.stdout
    assert [e["after"] for e in play_auto_merge(gh)] != [merged["after"]]
    assert gh.state.pulls[2].merged


def test_without_the_up_to_date_rule_every_behind_pull_request_is_tended(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], two_opened_steps: Opened
) -> None:
    """Nothing makes GitHub wait for a behind pull request there: each is reviewed as it would
    land, in one tend."""
    repo = restore(two_opened_steps, tmp_path, gh)
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    out = tend(repo, "--auto-merge", "squash")
    assert out.returncode == 0 and "2 green, 0 waiting" in out.stdout, out.stdout + out.stderr
    assert "waits for PR" not in out.stdout


# --- a green, up-to-date pull request that nothing merges --------------------------------------


@pytest.mark.parametrize("method", ["squash", "merge", "rebase"])
def test_a_tend_arms_auto_merge_on_a_green_pull_request_nothing_merges(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened, method: str
) -> None:
    """Approved, green and up to date, with no auto-merge armed (published without
    ``--auto-merge``, or left so after a rebase refusal): green alone, it would stall the wave.
    The tend arms it as publishing does (``pending`` first: GitHub refuses auto-merge on a pull
    request whose checks already pass; then the verdict again), no agent runs, and GitHub merges
    it; a tend again reads and sends nothing."""
    repo, head = opened(tmp_path, gh, opened_step)
    pull = gh.state.pulls[1]
    assert pull.auto_merge is None and statuses(gh, head) == ["pending", "success"]
    out = tend(repo, "--auto-merge", method)
    text = out.stdout + out.stderr
    assert out.returncode == 0 and "1 green" in out.stdout, text
    assert f"step 1: PR #1 green on {head[:12]}, up to date with main" in out.stdout, text
    assert f"auto-merge ({method}): enabled" in out.stdout, text
    assert (pull.auto_merge or {}).get("merge_method") == method, text
    assert statuses(gh, head) == ["pending", "success", "pending", "success"], text
    writes = len(gh.writes())
    again = tend(repo, "--auto-merge", method)
    assert again.returncode == 0 and len(gh.writes()) == writes, again.stdout + again.stderr
    [event] = play_auto_merge(gh)
    assert pull.merged, event


@pytest.mark.parametrize("armed", ["merge", "rebase"])
def test_an_auto_merge_armed_for_another_method_on_a_green_pull_request_stays(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened, armed: str
) -> None:
    """Someone armed another method (in GitHub's UI, or an earlier run): it lands the head as
    well, so the tend leaves it and sends nothing."""
    repo, head = opened(tmp_path, gh, opened_step)
    pull = gh.state.pulls[1]
    pull.auto_merge = {"merge_method": armed, "enabled_by": "alice"}
    writes = len(gh.writes())
    out = tend(repo, "--auto-merge", "squash")
    assert out.returncode == 0 and "1 green" in out.stdout, out.stdout + out.stderr
    assert len(gh.writes()) == writes and pull.auto_merge["merge_method"] == armed
    assert statuses(gh, head)[-1] == "success"


@pytest.mark.parametrize("fault", ["refused", "502"])
def test_arming_a_green_pull_request_github_fails_leaves_it_pending_and_exits_4(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened, fault: str
) -> None:
    """GitHub refusing or failing the enable: the head stays ``pending`` (green, nothing would
    merge it), the pull request is red and the tend exits 4 saying why; the tend once GitHub
    answers reviews that head again (no verdict on it) and arms it."""
    repo, head = opened(tmp_path, gh, opened_step)
    pull = gh.state.pulls[1]
    if fault == "refused":
        gh.state.allow_auto_merge = False
    else:
        gh.fail("POST", "graphql/enablePullRequestAutoMerge", 502, times=20)
    out = tend(repo, "--auto-merge", "squash")
    text = out.stdout + out.stderr
    assert out.returncode == 4 and "1 red" in out.stdout, text
    assert "auto-merge (squash) could not be enabled on PR #1" in out.stdout, text
    assert statuses(gh, head)[-1] == "pending" and pull.auto_merge is None, text
    gh.state.allow_auto_merge = True
    gh.faults.clear()
    again = tend(repo, "--auto-merge", "squash")
    assert again.returncode == 0, again.stdout + again.stderr
    assert statuses(gh, head)[-1] == "success" and pull.auto_merge is not None
    [event] = play_auto_merge(gh)
    assert pull.merged, event


def test_a_green_draft_waits_to_be_marked_ready_before_it_is_armed(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], opened_step: Opened
) -> None:
    """GitHub refuses auto-merge on a draft: the tend says it waits for a human (exit 0, nothing
    sent), and arms it once it is marked ready."""
    repo, head = opened(tmp_path, gh, opened_step)
    pull = gh.state.pulls[1]
    pull.draft = True
    writes = len(gh.writes())
    out = tend(repo, "--auto-merge", "squash")
    assert out.returncode == 0 and "0 green, 1 waiting" in out.stdout, out.stdout + out.stderr
    assert "a draft: auto-merge waits until it is marked ready" in out.stdout
    assert len(gh.writes()) == writes and pull.auto_merge is None
    pull.draft = False
    again = tend(repo, "--auto-merge", "squash")
    assert again.returncode == 0 and "1 green" in again.stdout, again.stdout + again.stderr
    assert pull.auto_merge is not None and statuses(gh, head)[-1] == "success"
