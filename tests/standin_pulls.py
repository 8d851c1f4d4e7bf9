"""The stand-in's pull requests on a real origin: open, list, update, label, and auto-merge.

Registered into ``tests/github_standin.py`` (which imports this module at its end). With
``state.origin`` set (a local bare repository, the product's ``origin``), a pull request opened
through ``POST /pulls`` lives on that repository's branches: its head and base commits and its
files are read from git on every request, as GitHub follows the branches. GitHub's rules the
OpenAPI description does not encode are kept: a head branch that does not exist, or no commits
between base and head, is 422; a second open pull request for the same head and base is 422 "A
pull request already exists for owner:branch."; a read-only token gets 403.

A push to an open pull request's head branch keeps its auto-merge armed, as GitHub keeps it
when someone with write access pushes ("Automatically merging a pull request": it is disabled
when someone *without* write permissions pushes, which the stand-in's origin branches never
see): the new head merges by the armed method once its required checks pass.

``mergeable`` gives an open one GitHub's ``mergeable_state`` from the branches (``dirty``,
``behind``, ``blocked``, ``clean``). ``play_auto_merge`` plays GitHub's auto-merge: every open pull request with auto-merge enabled
whose head has a ``success`` status for every required context and whose merge does not conflict
(GitHub's auto-merge waits on a ``dirty`` one) is merged into its base on the
origin with real git (merge, squash or rebase, like the merge button; a rebase that would not give
the merge's tree is refused, as GitHub's is), marked merged, its head
branch deleted (the repository setting "Automatically delete head branches"), and a ``push``
event payload for the base is recorded and returned.
"""

from __future__ import annotations

import copy
import functools
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.github_standin import (
    NOW,
    GitHubStandIn,
    Pull,
    Request,
    _body_text,
    _pull,
    _write,
    not_found,
    route,
)

REQUIRED = ("gitflow-agents/review",)
"""The contexts branch protection requires before auto-merge merges."""


