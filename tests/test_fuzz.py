"""A small sample of the fuzz suite (tests/fuzz/, benchmarks/fuzz.py runs 1,000+ per surface):
every surface gets generated hostile inputs, and any traceback, hang or write outside the
repository fails the test. Derandomized: the same inputs every run (the benchmark varies them).
``pytest --hypothesis-profile=long`` runs a sample ten times as large (CONTRIBUTING.md, "Long
runs")."""

from __future__ import annotations

import pytest

from tests.fuzz.driver import fuzz
from tests.fuzz.surfaces import SURFACES

# Inputs per surface in a normal run: together a few seconds of CPU (run records and argv start
# real processes, GitHub events go through the HTTP stand-in).
SAMPLE = {"run records": 4, "argv": 8, "plans": 8, "GitHub events": 6}
DEFAULT_SAMPLE = 12
LONG_FACTOR = 10  # under --hypothesis-profile=long


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_no_traceback_hang_or_outside_write(surface: str, long_run: bool) -> None:
    examples = SAMPLE.get(surface, DEFAULT_SAMPLE) * (LONG_FACTOR if long_run else 1)
    tally = fuzz(surface, examples, timeout=20.0)
    assert tally.inputs >= examples // 2  # hypothesis did generate them
    assert (tally.tracebacks, tally.hangs, tally.outside) == (0, 0, 0), tally.examples
