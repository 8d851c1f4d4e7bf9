"""Webhook payloads as GitHub sends them, for the tests that run the action.

Every payload here starts as one of GitHub's own examples (``@octokit/webhooks-examples``,
tests/data/github-webhooks/examples/) with only the fields a test is about replaced, and
``validate`` holds it to GitHub's webhook schema (``@octokit/openapi-webhooks``,
tests/data/github-webhooks/webhooks.subset.json) with ``jsonschema``. ``write_event`` validates
before it writes the file the action reads (``GITHUB_EVENT_PATH``), so no test can hand the
action a payload GitHub would never send; a test about a malformed payload writes its bytes
itself. tests/data/github-webhooks/README.md says where the data comes from.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "github-webhooks"
SCHEMAS = DATA / "webhooks.subset.json"
EXAMPLES = DATA / "examples" / "examples.subset.json"
WITH_ACTION = frozenset({"pull_request", "issue_comment", "merge_group"})
"""Events whose schema depends on ``action`` (``push`` and ``workflow_dispatch`` have none)."""
ZERO_SHA = "0" * 40


@functools.cache
def _spec() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SCHEMAS.read_text())
    return data


@functools.cache
def _validator(name: str) -> Any:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    resource = Resource.from_contents(_spec(), default_specification=DRAFT202012)
    registry = Registry().with_resource("urn:github-webhooks", resource)
    return Draft202012Validator(
        {"$ref": f"urn:github-webhooks#/components/schemas/{name}"},
        registry=registry,
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


def schema_name(event_name: str, payload: Any) -> str:
    """``webhook-pull-request-opened`` for a ``pull_request`` payload with action ``opened``
    (``pull_request_target`` sends the same payloads as ``pull_request``)."""
    event = "pull_request" if event_name == "pull_request_target" else event_name
    action = payload.get("action") if isinstance(payload, dict) else None
    parts = [event, str(action)] if event in WITH_ACTION else [event]
    return "webhook-" + "-".join(p.replace("_", "-") for p in parts)


def problems(event_name: str, payload: Any) -> list[str]:
    """What GitHub's schema says is wrong with ``payload`` ([] when it is a payload GitHub
    could send); a missing schema is a problem too (keep more events: the trim script)."""
    name = schema_name(event_name, payload)
    if name not in _spec()["components"]["schemas"]:
        return [f"no schema {name!r} in {SCHEMAS.name} (add the event to trim_webhooks.py)"]
    errors = sorted(_validator(name).iter_errors(payload), key=lambda e: list(e.absolute_path))
    return [f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:200]}" for e in errors]


def validate(event_name: str, payload: Any) -> None:
    found = problems(event_name, payload)
    if found:
        lines = "\n  ".join(found[:10])
        raise AssertionError(
            f"not a {event_name} payload GitHub would send ({schema_name(event_name, payload)}):"
            f"\n  {lines}"
        )


def write_event(path: Path, event_name: str, payload: Any) -> Path:
    """Validate ``payload`` against GitHub's schema, then write it where the runner would."""
    validate(event_name, payload)
    path.write_text(json.dumps(payload, indent=1))
    return path


# ---------------------------------------------------------------------------------------------
# GitHub's examples
# ---------------------------------------------------------------------------------------------


@functools.cache
def _examples() -> dict[str, list[dict[str, Any]]]:
    return {entry["name"]: entry["examples"] for entry in json.loads(EXAMPLES.read_text())}


def examples(event: str, action: str | None = None) -> list[dict[str, Any]]:
    """Deep copies of GitHub's example payloads of ``event`` (with ``action``, when given)."""
    found = [x for x in _examples()[event] if action is None or x.get("action") == action]
    return copy.deepcopy(found)


def _current(payload: dict[str, Any]) -> dict[str, Any]:
    """An example brought up to today's payload: repositories gained ``has_discussions`` after
    some examples were captured, and GitHub sends it now."""
    pull = payload.get("pull_request") or {}
    for repo in (
        payload.get("repository"),
        pull.get("head", {}).get("repo"),
        pull.get("base", {}).get("repo"),
    ):
        if isinstance(repo, dict):
            repo.setdefault("has_discussions", False)
    return payload


def _template(event: str, action: str | None = None) -> dict[str, Any]:
    """The first example of ``event``/``action`` that is valid once brought up to date."""
    for example in examples(event, action):
        payload = _current(example)
        if not problems(event, payload):
            return payload
    raise AssertionError(f"no valid example of {event} {action or ''} in {EXAMPLES}")


def user(login: str, kind: str = "User") -> dict[str, Any]:
    """A ``simple-user`` as webhooks carry it (``sender``, ``comment.user``, ``pull_request.user``)."""
    data = _template("merge_group", "checks_requested")["sender"]
    data.update(login=login, type=kind, html_url=f"https://github.com/{login}")
    return data


