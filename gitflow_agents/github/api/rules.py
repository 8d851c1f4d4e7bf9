"""What guards a target branch against a merge of a tree no review saw, as GitHub answers it.

GitHub's auto-merge squashes a pull request onto the target as it is when the checks pass: a
pull request that is behind the target lands a combined tree nobody reviewed, unless the
target requires branches to be up to date (a ``required_status_checks`` rule with
``strict_required_status_checks_policy``, or classic protection's ``strict``) or takes merges
through a merge queue (whose group is reviewed as a whole). ``branch_guard`` reads:

- ``GET /repos/{owner}/{repo}/rules/branches/{branch}``: the rulesets' rules that apply to the
  branch (metadata read is enough, so every token that can open a pull request can read it);
- only when no rule guards it, ``GET …/branches/{branch}/protection/required_status_checks``:
  classic protection, which needs admin read; its 403 / 404 leaves the answer unknown (GitHub
  answers 404 both for "no required checks" and for "you may not see them") and says so.

Two requests at most, once per ``run --pr`` (docs/github.md, "Only reviewed trees land").
Part of the GitHub boundary: it calls GitHub through the client's transport (``_call``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gitflow_agents.github.api.retry import GitHubForbidden

if TYPE_CHECKING:
    from gitflow_agents.github.api.client import Client


UP_TO_DATE = "branches must be up to date before merging"


@dataclass(frozen=True)
class TargetGuard:
    """What keeps unreviewed combined trees off ``branch``: ``guard`` names it (None: nothing
    found), ``unknown`` says what could not be read (None: everything was)."""

    branch: str
    guard: str | None
    unknown: str | None = None

    @property
    def guarded(self) -> bool:
        return self.guard is not None

    @property
    def strict(self) -> bool:
        """Whether a pull request must be up to date with the branch to merge (a merge queue
        brings its groups up to date itself)."""
        return self.guard is not None and self.guard.startswith(UP_TO_DATE)

    def warning(self) -> str | None:
        """One plain sentence when nothing guards the branch; None when something does."""
        if self.guarded:
            return None
        rules = (
            f"nothing guards {self.branch} against landing a tree no review saw: its rules "
            "require neither up-to-date branches nor a merge queue"
        )
        classic = (
            f", and its classic branch protection could not be read ({self.unknown})"
            if self.unknown
            else ", nor does its classic branch protection"
        )
        return (
            f"{rules}{classic}; auto-merge may squash a pull request that is behind {self.branch} "
            "onto it. Require branches to be up to date or use a merge queue (docs/github.md, "
            '"Only reviewed trees land")'
        )

    def describe(self) -> str:
        return f"{self.branch} is guarded: {self.guard}" if self.guard else str(self.warning())


def _from_rules(rules: Any) -> str | None:
    for rule in rules if isinstance(rules, list) else []:
        kind = rule.get("type") if isinstance(rule, dict) else None
        if kind == "merge_queue":
            return "a merge queue (ruleset)"
        parameters = rule.get("parameters") if isinstance(rule, dict) else None
        if (
            kind == "required_status_checks"
            and isinstance(parameters, dict)
            and parameters.get("strict_required_status_checks_policy") is True
        ):
            return f"{UP_TO_DATE} (ruleset)"
    return None


def branch_guard(client: Client, repo: str, branch: str) -> TargetGuard:
    """What guards ``branch`` of ``repo`` (see the module doc). A rules endpoint the token
    may not read (403/404) counts as no rule, said in ``unknown``; other failures raise
    ``GitHubError`` as every request does."""
    name = quote(branch, safe="")
    unknown: list[str] = []
    path = f"/repos/{repo}/rules/branches/{name}"
    try:
        rules = client._call(f"GET {path}", lambda: client._json("GET", path))
    except GitHubForbidden as exc:
        rules = []
        unknown.append(f"rules: HTTP {exc.status}")
    guard = _from_rules(rules)
    if guard is not None:
        return TargetGuard(branch, guard)
    path = f"/repos/{repo}/branches/{name}/protection/required_status_checks"
    try:
        checks = client._call(f"GET {path}", lambda: client._json("GET", path))
    except GitHubForbidden as exc:
        unknown.append(f"HTTP {exc.status}: the token may not see it, or it requires no checks")
        return TargetGuard(branch, None, "; ".join(unknown))
    if isinstance(checks, dict) and checks.get("strict") is True:
        return TargetGuard(branch, f"{UP_TO_DATE} (protection)")
    return TargetGuard(branch, None, "; ".join(unknown) or None)
