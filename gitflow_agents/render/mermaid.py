"""A chain step's run as a Mermaid flowchart: implement → review → (fix → review)* → the end.

``step_flowchart(result)`` reads one step run's ``result.json`` (docs/protocol.md, Run records)
and draws ``flowchart LR``: one node per agent run with its agent, duration and (given the agents'
own result.json through ``agent_results``) tokens and cost, marked as the tables mark them (``~``
estimated, ``≥`` a lower bound, ``unknown``); a review round's verdict and finding
count; reviewers of one round side by side (in a box of their own when there are several); a
stuck attempt and its retry; failures; the outcome (merged, approved, rejected, ...) and the
step's pull request when the record names one (``chain.pullRequest``). Green is for an agent
that succeeded and a review that approves, never for one without a valid verdict.
``step_flowchart_markdown`` wraps it in a ```` ```mermaid ```` block, as GitHub renders it.

Every field is read through ``gitflow_agents/runs/fields.py`` (an agent can write into run
folders), and every text in a label is inert (docs/chains.md, "History"): secrets masked, one
line, bounded, and every character but letters, digits, blanks and ``.,-_/+=!?*`` written as a
``#N;`` entity code inside a quoted label. So no text can end the label, add a node, an edge, a
``click``, a style or a ``%%{init}%%`` directive, or close the fence (no backtick is ever
written). Node ids are generated (``n1``, ``n2``, ...; boxes ``r1``, ...), never taken from input.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitflow_agents.base.redact import redact_text
from gitflow_agents.runs.fields import integer, mapping, number, scalar, text
from gitflow_agents.runs.spend import Spend, dollars, run_spend, total
from gitflow_agents.runs.status import listed_lost

MAX_FIELD = 60
"""Characters of one untrusted text (an agent name, a reason) shown in a label."""
MAX_AGENTS = 40
"""Agent runs drawn; the rest are counted in one node."""
_MAX_ROUNDS = 100
# Not ":": Mermaid drops the last ";" of a line holding "style" or "classDef", ":" and "#"
# (its own entity pre-pass), which would spoil an entity code; ours never write one there.
_SAFE = frozenset(" .,-_/+=!?*")
_SLOW = frozenset({"stuck", "timeout", "canceled"})  # drawn yellow (docs/chains.md, "History")
_CLASSES = (
    "classDef ok fill:#dafbe1,stroke:#1a7f37,color:#1f2328",
    "classDef warn fill:#fff8c5,stroke:#9a6700,color:#1f2328",
    "classDef bad fill:#ffebe9,stroke:#cf222e,color:#1f2328",
)


def label_text(value: str, limit: int = MAX_FIELD) -> str:
    """Untrusted ``value`` as inert text for a quoted Mermaid label: secrets masked, control and
    line-break characters made blanks, at most ``limit`` characters (``…`` when cut), and every
    character that is not a letter, digit, blank or one of ``.,-_/+=!?*`` as a ``#N;`` code."""
    flat = "".join(" " if unicodedata.category(c)[0] in "CZ" else c for c in redact_text(value))
    flat = " ".join(flat.split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return "".join(c if c.isalnum() or c in _SAFE else f"#{ord(c)};" for c in flat)


def _label(*lines: str) -> str:
    """A quoted label of ``lines`` (each already inert), one below the other."""
    return '"' + "<br/>".join(line for line in lines if line) + '"'


@dataclass(frozen=True)
class _Agent:
    kind: str
    agent: str
    agent_id: str
    status: str
    reason: str
    duration_ms: float | None
    reused: bool
    attempt: int
    spend: Spend  # unknown (Spend()) when the agent run's own record is missing


@dataclass
class _Stage:
    """Agents that ran one after the other's predecessors: a lane per agent (its attempts)."""

    lanes: list[list[_Agent]] = field(default_factory=list)
    round: dict[str, Any] | None = None  # the review round these reviewers belong to
    title: str = ""


def _agents(
    chain: Mapping[str, Any], agent_results: Mapping[str, Mapping[str, Any]]
) -> list[_Agent]:
    raw = chain.get("agents")
    found: list[_Agent] = []
    for entry in raw if isinstance(raw, list) else []:
        if not isinstance(entry, dict):
            continue
        result = agent_results.get(text(entry, "runID") or "")
        found.append(
            _Agent(
                kind=text(entry, "kind") or "agent",
                agent=text(entry, "agent") or text(entry, "agentId") or "?",
                agent_id=text(entry, "agentId") or "",
                status=text(entry, "status") or "?",
                reason=text(entry, "reason") or "",
                duration_ms=number(entry, "durationMs"),
                reused=entry.get("reused") is True,
                attempt=integer(entry, "attempt") or 1,
                spend=run_spend(mapping(result, "run")) if result is not None else Spend(),
            )
        )
    return found


def _rounds(chain: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The review rounds and, for each reviewer's agent id, its round's index."""
    raw = chain.get("rounds")
    rounds = [r for r in raw if isinstance(r, dict)][:_MAX_ROUNDS] if isinstance(raw, list) else []
    where: dict[str, int] = {}
    for index, review_round in enumerate(rounds):
        reviewers = review_round.get("reviewers")
        for reviewer in reviewers if isinstance(reviewers, list) else []:
            if isinstance(reviewer, dict) and text(reviewer, "agentId"):
                where.setdefault(text(reviewer, "agentId") or "", index)
    return rounds, where


def _stages(agents: list[_Agent], chain: Mapping[str, Any]) -> list[_Stage]:
    """Agents grouped as they ran: the reviewers of one round together (one lane each), every
    other agent alone; a later attempt (after a stuck one) joins its agent's lane."""
    rounds, where = _rounds(chain)
    stages: list[_Stage] = []
    fixes = 0
    for agent in agents:
        last = stages[-1] if stages else None
        # a lost run a new run of its step listed reviewed no round (its successor did)
        in_round = agent.kind == "review" and not listed_lost(agent.status, agent.reason)
        index = where.get(agent.agent_id) if in_round else None
        lane = (
            next((ln for ln in last.lanes if ln[-1].agent_id == agent.agent_id), None)
            if last and last.round is (rounds[index] if index is not None else None)
            else None
        )
        if lane is not None and agent.agent_id:
            lane.append(agent)
            continue
        if index is not None and last is not None and last.round is rounds[index]:
            last.lanes.append([agent])
            continue
        if agent.kind == "fix":
            fixes += 1
        stage = _Stage(lanes=[[agent]], round=rounds[index] if index is not None else None)
        stage.title = (
            _round_title(stage.round, index)
            if stage.round is not None
            else (f"fix {fixes}" if agent.kind == "fix" else agent.kind)
        )
        stages.append(stage)
    return stages


def _findings(reviewer: Mapping[str, Any]) -> int:
    found = reviewer.get("findings")
    return len(found) if isinstance(found, list) else 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _round_title(review_round: Mapping[str, Any], index: int | None) -> str:
    """``review 1: REVISE, 2 findings`` / ``review 2: APPROVED``."""
    reviewers = [r for r in review_round.get("reviewers") or [] if isinstance(r, dict)]
    number_ = integer(review_round, "iteration") or (index or 0) + 1
    if review_round.get("approved") is True:
        verdict = "APPROVED"
    elif any(text(r, "overall") == "revise" for r in reviewers):
        verdict = "REVISE"
    else:
        verdict = "NOT APPROVED"
    findings = sum(_findings(r) for r in reviewers)
    return f"review {number_}: {verdict}" + (f", {_count(findings, 'finding')}" if findings else "")


def _duration(ms: float | None) -> str:
    if ms is None or ms < 0:
        return ""
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def _metrics(duration_ms: float | None, spend: Spend | None, *, tokens: bool = True) -> str:
    """``41.2 s · 15,400 tokens · $0.21`` as the tables show spend (docs/decisions.md, "Spend
    (issue 23)"): ``~`` before a cost estimated from the price table, ``≥`` before a sum some
    of whose parts are unknown, ``unknown`` for what no record states (``spend unknown`` when
    neither is known). ``spend`` None: no spend shown; ``tokens`` False: the cost alone."""
    parts = [_duration(duration_ms)]
    if spend is not None:
        shown_tokens = _tokens_text(spend) if tokens else ""
        cost = _cost_text(spend)
        if (not tokens or shown_tokens is None) and cost is None:
            parts.append("spend unknown" if tokens else "cost unknown")
        else:
            if tokens:
                parts.append(shown_tokens or "tokens unknown")
            parts.append(cost or "cost unknown")
    return label_text(" · ".join(p for p in parts if p), 80)


def _tokens_text(spend: Spend) -> str | None:
    """Input plus output tokens, ``≥`` when one of them (or a part) is unknown; None: unknown."""
    tokens_in, tokens_out = spend.input_tokens, spend.output_tokens
    if (tokens_in is None and tokens_out is None) or min(tokens_in or 0, tokens_out or 0) < 0:
        return None
    partial = spend.tokens_partial or tokens_in is None or tokens_out is None
    return ("≥ " if partial else "") + f"{(tokens_in or 0) + (tokens_out or 0):,} tokens"


def _cost_text(spend: Spend) -> str | None:
    """``$0.21``, ``~$0.21`` estimated, ``≥ $0.21`` a lower bound, a cost under a cent with
    more decimals (``spend.dollars``: ``$0.0040``); None: unknown."""
    if spend.cost_usd is None or spend.cost_usd < 0:
        return None
    estimated = "~" if spend.cost_estimated else ""
    return ("≥ " if spend.cost_partial else "") + estimated + dollars(spend.cost_usd)


def _reviewer(review_round: Mapping[str, Any] | None, agent: _Agent) -> dict[str, Any] | None:
    """``agent``'s own entry in its review round, None when the round does not list it."""
    reviewers = review_round.get("reviewers") if review_round else None
    for reviewer in reviewers if isinstance(reviewers, list) else []:
        if isinstance(reviewer, dict) and text(reviewer, "agentId") == agent.agent_id:
            return reviewer
    return None


def _verdict(reviewer: Mapping[str, Any] | None) -> str:
    """A reviewer's own verdict in its round: ``REVISE, 1 finding``."""
    if reviewer is None:
        return ""
    overall = (text(reviewer, "overall") or "no verdict").upper()
    found = _findings(reviewer)
    return overall + (f", {_count(found, 'finding')}" if found else "")


def _review_class(stage: _Stage, reviewer: Mapping[str, Any] | None, together: bool) -> str:
    """Green only for an approval: the round's when the reviewer is alone in it, its own when
    it sits beside others. No valid verdict (``NOT APPROVED``) or a revise is yellow."""
    if together:
        approved = reviewer is not None and text(reviewer, "overall") == "approve"
    else:
        approved = stage.round is not None and stage.round.get("approved") is True
    return "ok" if approved else "warn"


def _agent_node(agent: _Agent, stage: _Stage, together: bool) -> tuple[str, str]:
    """(label, class) of one agent run."""
    reviewer = _reviewer(stage.round, agent)
    verdict = _verdict(reviewer)
    first = label_text(stage.title, 80) if not together else ""
    name = label_text(agent.agent) + (f"#58; {label_text(verdict)}" if together and verdict else "")
    status = ""
    if agent.status != "succeeded":
        status = label_text(
            f"{agent.status.upper()}: {agent.reason}" if agent.reason else agent.status.upper()
        )
    elif agent.reused:
        status = "reused"
    if agent.attempt > 1:
        status = " ".join(part for part in (f"attempt {min(agent.attempt, 99)}", status) if part)
    label = _label(first, name, status, _metrics(agent.duration_ms, agent.spend))
    if agent.status != "succeeded":
        return label, "warn" if agent.status in _SLOW else "bad"
    if stage.round is not None or agent.kind == "review":
        return label, _review_class(stage, reviewer, together)
    return label, "ok"


def _end(
    data: Mapping[str, Any],
    chain: Mapping[str, Any],
    agents: Iterable[_Agent],
    spend: Spend | None = None,
) -> tuple[str, str]:
    """(label, class) of the last node: how the step run ended (the outcome word, or the merge),
    the step's pull request when it has one (``chain.pullRequest``), the reason and the total:
    the run's duration and ``spend``, the step run's own spend (``runs.spend.step_spend``, what
    ``history`` and the plan's sum count), so a reused agent drawn here is not counted again.
    Without it, the sum of the agents not marked reused (no run folder to tell whether the step
    run a reused agent came from left a record: ``step_spend`` counts it when it did not)."""
    outcome = text(chain, "outcome") or "?"
    merged = mapping(chain, "merged")
    if outcome == "approved" and merged:
        kind = text(merged, "kind")
        first = "merged" + (f" #40;{label_text(kind, 20)}#41;" if kind else "")
    else:
        first = label_text(outcome.upper(), 20)
    number_ = integer(mapping(chain, "pullRequest"), "number")
    pull = f"PR #35;{number_}" if number_ is not None and 0 < number_ < 10**12 else ""
    reason = "" if outcome == "approved" else label_text(text(chain, "reason") or "")
    if spend is None:
        own = [a.spend for a in agents if not a.reused]
        spend = total(own) if own else None
    run = mapping(data, "run")
    whole = _metrics(number(run, "durationMs"), spend, tokens=False)
    cls = {"approved": "ok", "rejected": "bad", "failed": "bad"}.get(outcome, "warn")
    return _label(first, pull, reason, f"total {whole}" if whole else ""), cls


def step_flowchart(
    result: Mapping[str, Any],
    *,
    agent_results: Mapping[str, Mapping[str, Any]] | None = None,
    spend: Spend | None = None,
) -> str:
    """The Mermaid ``flowchart LR`` of one chain step run's ``result.json`` data: the one chart
    of a step run, in ``history --format mermaid`` and in its pull request's sticky comment.
    ``agent_results``: each agent run's own result.json by its run id (tokens and cost are
    there). ``spend``: the step run's own spend (``runs.spend.step_spend``), the end node's
    total, so the chart and the tables agree (``_end``)."""
    chain = mapping(result, "chain")
    agents = _agents(chain, agent_results or {})
    shown, hidden = agents[:MAX_AGENTS], len(agents) - MAX_AGENTS
    lines = ["flowchart LR"]
    ids = iter(range(1, 10**9))
    tails: list[str] = []
    for stage_number, stage in enumerate(_stages(shown, chain), 1):
        together = len(stage.lanes) > 1
        if together:
            lines.append(f"    subgraph r{stage_number}[{_label(label_text(stage.title, 80))}]")
        heads: list[str] = []
        next_tails: list[str] = []
        for lane in stage.lanes:
            previous = None
            for agent in lane:
                node = f"n{next(ids)}"
                label, cls = _agent_node(agent, stage, together)
                lines.append(f"    {'    ' if together else ''}{node}[{label}]:::{cls}")
                if previous is None:
                    heads.append(node)
                else:
                    lines.append(f"    {previous} -->|retry| {node}")
                previous = node
            next_tails.append(previous or "")
        if together:
            lines.append("    end")
        lines += [f"    {tail} --> {head}" for tail in tails for head in heads]
        tails = next_tails
    if hidden > 0:
        node = f"n{next(ids)}"
        lines.append(f"    {node}[{_label(label_text('… ' + _count(hidden, 'more agent run')))}]")
        lines += [f"    {tail} --> {node}" for tail in tails]
        tails = [node]
    label, cls = _end(result, chain, agents, spend)
    node = f"n{next(ids)}"
    lines.append(f"    {node}([{label}]):::{cls}")
    lines += [f"    {tail} --> {node}" for tail in tails]
    return "\n".join([*lines, *(f"    {c}" for c in _CLASSES)]) + "\n"


def step_flowchart_markdown(
    result: Mapping[str, Any],
    *,
    agent_results: Mapping[str, Mapping[str, Any]] | None = None,
    spend: Spend | None = None,
) -> str:
    """``step_flowchart`` as a fenced ```` ```mermaid ```` block for a markdown page or comment
    (GitHub draws it). The chart never holds a backtick, so nothing in it closes the fence."""
    return fence_chart(step_flowchart(result, agent_results=agent_results, spend=spend))


def single_run_flowchart(result: Mapping[str, Any]) -> str:
    """A one-node flowchart of a single flow or agent run (``flow ...``, ``spawn``, or an agent
    run inside a step run): kind, agent, outcome, duration, tokens and cost."""
    run = mapping(result, "run")
    kind = text(run, "kind") or "agent"
    agent = text(run, "agentId") or text(run, "agent") or "?"
    outcome = str(
        scalar(run, "status") or scalar(run, "outcome") or scalar(result, "status") or "?"
    )
    overall = text(result, "overall")
    status = label_text(outcome.upper(), 30)
    # a review record's shape always has an overall ("revise" when the reviewer said nothing):
    # a verdict only of a review that completed (a stopped or canceled one gave none)
    if overall and outcome == "succeeded":
        status += f" #40;{label_text(overall.upper(), 20)}#41;"
    label = _label(
        label_text(kind, 20),
        label_text(agent),
        status,
        _metrics(number(run, "durationMs"), run_spend(run)),
    )
    cls = "ok" if outcome == "succeeded" else "warn" if outcome in _SLOW else "bad"
    if cls == "ok" and "overall" in result and overall != "approve":
        cls = "warn"  # a review that did not approve (REVISE, or no valid verdict) is not green
    return (
        "\n".join(["flowchart LR", f"    n1[{label}]:::{cls}", *(f"    {c}" for c in _CLASSES)])
        + "\n"
    )


def fence_chart(chart: str) -> str:
    """``chart`` (one of ours: it holds no backtick) as a ```` ```mermaid ```` block."""
    if "`" in chart:  # never: every text in a label is inert
        raise ValueError("a Mermaid chart with a backtick cannot be fenced safely")
    return f"```mermaid\n{chart}```\n"


@dataclass(frozen=True)
class PlanNode:
    """One step of a plan as ``plan_flowchart`` draws it."""

    number: int
    title: str
    state: str  # done, running, ready, waiting, red (docs/spec-plans.md, "The plan at a glance")
    detail: str  # the line under the title: "waiting for 2, 3", "red: ❌ blocked", ...
    depends_on: tuple[int, ...]


MAX_PLAN_STEPS = 150
"""Steps a plan chart draws; the rest are counted in one node (Mermaid's own limits on edges
and text would otherwise refuse the chart)."""
MAX_PLAN_EDGES = 400
"""Edges a plan chart draws (Mermaid refuses a chart of more than 500)."""
_PLAN_CLASS = {"done": "ok", "running": "warn", "red": "bad", "ready": "ready", "waiting": "wait"}
_PLAN_CLASSES = (
    *_CLASSES,
    "classDef ready fill:#ddf4ff,stroke:#0969da,color:#1f2328",
    "classDef wait fill:#f6f8fa,stroke:#8c959f,color:#1f2328",
)


def plan_flowchart(steps: Iterable[PlanNode]) -> str:
    """A plan's dependency graph as ``flowchart LR``: a node per step (``Step 2: title`` and
    its state), an edge from each step to every step that waits for it, coloured by state
    (done green, running yellow, red red, ready blue, waiting grey). Titles are inert
    (``label_text``), ids generated (``n1``...), edges only between steps drawn."""
    nodes = list(steps)
    shown, hidden = nodes[:MAX_PLAN_STEPS], len(nodes) - MAX_PLAN_STEPS
    ids: dict[int, str] = {}
    lines = ["flowchart LR"]
    for position, node in enumerate(shown, 1):
        ids.setdefault(node.number, f"n{position}")
        label = _label(
            label_text(f"Step {node.number}: {node.title}", 80), label_text(node.detail, 80)
        )
        lines.append(f"    n{position}[{label}]:::{_PLAN_CLASS.get(node.state, 'wait')}")
    if hidden > 0:
        more = label_text(f"… {_count(hidden, 'more step')}")
        lines.append(f"    n{len(shown) + 1}[{_label(more)}]:::wait")
    edges = [
        f"    {ids[dep]} --> n{position}"
        for position, node in enumerate(shown, 1)
        for dep in node.depends_on
        if dep in ids and dep != node.number
    ]
    lines += edges[:MAX_PLAN_EDGES]
    return "\n".join([*lines, *(f"    {c}" for c in _PLAN_CLASSES)]) + "\n"
