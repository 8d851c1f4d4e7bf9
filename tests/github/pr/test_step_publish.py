"""A step pull request's publishing: the flowchart in its sticky comment, the tool's section of
its body (a human's edits survive), and the changes-requested label leaving when it turns green.

Real PyGithub against the stand-in (every call validated against GitHub's OpenAPI description);
the end-to-end ones run ``run --pr`` on a real bare origin, as tests/github/pr/test_step_pr.py does.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.findings import Severity
from gitflow_agents.github.action import comment
from gitflow_agents.github.pr.body import CHANGES_LABEL, END, is_step_pull, title_digest, update
from gitflow_agents.github.pr.publish import StepPull, publish_step, pull_body
from tests.conftest import git
from tests.github_standin import GitHubStandIn, client_for, gh, simple_pull
from tests.helpers.chain import call
from tests.helpers.step_pr import BRANCH, FAKE, env, origin_sha, run_pr, setup_repo, summaries

__all__ = ["env", "gh"]

FENCE = re.compile(r"^```mermaid\n(.*?)^```$", re.S | re.M)
HOSTILE = (
    'evil"] --> n9["x"]\nclick n1 "javascript:alert(1)"\n%%{init: {"securityLevel": "loose"}}%%'
    "\n```\n</details><img src=x onerror=alert(1)> `code` |pipe|"
)


def chart_of(body: str) -> str:
    """The one Mermaid block of ``body``: exactly one, closed."""
    assert body.count("```mermaid") == 1, body
    [chart] = FENCE.findall(body)
    return str(chart)


def labels_of(chart: str) -> list[str]:
    return re.findall(r'"([^"]*)"', chart)


# --- the flowchart in the sticky comment ------------------------------------------------------


def test_the_sticky_comment_draws_the_chain_ending_in_its_pull_request(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """implement → review (REVISE, 1 finding) → fix → review (APPROVED) → PR #1; a second run
    edits the same comment in place."""
    repo = setup_repo(tmp_path, gh, reviewer="until-fixed")
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    [summary] = summaries(gh, 1)
    chart = chart_of(summary)
    labels = labels_of(chart)
    assert [label.split("<br/>")[0] for label in labels] == [
        "implement",
        "review 1#58; REVISE, 1 finding",
        "fix 1",
        "review 2#58; APPROVED",
        "APPROVED",
    ]
    assert labels[-1].split("<br/>")[1] == "PR #35;1"  # the outcome, then the pull request
    assert all(re.search(r"\d\.\d s", label) for label in labels[:4])  # durations
    assert "total" in labels[-1]
    # history draws the very same chart: one chart, one function
    [shown] = re.findall(r"^```mermaid\n(.*?)^```$", history_mermaid(repo), re.S | re.M)
    assert shown == chart
    # The chart sits in the run history, above its table.
    history = summary.split("#### Run history", 1)[1]
    assert history.index("```mermaid") < history.index("| step | flow |")
    [made] = gh.requests("POST", r"/issues/1/comments$")
    again = run_pr(repo, "--step", "1", "--force")
    assert again.returncode == 0, again.stdout + again.stderr
    assert gh.requests("POST", r"/issues/1/comments$") == [made]  # no second comment
    [summary] = summaries(gh, 1)
    assert labels_of(chart_of(summary))[-1].startswith("APPROVED<br/>PR #35;1<br/>")
    assert history_mermaid(repo).count('(["APPROVED<br/>PR #35;1<br/>') == 2  # both runs


def history_mermaid(repo: Path) -> str:
    out = call(repo, "history", "--format", "mermaid")
    assert out.returncode == 0, out.stderr
    return out.stdout


def _step_result(tmp_path: Path, outcome: str, agent: str) -> tuple[dict[str, Any], Path]:
    """A step run's result.json data (``agent`` as every agent's name) in a run folder whose
    sibling holds the implementer's own result.json (its tokens and cost)."""
    runs = tmp_path / "runs"
    (runs / "impl-1").mkdir(parents=True, exist_ok=True)
    (runs / "impl-1" / "result.json").write_text(
        json.dumps({"run": {"inputTokens": 1000, "outputTokens": 234, "costUsd": 0.12}})
    )
    run_dir = runs / "step-1"
    run_dir.mkdir(exist_ok=True)
    approved = outcome == "approved"
    finding = {"severity": "error", "file": "app.py", "line": 1, "message": agent}
    result = {
        "run": {"durationMs": 9000},
        "chain": {
            "step": 1,
            "outcome": outcome,
            "reason": agent,
            "agents": [
                {"kind": "implement", "agent": agent, "agentId": agent, "status": "succeeded",
                 "durationMs": 4000, "runID": "impl-1"},
                {"kind": "review", "agent": agent, "agentId": "rev", "status": "succeeded",
                 "durationMs": 2000, "runID": "../../etc"},
            ],
            "rounds": [
                {"iteration": 1, "approved": approved, "reviewedSha": "a" * 40,
                 "reviewers": [{"agentId": "rev", "overall": "approve" if approved else "revise",
                                "findings": [] if approved else [finding]}]},
            ],
        },
    }  # fmt: skip
    return result, run_dir


