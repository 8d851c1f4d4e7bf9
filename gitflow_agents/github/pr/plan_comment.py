"""The plan at a glance on GitHub: one sticky "plan" comment, or the job summary.

Each step's state is read from what origin and GitHub say (``plan_glance``):

- **done**: ✅ on origin's target (``chain.state.done_where``); no request;
- **red**: its step branch has an open pull request whose head's newest
  ``gitflow-agents/review`` status is ``failure`` or ``error``;
- **running**: an open pull request that is not red (under review, or green and waiting to
  merge), or a step branch whose claim is live (its lease renews, ``github/pr/lease.py``; judged
  by the lease's age alone, no Actions request);
- **red** too: a step branch whose run a budget stopped, its work kept there (its lease says
  ``stopped``): a re-run continues it;
- **ready** / **waiting**: every step it depends on is done, or not (the node says which).

One GraphQL request lists the open pull requests into the target with the newest
``gitflow-agents/review`` status of each head (100 a page, ``api.open_pulls``); a token without
GraphQL gets the REST reads instead (the list, then one per open step pull request); none at all
while no step has a branch on origin (``git ls-remote`` tells). A comment whose body did not
change is not written (``comment.upsert_summary``): its footer names the target's commit, so it
is rewritten once per push to the target, not once per command.

Each step's spend (a last column, and the plan's sum under the title) is what its branch's
lease on origin records (``github/pr/lease.SPEND``: the runs that published the step and the
tends of its pull request add theirs), read for every step in one ``ls-remote`` and one fetch
(``git/lease.read_leases``), which also give the leases of started steps.

The chart is the one ``plan show --format mermaid`` draws (``render.mermaid.plan_flowchart``).
GitHub draws Mermaid without ``click`` links (its renderer disables interaction), so a table under
the chart links each step to its pull request. With a tracking issue (``--plan-issue N``) the
body is one comment there, found by its marker (``plan_marker``, naming the plan, so one issue
can track several plans) and written by our login, edited in place (``comment.upsert_summary``,
the step pull request's sticky comment code); a comment carrying the marker by anyone else is
never edited. Two runners creating it at once: each looks again after its create and the oldest
stays, the later ones are deleted (``upsert_plan_comment``). Without an issue, a workflow run
appends the body to its job summary (``GITHUB_STEP_SUMMARY``) in one ``O_APPEND`` write; outside
Actions nothing is written. docs/github.md, "The plan at a glance".
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gitflow_agents.base.errors import GitflowError
from gitflow_agents.chain import Context
from gitflow_agents.chain.state import done_where, plan_in_repo
from gitflow_agents.chain.workspace import branch_name
from gitflow_agents.git import lease as git_lease
from gitflow_agents.git import queries as git
from gitflow_agents.github.action import comment
from gitflow_agents.github.action.status import CONTEXT
from gitflow_agents.github.api.client import Client, PullRequest
from gitflow_agents.github.api.identity import Identity
from gitflow_agents.github.api.open_pulls import HeadStates, open_pulls
from gitflow_agents.github.pr import lease as leases
from gitflow_agents.github.pr.startable import REMOTE
from gitflow_agents.plan.model import Plan
from gitflow_agents.render.markdown import one_line
from gitflow_agents.render.mermaid import PlanNode, fence_chart, plan_flowchart
from gitflow_agents.runs.spend import UNKNOWN, Spend, cost_text, tokens_text, total

_MARKER_TEXT = re.compile(r"[^A-Za-z0-9._/+=@-]")
_WHOLE = "`gitflow-agents plan show PLAN --format mermaid` draws the whole plan."
_ICON = {"done": "✅", "running": "🟡", "red": "❌", "ready": "🔵", "waiting": "⚪"}


@dataclass(frozen=True)
class StepGlance:
    """One step as the plan comment shows it."""

    node: PlanNode
    pull: PullRequest | None = None
    spend: Spend | None = None  # what the runs that published it spent (None: no record)


def plan_marker(plan_rel: str) -> str:
    """The hidden marker of a plan's comment: it names the plan (its path in the repository),
    with every character that could end the HTML comment replaced."""
    name = _MARKER_TEXT.sub("_", plan_rel).replace("--", "__")[:200]
    return f"<!-- gitflow-agents:plan {name} -->"


def plan_glance(ctx: Context, client: Client, repo: str, ttl: float) -> list[StepGlance]:
    """Each step of ``ctx.plan`` with its state as origin and GitHub have it (module doc)."""
    plan = ctx.plan
    assert plan is not None
    heads = git.remote_heads(ctx.root, REMOTE)
    done = {s.number for s in plan.steps if done_where(ctx, s.number) is not None}
    branches = {s.number: branch_name(ctx.settings, plan.name, s.number) for s in plan.steps}
    started = [n for n, b in branches.items() if b in heads and n not in done]
    pulls, states = _open_pulls(client, repo, ctx.target) if started else ({}, None)
    leases_of = git_lease.read_leases(ctx.root, branches.values(), REMOTE)
    found: list[StepGlance] = []
    for step in plan.steps:
        branch = branches[step.number]
        pull, lease = None, leases_of.get(branch)
        if step.number in done:
            state, detail = "done", "done"
        elif branch in heads:
            pull, state, detail = _started(states, lease, pulls.get(branch), ttl)
        else:
            state, detail = "ready", "ready"
        if state == "ready":
            waiting = [d for d in step.depends_on if d not in done]
            if waiting:
                state, detail = "waiting", f"waiting for {', '.join(map(str, waiting))}"
        node = PlanNode(step.number, step.title, state, detail, step.depends_on)
        spend = leases.lease_spend(lease.holder) if lease is not None else None
        found.append(StepGlance(node, pull, spend))
    return found


def _open_pulls(
    client: Client, repo: str, target: str
) -> tuple[dict[str, PullRequest], HeadStates]:
    """The open pull requests into ``target`` from a branch of ``repo`` itself (not a fork's),
    by branch: the newest one for a branch with several; and their heads' gate states."""
    found, states = open_pulls(client, repo, target, CONTEXT)
    return {p.head_ref: p for p in reversed(found) if p.head_repo == repo}, states


def _started(
    states: HeadStates | None,
    lease: git_lease.Lease | None,
    pull: PullRequest | None,
    ttl: float,
) -> tuple[PullRequest | None, str, str]:
    """(pull request, state, detail) of a step whose branch is on origin, with its open pull
    request (None: it has none), its head's gate state in ``states`` and its branch's lease
    (None: it has none)."""
    if pull is not None and states is not None:
        status = states.state(pull.head_sha)
        if status in ("failure", "error"):
            return pull, "red", f"red: PR #{pull.number} {status}"
        what = "approved, merging" if status == "success" else "under review"
        return pull, "running", f"PR #{pull.number} {what}"
    stopped = lease.holder.get(leases.STOPPED) if lease is not None else None
    if isinstance(stopped, str):  # its work kept on the branch: a re-run continues it
        return None, "red", f"stopped ({stopped[:40]}): a re-run continues it"
    free = leases.why_free(lease, None, None, False, ttl)
    if free is None:
        who = f" by {leases.who(lease.holder)}" if lease is not None else ""
        return None, "running", f"claimed{who}"
    return None, "ready", "ready"


def plan_body(plan: Plan, plan_rel: str, steps: list[StepGlance], *, footer: str = "") -> str:
    """The comment: the marker, a title line with the count of done steps, the chart, the
    table of steps (state, pull request) and ``footer``, under GitHub's comment limit: a chart
    that would pass it is left out with a line saying so (never cut in its fence), and the
    table is cut last."""
    done = sum(s.node.state == "done" for s in steps)
    head = [
        plan_marker(plan_rel),
        f"### {one_line(plan.title or plan.name)}",
        f"{one_line(plan_rel)}: {done} of {len(steps)} steps done{_plan_spend(steps)}",
    ]
    tail = [_table(steps), *([f"<sub>{footer}</sub>"] if footer else [])]
    chart = fence_chart(plan_flowchart(s.node for s in steps)).rstrip("\n")
    body = "\n\n".join([*head, chart, *tail]) + "\n"
    if len(body) > comment.BUDGET:
        body = "\n\n".join([*head, CHART_LEFT_OUT, *tail]) + "\n"
    return comment.cap(body, where=_WHOLE)


CHART_LEFT_OUT = (
    f"_The chart is left out: with it, this comment would pass {comment.COMMENT_LIMIT}._"
)


def _table(steps: list[StepGlance]) -> str:
    rows = ["| step | state | pull request | spent |", "|---|---|---|---|"]
    for step in steps:
        node = step.node
        title = _cell(f"{node.number}: {node.title}")
        state = f"{_ICON.get(node.state, '')} {_cell(node.detail)}".strip()
        pull = f"[#{step.pull.number}]({step.pull.html_url})" if step.pull else "—"
        spent = _spend_text(step.spend) if step.spend is not None else "—"
        rows.append(f"| {title} | {state} | {pull} | {spent} |")
    return "\n".join(rows)


def _plan_spend(steps: list[StepGlance]) -> str:
    """`` · spent $0.0123 · tokens 1,200/340 by …``: the sum of what the steps' leases record,
    a lower bound (``≥``) when a done step has no record (it landed another way, or an older
    version published it); "" while no step has one."""
    if all(step.spend is None for step in steps):
        return ""
    parts = [
        s.spend if s.spend is not None else Spend()
        for s in steps
        if s.spend is not None or s.node.state == "done"
    ]
    return f" · spent {_spend_text(total(parts))} by the runs that published its steps"


def _spend_text(spend: Spend) -> str:
    """``$0.0123 est. · tokens 1,200/340``, each figure ``unknown`` where no CLI said it."""
    cost = cost_text(spend)
    if cost == UNKNOWN and tokens_text(spend) == UNKNOWN:
        return UNKNOWN
    return f"{cost if cost != UNKNOWN else 'cost unknown'} · tokens {tokens_text(spend)}"


def _cell(text: str) -> str:
    """Untrusted text in a table cell: inert, on one line, its pipes escaped."""
    return one_line(text).replace("|", "\\|")


def upsert_plan_comment(
    client: Client, repo: str, number: int, body: str, marker: str
) -> comment.StickyResult:
    """Our plan comment on issue ``number``: created, or edited in place (``upsert_summary``:
    ours = the marker and our login). After a create, the comments are read again: a runner
    that created one at the same moment leaves two, and the oldest is kept (given ``body``
    when it is not ours) while the later ones are deleted, by both runners alike."""
    login = Identity(client, None)
    login.settle(lambda: comment.marked_comments(client, repo, number, marker))
    return comment.upsert_summary(client, repo, number, body, login=login, marker=marker)


def append_job_summary(path: Path, markdown: str) -> None:
    """``markdown`` appended to the job summary file in one ``O_APPEND`` write (whole or not at
    all next to another step's append; never a temporary file: the runner owns the file)."""
    data = (markdown.rstrip("\n") + "\n\n").encode("utf-8")
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = os.write(handle, data)
        while written < len(data):  # a regular file takes it whole; a pipe may not
            written += os.write(handle, data[written:])
    finally:
        os.close(handle)


def publish_plan(
    ctx: Context,
    client: Client,
    repo: str,
    *,
    issue: int | None,
    environ: Mapping[str, str],
    ttl: float = leases.DEFAULT_TTL,
) -> str:
    """The plan at a glance published: on issue ``issue``'s plan comment, else in the job
    summary when ``GITHUB_STEP_SUMMARY`` names one (else nothing is read or written); one line
    saying where ("" : nowhere)."""
    assert ctx.plan is not None
    summary = environ.get("GITHUB_STEP_SUMMARY", "")
    if issue is None and not summary:
        return ""
    plan_rel = plan_in_repo(ctx) or ctx.plan.path.name
    steps = plan_glance(ctx, client, repo, ttl)
    target = git.remote_branch_sha(ctx.root, ctx.target, REMOTE)
    # no workflow run link: each run has its own, and the comment would be written every time
    footer = f"gitflow-agents · {ctx.target} at {(target or '?')[:12]}"
    body = plan_body(ctx.plan, plan_rel, steps, footer=footer)
    if issue is not None:
        made = upsert_plan_comment(client, repo, issue, body, plan_marker(plan_rel))
        return f"plan comment on #{issue}: {made.action}"
    append_job_summary(Path(summary), body)
    return "plan at a glance: in the job summary"


def update_glance(
    ctx: Context,
    client: Client,
    repo: str,
    issue: int | None,
    environ: Mapping[str, str] | None,
    ttl: float,
) -> None:
    """``publish_plan`` (``environ`` None: the process's), its line printed; a GitHub failure
    there is one warning on stderr and never the run's exit code: the steps are published, the
    plan comment only shows them."""
    env = os.environ if environ is None else environ
    try:
        where = publish_plan(ctx, client, repo, issue=issue, environ=env, ttl=ttl)
    except GitflowError as exc:  # GitHub, git or who-we-are: said, never the exit code
        print(f"warning: the plan at a glance was not updated: {exc}", file=sys.stderr)
        return
    if where:
        print(where, flush=True)
