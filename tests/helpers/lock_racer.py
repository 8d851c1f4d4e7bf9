"""One racer of tests/runs/test_lock_race.py, a process of its own: ``python -m
tests.helpers.lock_racer LOCK INDEX MARKS``. Kept apart from the test module so that six racers
start without importing pytest, hypothesis and the test fixtures (most of their start-up)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from gitflow_agents.runs.lock import StepLockedError, hold

RACERS = 6
QUICK_TRIES = int(os.environ.get("LOCK_RACE_TRIES", "1"))
HANG = 120.0  # seconds: only a deadlock bound, never an expected duration


def racer_main(path: Path, index: str, marks: Path) -> None:
    """``go <round> <kind>`` on stdin starts an attempt; answers ``held`` or ``refused``."""
    for line in sys.stdin:
        _go, round_no, kind = line.split()
        mark = marks / round_no / index  # a folder per round: the count below stays cheap
        mark.parent.mkdir(exist_ok=True)
        answers = []
        for _attempt in range(1 if kind == "stay" else QUICK_TRIES):
            try:
                with hold(path, f"racer-{index}-{round_no}"):
                    inside = _inside(mark) if kind == "stay" else _alone(marks)
                    answers.append(inside)
            except StepLockedError:
                mark.touch()
                answers.append("refused")
        print(" ".join(answers), flush=True)


def _inside(mark: Path) -> str:
    """Hold on until every racer of the round has made its attempt."""
    mark.touch()
    deadline = time.monotonic() + HANG
    while sum(1 for _ in mark.parent.iterdir()) < RACERS and time.monotonic() < deadline:
        time.sleep(0.001)
    return "held"


def _alone(marks: Path) -> str:
    """Mark the time inside with a file only one process can create."""
    inside = marks / "inside"
    try:
        os.close(os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return "overlap"
    inside.unlink()
    return "held"


if __name__ == "__main__":
    racer_main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
