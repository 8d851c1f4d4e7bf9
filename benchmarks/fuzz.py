"""The fuzz suite at full size: hostile generated inputs for every input surface (issue 12).

Usage: python benchmarks/fuzz.py [--examples N] [--surface NAME]... [--seed S] [--timeout SEC]

For each surface (config layers, plans, frontmatter of cards, asset manifests, agent reports
and replies, run records, GitHub events, the files a change hands the builtin reviewer, argv) hypothesis generates N inputs (default 1,000);
each input drives several commands or functions in-process, in a throw-away repository with
fake agents (tests/fuzz/). Prints a table: inputs, the runs they drove, tracebacks (exit 70 or an
exception escaping), hangs (a run over --timeout seconds of CPU time, default 20, or waiting ten
times as long: tests/fuzz/sandbox.py) and writes outside the repository (files under a folder the
repository's symlinks point at); then each distinct problem. Exit 1 when there is any. ``tests/test_fuzz.py`` runs a small sample of the same.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    from tests.fuzz.driver import fuzz
    from tests.fuzz.sandbox import WAIT_FACTOR
    from tests.fuzz.surfaces import SURFACES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000, help="inputs per surface")
    parser.add_argument("--surface", action="append", choices=sorted(SURFACES))
    parser.add_argument("--seed", type=int, default=None, help="default: a fresh one")
    parser.add_argument("--timeout", type=float, default=20.0, help="CPU seconds per run")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    names = args.surface or list(SURFACES)
    print(
        f"fuzz: {args.examples} inputs per surface, seed {seed}, hang = {args.timeout:g} s of CPU"
        f" (or {args.timeout * WAIT_FACTOR:g} s waiting)"
    )
    header = f"{'surface':<22} {'inputs':>7} {'runs':>7} {'tracebacks':>10} {'hangs':>6} "
    header += f"{'outside':>8} {'seconds':>8}"
    print(header)
    problems: list[str] = []
    for name in names:
        started = time.perf_counter()
        tally = fuzz(name, args.examples, timeout=args.timeout, seed=seed)
        took = time.perf_counter() - started
        print(
            f"{name:<22} {tally.inputs:>7} {tally.runs:>7} {tally.tracebacks:>10} "
            f"{tally.hangs:>6} {tally.outside:>8} {took:>8.1f}",
            flush=True,
        )
        problems += [f"{name}: {line}" for line in tally.examples]
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