def _spec(gh: GitHubStandIn, **overrides: Any) -> StepPull:
    values: dict[str, Any] = {
        "repo": gh.full_name,
        "branch": BRANCH,
        "target": "main",
        "title": "[feature] Step 1: Add the module",
        "body": pull_body("specs/feature.md", 1, "Add it.", None),
        "draft": False,
        "auto_merge": None,
    }
    return StepPull(**{**values, **overrides})


def test_hostile_agent_names_stay_inert_and_a_rerun_edits_the_comment_in_place(
    tmp_path: Path, gh: GitHubStandIn
) -> None:
    """Names and reasons an agent wrote into the run record cannot end a label, add a node, an
    edge, a click or a directive, or close the fence; the second publish (now approved) edits
    the one comment and takes the label off."""
    pull = simple_pull(gh, number=3, head_ref=BRANCH)
    client = client_for(gh)
    result, run_dir = _step_result(tmp_path, "rejected", HOSTILE)
    first = publish_step(
        client, _spec(gh), result, run_dir, head="a" * 40, approved=False,
        threshold=Severity.ERROR,
    )  # fmt: skip
    assert first.state == "failure" and pull.labels == [CHANGES_LABEL]
    [summary] = summaries(gh, 3)
    chart = chart_of(summary)
    assert "`" not in chart
    for line in chart.splitlines():
        assert not line.lstrip().startswith(("click", "%%", "style", "linkStyle")), line
        outside = re.sub(r'"[^"]*"', '""', line)
        assert re.fullmatch(
            r"\s*(flowchart LR|n\d+\[\"\"\]:::\w+|n\d+\(\[\"\"\]\):::\w+|n\d+ --> n\d+|"
            r"classDef \w+ [\w:#,]+)",
            outside,
        ), line
    for label in labels_of(chart):
        assert re.fullmatch(r"[\w .,\-/+=!?*#;$·]*", label.replace("<br/>", "")), label
    assert "1,234 tokens" in chart and "#36;0.12" in chart  # from the implementer's own record
    assert '(["REJECTED<br/>PR #35;3<br/>' in chart
    recorded = json.loads((run_dir / "result.json").read_text())["chain"]["pullRequest"]
    assert recorded["number"] == 3 and recorded["url"].endswith("/pull/3")
    assert summary.count("\n```") == 2  # the chart's fence lines, and no other
    approved, _ = _step_result(tmp_path, "approved", "builder")
    second = publish_step(
        client, _spec(gh), approved, run_dir, head="a" * 40, approved=True,
        threshold=Severity.ERROR,
    )  # fmt: skip
    assert second.comment_action == "updated" and pull.labels == []
    [summary] = summaries(gh, 3)
    assert len(gh.requests("POST", r"/issues/3/comments$")) == 1
    assert "review 1#58; APPROVED" in chart_of(summary)