def _rename(repo: dict[str, Any], full_name: str) -> dict[str, Any]:
    owner, name = full_name.split("/", 1)
    repo.update(full_name=full_name, name=name, html_url=f"https://github.com/{full_name}")
    if isinstance(repo.get("owner"), dict):
        repo["owner"]["login"] = owner
    return repo


def pull_request_event(
    repo: str,
    number: int,
    head_sha: str,
    base_sha: str,
    *,
    action: str = "opened",
    title: str = "A change",
    draft: bool = False,
    author: str = "octocat",
    head_repo: str | None = None,
    head_ref: str = "feature",
    base_ref: str = "main",
    sender: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``pull_request`` payload (``synchronize`` carries ``before``/``after`` too)."""
    template = "opened" if action not in ("closed", "synchronize") else action
    payload = _template("pull_request", template)
    payload.update(action=action, number=number)
    pr = payload["pull_request"]
    pr.update(number=number, title=title, draft=draft, user=user(author))
    pr["html_url"] = f"https://github.com/{repo}/pull/{number}"
    pr["head"].update(sha=head_sha, ref=head_ref, label=f"{author}:{head_ref}")
    pr["base"].update(sha=base_sha, ref=base_ref, label=f"{repo.split('/')[0]}:{base_ref}")
    _rename(pr["head"]["repo"], head_repo or repo)
    _rename(pr["base"]["repo"], repo)
    _rename(payload["repository"], repo)
    payload["sender"] = sender or user(author)
    if action == "synchronize":
        payload.update(before=base_sha, after=head_sha)
    return payload


def issue_comment_event(
    repo: str,
    number: int,
    login: str,
    body: str,
    *,
    on_pull: bool = True,
    kind: str = "User",
    action: str = "created",
) -> dict[str, Any]:
    """An ``issue_comment`` payload; ``on_pull``: the issue is a pull request (GitHub then sends
    ``issue.pull_request`` with its URLs)."""
    payload = _template("issue_comment", action)
    _rename(payload["repository"], repo)
    issue = payload["issue"]
    issue.update(number=number, html_url=f"https://github.com/{repo}/issues/{number}")
    issue.pop("pull_request", None)
    if on_pull:
        web = f"https://github.com/{repo}/pull/{number}"
        issue["pull_request"] = {
            "url": f"https://api.github.com/repos/{repo}/pulls/{number}",
            "html_url": web,
            "diff_url": f"{web}.diff",
            "patch_url": f"{web}.patch",
            "merged_at": None,
        }
    payload["comment"].update(body=body, user=user(login, kind))
    payload["sender"] = user(login, kind)
    return payload


def merge_group_event(
    repo: str,
    head_sha: str,
    base_sha: str,
    *,
    action: str = "checks_requested",
    base_ref: str = "refs/heads/main",
    head_ref: str | None = None,
    reason: str = "merged",
) -> dict[str, Any]:
    """A ``merge_group`` payload: the queue's group ``head_sha`` built on ``base_sha``
    (``destroyed`` carries a ``reason``: merged, invalidated, dequeued)."""
    payload = _template("merge_group", "checks_requested")
    _rename(payload["repository"], repo)
    branch = base_ref.removeprefix("refs/heads/")
    group = payload["merge_group"]
    group.update(
        head_sha=head_sha,
        base_sha=base_sha,
        base_ref=base_ref,
        head_ref=head_ref or f"refs/heads/gh-readonly-queue/{branch}/pr-7-{base_sha}",
    )
    group["head_commit"].update(id=head_sha, tree_id=head_sha)
    payload["action"] = action
    if action == "destroyed":
        payload["reason"] = reason
    return payload


def push_event(repo: str, ref: str, before: str, after: str) -> dict[str, Any]:
    """A ``push`` of ``ref`` from ``before`` to ``after`` (a new branch: ``before`` all zeros)."""
    payload = _template("push")
    _rename(payload["repository"], repo)
    payload.update(
        ref=ref, before=before, after=after, created=before == ZERO_SHA, deleted=after == ZERO_SHA
    )
    payload["compare"] = f"https://github.com/{repo}/compare/{before[:12]}...{after[:12]}"
    if isinstance(payload.get("head_commit"), dict):
        payload["head_commit"]["id"] = after
    return payload


def workflow_dispatch_event(
    repo: str, ref: str = "refs/heads/main", inputs: dict[str, Any] | None = None
) -> dict[str, Any]:
    payload = _template("workflow_dispatch")
    _rename(payload["repository"], repo)
    payload.update(ref=ref, inputs=inputs or {})
    return payload
