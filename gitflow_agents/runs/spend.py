"""What runs spent, read back from their records and added up: per agent run, per step run (the
sum of its agent runs) and per plan (the sum of its step runs).

A value no record states is unknown (None), never 0. A sum over parts of which some are unknown
is a lower bound: it is flagged ``partial`` and shown as ``≥ X`` (docs/decisions.md, "Spend").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from gitflow_agents.base.camel import camel_json
from gitflow_agents.runs import RunPaths, read_json
from gitflow_agents.runs.fields import mapping, number
from gitflow_agents.runs.schema import step_chain

UNKNOWN = "unknown"
MAX_STEP_RUNS = 200  # agent runs of one step run read for its sum (a record is agent-writable)
_RUN_FOLDER = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{0,63}")


def run_folder(name: object) -> TypeGuard[str]:
    """Whether ``name`` (a run id a record gives: an agent can write into its run folder) is
    a plain run folder's name, so nothing outside the runs folder is read by it."""
    return isinstance(name, str) and _RUN_FOLDER.fullmatch(name) is not None


@dataclass(frozen=True)
class Spend:
    """Tokens and USD of one run or a sum of runs. ``*_partial``: some part was unknown, so
    the value (if any) is a lower bound. ``cost_estimated``: some of the cost comes from the
    price table rather than the agent CLI."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cost_estimated: bool = False
    tokens_partial: bool = False
    cost_partial: bool = False

    def to_json(self) -> dict[str, Any]:
        """camelCase keys as every JSON output; unknown values are null."""
        return camel_json(self)


NOTHING = Spend(input_tokens=0, output_tokens=0, cost_usd=0.0)
"""What a run that called no model spent: known to be nothing."""


def run_spend(run: Mapping[str, Any]) -> Spend:
    """An agent run's spend from its result.json ``run`` key, or a spend ``Spend.to_json``
    wrote (its ``tokensPartial`` / ``costPartial`` too); wrong types read as unknown."""
    tokens_in, tokens_out = _figure(run, "inputTokens"), _figure(run, "outputTokens")
    cost = _figure(run, "costUsd")
    return Spend(
        input_tokens=int(tokens_in) if tokens_in is not None else None,
        output_tokens=int(tokens_out) if tokens_out is not None else None,
        cost_usd=float(cost) if cost is not None else None,
        cost_estimated=cost is not None and run.get("costEstimated") is True,
        tokens_partial=run.get("tokensPartial") is True,
        cost_partial=run.get("costPartial") is True,
    )


def _figure(run: Mapping[str, Any], key: str) -> float | None:
    """A spend figure of a record: a number from 0 up (a negative one, which an agent can
    write into its run folder, would shrink every sum it is in: unknown)."""
    value = number(run, key)
    return value if value is not None and value >= 0 else None


def agent_results(
    run_dir: Path, data: Mapping[str, Any], *, most: int = MAX_STEP_RUNS
) -> dict[str, dict[str, Any] | None]:
    """The result.json of each agent run a step run lists (``chain.agents[].runID``, the first
    ``most``), read from the step run's sibling run folders, by run id; None for a listed run
    without a readable record. A run id that is not a plain name (an agent can write into run
    folders) is skipped, so nothing outside the runs folder is read."""
    chain = step_chain(data)
    found: dict[str, dict[str, Any] | None] = {}
    for entry in (chain.agents if chain is not None else ())[:most]:
        if run_folder(entry.run_id) and entry.run_id not in found:
            found[entry.run_id] = read_json(RunPaths(run_dir.parent / entry.run_id).result)
    return found


def step_spend(run_dir: Path, data: Mapping[str, Any]) -> Spend:
    """A step run's spend: the sum of the agent runs it lists (:func:`agent_results`) but those
    another step run ran and recorded (a completed agent reused from a run before: that run's
    record counts it, so a plan's sum counts it once; one whose step run left no record, killed,
    counts here). A listed run without a readable record counts as unknown; a step run that
    spent on no agent (its budget started none, its setup failed, it reused them all) spent
    nothing, which is known: 0."""
    chain = step_chain(data)
    if chain is not None and not chain.agents:
        return NOTHING
    own = [r for r in agent_results(run_dir, data).values() if _counted_in(run_dir, r)]
    return _spent(own) if own else NOTHING


def _counted_in(run_dir: Path, result: Mapping[str, Any] | None) -> bool:
    """Whether the step run at ``run_dir`` counts the agent run ``result`` (None: unreadable,
    counted as unknown): not when the step run that ran it (``chainRunID``) is another one
    with a record of its own."""
    ran_by = mapping(result, "run").get("chainRunID") if result is not None else None
    if not run_folder(ran_by) or ran_by == run_dir.name:
        return True
    return not RunPaths(run_dir.parent / ran_by).result.is_file()


def runs_spend(runs: Path, run_ids: Iterable[str]) -> Spend:
    """What the agent runs ``run_ids`` (folders of ``runs``: the attempts of one agent, say)
    spent together. A run without a readable record counts as unknown."""
    return _spent(read_json(RunPaths(runs / run_id).result) for run_id in run_ids)


def _spent(results: Iterable[Mapping[str, Any] | None]) -> Spend:
    """The sum of agent runs' result.json records (None: unreadable, unknown)."""
    return total(run_spend(mapping(result, "run")) if result else Spend() for result in results)


