"""Who tends a step pull request: the step branch's lease, held by one tend at a time.

``plan tend`` acts on a pull request only while it holds the lease of its step branch
(``refs/gitflow-agents/claims/<branch>``, ``git/lease.py``), the same ref a step run's claim
holds. It writes its own holder there, with ``tend`` (its run id), ``pidStart`` and ``pull`` (the
pull request's number: ``--ready`` and ``run --pr`` keep seeing a started step with a pull
request, never a free claim), with a lease on the lease it read: of two tends, or a tend and a
step run, exactly one wins the push. It renews the lease while it works and, when done, writes
the holder back without ``tend``, as a published step run leaves it.

A tend takes the lease (``busy`` says why not) when:

- there is none (a branch claimed by an older version, or by hand);
- a step run published its pull request (``pull`` and no ``tend``): that run is done;
- a step run holds it (no ``pull``) whose claim is free (``lease.why_free``: its workflow run
  ended, or its lease stopped renewing), e.g. one killed after opening its pull request;
- a tend holds it that is gone: its process is gone on this host, its workflow run ended, or
  its lease stopped renewing ``claim_ttl`` seconds ago.

A live step run or a live tend is never taken from. docs/github.md, "Tending open step pull
requests".
"""

from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

from gitflow_agents.git import lease as git_lease
from gitflow_agents.github.api.client import Client
from gitflow_agents.github.pr import lease as leases
from gitflow_agents.runs.liveness import process_alive, start_id, start_time

TEND = "tend"
"""The holder key naming a tend's run id while the tend works."""


def busy(found: git_lease.Lease | None, client: Client | None, repo: str, ttl: float) -> str | None:
    """Why the lease's holder may still be working on the pull request (one clause), None
    when a tend may take it (see the module doc)."""
    if found is None:
        return None
    holder = found.holder
    if holder.get(TEND) is None:
        if holder.get("pull") is not None:
            return None
        if leases.why_free(found, client, repo, False, ttl) is not None:
            return None
        return f"its step run ({leases.who(holder)}) is working on it"
    if _gone_here(holder):
        return None
    unpublished = replace(found, holder={k: v for k, v in holder.items() if k != "pull"})
    if leases.why_free(unpublished, client, repo, False, ttl) is not None:
        return None
    return f"a tend ({leases.who(holder)}) is tending it"


def _gone_here(holder: dict[str, Any]) -> bool:
    """The holder ran on this host and its process is gone (pid and start time)."""
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    return not process_alive(pid, holder.get("pidStart"), holder.get("pidStartId"))


def tend_holder(claimant: dict[str, Any], head: str, pull: int, run_id: str) -> dict[str, Any]:
    """This tend's record in the lease."""
    record = {**claimant, "claimedSha": head, "pull": pull, TEND: run_id}
    started = start_time(int(record["pid"])) if isinstance(record.get("pid"), int) else None
    if started is not None:
        record["pidStart"] = started
    started_id = start_id(int(record["pid"])) if isinstance(record.get("pid"), int) else None
    if started_id is not None:
        record["pidStartId"] = started_id
    return record


def take(
    root: Path,
    branch: str,
    record: dict[str, Any],
    found: git_lease.Lease | None,
    identity: dict[str, str],
    remote: str = "origin",
) -> leases.Held | None:
    """This tend's lease where ``found`` is; None when another writer got there first."""
    return leases.take(root, branch, record, found.sha if found else "", identity, remote)


def done(held: leases.Held, head: str) -> None:
    """The tend is over: the holder written back without ``tend`` (a published step's lease,
    ``claimedSha`` the head the pull request has now). A lease another holder took is left."""
    if held.lost_to is not None:
        return
    record = {k: v for k, v in held.record.items() if k not in (TEND, "pidStart")}
    held.record = {**record, "claimedSha": head}
    held.renew()
