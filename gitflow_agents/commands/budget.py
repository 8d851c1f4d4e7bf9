"""``--budget-usd`` / ``--budget-tokens``: the options of ``run``, ``spawn``, ``flow`` and
``review``, each setting one scope of ``.flow/`` ``budget:`` (docs/configuration.md, "budget")."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gitflow_agents.commands.options import MAX_USD, bounded, non_negative_int

if TYPE_CHECKING:
    from gitflow_agents.config import FlowConfig
    from gitflow_agents.config.budget import Scope
    from gitflow_agents.runs.budget import Ledger

UNMETERED = (
    "an agent whose CLI does not print its usage as it runs (only claude, codex, opencode and "
    "command agents printing Claude-style stream-json do) is checked before it starts, not "
    "stopped mid-run"
)


BUDGET_USD = bounded(0, MAX_USD)
"""``--budget-usd``: a finite amount from 0 to 10^9, as ``.flow/`` ``budget:`` takes (``.inf``
and ``.nan`` are refused there too)."""


def add_budget_arguments(parser: argparse.ArgumentParser, scope: str) -> None:
    """The two options; ``scope`` says in the help what they limit (e.g. "per step run")."""
    parser.add_argument(
        "--budget-usd",
        type=BUDGET_USD,
        metavar="X",
        help=f"stop at X USD spent {scope} (overrides .flow/ budget:; exit 5); {UNMETERED}",
    )
    parser.add_argument(
        "--budget-tokens",
        type=non_negative_int,
        metavar="N",
        help=f"stop at N tokens (input plus output) used {scope} (overrides .flow/ budget:)",
    )


def ledger_from(args: argparse.Namespace, config: FlowConfig, scope: Scope) -> Ledger:
    """The command's ledger: ``.flow/`` ``budget:`` with the options laid over ``scope``."""
    from gitflow_agents.runs.budget import Ledger

    usd = getattr(args, "budget_usd", None)  # checked by argparse: BUDGET_USD
    tokens = getattr(args, "budget_tokens", None)
    return Ledger(config.budget.with_option(scope, usd, tokens), config.prices)
