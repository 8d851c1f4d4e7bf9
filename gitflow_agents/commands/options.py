"""Options several commands share, added by one function each so that their names, types and
help read the same everywhere: the ``.flow/`` layer (``--flow-type``, ``--variant``: ``prompt``,
``spawn``, ``send``, ``run``, ``flow``) and how one agent run is held and shown
(``--stuck-timeout``, ``--timeout``, ``--kill-grace``, ``--quiet``, ``--json``: ``spawn``,
``send``, ``run``, ``flow``). Budgets have their own (``commands/budget.py``)."""

from __future__ import annotations

import argparse


def add_layer_arguments(parser: argparse.ArgumentParser) -> None:
    """Which ``.flow/`` layers are read besides ``.flow/base.yaml``."""
    parser.add_argument("--flow-type", help="config layer .flow/<flow-type>/base.yaml")
    parser.add_argument("--variant", help="config variant .flow/<flow-type>/<variant>.yaml")


def add_agent_run_arguments(
    parser: argparse.ArgumentParser, json_help: str, *, show_kill_grace: bool = True
) -> None:
    """An agent run's limits (unset: the config's ``defaults:``, ``runs.tree.KILL_GRACE``) and
    its output; ``json_help`` says what ``--json`` prints."""
    parser.add_argument(
        "--stuck-timeout",
        type=float,
        help="seconds without activity = stuck (default: defaults.stuck_timeout_secs)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        help="hard limit per agent, seconds (default: defaults.max_wait_secs)",
    )
    parser.add_argument(
        "--kill-grace",
        type=float,
        help="SIGTERM to SIGKILL, seconds" if show_kill_grace else argparse.SUPPRESS,
    )
    parser.add_argument("--quiet", action="store_true", help="no live status lines on stderr")
    parser.add_argument("--json", action="store_true", help=json_help)


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a whole number of at least 1: {text!r}")
    return int(text)


PLAN_ISSUE_HELP = (
    "keep the plan at a glance (its chart and steps) in one comment on issue N "
    "(default: the job summary of a workflow run)"
)
