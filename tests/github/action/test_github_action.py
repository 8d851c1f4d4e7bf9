"""``gitflow-agents action`` end to end, in a runner-shaped environment, against the stand-in.

Each test builds what a runner provides: a real git checkout with the PR's base and head
commits, the webhook payload at GITHUB_EVENT_PATH, the GITHUB_OUTPUT and GITHUB_STEP_SUMMARY
files, and GITHUB_API_URL pointing at the stand-in (as GitHub Enterprise would). Outputs are
read back the way the runner reads them (``tests/helpers/action_runner.py``). ``Runner`` calls the
CLI in this process; the ``run:`` step of action.yml and the check outside Actions run real
processes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitflow_agents.base.errors import ExitCode, InputError
from gitflow_agents.findings import Severity
from gitflow_agents.github.action.comment import MARKER
from gitflow_agents.github.action.event import Trigger, decide, load_event, parse_command
from gitflow_agents.github.action.runner import Options
from tests.conftest import ROOT, cli_main, git
from tests.github_events import (
    merge_group_event,
    push_event,
    user,
)
from tests.github_standin import GitHubStandIn, Pull, gh
from tests.helpers.action_runner import (
    BROKEN,
    FINE,
    Runner,
    action_steps,
    add_pull,
    comment_event,
    make_pr,
    pr_event,
    pr_files,
    review_step,
    runner,
    states,
)

__all__ = ["gh", "runner"]

# ---------------------------------------------------------------------------------------------
# The action step from action.yml, run the way the runner runs a composite step
# ---------------------------------------------------------------------------------------------


def test_action_yml_never_interpolates_into_shell() -> None:
    data = yaml.safe_load((ROOT / "action.yml").read_text())
    assert data["runs"]["using"] == "composite"
    for step in action_steps():
        if "run" in step:
            assert "${{" not in step["run"], step["name"]
            assert step["shell"] == "bash"
    review = next(s for s in action_steps() if s.get("id") == "review")
    for name in data["inputs"]:
        if name not in ("python-version",):
            assert f"${{{{ inputs.{name} }}}}" in review["env"].values(), name
    for name, output in data["outputs"].items():
        assert output["value"] == f"${{{{ steps.review.outputs.{name} }}}}"


def undeclared_outputs(outputs: dict[str, str]) -> set[str]:
    """Step outputs the run wrote that action.yml does not declare: a composite action passes
    only declared outputs on to the workflow (``github-writes`` is a count for the tests and
    benchmarks/github_requests.py, not an output of the action)."""
    declared = yaml.safe_load((ROOT / "action.yml").read_text())["outputs"]
    return set(outputs) - set(declared) - {"github-writes"}


def test_docs_inputs_and_outputs_match_action_yml() -> None:
    """docs/github.md's Inputs table and Outputs paragraph name exactly what action.yml
    declares, with the same defaults."""
    data = yaml.safe_load((ROOT / "action.yml").read_text())
    page = (ROOT / "docs" / "github.md").read_text()
    inputs_section = page.split("### Inputs", 1)[1].split("###", 1)[0]
    documented: dict[str, str] = {}
    for row in re.findall(r"^\| (`[^|]+`) \| ([^|]+) \|", inputs_section, re.MULTILINE):
        for name in re.findall(r"`([a-z-]+)`", row[0]):
            documented[name] = row[1].strip()
    assert set(documented) == set(data["inputs"])
    for name, spec in data["inputs"].items():
        default = str(spec.get("default", ""))
        shown = documented[name]
        expected = f"`{default}`" if default else "—"
        if name == "comment-author":  # empty: learned from GitHub's answers
            expected = "*(learned)*"
        assert shown == expected, (name, shown, default)
    outputs_section = page.split("### Outputs", 1)[1].split("###", 1)[0]
    named = set(
        re.findall(r"`([a-z]+(?:-[a-z]+)+|errors|warnings|infos|degraded|reason)`", outputs_section)
    )
    values = {
        "not-approved",
        "nothing-to-fix",
        "no-changes",
        "fixer-failed",
        "branch-moved",
        "push-refused",
    }
    assert named - values == set(data["outputs"])


def test_the_review_step_of_action_yml_end_to_end(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """The real ``run:`` text of action.yml, under ``bash --noprofile --norc -eo pipefail``,
    with the inputs mapped through ``env:`` exactly as written there."""
    pull = add_pull(gh, repo, {"broken.py": BROKEN, "fine.py": FINE})
    script, step_env = review_step(tmp_path, {"github-token": "tok-actions"})
    env = {**os.environ, **runner.env("pull_request", pr_event(gh, pull), "unused"), **step_env}
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr  # revise: the default fail-on fails the job
    outputs = runner.outputs()
    assert outputs["review-result"] == "revise"
    assert outputs["errors"] != "0"
    assert outputs["degraded"] == "false"
    assert outputs["run-id"] == "4242-1"
    assert outputs["head-sha"] == pull.head_sha
    assert undeclared_outputs(outputs) == set()
    findings = json.loads(Path(outputs["findings-file"]).read_text())
    assert any(f["file"] == "broken.py" for f in findings["findings"])
    assert json.loads(Path(outputs["sarif-file"]).read_text())["version"] == "2.1.0"
    assert re.search(r"^::error file=broken\.py,line=\d+", proc.stdout, re.MULTILINE)
    assert states(gh, pull.head_sha) == ["pending", "failure"]
    (summary_comment,) = gh.comments_on(7)
    assert summary_comment["user"]["login"] == "github-actions[bot]"
    assert summary_comment["body"].startswith(MARKER)
    assert "Run history" in summary_comment["body"]
    assert len(gh.state.reviews) == 1
    assert all(c["path"] == "broken.py" for c in gh.state.review_comments.values())
    step_summary = runner.summary.read_text()
    assert "gitflow-agents review: REVISE" in step_summary and MARKER not in step_summary


# ---------------------------------------------------------------------------------------------
# Through the CLI
# ---------------------------------------------------------------------------------------------


def test_rerun_with_nothing_changed_posts_no_new_comment(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    first = runner.run("pull_request", pr_event(gh, pull))
    assert first.returncode == 1, first.stderr
    writes_first = len(gh.writes())
    assert writes_first <= 4  # pending status, review, comment, final status
    assert runner.outputs()["github-writes"] == str(writes_first)
    second = runner.run("pull_request", pr_event(gh, pull, action="synchronize"))
    assert second.returncode == 1, second.stderr
    assert len(gh.comments_on(7)) == 1
    assert len(gh.state.reviews) == 1  # no second review: every finding is already inline
    assert len(gh.requests("POST", r"/issues/7/comments$")) == 1
    assert runner.outputs()["inline-posted"] == "0"
    assert states(gh, pull.head_sha) == ["pending", "failure", "pending", "failure"]


def test_findings_on_two_lines_that_read_the_same_are_each_commented(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """Two ``breakpoint()`` lines have two fingerprints: two inline comments, two SARIF
    results, none "outside the diff or over the cap"."""
    text = "def f():\n    breakpoint()\n    return 1\n\n\ndef g():\n    breakpoint()\n"
    pull = add_pull(gh, repo, {"a.py": text})
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert sorted(c["line"] for c in gh.state.review_comments.values()) == [2, 7]
    outputs = runner.outputs()
    assert outputs["inline-posted"] == "2"
    sarif = json.loads(Path(outputs["sarif-file"]).read_text())
    partial = {
        r["partialFingerprints"]["gitflowAgentsFingerprint/v1"] for r in sarif["runs"][0]["results"]
    }
    assert len(partial) == 2
    [summary] = gh.comments_on(7)
    assert "**Inline:** 2 posted inline now." in str(summary["body"])


def test_an_approved_pr_gets_a_green_status(runner: Runner, gh: GitHubStandIn, repo: Path) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == 0, result.stderr
    outputs = runner.outputs()
    assert outputs["review-result"] == "approved"
    # the builtin reviewer calls no model: its spend is known to be nothing
    spend = {k: outputs[k] for k in ("cost-usd", "input-tokens", "output-tokens", "cost-estimated")}
    assert spend == {
        "cost-usd": "0", "input-tokens": "0", "output-tokens": "0", "cost-estimated": "false"
    }  # fmt: skip
    assert states(gh, pull.head_sha) == ["pending", "success"]
    assert gh.state.reviews == {}  # nothing to say inline: no review at all


def test_fork_pr_with_read_only_token_degrades_without_crashing(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN}, head_repo="stranger/demo")
    result = runner.run("pull_request", pr_event(gh, pull), "tok-read", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert re.search(
        r"^::warning title=gitflow-agents::cannot set the pending status", result.stdout, re.M
    )
    assert re.search(r"^::error file=broken\.py", result.stdout, re.MULTILINE)
    outputs = runner.outputs()
    assert outputs["degraded"] == "true" and outputs["review-result"] == "revise"
    assert "Not posted to the pull request" in runner.summary.read_text()
    assert gh.comments_on(7) == [] and gh.statuses_for(pull.head_sha) == []
    assert len(gh.writes()) == 1  # the first refused write; nothing after it


@pytest.mark.parametrize(
    ("text", "final"), [(FINE, "success"), (BROKEN, "failure")], ids=["approved", "revise"]
)
def test_a_token_that_may_set_statuses_but_not_comment_still_sets_the_verdict(
    runner: Runner, gh: GitHubStandIn, repo: Path, text: str, final: str
) -> None:
    """``statuses: write`` without ``pull-requests: write``: the summary comment and the inline
    review are refused (degraded), the final status is set all the same, so the ``pending`` it
    set never stays (a required check would wait for it forever)."""
    pull = add_pull(gh, repo, {"m.py": text})
    refused = "Resource not accessible by integration"
    gh.fail("POST", r"/issues/7/comments$", 403, times=99, message=refused)
    gh.fail("POST", r"/pulls/7/reviews$", 403, times=99, message=refused)
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert runner.outputs()["degraded"] == "true"
    assert states(gh, pull.head_sha) == ["pending", final]
    assert gh.comments_on(7) == [] and gh.state.reviews == {}


def test_github_down_after_retries_exits_4_and_never_green(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    gh.fail("POST", r"/issues/7/comments$", 502, times=100)
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == 4, result.stderr
    assert "HTTP 502" in result.stderr and "after 2 retries" in result.stderr
    assert "Traceback" not in result.stderr
    assert "success" not in states(gh, pull.head_sha)
    assert states(gh, pull.head_sha) == ["pending", "error"]
    assert "APPROVED" in runner.summary.read_text()  # the results are still in the job summary


def test_agent_review_comment_by_a_writer_runs_the_review(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    gh.state.permissions["maintainer"] = "write"
    result = runner.run("issue_comment", comment_event(gh, 7, "maintainer", "/agent review"))
    assert result.returncode == 1, result.stderr
    assert runner.outputs()["review-result"] == "revise"
    assert gh.requests("GET", r"/collaborators/maintainer/permission$")
    assert gh.requests("GET", r"/pulls/7$")  # the PR comes from the API, not the payload
    assert states(gh, pull.head_sha) == ["pending", "failure"]


def test_agent_review_comment_without_write_access_is_refused_politely(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    add_pull(gh, repo, {"broken.py": BROKEN})
    result = runner.run("issue_comment", comment_event(gh, 7, "drive-by", "/agent review please"))
    assert result.returncode == 0, result.stderr
    outputs = runner.outputs()
    assert outputs["review-result"] == "skipped"
    assert "@drive-by asked for /agent review" in outputs["reason"]
    assert "write access" in outputs["reason"]
    assert undeclared_outputs(outputs) == set()
    assert "only people with write access" in runner.summary.read_text()
    assert gh.writes() == []


def test_malformed_event_payload_exits_2_naming_the_file(tmp_path: Path, repo: Path) -> None:
    """Through the CLI's error handling (in this process): the payload is judged before any
    request, so no stand-in is needed."""
    event = tmp_path / "event.json"
    env = {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "owner/demo",
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_TOKEN": "unused",
    }
    event.write_text('{"action": "opened", ')
    result = cli_main("action", cwd=repo, env=env)
    assert result.returncode == 2
    assert str(event) in result.stderr
    assert "not valid JSON" in result.stderr and "Traceback" not in result.stderr
    event.write_text(json.dumps({"action": "opened", "pull_request": {"number": 7}}))
    missing = cli_main("action", cwd=repo, env=env)
    assert missing.returncode == 2
    assert "event.json: pull_request.head.sha: missing" in missing.stderr


def test_outside_actions_it_says_so(repo: Path) -> None:
    result = cli_main("action", cwd=repo, env={"GITHUB_EVENT_PATH": "", "GITHUB_EVENT_NAME": ""})
    assert result.returncode == 2
    assert "not running in GitHub Actions" in result.stderr


# ---------------------------------------------------------------------------------------------
# Deciding what an event asks for (no network)
# ---------------------------------------------------------------------------------------------


def test_decide(gh: GitHubStandIn, tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    pull = Pull(3, "a" * 40, "b" * 40, [])
    options = Options(threshold=Severity.ERROR)
    assert decide("pull_request", pr_event(gh, pull), path, options).kind == "review"
    assert decide("pull_request", pr_event(gh, pull, action="closed"), path, options).kind == "skip"
    draft = Pull(3, "a" * 40, "b" * 40, [], draft=True)
    assert "draft" in decide("pull_request", pr_event(gh, draft), path, options).reason
    assert (
        decide("pull_request", pr_event(gh, draft), path, Options(review_drafts=True)).kind
        == "review"
    )
    bot = pr_event(gh, pull, sender=user("dependabot[bot]", "Bot"))
    assert decide("pull_request", bot, path, options).kind == "skip"
    assert decide("pull_request", bot, path, Options(allow_bots=True)).kind == "review"
    on_issue = comment_event(gh, 3, "x", "/agent review")
    del on_issue["issue"]["pull_request"]
    assert "not a pull request" in decide("issue_comment", on_issue, path, options).reason
    asked = comment_event(gh, 3, "x", "/agent fix")
    fix = decide("issue_comment", asked, path, options)
    assert (fix.kind, fix.number, fix.commenter) == ("fix", 3, "x")
    assert fix.comment_id == asked["comment"]["id"]  # the key of its reply
    for odd in (0, -1, None):  # no usable id: the reply is keyed to nothing
        weird = {**asked, "comment": {**asked["comment"], "id": odd}}
        assert decide("issue_comment", weird, path, options).comment_id is None
    for mistyped in ("12", True):  # a malformed payload, named (test_a_mistyped_…)
        weird = {**asked, "comment": {**asked["comment"], "id": mistyped}}
        with pytest.raises(InputError, match=r"comment\.id: expected int"):
            decide("issue_comment", weird, path, options)
    push = push_event(gh.full_name, "refs/heads/main", "b" * 40, "a" * 40)
    landed = decide("push", push, path, options)
    assert landed.kind == "landed" and landed.landed is not None
    assert (landed.landed.branch, landed.landed.after) == ("main", "a" * 40)
    tag = push_event(gh.full_name, "refs/tags/v1", "0" * 40, "a" * 40)
    assert decide("push", tag, path, options).kind == "skip"
    deleted = push_event(gh.full_name, "refs/heads/old", "a" * 40, "0" * 40)
    assert decide("push", deleted, path, options).kind == "skip"


def test_parse_command() -> None:
    assert parse_command("/agent review") == "review"
    assert parse_command("\n  /agent FIX now\nthanks") == "fix"
    assert parse_command("please /agent review") is None
    assert parse_command("/agent") is None
    assert parse_command("") is None


def test_load_event_names_the_file_the_line_and_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    path.write_text('{\n  "action": "opened",\n  oops\n}')
    with pytest.raises(InputError) as bad:
        load_event(path)
    assert (bad.value.path, bad.value.line) == (str(path), 3)
    assert str(bad.value).startswith(f"{path}:3: event payload is not valid JSON: ")
    assert bad.value.exit_code == ExitCode.USAGE
    path.write_text("[1, 2]")
    with pytest.raises(InputError, match="expected a JSON object, got list"):
        load_event(path)
    with pytest.raises(InputError, match="cannot read the event payload"):
        load_event(tmp_path / "missing.json")
    path.write_text('{"action": "opened"}')
    assert load_event(path) == {"action": "opened"}


def test_decide_names_the_missing_or_mistyped_key(gh: GitHubStandIn, tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    options = Options()
    with pytest.raises(InputError) as missing:
        decide("pull_request", {"action": "opened", "pull_request": {"number": 7}}, path, options)
    assert str(missing.value) == f"{path}: pull_request.head.sha: missing in the event payload"
    event = pr_event(gh, Pull(3, "a" * 40, "b" * 40, []))
    event["pull_request"]["number"] = "3"
    with pytest.raises(InputError, match=r"pull_request\.number: expected int .* got str"):
        decide("pull_request", event, path, options)
    comment = comment_event(gh, 3, "x", "/agent review")
    del comment["comment"]["user"]["login"]
    with pytest.raises(InputError, match=r"comment\.user\.login: missing"):
        decide("issue_comment", comment, path, options)
    assert decide("issue_comment", comment_event(gh, 3, "x", "/agent dance"), path, options) == (
        Trigger("skip", "unknown command /agent dance (known: review, fix)")
    )


def _copy_at(event: dict[str, object], dotted: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A copy of ``event``, the object in it holding ``dotted`` (``a.b``), and its last key."""
    copy = json.loads(json.dumps(event))
    *parents, last = dotted.split(".")
    node = copy
    for key in parents:
        node = node[key]
    return copy, node, last


