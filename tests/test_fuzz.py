"""A small sample of the fuzz suite (tests/fuzz/, benchmarks/fuzz.py runs 1,000+ per surface):
every surface gets generated hostile inputs, and any traceback, hang (20 s of CPU time, or
200 s waiting) or write outside the repository fails the test. Derandomized: the same inputs every run (the benchmark varies them).
``pytest --hypothesis-profile=long`` runs a sample ten times as large (CONTRIBUTING.md, "Long
runs")."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.fuzz.driver import fuzz
from tests.fuzz.sandbox import WAIT_FACTOR, Sandbox, Tally
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


def test_a_hang_is_cpu_time_and_a_wait_only_far_beyond_it(tmp_path: Path) -> None:
    """Issue 19: the bound was 20 wall-clock seconds, which a loaded machine crosses. A run that
    waits a few times its CPU bound is no hang; one that spins, or waits WAIT_FACTOR times as
    long, is."""
    bound = 0.05  # the waits: 0.15 s (no hang) and 0.5 s (a hang)
    box = Sandbox(tmp_path, timeout=bound)
    tally = Tally()
    box.run(tally, lambda: time.sleep(bound * 3), "waits 3 times the bound")
    assert (tally.runs, tally.hangs) == (1, 0)

    def spin() -> None:
        while True:
            pass

    box.run(tally, spin, "spins")
    assert (tally.hangs, tally.examples) == (1, ["hang (CPU): spins"])
    box.run(tally, lambda: time.sleep(bound * WAIT_FACTOR * 50), "waits forever")
    assert (tally.hangs, tally.examples[1:]) == (2, ["hang (waited): waits forever"])
    assert tally.tracebacks == 0
