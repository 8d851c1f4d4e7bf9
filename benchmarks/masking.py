"""Throughput of the streaming masker an agent's output goes through on its way to
``worker.log`` and the events (``gitflow_agents/base/redact_stream.py``; issue 12, What 4).

Usage: python benchmarks/masking.py [--mib N]

Feeds N MiB (default 16) of each shape of output in 64 KiB chunks (what the supervisor's
``os.read`` hands it) through a ``LineMasker`` holding the reviewed diff's exact values (3, or
50), and prints MB/s per shape, next to the raw speed of writing the same bytes to a file (the
log before masking). Target: well above what an agent CLI prints (a few MB/s at its busiest),
so masking never slows the agent down; the tests assert what is masked, never the speed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MiB = 1024 * 1024
CHUNK = 64 * 1024
AWS_KEY = "AKIA" + "Q7HZ4M2XK9PLR3VB"
GH_TOKEN = "ghp_" + "Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6"
PASSWORD = "pR7xQ9mZ2kL5wN8vT4sY"
THREE = (AWS_KEY, GH_TOKEN, PASSWORD)
FIFTY = THREE + tuple(f"Zq{i:02d}x9Vw3Lm7Tk1Rp5Hs8" for i in range(47))

_EVENT = {
    "type": "assistant",
    "message": {"content": [{"type": "text", "text": "Reading src/a.py"}]},
}
SHAPES = {
    "prose lines": "Running the test suite again after the change to src/module.py, all good.\n",
    "stream-json lines": json.dumps(_EVENT) + "\n",
    "key: value lines": "  name: deploy-bot  timeout: 30  token_file: /run/secrets/t  ok: true\n",
    "1 line in 10 quotes secrets": (
        "plain progress line number one of a block of ten lines here\n" * 9
        + f"found {AWS_KEY} and {GH_TOKEN} and the password {PASSWORD}\n"
    ),
    "one line, no newline": "x" * 1000 + " ",
}


def _data(unit: str, size: int) -> bytes:
    raw = unit.encode()
    return (raw * (size // len(raw) + 1))[:size]


def _masked(data: bytes, secrets: tuple[str, ...]) -> float:
    from gitflow_agents.base.redact_stream import LineMasker

    masker = LineMasker(secrets)
    started = time.perf_counter()
    for start in range(0, len(data), CHUNK):
        masker.feed(data[start : start + CHUNK])
    masker.flush()
    return time.perf_counter() - started


def _raw(data: bytes, folder: Path) -> float:
    started = time.perf_counter()
    with (folder / "worker.log").open("wb") as log:
        for start in range(0, len(data), CHUNK):
            log.write(data[start : start + CHUNK])
            log.flush()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=16, help="MiB of output per shape")
    args = parser.parse_args()
    size = args.mib * MiB
    print(f"{args.mib} MiB per shape, fed in {CHUNK // 1024} KiB chunks\n")
    header = ("shape", "raw write MB/s", "masked, 3 values MB/s", "masked, 50 values MB/s")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    with tempfile.TemporaryDirectory() as tmp:
        for name, unit in SHAPES.items():
            data = _data(unit, size)
            mb = len(data) / 1e6
            row = (
                name,
                f"{mb / _raw(data, Path(tmp)):,.0f}",
                f"{mb / _masked(data, THREE):,.1f}",
                f"{mb / _masked(data, FIFTY):,.1f}",
            )
            print(" | ".join(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