def _with(event: dict[str, object], dotted: str, value: object) -> dict[str, object]:
    """A copy of ``event`` with the value at ``dotted`` (``a.b``) replaced."""
    copy, node, last = _copy_at(event, dotted)
    node[last] = value
    return copy


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("action", 3),
        ("pull_request.draft", "false"),
        ("pull_request.title", ["a title"]),
        ("pull_request.head.ref", 5),
        ("pull_request.head.repo", "octo/demo"),
        ("sender", "a bot"),
        ("sender.type", 1),
        ("before", 5),
    ],
)
def test_a_mistyped_pull_request_field_is_named_never_skipped(
    gh: GitHubStandIn, tmp_path: Path, key: str, value: object
) -> None:
    """A field of the wrong type is a malformed payload (exit 2 naming file and key), never read
    as absent: ``"action": 3`` is no unknown action, ``"draft": "false"`` no draft."""
    path = tmp_path / "event.json"
    event = pr_event(gh, Pull(3, "a" * 40, "b" * 40, []), action="synchronize")
    event["before"] = "c" * 40
    with pytest.raises(InputError) as error:
        decide("pull_request", _with(event, key, value), path, Options())
    assert error.value.exit_code == ExitCode.USAGE
    assert str(error.value).startswith(f"{path}: {key}: expected ")


