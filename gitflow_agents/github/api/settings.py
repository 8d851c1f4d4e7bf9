"""How to reach GitHub: the token, the API URL and how patient to be (``Settings``).

Read from the action's input and the runner's environment by ``settings_from_env``; the knobs
are listed in docs/github.md, "Reliability".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from gitflow_agents.base.errors import UsageError

DEFAULT_API_URL = "https://api.github.com"
MAX_SECONDS = 86400.0
"""The most any ``GITFLOW_AGENTS_GITHUB_*`` time may be (a day): a wait past what a
``time.sleep`` takes was exit 70 (docs/github.md, "Reliability")."""
MAX_RETRIES = 100
_AUTHORITY = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<authority>[^/?#]*)")


@dataclass(frozen=True)
class Settings:
    """How to reach GitHub. ``retries`` bounds the tries of every request; waits in seconds."""

    token: str
    api_url: str = DEFAULT_API_URL
    timeout: float = 15.0
    retries: int = 4
    backoff: float = 1.0
    """The first wait after a 5xx; it doubles with every further try."""
    max_wait: float = 60.0
    """Cap for a single wait (``Retry-After``, a rate limit's reset, backoff)."""
    wait_budget: float = 300.0
    """Cap for all waits of a run together."""
    seconds_between_writes: float | None = 1.0
    """GitHub asks integrations to space content-creating requests (PyGithub's throttle)."""


def settings_from_env(environ: Mapping[str, str], token: str | None = None) -> Settings:
    """Token from ``token`` (an input), else ``GITHUB_TOKEN`` / ``GH_TOKEN``; API URL from
    ``GITHUB_API_URL`` (GitHub Enterprise: ``https://host/api/v3``). Retry and timeout knobs from
    ``GITFLOW_AGENTS_GITHUB_{TIMEOUT,RETRIES,BACKOFF,MAX_WAIT,WAIT_BUDGET,WRITE_DELAY}``."""
    token = token or environ.get("GITHUB_TOKEN") or environ.get("GH_TOKEN") or ""
    if not token:
        raise UsageError(
            "no GitHub token: pass the action's github-token input or set GITHUB_TOKEN"
        )

    def number(name: str, default: float, maximum: float = MAX_SECONDS) -> float:
        raw = environ.get(f"GITFLOW_AGENTS_GITHUB_{name}", "").strip()
        if not raw:
            return default
        whole = name == "RETRIES"
        noun = "a whole number" if whole else "a number of seconds"
        try:
            value = float(raw)  # takes "nan", "inf", 400 digits (inf): the range refuses them
        except ValueError:
            value = math.nan
        if not 0 <= value <= maximum or (whole and not value.is_integer()):
            shown = raw if len(raw) <= 20 else f"{raw[:20]}…"
            raise UsageError(
                f"GITFLOW_AGENTS_GITHUB_{name}: expected {noun} from 0 to {maximum:g}, "
                f"got {shown!r}"
            )
        return value

    delay = number("WRITE_DELAY", 1.0)
    return Settings(
        token=token,
        api_url=api_url_from(environ),
        timeout=number("TIMEOUT", 15.0),
        retries=int(number("RETRIES", 4, MAX_RETRIES)),
        backoff=number("BACKOFF", 1.0),
        max_wait=number("MAX_WAIT", 60.0),
        wait_budget=number("WAIT_BUDGET", 300.0),
        seconds_between_writes=delay or None,
    )


def api_url_from(environ: Mapping[str, str]) -> str:
    """``GITHUB_API_URL`` without its trailing slash, github.com's API when unset; UsageError
    (exit 2) naming the variable unless it is an http(s) URL with a host (and a port from 1 to
    65535, when one is given)."""
    raw = environ.get("GITHUB_API_URL") or DEFAULT_API_URL
    try:
        parts = urlsplit(raw)
        # ValueError when not a number or over 65535; port 0 cannot be connected to
        usable = parts.port != 0 and parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # an unclosed [IPv6 literal, a port that is not a number
        usable = False
    if not usable or any(c.isspace() or not c.isprintable() for c in raw):
        shown = without_credentials(raw)
        raise UsageError(
            f"GITHUB_API_URL: expected an http(s) URL such as {DEFAULT_API_URL} (GitHub "
            f"Enterprise: https://HOST/api/v3), got {shown[:100]!r}"
        )
    return raw.rstrip("/")


def without_credentials(url: str) -> str:
    """``url`` with the user info of its authority masked (``https://***@github.com/o/r``),
    for every message that shows a remote's or an API's URL: a token embedded in it
    (``https://x-access-token:TOKEN@…``) is never printed. scp-like ``git@host:path`` and paths
    are returned as they are (a user name there is no secret)."""
    match = _AUTHORITY.match(url)
    if match is None or "@" not in match["authority"]:
        return url
    host = match["authority"].rpartition("@")[2]
    return f"{match['scheme']}***@{host}{url[match.end() :]}"


def owner_name(repository: str) -> str:
    """``GITHUB_REPOSITORY``'s value when it is ``owner/name``; UsageError otherwise."""
    if repository.count("/") != 1 or not all(repository.split("/")):
        raise UsageError(f"GITHUB_REPOSITORY: expected owner/name, got {repository!r}")
    return repository


def repository_from(environ: Mapping[str, str], origin_url: str | None) -> str | None:
    """``owner/name``: ``GITHUB_REPOSITORY``, else parsed from ``origin``'s URL
    (``https://host/owner/name(.git)``, ``git@host:owner/name(.git)``, ``ssh://…/owner/name``);
    None when neither says. UsageError for a ``GITHUB_REPOSITORY`` that is not owner/name."""
    given = environ.get("GITHUB_REPOSITORY", "").strip()
    if given:
        return owner_name(given)
    if not origin_url:
        return None
    url = origin_url.strip().removesuffix("/").removesuffix(".git")
    if url.startswith("file:"):
        return None  # a local repository: no GitHub repository to name
    if "://" in url:
        _, _, path = url.split("://", 1)[1].partition("/")
    elif ":" in url and not url.startswith("/"):
        path = url.split(":", 1)[1]
    else:
        return None  # a local path: no GitHub repository to name
    parts = [part for part in path.split("/") if part]
    return "/".join(parts[-2:]) if len(parts) >= 2 else None
