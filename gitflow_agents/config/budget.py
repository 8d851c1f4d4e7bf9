"""The ``budget:`` section: how much one agent run, step, plan run or review may spend.

Each scope is ``{usd: X, tokens: N}``, either or both; a scope without an entry has no limit.
The limits are values here; what was spent and when a run is stopped is ``runs/budget.py``'s
(docs/configuration.md, "budget").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

Scope = Literal["agent", "step", "plan", "review"]
SCOPES: tuple[Scope, ...] = ("agent", "step", "plan", "review")


@dataclass(frozen=True)
class Cap:
    """One scope's limit: USD and/or tokens (input plus output); None: no limit of that kind."""

    usd: float | None = None
    tokens: int | None = None

    @property
    def set(self) -> bool:
        return self.usd is not None or self.tokens is not None


@dataclass(frozen=True)
class Budgets:
    """The limit of every scope (an unset scope: ``Cap()``, no limit)."""

    agent: Cap = Cap()
    step: Cap = Cap()
    plan: Cap = Cap()
    review: Cap = Cap()

    def cap(self, scope: Scope) -> Cap:
        cap: Cap = getattr(self, scope)
        return cap

    def with_option(self, scope: Scope, usd: float | None, tokens: int | None) -> Budgets:
        """These budgets with a command's ``--budget-usd`` / ``--budget-tokens`` laid over
        ``scope``: each option given replaces that kind of limit of the scope."""
        old = self.cap(scope)
        cap = Cap(
            usd=usd if usd is not None else old.usd,
            tokens=tokens if tokens is not None else old.tokens,
        )
        return replace(self, **{scope: cap})


def build_budgets(values: Mapping[str, Any] | None) -> Budgets:
    """Budgets from the checked ``budget:`` section (scope -> {usd, tokens} plain values;
    None or an empty entry: no limit)."""
    caps: dict[str, Cap] = {}
    for scope in SCOPES:
        entry = (values or {}).get(scope) or {}
        usd, tokens = entry.get("usd"), entry.get("tokens")
        caps[scope] = Cap(
            usd=None if usd is None else float(usd),
            tokens=None if tokens is None else int(tokens),
        )
    return Budgets(**caps)
