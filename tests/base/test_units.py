"""Durations and sizes read one way (``gc --older-than``, ``chain.gc``)."""

from __future__ import annotations

import pytest

from gitflow_agents.base.units import bytes_text, duration_text, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("7d", 604800.0),
        ("36h", 129600.0),
        ("90m", 5400.0),
        ("2W", 1209600.0),
        ("15", 15.0),
        (" 0s ", 0.0),
        ("3650d", 3650 * 86400.0),  # MAX_DURATION
        ("0007d", 604800.0),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


_HUGE = "1" + "0" * 400  # overflowed a float: exit 70 in gc --older-than, plan lint, run


@pytest.mark.parametrize(
    "text", ["", "7 days", "1.5d", "-1d", "d", "7y", "3651d", f"{_HUGE}d", f"{_HUGE}", "9" * 5000]
)
def test_not_durations(text: str) -> None:
    assert parse_duration(text) is None


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("5GB", 5 * 10**9),
        ("1.5gb", 1_500_000_000),
        ("500 MiB", 500 * 2**20),
        ("12", 12),
        ("3kb", 3000),
        ("1TiB", 2**40),
        ("1000TB", 10**15),  # MAX_SIZE
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    "text", ["", "GB", "5 GBs", "-1MB", "5XB", "1001TB", f"{_HUGE}GB", f"{_HUGE}.5", "9" * 5000]
)
def test_not_sizes(text: str) -> None:
    assert parse_size(text) is None


def test_texts() -> None:
    assert [duration_text(s) for s in (5, 600, 7200, 3 * 86400)] == ["5s", "10m", "2h", "3d"]
    assert [bytes_text(n) for n in (812, 4_200_000, 1_300_000_000)] == ["812 B", "4.2 MB", "1.3 GB"]