def total(parts: Iterable[Spend]) -> Spend:
    """The sum of ``parts``; each value unknown only when no part knows it, and partial when
    some part does not."""
    items = list(parts)
    if not items:
        return Spend()
    tokens_in = _sum([p.input_tokens for p in items])
    tokens_out = _sum([p.output_tokens for p in items])
    cost = _sum([p.cost_usd for p in items])
    return Spend(
        input_tokens=tokens_in[0],
        output_tokens=tokens_out[0],
        cost_usd=cost[0],
        cost_estimated=any(p.cost_estimated for p in items),
        tokens_partial=tokens_in[1] or tokens_out[1] or any(p.tokens_partial for p in items),
        cost_partial=cost[1] or any(p.cost_partial for p in items),
    )


def _sum(values: list[Any]) -> tuple[Any, bool]:
    """(sum of the known values or None, whether some value is unknown but others known)."""
    known = [v for v in values if v is not None]
    if not known:
        return None, False
    return sum(known), len(known) < len(values)


def tokens_text(spend: Spend) -> str:
    """``1,200/340``, ``≥ 1,200/340`` for a lower bound, ``unknown``."""
    if spend.input_tokens is None and spend.output_tokens is None:
        return UNKNOWN
    tokens_in = f"{spend.input_tokens:,}" if spend.input_tokens is not None else "?"
    tokens_out = f"{spend.output_tokens:,}" if spend.output_tokens is not None else "?"
    return ("≥ " if spend.tokens_partial else "") + f"{tokens_in}/{tokens_out}"


def spend_text(spend: Spend) -> str:
    """Tokens and cost on one line as the live view shows them (``1,200/340 $0.0123``): what
    is unknown left out, "" when nothing is known."""
    return " ".join(t for t in (tokens_text(spend), cost_text(spend)) if t != UNKNOWN)


def cost_text(spend: Spend) -> str:
    """``$0.0123``, ``≥ $0.0123``, with ``est.`` when estimated from prices; ``unknown``."""
    if spend.cost_usd is None:
        return UNKNOWN
    text = ("≥ " if spend.cost_partial else "") + f"${spend.cost_usd:.4f}"
    return text + (" est." if spend.cost_estimated else "")


def dollars(cost: float) -> str:
    """A cost as the sticky comment and the Mermaid charts show it: ``$0.12`` (cents are
    enough there); a cost under a cent with the four decimals ``cost_text`` gives (``$0.0040``),
    and one that would still read ``$0.0000`` with two significant digits (``$0.000012``). A
    nonzero cost never reads ``$0.00``, which is what a run that called no model shows."""
    if cost <= 0 or cost >= 0.01:
        return f"${cost:.2f}"
    if cost >= 0.00005:  # not 0.0000 at four decimals
        return f"${cost:.4f}"
    return f"${cost:.{1 - math.floor(math.log10(cost))}f}"