def test_null_optional_fields_read_as_absent(gh: GitHubStandIn, tmp_path: Path) -> None:
    """GitHub sends ``null`` for some (a deleted fork's ``head.repo``): absent, not malformed."""
    event = _with(pr_event(gh, Pull(3, "a" * 40, "b" * 40, [])), "pull_request.head.repo", None)
    event = _with(_with(event, "pull_request.draft", None), "pull_request.title", None)
    trigger = decide("pull_request", event, tmp_path / "event.json", Options())
    assert trigger.kind == "review" and trigger.pull is not None
    assert trigger.pull.head_repo is None and not trigger.pull.draft


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("action", 3),
        ("issue.pull_request", "yes"),
        ("comment.body", 7),
        ("comment.id", "12"),
        ("comment.user.type", False),
    ],
)
def test_a_mistyped_issue_comment_field_is_named(
    gh: GitHubStandIn, tmp_path: Path, key: str, value: object
) -> None:
    path = tmp_path / "event.json"
    event = _with(comment_event(gh, 3, "x", "/agent review"), key, value)
    with pytest.raises(InputError) as error:
        decide("issue_comment", event, path, Options())
    assert str(error.value).startswith(f"{path}: {key}: expected ")


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("merge_group", "action", 3),
        ("merge_group", "merge_group.head_ref", 4),
        ("push", "deleted", "false"),
        ("push", "before", 1),
    ],
)
def test_a_mistyped_merge_group_or_push_field_is_named(
    gh: GitHubStandIn, tmp_path: Path, name: str, key: str, value: object
) -> None:
    path = tmp_path / "event.json"
    if name == "push":
        event = push_event(gh.full_name, "refs/heads/main", "c" * 40, "d" * 40)
    else:
        event = merge_group_event(gh.full_name, "c" * 40, "d" * 40)
    with pytest.raises(InputError) as error:
        decide(name, _with(event, key, value), path, Options())
    assert str(error.value).startswith(f"{path}: {key}: expected ")


