"""What a webhook event asks the action to do: review a pull request, fix it, review a merge
queue's group, or nothing.

Pure: the payload at ``GITHUB_EVENT_PATH`` is read and judged without the network. Pull request
events start a review (``opened``, ``synchronize``, ``reopened``, ``ready_for_review``); a new
comment on a pull request whose first line is ``/agent review`` or ``/agent fix`` asks for one
(whether its author may is checked later, against the API); a ``merge_group`` whose checks are
requested starts a review of the group (every other ``merge_group`` action is skipped with its
reason, never waited on); a ``push`` of a branch checks the tree it landed (``landed.py``);
docs/github.md, "Events", "Merge queue" and "Only reviewed trees land".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from gitflow_agents.base.errors import InputError
from gitflow_agents.github.action.landed import Landed
from gitflow_agents.github.action.runner import Options, read_json
from gitflow_agents.github.api.client import PullRequest
from gitflow_agents.github.api.values import MergeGroup

REVIEW_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})
T = TypeVar("T")
_OBJECT_ID = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
"""A full SHA-1 or SHA-256 object id: never an option, a revision expression or a ref."""
_PLAIN_REF = re.compile(r"refs/(?:[\w-][\w.-]*/)*[\w-][\w.-]*", re.ASCII)
"""A ref fetched as it is: no ``:`` (a refspec's destination), ``+``, glob or revision syntax."""


@dataclass(frozen=True)
class Trigger:
    kind: str
    """``review``, ``fix``, ``group`` (a merge queue's group), ``landed`` (a push to check) or
    ``skip``."""
    reason: str = ""
    number: int | None = None
    pull: PullRequest | None = None
    commenter: str | None = None
    group: MergeGroup | None = None
    landed: Landed | None = None
    since: str = ""
    """``synchronize``: the head before the push (``before``), whose review an incremental
    review builds on; "" for every other event (docs/github.md, "Incremental review")."""
    comment_id: int | None = None
    """The id of the comment that asked (``comment.id``): ``/agent fix`` keys its reply to it,
    so a re-run of the same event edits that reply; None when the payload has no usable id."""


def load_event(path: Path) -> dict[str, Any]:
    """The webhook payload; InputError naming the file when it is missing or not a JSON object."""
    data = read_json(path, "event payload")
    if not isinstance(data, dict):
        raise InputError(
            f"event payload: expected a JSON object, got {type(data).__name__}", path=path
        )
    return data


def _get(data: Any, dotted: str, path: Path, kind: type[T], prefix: str = "") -> T:
    """``data[a][b]`` for ``dotted`` = ``a.b``; InputError naming file and key when it is missing
    or of the wrong type (``prefix`` says where ``data`` sits in the payload)."""
    node = data
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            raise _missing(path, prefix + dotted)
        node = node[key]
    if not isinstance(node, kind) or (kind is int and isinstance(node, bool)):
        raise InputError(
            f"expected {kind.__name__} in the event payload, got {type(node).__name__}",
            path=path,
            key=prefix + dotted,
        )
    return node


def _object_id(data: Any, dotted: str, path: Path, prefix: str) -> str:
    """``_get`` of a commit id, lower-cased: 40 or 64 hex digits, checked before any git call
    sees it (``--upload-pack=…`` would be an option of ``git fetch``; a NUL cannot be in argv).
    The value is not repeated in the error: it may be anything."""
    value = _get(data, dotted, path, str, prefix)
    if not _OBJECT_ID.fullmatch(value):
        raise InputError(
            "expected a commit id (40 or 64 hex digits) in the event payload",
            path=path,
            key=prefix + dotted,
        )
    return value.lower()


def _ref(data: Any, key: str, path: Path, prefix: str) -> str:
    """An optional full ref (``refs/heads/…``) that is fetched as a refspec; "" when it is
    absent or not a plain ref, and the commit is then fetched by its id instead."""
    ref = _text(data, key, path, prefix)
    plain = _PLAIN_REF.fullmatch(ref) and ".." not in ref and not ref.endswith(".lock")
    return ref if plain else ""


def _optional(
    data: Any,
    dotted: str,
    path: Path,
    kind: type[T],
    default: T,
    prefix: str = "",
    *,
    sent: bool = False,
) -> T:
    """``data[a][b]`` for ``dotted`` = ``a.b``, ``default`` when a step of it is missing or
    ``null`` (GitHub sends ``null`` for some, such as a deleted fork's ``head.repo``); a value,
    or an object on the way to it, of another type is a malformed payload: InputError naming
    file and key, as ``_get`` does, never read as absent (``"action": 3`` is no unknown
    action, ``"draft": "false"`` no draft). With ``sent`` (keys GitHub's webhook schema
    requires, so every real payload has them) a missing step is malformed too, never a
    skip; ``null`` is still absent."""
    node = data
    walked: list[str] = []
    for key in dotted.split("."):
        if node is None:
            return default
        if not isinstance(node, dict):
            raise _mistyped(path, prefix + ".".join(walked), dict, node)
        walked.append(key)
        if sent and key not in node:
            raise _missing(path, prefix + ".".join(walked))
        node = node.get(key)
    if node is None:
        return default
    if not isinstance(node, kind) or (kind is int and isinstance(node, bool)):
        raise _mistyped(path, prefix + dotted, kind, node)
    return node


def _missing(path: Path, key: str) -> InputError:
    return InputError("missing in the event payload", path=path, key=key)


def _mistyped(path: Path, key: str, kind: type, value: Any) -> InputError:
    name = "object" if kind is dict else kind.__name__
    return InputError(
        f"expected {name} in the event payload, got {type(value).__name__}", path=path, key=key
    )


def _text(data: Any, dotted: str, path: Path, prefix: str = "") -> str:
    """An optional string (``_optional``): "" when absent or ``null``."""
    return _optional(data, dotted, path, str, "", prefix)


def _sent_text(data: Any, dotted: str, path: Path) -> str:
    """A string every payload of the event has (``_optional`` with ``sent``): "" when
    ``null``; missing, a malformed payload."""
    return _optional(data, dotted, path, str, "", sent=True)


def pull_from_event(event: Mapping[str, Any], path: Path) -> PullRequest:
    pr = _get(event, "pull_request", path, dict)
    at = "pull_request."
    return PullRequest(
        number=_get(pr, "number", path, int, at),
        title=_text(pr, "title", path, at),
        author=_text(pr, "user.login", path, at),
        head_sha=_object_id(pr, "head.sha", path, at),
        base_sha=_object_id(pr, "base.sha", path, at),
        head_ref=_text(pr, "head.ref", path, at),
        base_ref=_text(pr, "base.ref", path, at),
        head_repo=_text(pr, "head.repo.full_name", path, at) or None,
        base_repo=_get(pr, "base.repo.full_name", path, str, at),
        draft=_optional(pr, "draft", path, bool, False, at),
        html_url=_text(pr, "html_url", path, at),
    )


def group_from_event(event: Mapping[str, Any], path: Path) -> MergeGroup:
    group = _get(event, "merge_group", path, dict)
    return MergeGroup(
        head_sha=_object_id(group, "head_sha", path, "merge_group."),
        base_sha=_object_id(group, "base_sha", path, "merge_group."),
        head_ref=_ref(group, "head_ref", path, "merge_group."),
        base_ref=_ref(group, "base_ref", path, "merge_group."),
    )


def _merge_group(event: Mapping[str, Any], path: Path) -> Trigger:
    """``checks_requested``: review the group. Its sender is not asked about (bots queue PRs
    too, and a required check that is skipped would keep the queue waiting)."""
    action = _sent_text(event, "action", path)
    if action != "checks_requested":
        why = _text(event, "reason", path)
        return Trigger(
            "skip",
            f"merge_group action {action!r}{f' ({why})' if why else ''} requests no checks",
        )
    return Trigger("group", group=group_from_event(event, path))


def _push(event: Mapping[str, Any], path: Path) -> Trigger:
    """A push of a branch: check that the tree it landed is one the tool approved
    (``landed.py``). A deleted branch or a tag has nothing to check."""
    ref = _get(event, "ref", path, str)
    if not ref.startswith("refs/heads/"):
        return Trigger("skip", f"push of {ref!r} is not a branch")
    if _optional(event, "deleted", path, bool, False, sent=True):
        return Trigger("skip", f"push deleted {ref}")
    after = _object_id(event, "after", path, "")
    return Trigger(
        "landed",
        landed=Landed(ref.removeprefix("refs/heads/"), _text(event, "before", path), after),
    )


def _is_bot(event: Mapping[str, Any], key: str, path: Path) -> bool:
    """The user at ``key`` (``sender``, ``comment.user``) is a bot; False when absent."""
    kind = _text(event, f"{key}.type", path)
    return kind == "Bot" or _text(event, f"{key}.login", path).endswith("[bot]")


def parse_command(body: str) -> str | None:
    """``review`` / ``fix`` / any word from a comment whose first non-empty line is
    ``/agent <word>``; None for every other comment."""
    for line in body.splitlines():
        words = line.strip().split()
        if not words:
            continue
        if words[0] == "/agent" and len(words) > 1:
            return words[1].lower()
        return None
    return None


def decide(event_name: str, event: Mapping[str, Any], path: Path, options: Options) -> Trigger:
    """What to do for this event (pure: no network)."""
    if event_name in ("pull_request", "pull_request_target"):
        action = _sent_text(event, "action", path)
        if action not in REVIEW_ACTIONS:
            return Trigger("skip", f"pull_request action {action!r} does not start a review")
        pull = pull_from_event(event, path)
        if pull.draft and not options.review_drafts:
            return Trigger("skip", f"PR #{pull.number} is a draft (set review-drafts to review)")
        if _is_bot(event, "sender", path) and not options.allow_bots:
            return Trigger("skip", "the event was sent by a bot (set allow-bots to review)")
        before = _text(event, "before", path).lower() if action == "synchronize" else ""
        since = before if _OBJECT_ID.fullmatch(before) else ""
        return Trigger("review", number=pull.number, pull=pull, since=since)
    if event_name == "issue_comment":
        if _sent_text(event, "action", path) != "created":
            return Trigger("skip", "only new comments are commands")
        issue = _get(event, "issue", path, dict)
        if not _optional(issue, "pull_request", path, dict, {}, "issue."):
            return Trigger("skip", "the comment is on an issue, not a pull request")
        body = _sent_text(event, "comment.body", path)
        command = parse_command(body)
        if command is None:
            return Trigger("skip", "the comment is not an /agent command")
        _get(event, "comment.user", path, dict)
        if _is_bot(event, "comment.user", path) and not options.allow_bots:
            return Trigger("skip", "the comment was written by a bot (set allow-bots to obey bots)")
        number = _get(issue, "number", path, int, "issue.")
        login = _get(event, "comment.user.login", path, str)
        if command not in ("review", "fix"):
            return Trigger("skip", f"unknown command /agent {command} (known: review, fix)")
        raw_id = _optional(event, "comment.id", path, int, 0)
        comment_id = raw_id if raw_id > 0 else None
        return Trigger(command, number=number, commenter=login, comment_id=comment_id)
    if event_name == "merge_group":
        return _merge_group(event, path)
    if event_name == "push":
        return _push(event, path)
    return Trigger(
        "skip",
        f"event {event_name!r} is not handled (pull_request, issue_comment, merge_group, push)",
    )
