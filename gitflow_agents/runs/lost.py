"""Lost runs: runs nobody will finish, because the process supervising them died.

An orchestrator killed with ``kill -9`` (or a machine that went down) leaves its runs'
``status.json`` saying ``running`` while nothing supervises them; their agents may still run.
Such a run is *lost*. This module tells lost runs from live ones, finds the processes a lost run
left (the pid recorded in ``status.json`` while it is still that process, and every process of
ours carrying the run's ``GITFLOW_AGENTS_TREE`` marker, with their descendants), and kills that
tree. ``status`` shows lost runs, ``cancel`` kills one, and a new chain run of a step kills the
lost runs in the step's work tree before it touches it (docs/chains.md, The state model).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitflow_agents.agents.base import AgentOutput
from gitflow_agents.agents.meter import streamed_reading
from gitflow_agents.agents.prices import shipped_prices, usage_of
from gitflow_agents.base.fsutil import real_path, write_json_atomic
from gitflow_agents.config.values import FlowConfig
from gitflow_agents.runs import RunPaths, flow_result, read_json, tree, write_result
from gitflow_agents.runs.fields import mapping, number, text
from gitflow_agents.runs.liveness import process_alive, run_alive, supervisor_alive
from gitflow_agents.runs.schema import step_chain
from gitflow_agents.runs.spend import Spend, run_folder, run_spend
from gitflow_agents.runs.status import LIVE_STATES
from gitflow_agents.runs.tree import KILL_GRACE, kill_tree

ACTIVE = LIVE_STATES
LOG_READ = 17 * 1024 * 1024
"""Bytes of a lost run's ``worker.log`` read for its usage: what its supervisor writes there
(the output's first 8 MiB, and a line saying it keeps the rest for the run's end, which a dead
supervisor never reached), with room to spare; no more of a file an agent could have grown."""
LOST = "lost"
"""The ``run`` key of the record a lost run was ended with (``mark_ended``)."""


def is_lost(status: Mapping[str, Any]) -> bool:
    """The run has not ended and nothing supervises it any more, whether or not its agent still
    runs. A record without a supervisor pid (written by hand or by an old version) is lost when
    nobody can finish it (``liveness.run_alive``)."""
    if status.get("state") not in ACTIVE:
        return False
    if isinstance(status.get("supervisor_pid"), int):
        return not supervisor_alive(status)
    return not run_alive(status)


def lost_advice(run_id: str, status: Mapping[str, Any]) -> str:
    """What a command that cannot act on the lost run ``run_id`` says about it (after "run X
    was lost"): why it never finishes, whether processes of its tree still run, and what to do
    (``cancel`` it; run a chain agent's step again, which ends it too, or start another agent
    run)."""
    alive = tree_pids(status)
    left = (
        f"its processes still run (pids {', '.join(map(str, alive))})"
        if alive
        else "nothing of it still runs"
    )
    chain_run = mapping(status, "extra").get("chainRunID")
    again = (
        " and run its step again (a new run of the step ends it too)"
        if isinstance(chain_run, str)
        else ", then start the agent again"
    )
    return (
        "the gitflow-agents process supervising it died (killed, or its machine went down), "
        f"so it will never finish; {left}: end it with `gitflow-agents cancel {run_id}`{again}"
    )


def tree_pids(status: Mapping[str, Any]) -> tuple[int, ...]:
    """The live processes of the run's tree as its ``status.json`` records it: the agent's pid
    (while it is the process that was started), every process of ours carrying the run's tree
    marker, and their descendants."""
    pid, _, token, since = _recorded_tree(status)
    return tree.tree_pids(pid, token=token, since=since)


def lost_reason(run_id: str, status: Mapping[str, Any]) -> tuple[str, tuple[int, ...]]:
    """Why a lost run (``is_lost``) is shown as it is, by ``status`` and ``serve`` alike: the
    processes of its tree still alive and the ``cancel`` that stops them, or that none is; and
    those pids."""
    alive = tree_pids(status)
    if not alive:
        return "neither supervisor nor agent alive", ()
    pids = ", ".join(map(str, alive))
    return f"processes alive — `gitflow-agents cancel {run_id}` (pids {pids})", alive


def kill_recorded_tree(status: Mapping[str, Any], grace: float = KILL_GRACE) -> tuple[int, ...]:
    """Kill the run's tree as ``status.json`` records it (pid and group only while the pid is
    still the process that was started; the marker always); the pids still alive after."""
    pid, pgid, token, since = _recorded_tree(status)
    # every process of the run carries the marker, also those that left the group (setsid)
    # or were started before the pid was recorded; processes older than the run cannot be
    # part of it: their environment is not read
    return kill_tree(pid, pgid=pgid, token=token, grace=grace, since=since)


def _recorded_tree(
    status: Mapping[str, Any],
) -> tuple[int | None, int | None, str | None, float | None]:
    """(agent pid, its process group, tree marker, start time) as ``status.json`` records them;
    the pid and group only while the pid is still the process that was started."""
    pid, pgid, created = status.get("pid"), status.get("pgid"), status.get("create_time")
    # the recorded start time is required: a bare pid may by now name another process
    leader_ok = isinstance(created, (int, float)) and process_alive(
        pid, created, status.get("start_id")
    )
    token, started = status.get("tree_token"), status.get("started")
    return (
        pid if leader_ok and isinstance(pid, int) else None,
        # the group id is only trusted while its leader is the process we started
        pgid if leader_ok and isinstance(pgid, int) else None,
        token if isinstance(token, str) else None,
        float(started) if isinstance(started, (int, float)) else None,
    )


def mark_ended(
    paths: RunPaths, status: Mapping[str, Any], reason: str, config: FlowConfig | None = None
) -> None:
    """Record a lost run as canceled: ``status.json``, and a ``result.json`` when it has none,
    with what it spent before it was lost (``spent_before``; ``config``: the prices and the
    agent's model its cost is estimated with, the shipped prices when None)."""
    now = time.time()
    written = status_written(paths)  # before this write: its last sign of life, maybe
    current = read_json(paths.status) or dict(status)
    lived = lifetime(current, written)
    current.update(state="canceled", reason=reason, ended=now)
    write_json_atomic(paths.status, current)
    if read_json(paths.result) is None:
        kind = str(current.get("kind") or "implement")
        result = flow_result(kind, "canceled")
        started = number(current, "started")
        timed: dict[str, float] = {}
        if started is not None and lived is not None:
            timed = {"startedAt": started, "durationMs": round(lived * 1000)}
        extra = current.get("extra")
        chain_run = extra.get("chainRunID") if isinstance(extra, dict) else None
        result["run"] = {
            "runID": paths.run_dir.name,
            "flow": current.get("flow"),
            "agent": current.get("agent"),
            "kind": kind,
            "outcome": "canceled",
            "reason": f"{reason} (supervisor gone)",
            **timed,
            "endedAt": now,
            **spent_before(paths, current, config),
            LOST: True,  # a later run of its step lists it (``ended_lost_in``)
            # the step run it was an agent of (it died too, with no record): `history` shows
            # it inside the step run that lists it, not as a run of its own
            **({"chainRunID": chain_run} if isinstance(chain_run, str) else {}),
        }
        write_result(paths, result)


def lifetime(status: Mapping[str, Any], written: float | None = None) -> float | None:
    """The seconds a lost run lived: from its start to its last sign of life, the last activity
    its supervisor recorded (it writes it each second while it watches), as ``status`` times a
    lost run; not to when it was ended, which may be long after anything watched it. Without
    a recorded activity (its orchestrator died before its agent started), to the last write of
    its status.json (``written``: :func:`status_written`), else its end (``ended``), else its
    start; never to now, which would count for ever. None without a start."""
    started = number(status, "started")
    if started is None:
        return None
    end = number(status, "last_activity") or written or number(status, "ended") or started
    return max(end - started, 0.0)


def status_written(paths: RunPaths) -> float | None:
    """When the run's status.json was last written (its mtime), None when it cannot be read."""
    try:
        return paths.status.stat().st_mtime
    except OSError:
        return None


def spent_before(
    paths: RunPaths, status: Mapping[str, Any], config: FlowConfig | None = None
) -> dict[str, Any]:
    """What a lost run spent before it was lost, as run-record usage keys, a lower bound (it
    may have spent more after what was last read of it): none when nothing was read. Two
    readings may know it: what the usage lines of its output said (``worker.log``: all its
    supervisor read of it until it died, with or without a budget, as a run canceled alive is
    read for its stream's usage; but only the log's head when its output was long), and under
    a budget its watch's last reading (status.json's ``spent``, written each second: of the
    whole output, but up to a second older). The one that says more counts, the log's at a
    tie (the later); never a mix of the two, whose figures are of different moments."""
    readings = (_lower_bound(streamed(paths, status, config)), _lower_bound(status.get("spent")))
    return max(readings, key=_said)


def _said(found: Mapping[str, Any]) -> tuple[bool, float, float]:
    """How much a reading (``_lower_bound``) says: whether anything, its tokens, its cost."""
    tokens = (found.get("inputTokens") or 0) + (found.get("outputTokens") or 0)
    return bool(found), tokens, found.get("costUsd") or 0.0


def streamed(
    paths: RunPaths, status: Mapping[str, Any], config: FlowConfig | None = None
) -> dict[str, Any] | None:
    """What the usage lines of a run's ``worker.log`` (its first ``LOG_READ`` bytes) say it
    spent, as its watch's ``spent`` says it (``budget.Watch.spent``), priced with ``config``
    (the run's agent's model where its output names none); None when its CLI streams no usage
    or they said nothing. The log is masked, which leaves usage lines as they were."""
    extra = mapping(status, "extra")
    adapter = text(extra, "adapter")
    if adapter is None:
        return None
    try:
        stat = paths.worker_log.stat()
    except OSError:
        return None
    reading = _log_reading(paths.worker_log, stat.st_size, stat.st_mtime_ns, adapter)
    if reading is None:
        return None
    agent = config.agents.get(text(extra, "agent_config") or "") if config is not None else None
    prices = config.prices if config is not None else shipped_prices()
    usage = usage_of(reading, agent.model if agent is not None else None, prices)
    spend = Spend(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=usage.cost_usd,
        cost_estimated=usage.cost_estimated,
    )
    return {**spend.to_json(), "cachedTokens": usage.cached_tokens}


@functools.lru_cache(maxsize=64)
def _log_reading(log: Path, size: int, mtime_ns: int, adapter: str) -> AgentOutput | None:
    """``streamed_reading`` of the log's first ``LOG_READ`` bytes, once per its size and time:
    a lost run's log no longer changes, and ``serve`` shows its spend on every page it renders
    (up to 17 MiB read and searched each time)."""
    try:
        with log.open("rb") as file:
            output = file.read(LOG_READ)
    except OSError:
        return None
    return streamed_reading(adapter, output)


def _lower_bound(spent: object) -> dict[str, Any]:
    """A reading of what a lost run spent (``streamed``, status.json's ``spent``) as run-record
    usage keys, flagged a lower bound (it may have spent more before it was killed): none
    when it says nothing."""
    if not isinstance(spent, Mapping):
        return {}
    usage = run_spend(spent)
    found = {key: value for key, value in usage.to_json().items() if value is not None}
    cached = spent.get("cachedTokens")
    if isinstance(cached, int) and not isinstance(cached, bool):
        found["cachedTokens"] = cached
    if usage.input_tokens is not None or usage.output_tokens is not None:
        found["tokensPartial"] = True
    if usage.cost_usd is not None:
        found["costPartial"] = True
    return found if "tokensPartial" in found or "costPartial" in found else {}


def ended_lost_in(runs: Path, workdir: Path) -> list[tuple[RunPaths, dict[str, Any]]]:
    """The lost agent runs under ``runs`` whose agent worked in ``workdir`` that were already
    ended (``cancel``, ``gc``) and that no step run lists yet (``unlisted``): their step run
    died with them and left no record, so a new run of the step lists them (what they spent
    counts in the step's and the plan's sums once). Their small status.json is read first; a
    record only for a run ended so in that work tree."""
    if not runs.is_dir():
        return []
    place = real_path(workdir)
    found: list[tuple[RunPaths, dict[str, Any]]] = []
    listed: dict[Path, set[str]] = {}
    for run_dir in sorted(runs.iterdir()):
        paths = RunPaths(run_dir)
        status = read_json(paths.status) or {}
        extra = status.get("extra")
        recorded = extra.get("workdir") if isinstance(extra, dict) else None
        if status.get("state") != "canceled" or not isinstance(recorded, str):
            continue
        if real_path(Path(recorded)) == place and unlisted(paths, _record_run(paths), listed):
            found.append((paths, status))
    return found


def unlisted(paths: RunPaths, run: Mapping[str, Any], listed: dict[Path, set[str]]) -> bool:
    """Whether the agent run at ``paths`` (its record's ``run``) is a lost run ended already
    (``mark_ended``: ``lost``) whose step run died with it, leaving no record, and that no
    step run lists yet (``listed``: per runs folder, the agent runs its step runs list, read
    once when first needed)."""
    chain_run = run.get("chainRunID")
    if run.get(LOST) is not True or not run_folder(chain_run):
        return False
    runs = paths.run_dir.parent
    if RunPaths(runs / chain_run).result.is_file():
        return False
    if runs not in listed:
        listed[runs] = _listed_by_step_runs(runs)
    return paths.run_dir.name not in listed[runs]


def _record_run(paths: RunPaths) -> dict[str, Any]:
    """The ``run`` of a run's result.json ({} when it has none, or it does not read)."""
    run = (read_json(paths.result) or {}).get("run")
    return run if isinstance(run, dict) else {}


def _listed_by_step_runs(runs: Path) -> set[str]:
    """The agent runs every step run recorded under ``runs`` lists."""
    listed: set[str] = set()
    for run_dir in runs.iterdir():
        chain = step_chain(read_json(RunPaths(run_dir).result) or {})
        if chain is not None:
            listed.update(agent.run_id for agent in chain.agents)
    return listed


def lost_in(runs: Path, workdir: Path) -> list[tuple[RunPaths, dict[str, Any]]]:
    """The lost runs under ``runs`` (a flow's runs folder) whose agent works in ``workdir``."""
    if not runs.is_dir():
        return []
    place = real_path(workdir)
    found = []
    for run_dir in sorted(runs.iterdir()):
        paths = RunPaths(run_dir)
        status = read_json(paths.status)
        if status is None or status.get("state") not in ACTIVE:
            continue
        extra = status.get("extra")
        recorded = extra.get("workdir") if isinstance(extra, dict) else None
        if isinstance(recorded, str) and real_path(Path(recorded)) == place and is_lost(status):
            found.append((paths, status))
    return found
