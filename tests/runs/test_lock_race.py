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

Nothing here measures time: the waits only bound a hang. A normal run has 40 rounds of each kind,
``pytest --hypothesis-profile=long`` 100 (CONTRIBUTING.md, "Long runs"); ``LOCK_RACE_ROUNDS``
sets the number of rounds of each kind.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers.lock_racer import HANG, RACERS

ROUNDS, LONG_ROUNDS = 40, 100  # of each kind


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
def test_racers_for_a_stale_lock_have_exactly_one_holder(tmp_path: Path, long_run: bool) -> None:
    rounds = int(os.environ.get("LOCK_RACE_ROUNDS", LONG_ROUNDS if long_run else ROUNDS))
    path = tmp_path / "flows" / "plan" / "locks" / "step-01.lock"
    path.parent.mkdir(parents=True)
    marks = tmp_path / "marks"
    marks.mkdir()
    racers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.lock_racer", str(path), str(i), str(marks)],
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
        for round_no in range(2 * rounds):
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
