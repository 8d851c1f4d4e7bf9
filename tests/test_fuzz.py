"""A small sample of the fuzz suite (tests/fuzz/, benchmarks/fuzz.py runs 1,000+ per surface):
every surface gets generated hostile inputs, and any traceback, hang or write outside the
repository fails the test. Derandomized: the same inputs every run (the benchmark varies them)."""

from __future__ import annotations

import pytest

from tests.fuzz.driver import fuzz
from tests.fuzz.surfaces import SURFACES

# Inputs per surface: together a few seconds (run records and argv start real processes).
SAMPLE = {"run records": 8, "argv": 15, "plans": 15, "GitHub events": 15}


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_no_traceback_hang_or_outside_write(surface: str) -> None:
    tally = fuzz(surface, SAMPLE.get(surface, 25), timeout=20.0)
    assert tally.inputs >= SAMPLE.get(surface, 25) // 2  # hypothesis did generate them
    assert (tally.tracebacks, tally.hangs, tally.outside) == (0, 0, 0), tally.examples