def _git(origin: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", "-C", str(origin), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return proc.stdout


def branch_sha(origin: Path, branch: str) -> str | None:
    proc = subprocess.run(
        ["git", "-C", str(origin), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() or None


def branch_shas(origin: Path, *branches: str) -> list[str | None]:
    """``branch_sha`` of each branch, from one ``git for-each-ref``."""
    refs = [f"refs/heads/{branch}" for branch in branches]
    out = _git(origin, "for-each-ref", "--format=%(refname) %(objectname)", *refs)
    tips = dict(line.split(" ", 1) for line in out.splitlines())
    return [tips.get(ref) for ref in refs]


def has_commit(origin: Path, sha: str) -> bool:
    """Whether ``sha`` names a commit object in the bare ``origin`` (real git decides)."""
    if sha.startswith("-"):  # never an option to git
        return False
    proc = subprocess.run(
        ["git", "-C", str(origin), "cat-file", "-e", f"{sha}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    return proc.returncode == 0


def _files(origin: Path, base: str, head: str) -> list[dict[str, Any]]:
    """The pull request's files as GitHub lists them: the diff from the merge-base to head."""
    return copy.deepcopy(_files_of(origin, base, head))


@functools.lru_cache(maxsize=256)
def _files_of(origin: Path, base: str, head: str) -> list[dict[str, Any]]:
    """``_files`` read from git once per pair of commits: two shas name the same diff for good
    (a pull request is refreshed on every request; its branches rarely moved in between)."""
    merge_base = _git(origin, "merge-base", base, head).strip()
    names = _git(origin, "diff", "--name-status", "--no-renames", merge_base, head).splitlines()
    # one diff of the pair, cut at each file's header (the same order as --name-status)
    whole = _git(origin, "diff", "--no-color", "--no-renames", "-U3", merge_base, head)
    patches = ["diff --git" + p for p in ("\n" + whole).split("\ndiff --git")[1:]]
    assert len(patches) == len(names), (names, whole)
    files = []
    for line, patch in zip(names, patches, strict=True):
        code, name = line.split("\t", 1)
        hunk = patch.find("\n@@")
        status = {"A": "added", "D": "removed"}.get(code[0], "modified")
        files.append(
            {
                "filename": name,
                "status": status,
                "patch": patch[hunk + 1 :].rstrip("\n") if hunk >= 0 else None,
                "additions": sum(
                    1 for p in patch.splitlines() if p.startswith("+") and not p.startswith("+++")
                ),
                "deletions": sum(
                    1 for p in patch.splitlines() if p.startswith("-") and not p.startswith("---")
                ),
            }
        )
    return files


def refresh(s: GitHubStandIn, pull: Pull) -> None:
    """An API-opened pull request follows its branches on the origin (until it is merged)."""
    origin = s.state.origin
    if origin is None or pull.merged:
        return
    head, base = branch_shas(origin, pull.head_ref, pull.base_ref)
    if head is None or base is None:  # GitHub closes a pull request whose branch is deleted
        pull.state = "closed"
        return
    # a push keeps auto-merge armed: GitHub disables it only for a push by someone without
    # write access (a fork's contributor), and a branch of the origin itself is pushed by writers
    pull.head_sha, pull.base_sha = head, base
    pull.files = _files(origin, base, head)


def _validation(message: str, **error: Any) -> Exception:
    from tests.github_standin import ApiError

    return ApiError(
        422,
        {
            "message": "Validation Failed",
            "errors": [{"resource": "PullRequest", **error, "message": message}],
            "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
        },
    )


def _repo_ok(s: GitHubStandIn, req: Request) -> None:
    if f"{req.params['owner']}/{req.params['repo']}" != s.full_name:
        raise not_found()


@route("POST", "/repos/{owner}/{repo}/pulls")
def create_pull(s: GitHubStandIn, req: Request) -> tuple[int, Any]:
    _repo_ok(s, req)
    _write(req)
    body = req.body
    head, base = str(body.get("head") or ""), str(body.get("base") or "")
    head = head.split(":", 1)[1] if ":" in head else head
    origin = s.state.origin
    assert origin is not None, "the stand-in opens pull requests only on an origin"
    head_sha, base_sha = branch_sha(origin, head), branch_sha(origin, base)
    if head_sha is None:
        raise _validation("", field="head", code="invalid")
    if base_sha is None:
        raise _validation("", field="base", code="invalid")
    for other in s.state.pulls.values():
        refresh(s, other)
        if other.state == "open" and (other.head_ref, other.base_ref) == (head, base):
            raise _validation(
                f"A pull request already exists for {s.state.owner}:{head}.", code="custom"
            )
    if _git(origin, "rev-list", "--count", f"{base_sha}..{head_sha}").strip() == "0":
        raise _validation(f"No commits between {base} and {head}", code="custom")
    number = max([0, *s.state.pulls]) + 1
    pull = Pull(
        number, head_sha, base_sha, [], author=req.token.login, title=str(body.get("title") or ""),
        draft=bool(body.get("draft")), head_ref=head, base_ref=base, body=_body_text(req),
        live=True,
    )  # fmt: skip
    refresh(s, pull)
    s.state.pulls[number] = pull
    return 201, s._pull_json(pull)


@route("GET", "/repos/{owner}/{repo}/pulls")
def list_pulls(s: GitHubStandIn, req: Request) -> tuple[int, Any]:
    _repo_ok(s, req)
    state = (req.query.get("state") or ["open"])[0]
    head = (req.query.get("head") or [None])[0]
    base = (req.query.get("base") or [None])[0]
    found = []
    for pull in sorted(s.state.pulls.values(), key=lambda p: -p.number):
        if pull.live:
            refresh(s, pull)
        if state != "all" and pull.state != state:
            continue
        if head is not None:
            owner, _, branch = head.partition(":")
            if branch != pull.head_ref or owner != (pull.head_repo or s.full_name).split("/")[0]:
                continue
        if base is not None and base != pull.base_ref:
            continue
        found.append(s._pull_json(pull))
    return 200, found


@route("PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}")
def update_pull(s: GitHubStandIn, req: Request) -> tuple[int, Any]:
    pull = _pull(s, req)
    _write(req)
    if "title" in req.body:
        pull.title = str(req.body["title"])
    if "body" in req.body:
        pull.body = _body_text(req)
    if req.body.get("state") in ("open", "closed") and not pull.merged:
        pull.state = req.body["state"]
    return 200, s._pull_json(pull)


@route("POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels")
def add_labels(s: GitHubStandIn, req: Request) -> tuple[int, Any]:
    pull = _pull(s, req)
    _write(req)
    for name in req.body.get("labels") or []:
        name = name if isinstance(name, str) else name.get("name")
        if name not in pull.labels:
            pull.labels.append(name)
    return 200, [s.label(name) for name in pull.labels]


@route("DELETE", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}")
def remove_label(s: GitHubStandIn, req: Request) -> tuple[int, Any]:
    from urllib.parse import unquote

    from tests.github_standin import ApiError

    pull = _pull(s, req)
    _write(req)
    name = unquote(req.params["name"])
    if name not in pull.labels:
        raise ApiError(
            404,
            {
                "message": "Label does not exist",
                "documentation_url": "https://docs.github.com/rest/issues/labels",
            },
        )
    pull.labels.remove(name)
    return 200, [s.label(label) for label in pull.labels]


# ---------------------------------------------------------------------------------------------
# Auto-merge, played
# ---------------------------------------------------------------------------------------------


def checks_pass(s: GitHubStandIn, sha: str) -> bool:
    """Every required context's newest status on ``sha`` is success."""
    newest: dict[str, str] = {}
    for entry in s.statuses_for(sha):
        newest[entry["context"]] = entry["state"]
    return all(newest.get(context) == "success" for context in REQUIRED)


def _replay(work: Path, base: str, head: str, env: dict[str, str]) -> bool:
    """Cherry-pick the non-merge commits of ``base..head`` onto the checked-out base; whether
    that went without a conflict and gave the tree a merge would (GitHub refuses a rebase merge
    "that would create a different result than a regular merge", e.g. a conflict resolved in
    a merge commit of the branch)."""
    commits = _git(work, "rev-list", "--reverse", "--no-merges", f"{base}..{head}").split()
    for commit in commits:
        pick = ["git", "-C", str(work), "cherry-pick", "--allow-empty", commit]
        if subprocess.run(pick, capture_output=True, env={**os.environ, **env}).returncode:
            return False
    merged = _git(work, "merge-tree", "--write-tree", base, head).splitlines()[0]
    return _git(work, "rev-parse", "HEAD^{tree}").strip() == merged


def _merge(origin: Path, pull: Pull, method: str) -> str | None:
    """The merge-button's commit on the base branch of the bare origin; its sha. None when a
    rebase merge is refused (``_replay``)."""
    env = {
        "GIT_AUTHOR_NAME": "GitHub",
        "GIT_AUTHOR_EMAIL": "noreply@github.com",
        "GIT_COMMITTER_NAME": "GitHub",
        "GIT_COMMITTER_EMAIL": "noreply@github.com",
    }
    base, head = pull.base_sha, pull.head_sha
    with tempfile.TemporaryDirectory(prefix="standin-merge-") as scratch:
        work = Path(scratch) / "work"
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(origin), str(work)], check=True)
        _git(work, "checkout", "-q", "--detach", base)
        title = f"{pull.title} (#{pull.number})"
        if method == "squash":
            _git(work, "merge", "-q", "--squash", head, env=env)
            _git(work, "commit", "-q", "-m", title, env=env)
        elif method == "rebase":  # the non-merge commits replayed, as GitHub's rebase does
            if not _replay(work, base, head, env):
                return None  # GitHub: "This branch cannot be rebased safely"; auto-merge waits
        else:
            message = f"Merge pull request #{pull.number} from {pull.head_ref}\n\n{pull.title}"
            _git(work, "merge", "-q", "--no-ff", "-m", message, head, env=env)
        sha = _git(work, "rev-parse", "HEAD").strip()
        _git(work, "push", "-q", "origin", f"{sha}:refs/heads/{pull.base_ref}")
    return sha


def push_event(s: GitHubStandIn, branch: str, before: str, after: str) -> dict[str, Any]:
    """The ``push`` webhook payload GitHub sends for a merge into ``branch``: GitHub's own
    example (tests/github_events.py) for this repository, held to GitHub's webhook schema."""
    from tests.github_events import push_event as webhook_push
    from tests.github_events import validate

    payload = webhook_push(s.full_name, f"refs/heads/{branch}", before, after)
    validate("push", payload)
    return payload


def _held_behind(s: GitHubStandIn, origin: Path, pull: Pull) -> bool:
    """The base requires up-to-date branches (tests/standin_rules.py) and the head does not
    contain the base's tip: GitHub's auto-merge waits (it never updates the branch)."""
    from tests.standin_rules import strict

    if not strict(s, pull.base_ref):
        return False
    return not _contains(origin, pull.base_sha, pull.head_sha)


@functools.lru_cache(maxsize=256)
def _contains(origin: Path, base: str, head: str) -> bool:
    """Whether ``head`` contains ``base`` (asked of git once per pair of commits)."""
    check = ["git", "-C", str(origin), "merge-base", "--is-ancestor", base, head]
    return subprocess.run(check, capture_output=True).returncode == 0


@functools.lru_cache(maxsize=256)
def _conflicts(origin: Path, base: str, head: str) -> bool:
    """Whether merging ``head`` into ``base`` conflicts (asked of git once per pair)."""
    merge = ["git", "-C", str(origin), "merge-tree", "--write-tree", base, head]
    return subprocess.run(merge, capture_output=True).returncode != 0


def mergeable(s: GitHubStandIn, pull: Pull) -> dict[str, Any]:
    """``mergeable`` and ``mergeable_state`` as GitHub computes them from the branches: ``dirty``
    (merging the head into the base conflicts), ``behind`` (the base requires up-to-date
    branches, tests/standin_rules.py, and the head lacks its tip), ``blocked`` (a required
    status is not ``success`` on the head), else ``clean``."""
    origin = s.state.origin
    assert origin is not None
    if _conflicts(origin, pull.base_sha, pull.head_sha):
        return {"mergeable": False, "mergeable_state": "dirty"}
    if _held_behind(s, origin, pull):
        return {"mergeable": True, "mergeable_state": "behind"}
    if not checks_pass(s, pull.head_sha):
        return {"mergeable": True, "mergeable_state": "blocked"}
    return {"mergeable": True, "mergeable_state": "clean"}


def play_auto_merge(s: GitHubStandIn) -> list[dict[str, Any]]:
    """GitHub's auto-merge, once: merge every eligible pull request (see the module doc); the
    ``push`` event payloads of the merges, in order (also kept in ``state.push_events``)."""
    origin = s.state.origin
    assert origin is not None
    events = []
    for pull in sorted(s.state.pulls.values(), key=lambda p: p.number):
        refresh(s, pull)
        method = (pull.auto_merge or {}).get("merge_method")
        if pull.state != "open" or method is None or pull.draft:
            continue
        if not checks_pass(s, pull.head_sha) or _held_behind(s, origin, pull):
            continue
        if mergeable(s, pull)["mergeable_state"] == "dirty":  # GitHub never merges a conflict
            continue
        before = pull.base_sha
        sha = _merge(origin, pull, method)
        if sha is None:
            continue
        pull.merged, pull.state, pull.merge_commit_sha = True, "closed", sha
        _git(origin, "update-ref", "-d", f"refs/heads/{pull.head_ref}")
        event = push_event(s, pull.base_ref, before, sha)
        s.state.push_events.append(event)
        events.append(event)
    return events


__all__ = [
    "NOW",
    "REQUIRED",
    "branch_sha",
    "checks_pass",
    "has_commit",
    "mergeable",
    "play_auto_merge",
    "push_event",
    "refresh",
]
