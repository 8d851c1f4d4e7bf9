"""Claims that expire with their runner: who holds a step's claim, renewed while its run lives.

``run --pr`` writes the lease of the step branch (``git/lease.py``: a small ref on origin) right
after its claim push, naming its holder: the workflow run id and attempt
(``GITHUB_RUN_ID`` / ``GITHUB_RUN_ATTEMPT``) and repository on a runner, host and pid always;
and renews it every third of ``claim_ttl`` while the run works (one push each, no API request).
A renewal that fails is said once and tried again; one that finds another holder's lease there
stops the run (``renewing``: the claim was taken over as free).

A step branch on origin is a started step, except when its claim is free (``why_free``):

- its holder's workflow run has ended (the Actions API says ``completed``, or a later attempt
  replaced it) and the branch has no open pull request; a run the API says is alive is never
  free, however old its lease;
- or it has no workflow run the API knows, and its lease stopped renewing ``claim_ttl``
  seconds ago (``GITFLOW_AGENTS_CLAIM_TTL``, default 1800), with no open pull request;
- or its run ended without a pull request and left its work on the branch (a budget stopped
  it: the lease's last write says ``stopped``), free at once, so a re-run continues the work.

A published step (its lease records its ``pull``) is never free by these; it is taken and
finished (``finishable``) only when that pull request was closed without merging: a re-run,
``--step N`` or the waves' (``lease_checker``), reopens it.

A free claim is taken by pushing a new lease with a lease on the old one: exactly one taker
wins. A branch without a lease (made by an older version, or by hand) is never free.
docs/github.md, "Claims that expire with their runner".
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitflow_agents.base.errors import GitHubError, UsageError
from gitflow_agents.git import lease as leases
from gitflow_agents.git.queries import remote_url as git_remote_url
from gitflow_agents.github.api.actions import workflow_run
from gitflow_agents.github.api.client import Client
from gitflow_agents.github.api.retry import GitHubForbidden
from gitflow_agents.github.api.settings import MAX_SECONDS, repository_from, settings_from_env
from gitflow_agents.github.pr.claim import Claim
from gitflow_agents.runs.spend import Spend, run_spend, total

TTL_ENV = "GITFLOW_AGENTS_CLAIM_TTL"
SPEND = "spend"
"""The holder key with what the runs that published the step spent (``runs/spend.Spend``
JSON), kept from holder to holder (``carried``)."""
STOPPED = "stopped"
"""The holder key of a run that ended without a pull request and left its work on the branch
(its outcome: ``budget``): the claim is free to any re-run at once (``why_free``)."""
DEFAULT_TTL = 1800.0


def claim_ttl(environ: Mapping[str, str]) -> float:
    """Seconds after which a lease that stopped renewing frees its claim (UsageError, exit 2,
    for a value that is not a positive number of seconds up to ``MAX_SECONDS``, a day: a
    renewal waits a third of it, and 1e300 was past what a wait takes, exit 70)."""
    text = environ.get(TTL_ENV, "").strip()
    if not text:
        return DEFAULT_TTL
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= MAX_SECONDS:  # nan is neither
        shown = text if len(text) <= 20 else f"{text[:20]}…"
        raise UsageError(
            f"{TTL_ENV}={shown!r}: expected a positive number of seconds, at most {MAX_SECONDS:g}"
        )
    return value


def holder(environ: Mapping[str, str], repo: str, claimed: str) -> dict[str, Any]:
    """Who makes this claim: the workflow run (id, attempt) on a runner, host and pid always."""
    record: dict[str, Any] = {
        "claimedSha": claimed,
        "repository": repo,
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }
    run_id = environ.get("GITHUB_RUN_ID", "")
    if run_id.isdigit():
        attempt = environ.get("GITHUB_RUN_ATTEMPT", "1")
        record.update(runId=int(run_id), runAttempt=int(attempt) if attempt.isdigit() else 1)
    return record


def why_free(
    lease: leases.Lease | None,
    client: Client | None,
    repo: str | None,
    has_pull: bool,
    ttl: float,
    now: float | None = None,
) -> str | None:
    """Why the claim holding ``lease`` is free (one clause), None while it may be alive (see
    the module doc). ``has_pull``: the branch has an open pull request; a lease that recorded
    one (``pull``, written once the pull request is published) counts as one. Without a
    ``client`` only the lease's age is judged."""
    if lease is None or has_pull or lease.holder.get("pull") is not None:
        return None
    stopped = lease.holder.get(STOPPED)
    if isinstance(stopped, str):
        return f"its run stopped ({stopped[:40]}) and left its work on the branch"
    run_id = lease.holder.get("runId")
    same_repo = repo is not None and lease.holder.get("repository") == repo
    if client is not None and repo is not None and isinstance(run_id, int) and same_repo:
        run = workflow_run(client, repo, run_id)
        if run is not None:
            attempt = lease.holder.get("runAttempt")
            attempt = attempt if isinstance(attempt, int) else 1
            if not run.ended(attempt):
                return None  # a live run is never taken over
            return f"its workflow run {run_id} (attempt {attempt}) has ended"
    age = (time.time() if now is None else now) - lease.written
    if age <= ttl:
        return None
    who = f"{lease.holder.get('host')} pid {lease.holder.get('pid')}"
    return f"its lease ({who}) stopped renewing {int(age)}s ago (more than {int(ttl)}s)"


