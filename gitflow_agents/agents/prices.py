"""What a run used and cost, comparable across agent CLIs, and the price table that estimates a
cost the CLI does not state.

:func:`usage_of` turns an adapter's ``AgentOutput`` into a :class:`Usage`: the CLI's own
numbers where it gives them; a cost from the price table (``prices.yaml``, shipped with the
package, overridable in ``.flow/`` under ``prices:``) where only tokens are known, marked
``cost_estimated``; None ("unknown") for everything else, never 0 (docs/decisions.md, "Spend").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from gitflow_agents.base import safe_yaml

PRICES_FILE = Path(__file__).with_name("prices.yaml")
PER_TOKENS = 1_000_000  # prices are per million tokens

# claude-sonnet-4-20250514, gpt-4o-2024-08-06, gemini-2.5-pro-latest: a version of the base model
_VERSION_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)\Z")


class Reported(Protocol):
    """What an agent CLI said about its usage (``agents.base.AgentOutput``)."""

    @property
    def input_tokens(self) -> int | None: ...

    @property
    def output_tokens(self) -> int | None: ...

    @property
    def cached_tokens(self) -> int | None: ...

    @property
    def cost_usd(self) -> float | None: ...

    @property
    def model(self) -> str | None: ...


@dataclass(frozen=True)
class Price:
    """USD per million tokens: fresh input, output, and input read from the cache."""

    input: float
    output: float
    cached: float | None = None  # None: cached input costs as much as fresh input


@dataclass(frozen=True)
class Usage:
    """One run's usage: every field None where the CLI did not say (and no estimate was
    possible). ``cost_estimated``: ``cost_usd`` comes from the price table, not the CLI."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    cost_estimated: bool = False
    model: str | None = None


def price_from(data: Mapping[str, Any]) -> Price:
    """A Price from a checked mapping with ``input`` and ``output`` (``cached`` optional)."""
    cached = data.get("cached")
    return Price(
        input=float(data["input"]),
        output=float(data["output"]),
        cached=None if cached is None else float(cached),
    )


@cache
def shipped_prices() -> Mapping[str, Price]:
    """The table shipped with the package (``prices.yaml``)."""
    data = safe_yaml.load(PRICES_FILE.read_text(encoding="utf-8"))
    return MappingProxyType({str(name): price_from(entry) for name, entry in data.items()})


def price_for(model: str | None, prices: Mapping[str, Price]) -> Price | None:
    """The price of ``model``: its exact name, else without a ``provider/`` prefix, else also
    without a date or ``-latest`` suffix; None when the table does not know it."""
    if not model:
        return None
    for name in _candidates(model):
        if name in prices:
            return prices[name]
    return None


def _candidates(model: str) -> Iterable[str]:
    yield model
    bare = model.rsplit("/", 1)[-1]
    yield bare
    yield _VERSION_SUFFIX.sub("", bare)


def estimate(
    price: Price, input_tokens: int, output_tokens: int, cached_tokens: int | None
) -> float:
    """USD for the tokens at ``price``; ``cached_tokens`` are a part of ``input_tokens``."""
    cached = min(max(cached_tokens or 0, 0), input_tokens)
    cached_price = price.input if price.cached is None else price.cached
    total = (
        (input_tokens - cached) * price.input + cached * cached_price + output_tokens * price.output
    )
    return total / PER_TOKENS


def usage_of(
    output: Reported | None, configured_model: str | None, prices: Mapping[str, Price]
) -> Usage:
    """The usage of one run from what its CLI said. The model is the one the CLI reported,
    else the agent's configured model; a cost is estimated only when the CLI gave none and
    both input and output tokens and the model's price are known."""
    if output is None:
        return Usage(model=configured_model)
    model = output.model or configured_model
    cost, estimated = output.cost_usd, False
    price = price_for(model, prices)
    tokens_in, tokens_out = output.input_tokens, output.output_tokens
    if cost is None and price is not None and tokens_in is not None and tokens_out is not None:
        cost = estimate(price, tokens_in, tokens_out, output.cached_tokens)
        estimated = True
    return Usage(
        input_tokens=output.input_tokens,
        output_tokens=output.output_tokens,
        cached_tokens=output.cached_tokens,
        cost_usd=cost,
        cost_estimated=estimated,
        model=model,
    )