def test_a_chart_that_does_not_fit_is_left_out_whole_with_a_line_saying_so() -> None:
    from gitflow_agents.findings import GateResult, Review
    from gitflow_agents.render.mermaid import step_flowchart_markdown

    result = {"chain": {"outcome": "approved", "agents": [{"kind": "implement", "agent": "a"}]}}
    chart = step_flowchart_markdown(result)
    review, gate = Review(None), GateResult(True, 0, (), Severity.ERROR)
    rows = [comment.RunRow(flow="chain", agent="a", outcome="approved")]
    without = comment.summary_body(review, gate, rows=rows, footer="f", limit=None)
    fits = comment.summary_body(review, gate, rows=rows, footer="f", chart=chart)
    assert chart.rstrip("\n") in fits and len(fits) > len(without)
    tight = comment.summary_body(
        review, gate, rows=rows, footer="f", chart=chart, limit=len(without) + 200
    )
    assert "```" not in tight and comment.CHART_LEFT_OUT in tight
    assert "| chain |" in tight and "Cut to stay under" not in tight  # nothing else was cut


@pytest.mark.parametrize("fence", ["```mermaid", "  ```suggestion", "````", "~~~"])
def test_cap_never_ends_inside_a_fenced_block(fence: str) -> None:
    close = fence.strip()[:4] if fence.strip().startswith("````") else fence.strip()[:3]
    block = [
        fence,
        *(f"line {i}" for i in range(40)),
        " " * (len(fence) - len(fence.lstrip())) + close,
    ]
    body = "\n".join(["head", "", *block, "", "tail", ""])
    for limit in range(20, len(body), 37):
        capped = comment.cap(body, limit, where="w")
        kept = capped.split("\n\n> ✂️")[0]
        assert comment._open_fence(kept.split("\n")) is None, (limit, capped)
        assert (fence.strip() in kept) == ("tail" in kept or "line 39" in kept), (limit, capped)


# --- the body's section: a human's title and text survive -------------------------------------


def test_a_human_edit_of_title_and_body_survives_a_rerun(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh, reviewer="revise")
    assert run_pr(repo, "--step", "1", "--max-iterations", "1").returncode == 1
    [pull] = gh.state.pulls.values()
    assert is_step_pull(pull.body) and pull.body.count(END) == 1
    pull.title = "Step 1, as the team calls it"
    pull.body = f"Context from a human.\n\n{pull.body}\nA checklist below, also a human's.\n"
    again = run_pr(repo, "--step", "1", "--max-iterations", "1", "--force")
    assert again.returncode == 1, again.stdout + again.stderr
    assert pull.title == "Step 1, as the team calls it"
    assert pull.body.startswith("Context from a human.\n\n<!-- gitflow-agents:step ")
    assert pull.body.endswith("A checklist below, also a human's.\n")
    assert pull.body.count("Add src/new_module.py.") == 1 and pull.body.count(END) == 1
    assert all("title" not in r.body for r in gh.requests("PATCH", r"/pulls/\d+$"))


def test_the_title_follows_the_plan_while_it_is_still_the_tools() -> None:
    section = pull_body("specs/feature.md", 1, "Text.", None)
    old, new = "[f] Step 1: Old", "[f] Step 1: New"
    from gitflow_agents.github.pr.body import stamped

    body = f"{stamped(section, title_digest(old))}\n"
    title, updated = update(old, body, new, pull_body("specs/feature.md", 1, "New text.", None))
    assert title == new and updated is not None and "New text." in updated
    assert f"title:{title_digest(new)}" in updated
    # A human's title stays, and the section keeps the digest of the tool's last one.
    title, updated = update("Mine", body, new, section)
    assert title is None and updated is None
    # Nothing changed: nothing to write (a re-run writes nothing).
    assert update(old, body, old, section) == (None, None)