def _without(event: dict[str, object], dotted: str) -> dict[str, object]:
    """A copy of ``event`` without the key at ``dotted`` (``a.b``)."""
    copy, node, last = _copy_at(event, dotted)
    del node[last]
    return copy


def _payload(gh: GitHubStandIn, name: str) -> dict[str, object]:
    """A payload of event ``name`` that starts a run."""
    if name == "pull_request":
        return pr_event(gh, Pull(3, "a" * 40, "b" * 40, []))
    if name == "issue_comment":
        return comment_event(gh, 3, "x", "/agent review")
    if name == "merge_group":
        return merge_group_event(gh.full_name, "c" * 40, "d" * 40)
    return push_event(gh.full_name, "refs/heads/main", "c" * 40, "d" * 40)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("pull_request", "action"),
        ("issue_comment", "action"),
        ("issue_comment", "comment"),
        ("issue_comment", "comment.body"),
        ("merge_group", "action"),
        ("push", "deleted"),
    ],
)
def test_a_missing_field_every_payload_has_is_named_never_skipped(
    gh: GitHubStandIn, tmp_path: Path, name: str, key: str
) -> None:
    """GitHub's webhook schema requires these keys (every example payload has them), so a
    payload without one is malformed (exit 2 naming file and key), not a skip: a missing
    ``action`` is no unknown action, a missing ``comment`` no comment without a command."""
    path = tmp_path / "event.json"
    with pytest.raises(InputError) as error:
        decide(name, _without(_payload(gh, name), key), path, Options())
    assert error.value.exit_code == ExitCode.USAGE
    assert str(error.value) == f"{path}: {key}: missing in the event payload"


