"""Options several commands share, added by one function each so that their names, types and
help read the same everywhere: the ``.flow/`` layer (``--flow-type``, ``--variant``: ``prompt``,
``spawn``, ``send``, ``run``, ``flow``) and how one agent run is held and shown
(``--stuck-timeout``, ``--timeout``, ``--kill-grace``, ``--quiet``, ``--json``: ``spawn``,
``send``, ``run``, ``flow``). Budgets have their own (``commands/budget.py``).

``bounded`` is the ``type`` of every number the command line takes (here, in ``cli.py``,
``commands/``, ``git_agent_review.py``): argparse refuses a value outside its range before the
command starts, exit 2, naming the option, the range and the value (README, "Numeric options")."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable


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
        help="seconds without activity = stuck, at least 1 (default: defaults.stuck_timeout_secs)",
    )
    parser.add_argument(
        "--timeout",
        type=SECONDS_AT_LEAST_1,
        metavar="S",
        help="hard limit per agent, seconds, at least 1 (default: defaults.max_wait_secs)",
    )
    parser.add_argument(
        "--kill-grace",
        type=SECONDS,
        metavar="S",
        help="SIGTERM to SIGKILL, seconds" if show_kill_grace else argparse.SUPPRESS,
    )
    parser.add_argument("--quiet", action="store_true", help="no live status lines on stderr")
    parser.add_argument("--json", action="store_true", help=json_help)


def bounded(
    minimum: float,
    maximum: float | None = None,
    *,
    whole: bool = False,
    unit: str = "",
) -> Callable[[str], float]:
    """An argparse ``type``: a finite number (``whole``: a whole number, written in ASCII
    digits) from ``minimum`` to ``maximum`` (None: no upper bound), returned as an int when
    ``whole``, else a float. Anything else is refused with one message saying what the option
    takes (``must be a finite number of seconds at least 1, got '-5'``), which argparse prefixes
    with the option's name; ``unit`` ("seconds") is named in it."""
    noun = ("a whole number" if whole else "a finite number") + (f" of {unit}" if unit else "")
    span = f"at least {minimum:g}" if maximum is None else f"from {minimum:g} to {maximum:g}"
    expected = f"{noun} {span}"

    def convert(text: str) -> float:
        value = _whole(text) if whole else _finite(text)
        if value is None or value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"must be {expected}, got {text!r}")
        return value

    return convert


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


SECONDS_AT_LEAST_1 = bounded(1, unit="seconds")
"""``--stuck-timeout``, ``--timeout``: at least 1, as ``defaults.stuck_timeout_secs`` and
``defaults.max_wait_secs`` (docs/configuration.md)."""
SECONDS = bounded(0, unit="seconds")
"""``--kill-grace``, ``cancel --wait``: 0 or more."""
positive_int = bounded(1, whole=True)
"""``--jobs``, ``--max-iterations``, ``--max-parallel``, ``--plan-issue``, ``--max-turns``."""
non_negative_int = bounded(0, whole=True)
"""``--step``, ``--budget-tokens``, ``--max-inline``: 0 or more."""
FILE_SIZE = bounded(1, whole=True, unit="bytes")
"""``--max-file-size`` of ``review`` and ``action``."""


PLAN_ISSUE_HELP = (
    "keep the plan at a glance (its chart and steps) in one comment on issue N "
    "(default: the job summary of a workflow run)"
)
