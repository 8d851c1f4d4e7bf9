"""``github/pr/tend_lease.py``: when a tend may take a step pull request's lease, as read from
the lease alone (no token: only ages and this host's processes are judged)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from gitflow_agents.git.lease import Lease
from gitflow_agents.github.pr.tend_lease import busy, tend_holder

TTL = 1800.0


def lease(age: float = 0.0, **holder: Any) -> Lease:
    return Lease("0" * 40, holder, time.time() - age)


def gone_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_no_lease_or_a_published_step_run_may_be_tended() -> None:
    assert busy(None, None, "o/r", TTL) is None
    assert busy(lease(host="elsewhere", pid=1, pull=3), None, "o/r", TTL) is None


def test_a_step_run_at_work_is_left_alone_until_its_claim_is_free() -> None:
    working = lease(host="elsewhere", pid=1)
    why = busy(working, None, "o/r", TTL)
    assert why is not None and "step run" in why
    assert busy(lease(TTL + 60, host="elsewhere", pid=1), None, "o/r", TTL) is None


@pytest.mark.parametrize("age", [0.0, 60.0])
def test_a_live_tend_is_left_alone_and_one_whose_process_is_gone_is_not(age: float) -> None:
    me = tend_holder({"host": socket.gethostname(), "pid": os.getpid()}, "a" * 40, 3, "run")
    why = busy(lease(age, **me), None, "o/r", TTL)
    assert why is not None and "a tend" in why
    dead = {**me, "pid": gone_pid()}
    assert busy(lease(age, **dead), None, "o/r", TTL) is None


def test_a_tend_elsewhere_is_judged_by_its_lease_age() -> None:
    there = {"host": "elsewhere", "pid": 1, "pull": 3, "tend": "run"}
    assert busy(lease(60, **there), None, "o/r", TTL) is not None
    assert busy(lease(TTL + 60, **there), None, "o/r", TTL) is None


def test_a_tend_records_its_pull_request_and_process_start() -> None:
    record = tend_holder({"host": "h", "pid": os.getpid()}, "b" * 40, 7, "run-1")
    assert record["pull"] == 7 and record["tend"] == "run-1" and record["claimedSha"] == "b" * 40
    assert isinstance(record["pidStart"], float)