@dataclass
class Held:
    """This run's lease: its current commit, renewed by ``renewing``."""

    root: Path
    branch: str
    record: dict[str, Any]
    sha: str
    identity: dict[str, str]
    remote: str = "origin"
    failed: str = ""  # why the last renewal failed ("" : it did not)
    failures: int = 0  # renewals that failed
    lost_to: dict[str, Any] | None = None  # the holder whose lease replaced this one

    def renew(self) -> bool:
        """Write the lease again (a new committer date); False when the push failed, with
        ``lost_to`` set when another holder's lease is there now (the claim was taken)."""
        made, why = leases.push_lease(
            self.root, self.branch, self.record, self.sha, self.remote, self.identity
        )
        if made is not None:
            self.sha, self.failed = made, ""
            return True
        self.failed, self.failures = why or "git push failed", self.failures + 1
        found = leases.read_lease(self.root, self.branch, self.remote)
        if found is not None and found.sha != self.sha:
            self.lost_to = found.holder
        return False

    def lost(self) -> str | None:
        """One line when the claim was taken over while this run held it, else None."""
        if self.lost_to is None:
            return None
        return (
            f"the claim of {self.branch} on {self.remote} was taken over by {who(self.lost_to)} "
            "while this run held it"
        )

    def published(self, number: int, spend: Spend | None) -> None:
        """Record the pull request in the lease (its last write): the claim is then never
        free by age, even to a reader without the API (``plan matrix --ready``); and what this
        run spent (None: it ran no agent), added to what the lease said before (``spent``)."""
        if spend is not None:
            self.spent(spend)
        self.record = {**self.record, "pull": number}
        self.renew()

    def spent(self, spend: Spend) -> None:
        """``spend`` (a run's on the step: its step run, a tend's) added to the spend the
        lease records (``SPEND``: what the plan's glance shows for the step), written with the
        next write of the lease."""
        before = lease_spend(self.record)
        summed = spend if before is None else total([before, spend])
        self.record = {**self.record, SPEND: summed.to_json()}

    def stopped(self, outcome: str, spend: Spend | None) -> None:
        """Record that this run ended without a pull request, its work left on the branch
        (``STOPPED``), and what it spent (None: nothing known), in one last write: the claim
        is free to the next run at once, which continues the work."""
        if spend is not None:
            self.spent(spend)
        self.record = {**self.record, STOPPED: outcome}
        self.renew()

    def release(self) -> None:
        leases.delete_lease(self.root, self.branch, self.sha, self.remote)


def lease_spend(record: Mapping[str, Any]) -> Spend | None:
    """What a lease's record says the runs on its step spent (``SPEND``), None when it says
    nothing (no run published the step yet, or an older version wrote it)."""
    spend = record.get(SPEND)
    return run_spend(spend) if isinstance(spend, dict) else None


def carried(found: leases.Lease | None) -> dict[str, Any]:
    """The part of the lease ``found`` that a new holder's record keeps: what the runs before
    it spent on the step (a new claim of a step run before, a tend after a step run)."""
    spend = found.holder.get(SPEND) if found is not None else None
    return {SPEND: spend} if isinstance(spend, dict) else {}


def take(
    root: Path,
    branch: str,
    record: dict[str, Any],
    expected: str,
    identity: dict[str, str],
    remote: str = "origin",
) -> Held | None:
    """Write this run's lease where the lease is ``expected`` ("" : none); None when another
    writer got there first."""
    made, _ = leases.push_lease(root, branch, record, expected, remote, identity)
    return None if made is None else Held(root, branch, record, made, identity, remote)


def who(record: Mapping[str, Any]) -> str:
    """A lease's holder in words: its workflow run, else its host and pid."""
    if isinstance(record.get("runId"), int):
        return f"workflow run {record['runId']} (attempt {record.get('runAttempt', 1)})"
    return f"{record.get('host')} pid {record.get('pid')}"