def test_a_null_action_or_comment_is_absent(gh: GitHubStandIn, tmp_path: Path) -> None:
    """``null`` is absent, as for every payload field: a skip with its reason."""
    path, options = tmp_path / "event.json", Options()
    for name in ("pull_request", "issue_comment", "merge_group"):
        assert decide(name, _with(_payload(gh, name), "action", None), path, options).kind == "skip"
    comment = _with(_payload(gh, "issue_comment"), "comment", None)
    assert decide("issue_comment", comment, path, options) == (
        Trigger("skip", "the comment is not an /agent command")
    )


def test_a_missing_action_through_the_cli_is_exit_2(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    event = json.dumps(_without(pr_event(gh, pull), "action"))
    result = runner.run("pull_request", event)
    assert result.returncode == ExitCode.USAGE, result.stdout
    assert f"{runner.tmp / 'event.json'}: action: missing in the event payload" in result.stderr
    assert "review-result" not in runner.outputs() and states(gh, pull.head_sha) == []


def test_a_mistyped_action_through_the_cli_is_exit_2(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    event = json.dumps({**pr_event(gh, pull), "action": 3})
    result = runner.run("pull_request", event)
    assert result.returncode == ExitCode.USAGE, result.stdout
    assert f"{runner.tmp / 'event.json'}: action: expected " in result.stderr
    assert states(gh, pull.head_sha) == []


def test_github_failing_while_publishing_sets_error_and_still_writes_summary_and_outputs(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """The summary comment fails after every retry: exit 4, the status is ``error`` (never left
    pending or green), and the step summary and outputs (``github-error``) are still written."""
    pull = add_pull(gh, repo, {"fine.py": FINE})
    gh.fail("POST", r"/issues/7/comments$", 503, times=20)
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == ExitCode.GITHUB, result.stderr
    assert states(gh, pull.head_sha) == ["pending", "error"]
    outputs = runner.outputs()
    # the status is ``error``: the outputs say what was published, not the verdict alone
    assert outputs["github-error"] and outputs["review-result"] == "error"
    assert (outputs["inline-posted"], outputs["comment-id"]) == ("0", "")
    assert "APPROVED" in runner.summary.read_text()
    assert gh.comments_on(7) == []


@pytest.mark.parametrize("failure", ["502", "primary rate limit"])
def test_github_failing_on_the_first_write_still_writes_the_summary_and_outputs(
    runner: Runner, gh: GitHubStandIn, repo: Path, failure: str
) -> None:
    """The ``pending`` status, the run's first write, fails after every retry (or hits a primary
    rate limit that resets too late): exit 4 with one line, no review runs, and the outputs a
    workflow reads after ``if: always()`` are written all the same (``github-error`` set)."""
    pull = add_pull(gh, repo, {"bad.py": BROKEN})
    if failure == "502":
        gh.fail("POST", r"/statuses/", 502, times=100)
    else:
        gh.primary_rate_limit("POST", r"/statuses/", reset=2_000_000_000, times=100)
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == ExitCode.GITHUB, result.stderr
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "Traceback" not in result.stderr
    outputs = runner.outputs()
    assert outputs["github-error"]
    assert outputs["review-result"] == "error"
    assert outputs["run-id"] == "4242-1" and outputs["head-sha"] == pull.head_sha
    # no agent ran: it spent nothing, which is known
    spend = ("cost-usd", "input-tokens", "output-tokens", "cost-estimated")
    assert [outputs[k] for k in spend] == ["0", "0", "0", "false"]
    assert (outputs["inline-posted"], outputs["comment-id"]) == ("0", "")
    assert pull.head_sha[:12] in runner.summary.read_text()
    assert gh.comments_on(7) == [] and gh.state.reviews == {}


@pytest.mark.parametrize("agent", ["builtin", "some-agent"])
def test_a_review_that_stopped_before_its_agent_started_spent_a_known_nothing(
    runner: Runner, gh: GitHubStandIn, repo: Path, agent: str
) -> None:
    """The PR's base commit is not to be had (exit 2, before any reviewer starts): its spend
    outputs are 0, which is known, not empty (unknown); the builtin reviewer calls no model
    at all (docs/github.md, "Outputs")."""
    _, head = make_pr(repo, {"fine.py": FINE})
    pull = gh.add_pull(Pull(7, head, "e" * 40, pr_files(repo, "main", head)))
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--agent", agent)
    assert result.returncode == ExitCode.USAGE, result.stdout + result.stderr
    assert "is not in the checkout" in result.stderr
    outputs = runner.outputs()
    assert outputs["review-result"] == "error"
    spend = ("cost-usd", "input-tokens", "output-tokens", "cost-estimated")
    assert [outputs[k] for k in spend] == ["0", "0", "0", "false"]
    [summary] = gh.comments_on(7)
    row = next(line for line in str(summary["body"]).splitlines() if "| error |" in line)
    assert row.endswith("| 0 | $0.00 |"), row


@pytest.mark.parametrize("agent", ["builtin", "some-agent"])
def test_a_pull_request_whose_head_is_in_its_base_is_never_approved(
    runner: Runner, gh: GitHubStandIn, repo: Path, agent: str
) -> None:
    """A head that reached the base branch unreviewed (a direct push) leaves no commit to
    review: no green status and no approval of nothing, as for a merge group whose base is its
    head; one line, exit 2 (docs/github.md, "Exit codes")."""
    _, head = make_pr(repo, {"broken.py": BROKEN})
    git(repo, "merge", "-q", "--ff-only", head)
    (repo / "z.txt").write_text("z\n")
    git(repo, "add", "z.txt")
    git(repo, "commit", "-q", "-m", "later work on main")
    base = git(repo, "rev-parse", "HEAD").strip()
    pull = gh.add_pull(Pull(7, head, base, []))
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--agent", agent)
    assert result.returncode == ExitCode.USAGE, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert f"PR #7 has nothing to review between its base {base[:12]}" in result.stderr
    assert f"{head[:12]} is already contained in {base[:12]}" in result.stderr
    assert states(gh, head) == ["pending", "error"]
    assert runner.outputs()["review-result"] == "error"
    [summary] = gh.comments_on(7)
    assert "APPROVED" not in str(summary["body"]) and "nothing to review" in str(summary["body"])


def test_github_failing_after_the_inline_review_says_what_was_posted(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """The inline review and the summary comment are posted, then the final status fails after
    every retry: ``review-result`` is ``error`` (as the status is), ``inline-posted`` and
    ``comment-id`` say what this run did post."""
    pull = add_pull(gh, repo, {"bad.py": BROKEN})

    def fail_from_the_next_status() -> None:  # the pending status goes through
        fail = lambda: gh.fail("POST", r"/statuses/", 503, times=100)  # noqa: E731
        gh.before.append(("POST", re.compile(r"/statuses/"), fail))

    gh.before.append(("POST", re.compile(r"/statuses/"), fail_from_the_next_status))
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == ExitCode.GITHUB, result.stderr
    outputs = runner.outputs()
    assert outputs["github-error"] and outputs["review-result"] == "error"
    assert outputs["inline-posted"] == "1" and len(gh.state.review_comments) == 1
    [summary] = gh.comments_on(7)
    assert outputs["comment-id"] == str(summary["id"])


@pytest.mark.parametrize("signal_name", ["SIGTERM", "Ctrl-C"])
def test_a_review_interrupted_writes_the_summary_and_outputs_before_exit_130(
    runner: Runner,
    gh: GitHubStandIn,
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    signal_name: str,
) -> None:
    """A job cancelled while its review runs (SIGTERM, Ctrl-C): exit 130, no GitHub write
    after ``pending`` (never green; the re-run finishes), and the job summary and outputs a
    stopped review writes: ``review-result`` ``error``, ``head-sha``, nothing posted, and its
    spend: an interrupted agent's is unknown (a lower bound at best: empty), the builtin
    reviewer's, as here, a known 0 (it calls no model)."""
    from gitflow_agents.base.errors import Terminated
    from gitflow_agents.github.action import run

    pull = add_pull(gh, repo, {"fine.py": FINE})

    def interrupted(*args: object, **kwargs: object) -> None:
        raise Terminated if signal_name == "SIGTERM" else KeyboardInterrupt

    monkeypatch.setattr(run, "review_pull", interrupted)
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == ExitCode.INTERRUPTED, result.stderr
    assert states(gh, pull.head_sha) == ["pending"]
    outputs = runner.outputs()
    assert outputs["review-result"] == "error" and outputs["head-sha"] == pull.head_sha
    assert outputs["run-id"] == "4242-1"
    assert (outputs["inline-posted"], outputs["comment-id"]) == ("0", "")
    spend = ("cost-usd", "input-tokens", "output-tokens")
    assert [outputs[k] for k in spend] == ["0", "0", "0"]
    assert f"interrupted ({signal_name})" in runner.summary.read_text()


def test_a_run_interrupted_while_publishing_writes_what_it_posted(
    runner: Runner, gh: GitHubStandIn, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitflow_agents.github.action import status

    pull = add_pull(gh, repo, {"bad.py": BROKEN})

    def cancelled(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(status, "set_final", cancelled)
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == ExitCode.INTERRUPTED, result.stderr
    outputs = runner.outputs()
    assert outputs["review-result"] == "error" and outputs["head-sha"] == pull.head_sha
    assert outputs["inline-posted"] == "1" and outputs["findings-count"] == "1"
    [summary] = gh.comments_on(7)
    assert outputs["comment-id"] == str(summary["id"])
    assert runner.summary.read_text()
