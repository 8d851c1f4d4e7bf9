"""``plan tend``: how tended step pull requests land (issue 22): a clean merge commit edited by
hand is refused for ``--auto-merge rebase`` (GitHub's rebase would drop those edits), and on a
target that requires up-to-date branches one behind pull request is brought up to date per
merge. Real git, fake agents, real PyGithub against the stand-in (as tests/github/pr/test_tend.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git
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
    """An "evil merge": GitHub's rebase replays only the non-merge commits, so edits written
    into a clean merge commit would silently not land; the tend says so, names the commit and
    exits 1. The same merge untouched lands by rebase (exit 0)."""
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
    assert gh.state.pulls[1].auto_merge is None  # not armed: its rebase would drop the edit
    assert tend(repo, "--auto-merge", "squash").returncode == 0  # a squash lands it as reviewed


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
    assert pull.auto_merge is None  # not armed: GitHub's rebase would drop the edit


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
