"""Run ``n`` generated inputs of one surface through hypothesis (generation only: no
shrinking, no example database) and tally what happened."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.sandbox import Sandbox, Tally
from tests.fuzz.surfaces import SURFACES


def fuzz(name: str, examples: int, *, timeout: float = 20.0, seed: int | None = None) -> Tally:
    surface = SURFACES[name]
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="gitflow-fuzz-") as temp:
        box = Sandbox(Path(temp), timeout=timeout)

        @settings(
            max_examples=examples,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
            derandomize=seed is None,
        )
        @given(surface.strategy)
        def one(value: object) -> None:
            tally.inputs += 1
            surface.run(box, tally, value)

        if seed is not None:
            one = __import__("hypothesis").seed(seed)(one)
        one()
    return tally
