"""Rate-limit and overload answers of the agent CLIs, and the reset time they name.

A model API that refuses for a while (HTTP 429 "too many requests", Anthropic's 529
"overloaded", a subscription's "usage limit reached … resets at …") is not a crashed agent: its
run can go on once the limit passes (docs/supervisor.md, "Rate limits"). Each adapter hands
:func:`rate_limit` the texts its CLI gives as its error (never the agent's reply: a reviewer
writing about rate limiting is no rate limit) and records what it finds in ``AgentOutput``.

The shapes, from the CLIs' own output and issue trackers:

- Claude Code: ``API Error: 429 {"type":"error","error":{"type":"rate_limit_error",…}}``,
  ``API Error: Rate limit reached``, ``API Error: Request rejected (429) · Rate limited.``,
  ``API Error: 529 … overloaded_error``, ``Claude AI usage limit reached|1766502000`` (the reset
  as epoch seconds), ``You've hit your session limit · resets 3:50pm (Asia/Tokyo)``,
  ``Limit reached · resets Apr 23 at 4pm (America/Recife)``;
- Codex: ``exceeded retry limit, last status: 429 Too Many Requests``, ``You've hit your usage
  limit. … try again in 2 days 3 hours 4 minutes`` / ``… try again at 3:45 PM``;
- Gemini CLI: ``Quota exceeded …``, ``RESOURCE_EXHAUSTED``, ``Please retry in 27.4s`` (code 429);
- Aider (litellm): ``litellm.RateLimitError``, ``The API provider has rate limited you``,
  ``The API provider's servers are down or overloaded``;
- opencode, Auggie and a command: the same words in their error events or on stderr.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from typing import NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


class RateLimit(NamedTuple):
    """A rate-limit answer: the line that says so, and the reset time (epoch seconds) when the
    CLI names one."""

    line: str
    resets_at: float | None


_LIMITED = re.compile(
    # rate limit(ed), rate_limit_error, RateLimitError, never a name that holds the words
    # (a test `test_rate_limit_handler` failing is no rate limit)
    r"(?<![a-z0-9_])rate[ _-]?limit(?:s|ed|ing|[ _-]?error|[ _-]?exceeded)?(?![a-z0-9_])"
    r"|too many requests"
    r"|overloaded"  # Anthropic 529 overloaded_error, litellm "servers are … overloaded"
    r"|usage limit"
    r"|hit your (?:\w+ )?limit"
    r"|limit reached"
    r"|quota (?:exceeded|exhausted)|exceeded your (?:current )?quota"
    r"|resource[_ ]exhausted"
    r"|(?:api error|status|http|code|error)[\s:=\"']{0,4}(?:429|529)\b"
    r"|rejected \((?:429|529)\)",  # Claude Code 2.1: "API Error: Request rejected (429) · …"
    re.IGNORECASE,
)
_EPOCH = re.compile(r"limit reached\|(\d{10})\b", re.IGNORECASE)
_ZONED = re.compile(
    r"resets?\s+(?:at\s+)?(?:(?P<month>[A-Z][a-z]{2})\s+(?P<day>\d{1,2})\s+at\s+)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<half>[ap]m)\s*\((?P<zone>[\w/+-]+)\)",
    re.IGNORECASE,
)
_LOCAL_CLOCK = re.compile(
    r"try again at\s+(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<half>[ap]m)?", re.IGNORECASE
)
_IN = re.compile(
    r"(?:try again|retry|resets?)\s+in\s+(?P<span>[\d.]+\s*[a-z]+(?:,?\s+[\d.]+\s*[a-z]+)*)"
)
_SPAN_PART = re.compile(r"([\d.]+)\s*([a-z]+)")
_RETRY_AFTER = re.compile(r"retry[- ]after\"?[:=]?\s*\"?(\d+(?:\.\d+)?)", re.IGNORECASE)
_UNIT_SECONDS = {
    "ms": 0.001,
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MAX_LINE = 300


def rate_limit(*texts: str | None, now: float | None = None) -> RateLimit | None:
    """The rate-limit answer in ``texts`` (a CLI's error message, its stderr), the last one
    when there are several; None when none of them says so. ``now``: the clock a relative or
    wall-clock reset time is read against (default: now)."""
    found: str | None = None
    for text in texts:
        for line in (text or "").splitlines():
            if _LIMITED.search(line):
                found = line.strip()
    if found is None:
        return None
    clock = time.time() if now is None else now
    shown = found if len(found) <= _MAX_LINE else found[: _MAX_LINE - 1] + "…"
    return RateLimit(shown, reset_time(found, clock))


def reset_time(line: str, now: float) -> float | None:
    """When the limit named in ``line`` lifts (epoch seconds), or None when it does not say."""
    epoch = _EPOCH.search(line)
    if epoch is not None:
        return float(epoch[1])
    zoned = _ZONED.search(line)
    if zoned is not None:
        return _zoned(zoned, now)
    span = _IN.search(line.lower())
    if span is not None:
        seconds = _span_seconds(span["span"])
        if seconds is not None:
            return now + seconds
    after = _RETRY_AFTER.search(line)
    if after is not None:
        return now + float(after[1])
    clock = _LOCAL_CLOCK.search(line)
    if clock is not None:
        local = dt.datetime.fromtimestamp(now).astimezone()
        return _next_clock(local, clock["hour"], clock["minute"], clock["half"])
    return None


def _span_seconds(span: str) -> float | None:
    """ "2 days 3 hours 4 minutes", "27.4s", "90 seconds" as seconds; None for other words."""
    total = 0.0
    for number, unit in _SPAN_PART.findall(span):
        scale = _UNIT_SECONDS.get(unit)
        if scale is None:
            return None
        try:
            total += float(number) * scale
        except ValueError:
            return None
    return total


def _zoned(match: re.Match[str], now: float) -> float | None:
    """ "resets 3:50pm (Asia/Tokyo)", "resets Apr 23 at 4pm (America/Recife)": the next such
    moment in that zone."""
    try:
        zone = ZoneInfo(match["zone"])
    except (ZoneInfoNotFoundError, ValueError):
        return None
    local = dt.datetime.fromtimestamp(now, zone)
    if match["month"] is None:
        return _next_clock(local, match["hour"], match["minute"], match["half"])
    month = match["month"].lower()
    if month not in _MONTHS:
        return None
    at: float | None = None
    for year in (local.year, local.year + 1):  # "Jan 2" read on Dec 31 is next year's
        try:
            day = local.replace(year=year, month=_MONTHS.index(month) + 1, day=int(match["day"]))
        except ValueError:
            return None
        at = _next_clock(day, match["hour"], match["minute"], match["half"], dated=True)
        if at is None or at >= now - _PAST_DATE:
            return at
    return at


# A dated reset this long before now is next year's, not a reset just past (which backs off).
_PAST_DATE = 7 * 86400.0


def _next_clock(
    local: dt.datetime, hour: str, minute: str | None, half: str | None, *, dated: bool = False
) -> float | None:
    """The first moment at or after ``local`` showing that clock time (on ``local``'s day when
    ``dated``)."""
    h = int(hour)
    if half is not None:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if half.lower() == "pm" else 0)
    m = int(minute or 0)
    if h > 23 or m > 59:
        return None
    at = local.replace(hour=h, minute=m, second=0, microsecond=0)
    if not dated and at < local:
        at += dt.timedelta(days=1)
    return at.timestamp()
