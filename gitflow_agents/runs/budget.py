"""Budgets while runs happen: what each open scope has spent, whether an agent may start, and
the watch that stops a running agent at the limit.

A :class:`Ledger` holds one command's budgets (``.flow/`` ``budget:`` with its options over
it) and the spend of the scopes open now: a step run, a plan run, a review. Before an agent
starts, :meth:`Ledger.refuse` raises ``BudgetError`` when a scope it would run in is spent;
while it runs, a :class:`Watch` (the supervisor's ``Launch.budget``) reads its streamed usage
(``agents/meter.py``) and says when the agent's own spend, added to each scope's, reaches a
limit; after it, :meth:`Ledger.add` counts what its record says it spent. The numbers are the
ones ``history`` shows (``runs/spend.py``): a cost the CLI does not state is estimated from the
price table; an unknown value cannot reach a limit (docs/configuration.md, "budget").
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

from gitflow_agents.agents.base import AgentOutput
from gitflow_agents.agents.meter import AT_TURN_END, FREE, Meter, meter_for
from gitflow_agents.agents.output import since
from gitflow_agents.agents.prices import Price, Reported, Usage, usage_of
from gitflow_agents.base.errors import BudgetError
from gitflow_agents.config.budget import Budgets, Cap, Scope
from gitflow_agents.runs.spend import Spend, dollars, total

MAX_LINE = 16 * 1024 * 1024  # a longer unfinished line is dropped: no usage event is that long
_ORDER: tuple[Scope, ...] = ("agent", "review", "step", "plan")  # the narrowest scope first
_warned: set[str] = set()  # the warnings said (``_warn_once``)
_P = TypeVar("_P")


def tokens_of(spend: Spend) -> int | None:
    """Input plus output tokens, the quantity a token budget counts (None: neither known)."""
    if spend.input_tokens is None and spend.output_tokens is None:
        return None
    return (spend.input_tokens or 0) + (spend.output_tokens or 0)


def reached(cap: Cap, spend: Spend, *, over: bool = False) -> bool:
    """Whether ``spend`` is at or over ``cap`` (``over``: over it only): a known value at its
    limit, or a limit of 0 (an unknown value never reaches one)."""
    return _usd_hit(cap, spend, over) or _tokens_hit(cap, spend, over)


def _usd_hit(cap: Cap, spend: Spend, over: bool) -> bool:
    if cap.usd is None:
        return False
    cost = spend.cost_usd
    if cap.usd == 0 or cost is None:
        return cap.usd == 0
    return _more(cost, cap.usd) if over else not _more(cap.usd, cost)


def _more(cost: float, limit: float) -> bool:
    """Whether ``cost`` is more than ``limit``, beyond the rounding of adding binary fractions
    (0.1 + 0.2 is 0.30000000000000004: $0.3 spent, not more than a $0.3 limit)."""
    return cost > limit and not math.isclose(cost, limit, rel_tol=1e-9, abs_tol=1e-12)


def _tokens_hit(cap: Cap, spend: Spend, over: bool) -> bool:
    tokens = tokens_of(spend)
    if cap.tokens is None:
        return False
    if cap.tokens == 0 or tokens is None:
        return cap.tokens == 0
    return tokens > cap.tokens if over else tokens >= cap.tokens


def _dollars(cost: float, limit: float | None) -> str:
    """``$0.062``; a cost under a cent as every other view shows it (``spend.dollars``:
    ``$0.0045``, not ``$0.004``); with more digits when that would show a cost over ``limit``
    as the limit itself (``$0.00324 of $0.003``, not ``$0.003 of $0.003``)."""
    text = f"${cost:.3f}" if cost >= 0.01 else dollars(cost)
    if limit is not None and _more(cost, limit) and float(text[1:]) <= limit:
        return f"${cost:.6g}"
    return text


def message(scope: Scope, spend: Spend, cap: Cap, *, over: bool = False) -> str:
    """``budget: step spent $0.062 of $0.05 (tokens 41,200)``, or the token form when the
    token limit is the one reached (``over``: gone over, as ``reached``)."""
    tokens = tokens_of(spend)
    tokens_text = f"{tokens:,}" if tokens is not None else "unknown"
    cost = spend.cost_usd
    cost_text = (
        "unknown" if cost is None else _dollars(cost, cap.usd) + " est." * spend.cost_estimated
    )
    if _usd_hit(cap, spend, over) or cap.tokens is None:
        if cap.usd == 0:
            return f"budget: {scope} is $0 (nothing may be spent)"
        return f"budget: {scope} spent {cost_text} of ${cap.usd:g} (tokens {tokens_text})"
    if cap.tokens == 0:
        return f"budget: {scope} is 0 tokens (nothing may be used)"
    return f"budget: {scope} spent {tokens_text} tokens of {cap.tokens:,} (cost {cost_text})"


class Ledger:
    """One command's budgets and the spend of its open scopes (thread-safe: parallel
    reviewers add to it). The ``agent`` scope is each agent run on its own.

    What a running agent has spent counts in the scopes it runs in while it runs, not only
    once it ended: its watch is in flight here (``_flying``) from its start until its run adds
    what it spent (:meth:`add`), and every check of a scope (:meth:`over`) counts the readings
    of the other agents in flight under it, those of the ledger's forks too (the steps of
    ``run --all --jobs N`` under the plan's scope, parallel reviewers under a round's).

    A ledger and its forks share one lock, so that a run ending (:meth:`add`: out of flight,
    into every scope up to the plan) is one step, and a check reads the scopes' spend and
    which agents are in flight in one step too: each run counts once, in one or the other."""

    def __init__(
        self, budgets: Budgets, prices: Mapping[str, Price], parent: Ledger | None = None
    ) -> None:
        self.budgets, self.prices = budgets, prices
        self.spent: dict[Scope, Spend] = {}
        # the parent's, shared (never held while a watch is read: Watch.spend asks usd_left)
        self._lock: threading.Lock = parent._lock if parent is not None else threading.Lock()
        self.parent = parent  # the enclosing scopes of a fork (the plan of parallel steps)
        self._flying: dict[object, Watch] = {}  # the watches of agents running, by run
        self._forks: list[Ledger] = []

    def fork(self) -> Ledger:
        """A ledger for one of several steps that run at once (``run --all --jobs N``): its own
        ``step`` and ``review`` scopes, and everything it spends also counted, and checked,
        in this one's open scopes (the plan's), while it runs too."""
        child = Ledger(self.budgets, self.prices, parent=self)
        with self._lock:
            self._forks.append(child)
        return child

    def flying(self, watch: Watch) -> None:
        """``watch``'s agent runs now: its reading counts in this ledger's open scopes (and
        its parents') until its run adds what it spent (replacing an earlier attempt's)."""
        with self._lock:
            self._flying[watch.key] = watch

    def _in_flight(self, me: Watch | None) -> list[Watch]:
        """The watches of the agents in flight under this ledger and its forks, ``me`` (the
        asking agent's run) left out; the caller holds the lock."""
        found = [w for key, w in self._flying.items() if me is None or key != me.key]
        for fork in self._forks:
            found += fork._in_flight(me)
        return found

    @property
    def active(self) -> bool:
        """Whether any limit applies to the next agent run."""
        scopes = ("agent", *self.spent)
        own = any(self.budgets.cap(scope).set for scope in scopes)
        return own or (self.parent is not None and self.parent.active)

    @contextlib.contextmanager
    def scope(self, scope: Scope, spent: Spend | None = None) -> Iterator[None]:
        """``scope`` is open for the block, having spent ``spent`` already (default nothing)."""
        with self._lock:
            self.spent[scope] = spent or Spend()
        try:
            yield
        finally:
            with self._lock:
                self.spent.pop(scope, None)

    def add(self, spend: Spend, ended: Watch | None = None) -> None:
        """An agent run ended having spent ``spend``: every open scope counts it; ``ended``,
        its watch, is no longer in flight (in the same step, so it never counts twice)."""
        with self._lock:  # every ledger up to the plan's in one step (the lock is theirs)
            if ended is not None:
                self._flying.pop(ended.key, None)
            ledger: Ledger | None = self
            while ledger is not None:
                for scope, before in ledger.spent.items():
                    ledger.spent[scope] = total([before, spend])
                ledger = ledger.parent

    def over(
        self,
        agent_spend: Spend | None = None,
        me: Watch | None = None,
        opening: Sequence[Scope] = (),
        *,
        strictly: bool = False,
    ) -> str | None:
        """The message of the narrowest scope whose limit is reached with ``agent_spend`` (a
        running agent's, ``me`` its watch) and the other agents in flight added; None while
        every scope has budget left. With no ``agent_spend`` (before a start) the agent scope
        counts only a limit of 0, as do the scopes of ``opening`` that are not open yet (about
        to open, having spent nothing). ``strictly``: only a limit gone over counts (an agent
        that completed at its limit spent what it could)."""
        # the scopes' spend and the agents in flight in one step (``add`` ends a run's flight
        # and counts it in one step too): a run that ends meanwhile counts once, in one or
        # the other; the watches are read after, out of the lock
        with self._lock:
            spent = {**{scope: Spend() for scope in opening}, **self.spent}
            watches = self._in_flight(me)
        own = agent_spend or Spend()
        flying: list[Spend] | None = None
        for scope in _ORDER:
            cap = self.budgets.cap(scope)
            if not cap.set:
                continue
            if scope == "agent":
                spend = own
            elif scope in spent:
                if flying is None:
                    flying = [read for read in (w.spend() for w in watches) if _known(read)]
                parts = [spent[scope], *flying, *([own] if agent_spend is not None else [])]
                spend = total(parts) if len(parts) > 1 else spent[scope]
            else:
                continue
            if reached(cap, spend, over=strictly):
                return message(scope, spend, cap, over=strictly)
        if self.parent is None:
            return None
        return self.parent.over(agent_spend, me, strictly=strictly)

    def holds_back(self, *adapters: str, opening: Sequence[Scope] = ()) -> str | None:
        """:meth:`over` for agents about to start: the message of a spent scope they would
        run in, None when there is none. ``adapters``: those of the agents, when known; the
        offline ones (``FREE``) spend nothing, so no spent scope (a limit of 0 either) holds
        them back. ``opening``: scopes they would run in that are not open yet (the step of
        ``run --pr``, asked before its claim): only a limit of 0 of those holds them back."""
        if adapters and all(adapter in FREE for adapter in adapters):
            return None
        return self.over(opening=opening)

    def refuse(self, *adapters: str, what: str = "") -> None:
        """BudgetError when a scope the next agent would run in is spent (:meth:`holds_back`):
        it is not started (``what``: which agent the message names, a chain's ``reviewer``)."""
        why = self.holds_back(*adapters)
        if why is not None:
            raise BudgetError(not_started(why, what))

    def priced(self, output: Reported, model: str | None) -> Spend:
        """What an agent run's ``output`` says it spent, as a budget counts it: its tokens,
        and its cost, the stated one else the price table's estimate (``usage_of``); a lower
        bound where it is what the agent streamed before it stopped (``usage_partial``), as
        its record marks it (``record.attempts_usage``)."""
        partial = getattr(output, "usage_partial", False) is True
        return _spend(usage_of(output, model, self.prices), partial=partial)

    def usd_left(self) -> float | None:
        """The least USD any open scope (or the agent scope) has left: what a CLI's own budget
        flag gets (``--max-budget-usd``); None without a USD limit."""
        with self._lock:
            spent = dict(self.spent)
        left: list[float] = []
        for scope in ("agent", *spent):
            cap = self.budgets.cap(scope)
            if cap.usd is not None:
                used = spent[scope].cost_usd if scope in spent else None
                left.append(max(cap.usd - (used or 0.0), 0.0))
        outer = self.parent.usd_left() if self.parent is not None else None
        if outer is not None:
            left.append(outer)
        return min(left) if left else None

    def watch(self, adapter: str, model: str | None) -> Watch | None:
        """The watch for a run of ``adapter`` (None when no limit applies, or its CLI reports
        usage only at the end: then a warning, once per adapter)."""
        if not self.active or adapter in FREE:
            return None
        meter = meter_for(adapter)
        if meter is None:
            warn_unmetered(adapter)
            return None
        if adapter in AT_TURN_END:
            _warn_once(
                f"the {adapter} adapter's CLI reports its usage when a turn ends (a `codex exec` "
                "run is one turn): a budget stops its agents between turns, not within one"
            )
        watch = Watch(self, meter, adapter, model)
        self.flying(watch)
        return watch


def not_started(why: str, what: str = "", *, further: bool = False) -> str:
    """The message of an agent a spent scope does not start: ``why`` (:meth:`Ledger.over`'s
    message), ``; no agent started``, and ``what`` names the agent (a chain's ``reviewer``).
    ``further``: earlier attempts of it ran (a rate limit's wait came between), so what is not
    started is its next attempt: ``; no further attempt started``."""
    started = "no further attempt started" if further else "no agent started"
    return f"{why}; {started}" + (f" (the {what})" if what else "")


def warn_unmetered(adapter: str) -> None:
    """One line on stderr, once per adapter: its agents cannot be stopped mid-run."""
    _warn_once(
        f"the {adapter} adapter's CLI reports its usage only when it ends: a budget is checked "
        "before its agents start, not while they run"
    )


def warn_uncounted(adapter: str, spend: Spend) -> None:
    """One line on stderr, once per adapter, when a run of a model-running adapter ended with
    its usage wholly unknown (its output said none): the budget could not count it."""
    said = (spend.input_tokens, spend.output_tokens, spend.cost_usd)
    if adapter not in FREE and all(value is None for value in said):
        _warn_once(
            f"a run of the {adapter} adapter reported no usage (its tokens and cost are "
            "unknown): the budget could not count it"
        )


def warn_unpriced(adapter: str, model: str | None, *, at_end: bool = False) -> None:
    """One line on stderr, once per adapter and model: a USD budget cannot stop its agents
    (``at_end``: a CLI that says its usage only when it ends, which one cannot count at all)."""
    why = (
        f"model {model} has no price (add it under `prices:`)"
        if model
        else "output names no model (set the agent's `model:`)"
    )
    effect = (
        "its cost is unknown, so a USD budget cannot count it (a token budget can)"
        if at_end
        else "its cost is unknown while it runs, so a USD budget cannot stop it mid-run (a token "
        "budget can)"
    )
    _warn_once(f"the {adapter} agent's {why}: {effect}")


def _warn_once(text: str) -> None:
    """``gitflow-agents: warning: <text>`` on stderr, the first time this process says it."""
    if text in _warned:
        return
    _warned.add(text)
    print(f"gitflow-agents: warning: {text}", file=sys.stderr)


class Watch:
    """One running agent's usage, read from its stdout as it streams (:meth:`feed`, the
    supervisor's reader thread) and checked against the ledger (:meth:`exceeded`, its loop)."""

    def __init__(self, ledger: Ledger, meter: Meter, adapter: str, model: str | None) -> None:
        self.ledger, self.meter, self.adapter, self.model = ledger, meter, adapter, model
        # what the run's earlier attempts spent (before a rate limit's wait), counted with it,
        # and their cached tokens (a budget does not count them; ``status`` shows them)
        self.earlier: Spend | None = None
        self.earlier_cached: int | None = None
        # what the session used before this run, which its CLI's figures include (taken off)
        self.before: AgentOutput | None = None
        self._pricing_checked = False  # whether a cost could be known was asked (warn_unpriced)
        self.key: object = object()  # its run's, in the ledger's flight (shared by attempts)
        self._partial = b""
        self._lock = threading.Lock()

    def feed(self, chunk: bytes) -> None:
        """A chunk of stdout: its complete lines go to the meter, searched where they lie in
        the chunk (the line the last chunk left unfinished is completed first), so the bytes
        between usage lines cost no Python work (benchmarks/usage_overhead.py)."""
        first = chunk.find(b"\n")
        if first < 0:
            partial = self._partial + chunk
            self._partial = partial if len(partial) <= MAX_LINE else b""  # no JSON event is
            return
        end = chunk.rfind(b"\n")
        line = b"\n" + self._partial + chunk[:first]
        with self._lock:
            self.meter.feed_block(line, 0, len(line))
            if end > first:
                self.meter.feed_block(chunk, first, end)
        self._partial = chunk[end + 1 :]

    def spend(self) -> Spend:
        """What the agent has spent so far, a cost estimated from the price table if need be.
        The first time its tokens are known but its cost is not, under a USD limit, a warning
        says why (``warn_unpriced``)."""
        return self._priced(self._reading())

    def _reading(self) -> AgentOutput:
        """The meter's reading of this attempt, what the session used before taken off."""
        with self._lock:
            reading = self.meter.reading()
        return reading if self.before is None else since(reading, self.before)

    def _priced(self, reading: AgentOutput) -> Spend:
        """:meth:`spend` of ``reading``."""
        usage = usage_of(reading, self.model, self.ledger.prices)
        if not self._pricing_checked and None not in (usage.input_tokens, usage.output_tokens):
            self._pricing_checked = True
            if usage.cost_usd is None and self.ledger.usd_left() is not None:
                warn_unpriced(self.adapter, usage.model)
        spend = _spend(usage)
        if self.earlier is None:
            return spend
        # nothing read of this attempt yet: what the earlier ones spent, as they spent it (a
        # sum with an unknown part would mark their exact figures a lower bound)
        return total([self.earlier, spend]) if _known(spend) else self.earlier

    def next_attempt(self, outputs: Sequence[Reported], before: AgentOutput | None) -> Watch:
        """A watch for the run's next attempt (after a rate limit's wait): a fresh meter for the
        new process's output, and what the attempts so far said they spent (``outputs``, each
        attempt's own figures, priced as its record prices them, a lower bound kept) counted
        with it; ``before``: what its figures will count again of the session it continues
        (``Cli.counted_before``). Made before the wait, its :meth:`spent` is what ``status``
        shows while the run waits: the earlier attempts' spend."""
        meter = meter_for(self.adapter)
        assert meter is not None  # this one has a meter
        watch = Watch(self.ledger, meter, self.adapter, self.model)
        watch.before, watch.key = before, self.key
        self.ledger.flying(watch)  # in this attempt's place
        watch.earlier = total(self.ledger.priced(output, self.model) for output in outputs)
        cached = [output.cached_tokens for output in outputs if output.cached_tokens is not None]
        watch.earlier_cached = sum(cached) if cached else None
        return watch

    def spent(self) -> dict[str, Any]:
        """:meth:`spend` as a run record's usage keys, with ``cachedTokens`` (the earlier
        attempts' too): what ``status`` shows of a running agent (the supervisor writes it
        into status.json each second, the rate limit's wait once) and what a record of it
        keeps if its supervisor dies."""
        reading = self._reading()
        cached = [n for n in (self.earlier_cached, reading.cached_tokens) if n is not None]
        return {**self._priced(reading).to_json(), "cachedTokens": sum(cached) if cached else None}

    def exceeded(self, *, completed: bool = False) -> str | None:
        """The budget message once a limit is reached, else None; ``completed``: the agent
        completed its report, so only a limit it went over counts."""
        return self.ledger.over(self.spend(), self, strictly=completed)

    def fill(self, parsed: _P, *, at_limit: bool = False) -> _P:
        """``parsed`` (the adapter's reading of the whole output) with the streamed usage where
        it has none: an agent stopped mid-run never printed its final totals. One stopped in a
        turn after a turn's final totals (a message it took while it ran, then a budget or a
        cancel) has a parsed output that ends with the earlier turns: its tokens and cost are
        the reading's instead (the cost none, for the price table, as the watch counted it).
        The figures so filled are a lower bound (``usage_partial``: it may have spent on after
        its last usage line, as ``agents/meter.streamed_usage`` marks them without a budget),
        unless ``at_limit``: the budget stopped it at this reading."""
        if not dataclasses.is_dataclass(parsed) or isinstance(parsed, type):
            return parsed
        with self._lock:
            reading, later = self.meter.reading(), self.meter.after_totals()
        # its final totals left out a call its messages streamed (Claude Code stopped by its
        # own --max-budget-usd): the reading's tokens, the totals' cost (which counts the call)
        short = _token_sum(reading) > _token_sum(parsed)
        fields: dict[str, Any] = {}
        for name in ("input_tokens", "output_tokens", "cached_tokens", "cost_usd", "model"):
            value = getattr(reading, name)
            # the parsed figure ends with an earlier turn, or leaves a streamed call out
            stale = (later and name != "model") or (short and name.endswith("_tokens"))
            if stale or (getattr(parsed, name, None) is None and value is not None):
                fields[name] = value
        if not fields:
            return parsed
        if not at_limit and hasattr(parsed, "usage_partial") and set(fields) - {"model"}:
            fields["usage_partial"] = True
        return dataclasses.replace(parsed, **fields)


def _token_sum(output: object) -> int:
    """The input and output tokens ``output`` says (what it leaves unknown counts 0)."""
    return sum(getattr(output, name, None) or 0 for name in ("input_tokens", "output_tokens"))


def _known(spend: Spend) -> bool:
    """Whether ``spend`` says anything (an agent in flight that read no usage yet adds none)."""
    return any(v is not None for v in (spend.input_tokens, spend.output_tokens, spend.cost_usd))


def _spend(usage: Usage, *, partial: bool = False) -> Spend:
    """The figures of ``usage`` a budget counts; ``partial``: they are a lower bound."""
    return Spend(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=usage.cost_usd,
        cost_estimated=usage.cost_estimated,
        tokens_partial=partial,
        cost_partial=partial,
    )
