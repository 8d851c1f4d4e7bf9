"""The claim record of a ``run --pr`` step: what a re-run needs to take over its own lost claim.

Every ``run PLAN --step N --pr`` writes ``claim.json`` into its step run's folder,
``<flow_dir>/<flow>/runs/<runID>/`` (beside the ``result.json`` the chain writes there; docs/
protocol.md, Run records), atomically and BEFORE it pushes the claim: the plan, step and branch,
the commit it claims the branch at, the commits it pushes (each written before its push), the
holder as its lease names it (host, workflow run id and attempt) and its process (pid and start
time, ``liveness.process_alive``) and a state. ``claiming`` → the push
is not confirmed yet; ``claimed`` / ``pushing`` → the branch on origin is this run's; ``done``,
``released``, ``superseded``, ``taken-over`` → the record claims nothing any more (a refused
claim's record, or one given back before any agent ran, is removed: nothing ran).

A run whose claim push finds the branch on origin asks ``previous_claim`` for the newest record
of the same plan, step and branch left by a run whose process is gone. The claim is that run's
own, and is taken over, only when its push was confirmed, origin's tip is the claimed commit
or one it pushed (``Claim.owns``) and the lease on origin, if any, still names that run
(``Claim.holds``): a claim another runner took over as free is theirs. docs/github.md,
"Plan steps as pull requests".
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitflow_agents.base.fsutil import make_dirs, write_json_atomic
from gitflow_agents.runs import read_json
from gitflow_agents.runs.liveness import process_alive, start_id, start_time

CLAIM_FILE = "claim.json"
# the branch on origin is the run's own (its claim push was confirmed)
CONFIRMED = ("claimed", "pushing")
ACTIVE = ("claiming", *CONFIRMED)
# who holds the claim besides the pid, as its lease on origin names it (github/pr/lease.py)
HOLDER_KEYS = ("host", "repository", "runId", "runAttempt")


@dataclass(frozen=True)
class Claim:
    """One run's ``claim.json`` as read."""

    path: Path
    data: dict[str, Any]

    @property
    def run_id(self) -> str:
        return self.path.parent.name

    @property
    def state(self) -> str:
        return str(self.data.get("state"))

    @property
    def claimed(self) -> str | None:
        sha = self.data.get("claimedSha")
        return sha if isinstance(sha, str) else None

    @property
    def pushed(self) -> tuple[str, ...]:
        shas = self.data.get("pushed")
        return tuple(s for s in shas if isinstance(s, str)) if isinstance(shas, list) else ()

    @property
    def created(self) -> bool:
        """The claimed commit is where the claim push created the branch (it may be given
        back); False when the run continued a branch it found (``--force``)."""
        return self.data.get("created") is True

    def alive(self) -> bool:
        return process_alive(
            self.data.get("pid"), self.data.get("pidStarted"), self.data.get("pidStartId")
        )

    def holds(self, lease: Mapping[str, Any]) -> bool:
        """The lease's holder (``github/pr/lease.py``) is this run: same pid, and same host
        and workflow run attempt where the record has them (an older record names only its
        pid)."""
        keys = ("pid", *(key for key in HOLDER_KEYS if key in self.data))
        return all(lease.get(key) == self.data.get(key) for key in keys)

    def owns(self, tip: str) -> bool:
        """Origin's branch at ``tip`` is still this run's: its claim was confirmed and the
        tip is the claimed commit or a commit it pushed."""
        return self.state in CONFIRMED and (tip == self.claimed or tip in self.pushed)

    def retakable(self, tip: str, lease: Mapping[str, Any] | None) -> bool:
        """A re-run of this checkout takes this lost run's claim over: origin's branch at
        ``tip`` is still its (``owns``) and the lease on origin, if any (its holder record),
        still names it (``holds``): a claim another runner took over as free is theirs."""
        return self.owns(tip) and (lease is None or self.holds(lease))

    def update(self, **changes: Any) -> Claim:
        """Write the record with ``changes`` (atomically); the record as written."""
        data = {**self.data, **changes, "at": time.time()}
        write_json_atomic(self.path, data)
        return Claim(self.path, data)

    def discard(self) -> None:
        """Remove the record of a claim that made nothing (refused, or given back before any
        agent ran), and its run folder when nothing else is in it: no run to list."""
        self.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()

    def add_pushed(self, sha: str) -> Claim:
        """Record ``sha`` as pushed by this run, before the push (state ``pushing``)."""
        pushed = [*self.pushed, sha] if sha not in self.pushed else list(self.pushed)
        return self.update(state="pushing", pushed=pushed)


def write_claim(
    run_dir: Path,
    *,
    plan: str,
    step: int,
    branch: str,
    remote: str,
    sha: str,
    holder: Mapping[str, Any] | None = None,
) -> Claim:
    """The record of a claim about to be pushed (state ``claiming``), written atomically;
    ``holder``: who claims, as the lease names it (its host, workflow run id and attempt)."""
    make_dirs(run_dir)
    who = {key: value for key, value in (holder or {}).items() if key in HOLDER_KEYS}
    record = Claim(
        run_dir / CLAIM_FILE,
        {
            "plan": plan,
            "step": step,
            "branch": branch,
            "remote": remote,
            "claimedSha": sha,
            "created": True,
            "pushed": [],
            **who,
            "pid": os.getpid(),
            "pidStarted": start_time(os.getpid()),
            "pidStartId": start_id(os.getpid()),
        },
    )
    return record.update(state="claiming")


def previous_claim(
    runs: Path, *, plan: str, step: int, branch: str, remote: str, me: str
) -> Claim | None:
    """The newest record under ``runs`` (a flow's runs folder), other than run ``me``'s, of a
    claim of ``branch`` for that plan step that is still active and whose process is gone."""
    if not runs.is_dir():
        return None
    for run_dir in sorted(runs.iterdir(), reverse=True):  # run ids sort by time
        if run_dir.name == me:
            continue
        data = read_json(run_dir / CLAIM_FILE)
        if data is None or data.get("state") not in ACTIVE:
            continue
        key = (data.get("plan"), data.get("step"), data.get("branch"), data.get("remote"))
        if key != (plan, step, branch, remote):
            continue
        found = Claim(run_dir / CLAIM_FILE, data)
        return None if found.alive() else found
    return None


def not_taken_over(claim: Claim, tip: str) -> str:
    """Why the lost run's claim is not taken over (origin's branch at ``tip``), one line."""
    if claim.state not in CONFIRMED:
        return (
            f"the lost run {claim.run_id} of this checkout was stopped while claiming it, so "
            "whether its claim created the branch is unknown: not taken over"
        )
    return (
        f"the lost run {claim.run_id} of this checkout claimed it, but the branch is now at "
        f"{tip[:12]}, a commit that run did not push (someone else pushed): not taken over"
    )
