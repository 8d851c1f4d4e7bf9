"""When to try a GitHub request again, how long to wait first, and what to say when we stop.

``client.py`` turns each failed attempt into one of the errors below; ``attempt`` decides. The
rules are GitHub's own (docs/github.md, "Reliability"):

- a **secondary rate limit** (403/429) waits ``Retry-After`` when GitHub sends it, else until
  ``x-ratelimit-reset`` when ``x-ratelimit-remaining`` is 0, else at least a minute, doubling
  on every further refusal;
- a **primary rate limit** (``x-ratelimit-remaining: 0``) waits until ``x-ratelimit-reset`` when
  that is short enough, else the run stops at once naming the reset time;
- a **5xx or a broken connection** backs off exponentially. After one of these, a write that
  creates something (a comment, a review, a check run) may have been stored although GitHub
  answered an error: it is retried only after ``find`` looked and did not find it.

Every wait is capped (``max_wait``, plus up to 10 % jitter so parallel jobs do not retry in step)
and all waits of one client together stay within ``budget``. No wait would be longer: the run
stops instead, with the true number of tries in the message.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from gitflow_agents.base.errors import GitHubError

T = TypeVar("T")

SECONDARY_MINIMUM = 60.0
"""GitHub: without ``Retry-After`` or a reset time, wait at least one minute."""
JITTER = 0.1


class Transient(GitHubError):
    """A 5xx answer, a timeout or a broken connection: the same request may work later."""

    def __init__(self, message: str, *, maybe_stored: bool) -> None:
        super().__init__(message)
        self.maybe_stored = maybe_stored
        """True when the request reached GitHub, so a write may have been stored."""


class RateLimited(GitHubError):
    """GitHub refused the request for a rate limit (nothing was stored)."""

    def __init__(
        self,
        message: str,
        *,
        primary: bool,
        retry_after: float | None = None,
        reset: float | None = None,
    ) -> None:
        super().__init__(message)
        self.primary = primary
        self.retry_after = retry_after
        self.reset = reset
        """``x-ratelimit-reset`` (UTC epoch seconds) when ``x-ratelimit-remaining`` was 0."""


class GitHubForbidden(GitHubError):
    """403/404 on a request the token is not allowed to make (read-only token, fork PR): not
    retried, so the action can degrade instead of crashing."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


class GitHubRejected(GitHubError):
    """422: GitHub refused the content (a line outside the diff, a body too long): not retried,
    so the caller can fall back."""


@dataclass
class Policy:
    """How patient one client is. ``retries`` bounds the tries of each request (1 + retries)."""

    retries: int = 4
    backoff: float = 1.0
    """The first 5xx wait; it doubles on each further try."""
    max_wait: float = 60.0
    budget: float = 300.0
    """All waits of the client together (the run must end in reasonable time)."""
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    rng: random.Random = field(default_factory=random.Random)
    log: Callable[[str], None] = field(
        default=lambda line: print(line, file=sys.stderr, flush=True)
    )
    """Where a line goes for every retry (stderr: the job's log shows what GitHub did)."""
    waited: float = 0.0
    """Seconds waited so far, by every request of the client."""


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def classify(status: int, headers: Mapping[str, object], message: str) -> RateLimited | None:
    """A 403/429 answer that is a rate limit, by GitHub's documented signs; else None."""
    if status not in (403, 429):
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    lowered = message.lower()
    exhausted = lower.get("x-ratelimit-remaining") == "0"
    retry_after = _seconds(lower.get("retry-after"))
    if not (exhausted or retry_after is not None or "rate limit" in lowered or status == 429):
        return None
    secondary = "secondary rate limit" in lowered or lowered.endswith(
        (
            "please retry your request again later.",
            "please wait a few minutes before you try again.",
        )
    )
    return RateLimited(
        f"HTTP {status}: {message}",
        primary=exhausted and not secondary,
        retry_after=retry_after,
        reset=_seconds(lower.get("x-ratelimit-reset")) if exhausted else None,
    )


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def _tries(count: int) -> str:
    retries = count - 1
    if retries == 0:
        return "not retried"
    return f"after {retries} {'retry' if retries == 1 else 'retries'}"


def rate_wait(error: RateLimited, tries: int, policy: Policy) -> tuple[float, str | None]:
    """(seconds to wait, None) or (0, why not to wait) for a rate-limited attempt."""
    if error.retry_after is not None:
        wait = error.retry_after
        until = f"Retry-After: {error.retry_after:g} s"
    elif error.reset is not None:
        wait = max(error.reset - policy.clock(), 0.0) + 1.0  # the reset second itself is unclear
        until = f"the limit resets at {_when(error.reset)}"
    elif error.primary:
        return 0.0, "a primary rate limit without a reset time"
    else:
        wait = min(SECONDARY_MINIMUM * 2.0 ** (tries - 1), policy.max_wait)
        until = ""
    if wait > policy.max_wait:
        return 0.0, f"{until}, longer than the {policy.max_wait:g} s a wait may take"
    if policy.waited + wait > policy.budget:
        left = max(policy.budget - policy.waited, 0.0)
        return 0.0, f"{until}, more than the {left:.0f} s of waiting this run has left"
    return wait, None


def backoff(tries: int, policy: Policy) -> float:
    return min(policy.backoff * 2.0 ** (tries - 1), policy.max_wait)


def attempt(
    what: str,
    call: Callable[[], T],
    policy: Policy,
    *,
    find: Callable[[], T | None] | None = None,
    creates: bool = False,
) -> T:
    """``call()``, tried again as the module docstring says. ``creates``: the call makes a new
    object, so after an answer that may hide a stored write, ``find`` is asked first (and
    without ``find`` such a call is not retried at all)."""
    tries = 0
    while True:
        tries += 1
        try:
            return call()
        except RateLimited as error:
            wait, refusal = rate_wait(error, tries, policy)
            if refusal is not None:
                kind = "primary" if error.primary else "secondary"
                raise GitHubError(
                    f"GitHub API: {what}: {kind} rate limit: {error} ({refusal}; {_tries(tries)})"
                ) from None
            last: GitHubError = error
        except Transient as error:
            if creates and error.maybe_stored and find is None:
                raise GitHubError(
                    f"GitHub API: {what}: {error} (not retried: GitHub may have stored it, "
                    "and a retry could post it twice)"
                ) from None
            wait, last = backoff(tries, policy), error
        if tries > policy.retries:
            raise GitHubError(f"GitHub API: {what}: {last} ({_tries(tries)})") from None
        if policy.waited + wait > policy.budget:
            raise GitHubError(
                f"GitHub API: {what}: {last} ({_tries(tries)}; the {policy.budget:g} s this "
                "run may spend waiting for GitHub are used up)"
            ) from None
        wait = min(wait * (1 + policy.rng.uniform(0, JITTER)), policy.budget - policy.waited)
        policy.log(
            f"gitflow-agents: {what}: {last}; try {tries + 1} of {policy.retries + 1} "
            f"in {wait:.1f} s"
        )
        if wait > 0:
            policy.sleep(wait)
            policy.waited += wait
        if creates and isinstance(last, Transient) and last.maybe_stored and find is not None:
            found = find()
            if found is not None:
                return found
