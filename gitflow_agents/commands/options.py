"""Options several commands share, added by one function each so that their names, types and
help read the same everywhere: the ``.flow/`` layer (``--flow-type``, ``--variant``: ``prompt``,
``spawn``, ``send``, ``run``, ``flow``) and how one agent run is held and shown
(``--stuck-timeout``, ``--timeout``, ``--kill-grace``, ``--quiet``, ``--json``: ``spawn``,
``send``, ``run``, ``flow``). Budgets have their own (``commands/budget.py``).

``bounded`` is the ``type`` of every number the command line takes (here, in ``cli.py``,
``commands/``, ``git_agent_review.py``): argparse refuses a value outside its range before the
command starts, exit 2, naming the option, the range and the value (README, "Numeric options").
Every range has an upper end, the one the same number has in ``.flow/`` (docs/decisions.md,
"Hostile and broken input" 18), so a typo never quietly means "forever"."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from gitflow_agents.base.units import MAX_SIZE


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
        type=SECONDS_AT_LEAST_1,
        metavar="S",
        help=f"seconds without activity = stuck, {span(1, MAX_SECONDS)} (365 days; default: "
        "defaults.stuck_timeout_secs)",
    )
    parser.add_argument(
        "--timeout",
        type=SECONDS_AT_LEAST_1,
        metavar="S",
        help=f"hard limit per agent, seconds, {span(1, MAX_SECONDS)} (365 days; default: "
        "defaults.max_wait_secs)",
    )
    parser.add_argument(
        "--kill-grace",
        type=SECONDS,
        metavar="S",
        help=f"SIGTERM to SIGKILL, seconds, {SECONDS_FROM_0}"
        if show_kill_grace
        else argparse.SUPPRESS,
    )
    parser.add_argument("--quiet", action="store_true", help="no live status lines on stderr")
    parser.add_argument("--json", action="store_true", help=json_help)


def bounded(
    minimum: float,
    maximum: float,
    *,
    whole: bool = False,
    unit: str = "",
) -> Callable[[str], float]:
    """An argparse ``type``: a finite number (``whole``: a whole number, written in ASCII
    digits) from ``minimum`` to ``maximum``, returned as an int when ``whole``, else a float.
    Anything else is refused with one message saying what the option takes (``must be a finite
    number of seconds from 1 to 31536000, got '-5'``), which argparse prefixes with the option's
    name; ``unit`` ("seconds") is named in it. A whole number is compared as an int, never
    turned into a float."""
    noun = ("a whole number" if whole else "a finite number") + (f" of {unit}" if unit else "")
    expected = f"{noun} {span(minimum, maximum)}"

    def convert(text: str) -> float:
        value = _whole(text) if whole else _finite(text)
        if value is None or not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be {expected}, got {text!r}")
        return value

    return convert


def span(minimum: float, maximum: float) -> str:
    """``from 1 to 31536000``: a range as the messages and the help write it (whole numbers in
    full, as the ``.flow/`` checks write them, never ``3.1536e+07``)."""
    return f"from {_number(minimum)} to {_number(maximum)}"


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


_WHOLE = re.compile(r"\s*[-+]?[0-9]+\s*")  # int() also takes "1_000" and other scripts' digits


def _whole(text: str) -> int | None:
    try:
        return int(text) if _WHOLE.fullmatch(text) else None
    except ValueError:  # over Python's 4,300-digit limit
        return None


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


MAX_SECONDS = 365 * 86400
"""The most a duration option may be: a year, as a ``defaults:`` limit in ``.flow/``
(``config/spec.MAX_SECONDS``; not imported from there: ``git agent-review`` loads this module
and no ``typing``)."""
MAX_WHOLE = 10**15
"""The most a whole-number option may be: as a whole number in ``.flow/`` (``config/spec.
MAX_WHOLE``), a step number (15 digits) and a token count (``agents/output.MAX_COUNT``)."""
MAX_USD = 10**9
"""The most ``--budget-usd`` may be, as an amount in ``.flow/`` (``config/spec.MAX_USD``)."""

SECONDS_AT_LEAST_1 = bounded(1, MAX_SECONDS, unit="seconds")
"""``--stuck-timeout``, ``--timeout``: at least 1, as ``defaults.stuck_timeout_secs`` and
``defaults.max_wait_secs`` (docs/configuration.md), and at most their year."""
SECONDS = bounded(0, MAX_SECONDS, unit="seconds")
"""``--kill-grace``, ``cancel --wait``, ``send --wait``: 0 or more, at most a year."""
SECONDS_FROM_0 = f"{span(0, MAX_SECONDS)} (365 days)"
CANCEL_WAIT = 5.0
"""``cancel --wait``: seconds a run's supervisor has to stop it (docs/supervisor.md)."""
SEND_WAIT = 5.0
"""``send --wait``: seconds a running agent's orchestrator has to answer (``runs/control.py``
``SEND_WAIT``, which the library's callers get)."""
positive_int = bounded(1, MAX_WHOLE, whole=True)
"""``--jobs``, ``--max-iterations``, ``--max-parallel``, ``--plan-issue``, ``--max-turns``."""
non_negative_int = bounded(0, MAX_WHOLE, whole=True)
"""``--step``, ``--budget-tokens``, ``--max-inline``: 0 or more."""
FILE_SIZE = bounded(1, MAX_SIZE, whole=True, unit="bytes")
"""``--max-file-size`` of ``review`` and ``action``: at most 1000 TB, as a size in ``.flow/``."""


PLAN_ISSUE_HELP = (
    "keep the plan at a glance (its chart and steps) in one comment on issue N "
    "(default: the job summary of a workflow run)"
)