@pytest.mark.parametrize(
    ("current", "kept"),
    [
        ("", []),  # a body a human emptied: the section comes back
        ("Only a human's words.", ["Only a human's words."]),
        ('Top.\n\n<!-- gitflow-agents:step "specs/feature.md" 1 -->\nold text', ["Top."]),
    ],
)
def test_a_body_without_a_whole_section_gets_one(current: str, kept: list[str]) -> None:
    section = pull_body("specs/feature.md", 1, "Text.", None)
    _, body = update("t", current, "t", section)
    assert body is not None and body.count(END) == 1 and "old text" not in body
    assert all(text in body for text in kept)


def test_a_plan_path_cannot_end_the_marker_comment() -> None:
    section = pull_body("specs/a-->b <x>.md", 2, "Text.", None)
    first = section.split("\n", 1)[0]
    assert first.count("-->") == 1 and first.endswith("-->") and is_step_pull(section)


# --- the changes-requested label goes when the gate turns green -------------------------------


def test_the_actions_review_of_a_fixed_step_pr_takes_the_label_off_once(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """A rejected step PR; a human pushes the fix; the action's review of that push (a
    ``pull_request`` event) approves it: the label goes, with one request. A re-run of the
    same event finds it gone and writes no second removal."""
    from tests.helpers.action_runner import BROKEN, Runner, pr_event
    from tests.standin_pulls import refresh

    script = tmp_path / "broken_then_edit.py"
    script.write_text(
        "import os, sys\n"
        f"open('broken.py', 'w').write({BROKEN!r})\n"
        f"os.execv(sys.executable, [sys.executable, {str(FAKE)!r}, 'implementer', 'edit'])\n"
    )
    repo = setup_repo(tmp_path, gh, reviewer="builtin", implementer=[sys.executable, str(script)])
    assert run_pr(repo, "--step", "1", "--max-iterations", "1").returncode == 1
    [pull] = gh.state.pulls.values()
    assert pull.labels == [CHANGES_LABEL]
    human = setup_repo(tmp_path, gh, name="human")
    git(human, "checkout", "-q", BRANCH)
    (human / "broken.py").write_text("def ok():\n    return 1\n")
    git(human, "commit", "-q", "-am", "fix the syntax error")
    git(human, "push", "-q", "origin", BRANCH)
    fixed = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert fixed is not None
    refresh(gh, pull)  # the stand-in follows the branch, as GitHub does
    runner = Runner(tmp_path, gh, human)
    event = pr_event(gh, pull, "synchronize")
    out = runner.run("pull_request", event)
    assert out.returncode == 0, out.stdout + out.stderr
    assert runner.outputs()["review-result"] == "approved"
    assert pull.labels == []
    assert len(gh.requests("DELETE", "/labels/")) == 1
    again = runner.run("pull_request", event)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(gh.requests("DELETE", "/labels/")) == 1


def test_a_label_gone_before_the_removal_is_no_error_and_other_prs_keep_theirs(
    tmp_path: Path, gh: GitHubStandIn
) -> None:
    from gitflow_agents.github.pr.publish import clear_changes_label

    client = client_for(gh)
    body = pull_body("specs/feature.md", 1, "Text.", None)
    step = simple_pull(gh, number=4, body=body, labels=[CHANGES_LABEL])
    other = simple_pull(gh, number=5, body="a human's PR", labels=[CHANGES_LABEL])
    gh.before.append(("DELETE", re.compile("/labels/"), lambda: step.labels.clear()))
    value = client.pulls.get(gh.full_name, 4)
    assert clear_changes_label(client, gh.full_name, value)  # the 404 is fine
    assert [r.status for r in gh.requests("DELETE", "/labels/")] == [404]
    assert not clear_changes_label(client, gh.full_name, client.pulls.get(gh.full_name, 4))
    assert not clear_changes_label(client, gh.full_name, client.pulls.get(gh.full_name, 5))
    assert other.labels == [CHANGES_LABEL]
    assert len(gh.requests("DELETE", "/labels/")) == 1
