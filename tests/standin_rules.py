"""The stand-in's branch rules, classic protection, commit reads and workflow runs.

Registered into ``tests/github_standin.py`` (which imports this module at its end), answers held
to GitHub's OpenAPI description like every other route:

- ``GET /repos/{o}/{r}/rules/branches/{branch}``: ``state.branch_rules[branch]`` with the
  ruleset fields GitHub adds (any token that may read the repository);
- ``GET …/branches/{branch}/protection/required_status_checks``: ``state.protection[branch]``;
  404 when the branch requires no checks, and to every token while ``protection_readable`` is
  off (GitHub hides classic protection from a token without admin read behind a 404);
- ``GET …/commits/{ref}/statuses``: the statuses of a commit, newest first;
- ``GET …/commits/{commit_sha}/pulls``: the pull requests whose merge commit or head is that
  commit (what GitHub lists for a commit that landed through one);
- ``GET …/pulls/{pull_number}/commits``: the pull request's commits from the origin, trees
  included;
- ``GET …/actions/runs/{run_id}``: ``state.workflow_runs[run_id]`` (404 when unknown).

``strict(s, branch)`` says whether the branch requires branches to be up to date (a ruleset's
``strict_required_status_checks_policy`` or classic ``strict``) or a merge queue:
``standin_pulls.play_auto_merge`` then leaves a pull request that is behind its base unmerged,
as GitHub's auto-merge does (it never updates a branch).
"""

from __future__ import annotations

from typing import Any

from tests.github_standin import (
    NOW,
    ApiError,
    GitHubStandIn,
    Request,
    _pull,
    make,
    not_found,
    route,
)


def _repo_ok(s: GitHubStandIn, req: Request) -> None:
    if f"{req.params['owner']}/{req.params['repo']}" != s.full_name:
        raise not_found()


def strict_rule(
    strict: bool = True, contexts: tuple[str, ...] = ("gitflow-agents/review",)
) -> dict[str, Any]:
    """A ruleset's ``required_status_checks`` rule."""
    return {
        "type": "required_status_checks",
        "parameters": {
            "required_status_checks": [{"context": c} for c in contexts],
            "strict_required_status_checks_policy": strict,
        },
    }


MERGE_QUEUE_RULE: dict[str, Any] = {
    "type": "merge_queue",
    "parameters": {
        "check_response_timeout_minutes": 60,
        "grouping_strategy": "ALLGREEN",
        "max_entries_to_build": 5,
        "max_entries_to_merge": 5,
        "merge_method": "SQUASH",
        "min_entries_to_merge": 1,
        "min_entries_to_merge_wait_minutes": 5,
    },
}


def strict(s: GitHubStandIn, branch: str) -> bool:
    """Whether ``branch`` requires up-to-date branches or a merge queue (see the module doc)."""
    for rule in s.state.branch_rules.get(branch, []):
        if rule["type"] == "merge_queue":
            return True
        parameters = rule.get("parameters") or {}
        if rule["type"] == "required_status_checks" and parameters.get(
            "strict_required_status_checks_policy"
        ):
            return True
    return bool(s.state.protection.get(branch, {}).get("strict"))


@route("GET", "/repos/{owner}/{repo}/rules/branches/{branch}")
def branch_rules(s: GitHubStandIn, req: Request) -> tuple[int, Any]:
    _repo_ok(s, req)
    rules = s.state.branch_rules.get(req.params["branch"], [])
    info = {"ruleset_source_type": "Repository", "ruleset_source": s.full_name, "ruleset_id": 42}
    return 200, [{**rule, **info} for rule in rules]


@route("GET", "/repos/{owner}/{repo}/branches/{branch}/protection/required_status_checks")
def required_status_checks(s: GitHubStandIn, req: Request) -> tuple[int, Any]:
    _repo_ok(s, req)
    branch = req.params["branch"]
    found = s.state.protection.get(branch)
    if not s.state.protection_readable or found is None:
        raise not_found()
    url = f"{s.repo_url}/branches/{branch}/protection/required_status_checks"
    contexts = list(found.get("contexts", ["gitflow-agents/review"]))
    return 200, {
        "url": url,
        "contexts_url": f"{url}/contexts",
        "strict": bool(found.get("strict")),
        "contexts": contexts,
        "checks": [{"context": c, "app_id": None} for c in contexts],
    }