def retake(
    root: Path,
    branch: str,
    lost: Claim,
    record: dict[str, Any],
    identity: Mapping[str, str] | None,
    remote: str = "origin",
) -> Held | bool | None:
    """The lease of a lost run of this checkout whose claim is taken over (``lost``, its
    ``claim.json``), rewritten as this run's ``record``: None when the lost run left none (or
    the write failed); False when the lease names another holder (it took the claim over as
    free: the claim is theirs) or another writer won it."""
    found = leases.read_lease(root, branch, remote)
    if found is not None and not lost.holds(found.holder):
        return False
    record = {**record, **carried(found)}
    held = take(root, branch, record, found.sha if found else "", dict(identity or {}), remote)
    return False if held is None and found is not None else held


@contextmanager
def renewing(
    held: Held | None,
    ttl: float,
    say: Callable[[str], None] = lambda line: None,
    on_lost: Callable[[], None] = lambda: None,
) -> Iterator[None]:
    """Renew ``held`` every third of ``ttl`` until the block ends. A renewal that fails is
    ``say``-d once (the run goes on; the next renewals try again); one that finds the lease
    taken by another holder is ``say``-d, calls ``on_lost`` and stops renewing."""
    if held is None:
        yield
        return
    stop = threading.Event()

    def loop() -> None:
        said = False
        while not stop.wait(ttl / 3):
            if held.renew():
                continue
            lost = held.lost()
            if lost is not None:
                say(f"{lost}: the run stops, nothing of it is pushed")
                on_lost()
                return
            if not said:
                say(
                    f"the lease of {held.branch} on {held.remote} could not be renewed "
                    f"({held.failed.splitlines()[-1]}); the run goes on and tries again"
                )
                said = True

    thread = threading.Thread(target=loop, name=f"lease {held.branch}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)


def claim_checker(
    root: Path, environ: Mapping[str, str], remote: str = "origin"
) -> Callable[[str], str | None]:
    """For ``plan matrix --ready``: why the claim of a step branch is free, or None. The
    Actions API is asked only when GitHub is configured as ``run --pr`` finds it (a token and
    the repository); without it, or when it fails, only the lease's age counts."""
    ttl = claim_ttl(environ)
    client: Client | None = None
    repo = None
    url = git_remote_url(root, remote)
    if (environ.get("GITHUB_TOKEN") or environ.get("GH_TOKEN")) and url is not None:
        repo = repository_from(environ, url)
        client = Client(settings_from_env(environ)) if repo is not None else None
    return lease_checker(root, client, repo, ttl, remote)


def lease_checker(
    root: Path, client: Client | None, repo: str | None, ttl: float, remote: str = "origin"
) -> Callable[[str], str | None]:
    """``claim_checker``'s answer with GitHub already found (``run --pr`` has it connected:
    nothing is asked of git or the environment again): ``finishable``, so the waves take up
    what ``run --step N --pr`` would, a published step whose pull request was closed without
    merging included (one read of that pull request; none without a ``client``)."""

    def check(branch: str) -> str | None:
        found = leases.read_lease(root, branch, remote)
        try:
            return finishable(found, client, repo, ttl)
        except GitHubError:
            return why_free(found, None, repo, False, ttl)

    return check


def finishable(
    found: leases.Lease | None, client: Client | None, repo: str | None, ttl: float
) -> str | None:
    """Why the claim holding ``found`` is to be taken and finished (one clause), None while it
    is another run's to finish: its holder is gone before it recorded its pull request
    (``why_free``, an open pull request or not), or the pull request it recorded was closed
    without merging (``closed_unmerged``)."""
    if found is None:
        return None
    if found.holder.get("pull") is None:
        return why_free(found, client, repo, False, ttl)
    return closed_unmerged(found, client, repo)


def closed_unmerged(found: leases.Lease, client: Client | None, repo: str | None) -> str | None:
    """Why the claim holding ``found`` is free though its run published the step: the pull
    request its lease records (``pull``) was closed without merging (a re-run reopens it: the
    branch is there). None for any other lease, without a ``client``, or when that pull request
    is open, merged, or gone or not ours to see (the claim stays started). One read of the pull
    request."""
    number = found.holder.get("pull")
    if client is None or repo is None or not isinstance(number, int) or isinstance(number, bool):
        return None
    try:
        pull = client.pulls.get(repo, number)
    except GitHubForbidden:
        return None
    if pull.state == "closed" and not pull.merged:
        return f"its pull request #{number} was closed without merging: it is reopened"
    return None
