"""Durations and sizes as people write them (``7d``, ``36h``, ``5GB``), read one way for the
command line (``gc --older-than``) and the configuration (``chain.gc``), and written back short.

A duration is a whole number and a unit: ``s``, ``m``, ``h``, ``d``, ``w`` (``90m``, ``7d``);
a bare number is seconds. A size is a number (decimals allowed) and a unit: ``B``, ``KB``,
``MB``, ``GB``, ``TB`` (powers of 1000, as disk tools print them) or ``KiB``, ``MiB``, ``GiB``,
``TiB`` (powers of 1024); a bare number is bytes. Units ignore case. A duration is at most
``MAX_DURATION`` (3650 days), a size at most ``MAX_SIZE`` (1000 TB): more is no duration or size
(a 400-digit one overflowed a float, exit 70).
"""

from __future__ import annotations

import re

_DURATION = re.compile(r"\s*(\d+)\s*([smhdw]?)\s*", re.IGNORECASE)
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)?\s*", re.IGNORECASE)
_BYTES = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}

MAX_DURATION = 3650 * 86400
"""The longest duration, in seconds: 3650 days (ten years)."""
MAX_SIZE = 1000**5
"""The largest size, in bytes: 1000 TB."""
DURATION_FORMS = "a whole number with s, m, h, d or w, at most 3650d (e.g. 7d, 36h, 90m)"
SIZE_FORMS = (
    "a number with B, KB, MB, GB, TB (or KiB, MiB, GiB, TiB), at most 1000TB, e.g. 5GB, 500MB"
)


def parse_duration(text: str) -> float | None:
    """Seconds in ``text`` (``7d`` → 604800), or None when it is not a duration (or is over
    ``MAX_DURATION``)."""
    match = _DURATION.fullmatch(text)
    if match is None:
        return None
    digits = match.group(1).lstrip("0")
    if len(digits) > len(str(MAX_DURATION)):  # never past int()'s 4,300-digit limit
        return None
    seconds = int(digits or "0") * _SECONDS[match.group(2).lower()]
    return float(seconds) if seconds <= MAX_DURATION else None


def parse_size(text: str) -> int | None:
    """Bytes in ``text`` (``5GB`` → 5000000000), or None when it is not a size (or is over
    ``MAX_SIZE``)."""
    match = _SIZE.fullmatch(text)
    if match is None:
        return None
    size = float(match.group(1)) * _BYTES[(match.group(2) or "b").lower()]  # inf when huge
    return round(size) if size <= MAX_SIZE else None


def duration_text(seconds: float) -> str:
    """``seconds`` in its largest whole-ish unit: ``45s``, ``12m``, ``5h``, ``3d``."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{max(0, int(seconds))}s"


def bytes_text(size: int) -> str:
    """``size`` bytes in the unit that keeps it short: ``812 B``, ``4.2 MB``, ``1.3 GB``."""
    for unit, step in (("TB", 1000**4), ("GB", 1000**3), ("MB", 1000**2), ("KB", 1000)):
        if size >= step:
            return f"{size / step:.1f} {unit}"
    return f"{size} B"