@route("GET", "/repos/{owner}/{repo}/commits/{ref}/statuses")
def list_statuses(s: GitHubStandIn, req: Request) -> tuple[int, Any]:
    _repo_ok(s, req)
    found = [dict(st) for st in reversed(s.statuses_for(req.params["ref"]))]
    for entry in found:
        entry.pop("sha", None)
    return 200, found


@route("GET", "/repos/{owner}/{repo}/commits/{commit_sha}/pulls")
def pulls_of_commit(s: GitHubStandIn, req: Request) -> tuple[int, Any]:
    _repo_ok(s, req)
    sha = req.params["commit_sha"]
    found = [
        s._pull_json(pull)
        for pull in sorted(s.state.pulls.values(), key=lambda p: p.number)
        if sha in (pull.merge_commit_sha, pull.head_sha)
    ]
    return 200, found


def _commit_json(s: GitHubStandIn, sha: str, tree: str, message: str) -> dict[str, Any]:
    person = {"name": "someone", "email": "someone@example.com", "date": NOW}
    return make(
        "commit",
        url=f"{s.repo_url}/commits/{sha}",
        sha=sha,
        node_id=f"C_{sha[:12]}",
        html_url=f"https://github.example/{s.full_name}/commit/{sha}",
        comments_url=f"{s.repo_url}/commits/{sha}/comments",
        commit={
            "url": f"{s.repo_url}/git/commits/{sha}",
            "author": person,
            "committer": person,
            "message": message,
            "comment_count": 0,
            "tree": {"sha": tree, "url": f"{s.repo_url}/git/trees/{tree}"},
        },
        author=s.user("someone"),
        committer=s.user("someone"),
        parents=[],
    )


@route("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/commits")
def pull_commits(s: GitHubStandIn, req: Request) -> tuple[int, Any]:
    from tests.standin_pulls import _git

    pull = _pull(s, req)
    origin = s.state.origin
    if origin is None:
        return 200, []
    lines = _git(
        origin, "log", "--reverse", "--format=%H %T %s", f"{pull.base_sha}..{pull.head_sha}"
    ).splitlines()
    commits = [line.split(" ", 2) for line in lines]
    return 200, [_commit_json(s, c[0], c[1], c[2] if len(c) > 2 else "") for c in commits]


@route("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}")
def workflow_run(s: GitHubStandIn, req: Request) -> tuple[int, Any]:
    _repo_ok(s, req)
    run_id = int(req.params["run_id"])
    found = s.state.workflow_runs.get(run_id)
    if found is None:
        raise not_found()
    url = f"{s.repo_url}/actions/runs/{run_id}"
    return 200, make(
        "workflow-run",
        id=run_id,
        node_id=f"WFR_{run_id}",
        head_branch="main",
        head_sha="0" * 40,
        path=".github/workflows/plan-waves.yml",
        run_number=run_id,
        run_attempt=int(found.get("run_attempt", 1)),
        event="push",
        display_title="plan waves",
        status=found.get("status", "in_progress"),
        conclusion=found.get("conclusion"),
        workflow_id=1,
        url=url,
        html_url=f"https://github.example/{s.full_name}/actions/runs/{run_id}",
        pull_requests=[],
        created_at=NOW,
        updated_at=NOW,
        jobs_url=f"{url}/jobs",
        logs_url=f"{url}/logs",
        check_suite_url=f"{s.repo_url}/check-suites/1",
        artifacts_url=f"{url}/artifacts",
        cancel_url=f"{url}/cancel",
        rerun_url=f"{url}/rerun",
        workflow_url=f"{s.repo_url}/actions/workflows/1",
        head_commit=None,
        repository=s.repository(),
        head_repository=s.repository(),
    )


__all__ = ["MERGE_QUEUE_RULE", "ApiError", "strict", "strict_rule"]
