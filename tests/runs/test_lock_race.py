"""lock.py under contention: any number of processes racing for one stale lock, one holder.

Each round the test process leaves a stale lock (a dead holder's record, or an unreadable file),
then releases six racer processes at once (a line on each one's stdin); each answers whether it
held the lock. Two kinds of rounds alternate:

- ``stay``: a racer that gets the lock stays inside until every racer has made its attempt, so
  two holders of the round would be inside together: exactly one may hold it;
- ``quick``: a holder lets go at once, so later racers may hold it after it (one at a time); each
  holder marks its time inside with a file only one can create, so two inside at once show.
  This is the round that caught the earlier lock: a taker that judged the lock stale acted after
  the first holder had gone and let a third one in beside a fourth.

Nothing here measures time: the waits only bound a hang. ``LOCK_RACE_ROUNDS`` raises the number
of rounds of each kind (100) for a long run.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

RACERS = 6
ROUNDS = int(os.environ.get("LOCK_RACE_ROUNDS", "100"))  # of each kind
QUICK_TRIES = int(os.environ.get("LOCK_RACE_TRIES", "1"))
HANG = 120.0  # seconds: only a deadlock bound, never an expected duration


def racer_main() -> None:
    """One racer: ``go <round>`` on stdin starts an attempt; answers ``held`` or ``refused``."""
    from gitflow_agents.runs.lock import StepLockedError, hold

    path, index, marks = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    for line in sys.stdin:
        _go, round_no, kind = line.split()
        mark = marks / f"{round_no}-{index}"
        answers = []
        for _attempt in range(1 if kind == "stay" else QUICK_TRIES):
            try:
                with hold(path, f"racer-{index}-{round_no}"):
                    inside = _inside(marks, round_no, mark) if kind == "stay" else _alone(marks)
                    answers.append(inside)
            except StepLockedError:
                mark.touch()
                answers.append("refused")
        print(" ".join(answers), flush=True)


def _inside(marks: Path, round_no: str, mark: Path) -> str:
    """Hold on until every racer of the round has made its attempt."""
    mark.touch()
    deadline = time.monotonic() + HANG
    while len(list(marks.glob(f"{round_no}-*"))) < RACERS and time.monotonic() < deadline:
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


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def leave_stale(path: Path, round_no: int, dead_pid: int) -> None:
    """A lock as a holder killed with -9 (or an older version of the tool) leaves it."""
    path.unlink(missing_ok=True)
    if round_no % 4 == 3:
        path.write_bytes(b"")  # unreadable: stale too
        return
    record = {"runId": "lost", "pid": dead_pid, "host": socket.gethostname(), "pidStarted": 1.0}
    path.write_text(json.dumps({**record, "at": 0}))


@pytest.mark.slow
def test_racers_for_a_stale_lock_have_exactly_one_holder(tmp_path: Path) -> None:
    path = tmp_path / "flows" / "plan" / "locks" / "step-01.lock"
    path.parent.mkdir(parents=True)
    marks = tmp_path / "marks"
    marks.mkdir()
    code = "from tests.runs.test_lock_race import racer_main; racer_main()"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(path), str(i), str(marks)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(RACERS)
    ]
    dead = _dead_pid()
    stay, quick = [], []
    try:
        for round_no in range(2 * ROUNDS):
            kind = "stay" if round_no % 2 else "quick"
            leave_stale(path, round_no // 2, dead)
            for racer in racers:
                assert racer.stdin is not None
                racer.stdin.write(f"go {round_no} {kind}\n")
                racer.stdin.flush()
            answers = [w for r in racers if r.stdout for w in r.stdout.readline().split()]
            (stay if kind == "stay" else quick).append(answers)
    finally:
        for racer in racers:
            if racer.stdin:
                racer.stdin.close()
        for racer in racers:
            racer.wait(HANG)
    assert not path.exists()  # the last holder removed its lock
    assert [a for a in stay if sorted(a) != ["held"] + ["refused"] * (RACERS - 1)] == []
    assert [a for a in quick if "overlap" in a or "held" not in a] == []
