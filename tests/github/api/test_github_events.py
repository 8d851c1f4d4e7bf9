"""The payload checker of tests/github_events.py against GitHub's own data: it rejects what
GitHub would never send, accepts what the tests build, and GitHub's examples agree with it
(apart from fields GitHub added after an example was captured)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.github_events import (
    examples,
    issue_comment_event,
    merge_group_event,
    problems,
    pull_request_event,
    push_event,
    schema_name,
    user,
    workflow_dispatch_event,
    write_event,
)

REPO = "octo/demo"
A, B = "a" * 40, "b" * 40
EVENTS = ("pull_request", "issue_comment", "merge_group", "push", "workflow_dispatch")


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("pull_request", pull_request_event(REPO, 7, A, B)),
        ("pull_request", pull_request_event(REPO, 7, A, B, action="synchronize")),
        ("pull_request_target", pull_request_event(REPO, 7, A, B, head_repo="fork/demo")),
        ("pull_request", pull_request_event(REPO, 7, A, B, sender=user("bot[bot]", "Bot"))),
        ("issue_comment", issue_comment_event(REPO, 7, "maintainer", "/agent fix")),
        ("issue_comment", issue_comment_event(REPO, 7, "x", "hi", on_pull=False)),
        ("merge_group", merge_group_event(REPO, A, B)),
        ("merge_group", merge_group_event(REPO, A, B, action="destroyed", reason="dequeued")),
        ("push", push_event(REPO, "refs/heads/main", B, A)),
        ("workflow_dispatch", workflow_dispatch_event(REPO, inputs={"step": "2"})),
    ],
)
def test_what_the_tests_build_is_what_github_sends(name: str, payload: dict[str, object]) -> None:
    assert problems(name, payload) == []


def test_a_payload_github_would_never_send_is_refused(tmp_path: Path) -> None:
    skeleton = {"action": "opened", "number": 7, "pull_request": {"number": 7}}
    with pytest.raises(
        AssertionError,
        match=r"(?s)webhook-pull-request-opened.*pull_request: 'base' is a required property",
    ):
        write_event(tmp_path / "event.json", "pull_request", skeleton)
    assert not (tmp_path / "event.json").exists()
    wrong = pull_request_event(REPO, 7, A, B)
    wrong["pull_request"]["number"] = "7"
    assert problems("pull_request", wrong) == ["pull_request.number: '7' is not of type 'integer'"]
    unknown = merge_group_event(REPO, A, B, action="destroyed", reason="cancelled")
    assert problems("merge_group", unknown) == [
        "reason: 'cancelled' is not one of ['merged', 'invalidated', 'dequeued']"
    ]
    assert problems("merge_group", {"action": "renamed"}) == [
        "no schema 'webhook-merge-group-renamed' in webhooks.subset.json "
        "(add the event to trim_webhooks.py)"
    ]


def test_schema_names() -> None:
    assert schema_name("pull_request_target", {"action": "ready_for_review"}) == (
        "webhook-pull-request-ready-for-review"
    )
    assert schema_name("push", {"action": "x"}) == "webhook-push"


@pytest.mark.parametrize("event", EVENTS)
def test_githubs_examples_differ_from_the_schema_only_by_newer_fields(event: str) -> None:
    """Every example is a payload GitHub sent: where it fails today's schema, it is only for
    lack of a property added since (never a wrong type or value)."""
    found = [p for example in examples(event) for p in problems(event, example)]
    newer = re.compile(r"^[\w.]*: '\w+' is a required property$")
    assert [p for p in found if not newer.match(p)] == []
