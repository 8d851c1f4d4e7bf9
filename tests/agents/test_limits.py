"""Rate-limit and overload answers (``agents/limits.py``): each adapter finds its CLI's in the
CLI's error output (never in the agent's reply), with the reset time when the CLI names one."""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest

from gitflow_agents.agents import get_adapter
from gitflow_agents.agents.limits import rate_limit, reset_time

# 2026-11-26 12:00:00 UTC
NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.timezone.utc).timestamp()


def _claude_result(text: str, *, is_error: bool = True) -> str:
    return json.dumps(
        {
            "type": "result",
            "subtype": "success",
            "is_error": is_error,
            "result": text,
            "session_id": "sess-7",
            "usage": {"input_tokens": 12, "output_tokens": 3},
        }
    )


@pytest.mark.parametrize(
    "text",
    [
        'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"This '
        "request would exceed your account's rate limit. Please try again later.\"}}",
        "API Error: Rate limit reached",
        "API Error: Request rejected (429) · Rate limited. Please try again later.",
        'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        "Claude AI usage limit reached|1766502000",
        "You've hit your session limit · resets 3:50pm (Asia/Tokyo)",
    ],
)
def test_claude_answers_are_rate_limits(text: str) -> None:
    output = get_adapter("claude").parse_output(_claude_result(text), "")
    assert output.is_error and output.session_id == "sess-7"
    assert output.rate_limit is not None and output.rate_limit.line == text


def test_a_reply_about_rate_limits_is_no_rate_limit() -> None:
    """A reviewer writing "add a rate limit (429)" succeeded: its words are not its CLI's."""
    reply = "REVIEW_RESULT: REVISE - add a rate limit; answer 429 Too Many Requests"
    for name in ("claude", "command"):
        assert (
            get_adapter(name).parse_output(_claude_result(reply, is_error=False), "").rate_limit
            is None
        )
    assert (
        get_adapter("aider")
        .parse_output(reply + "\nTokens: 1k sent, 20 received.\n", "")
        .rate_limit
        is None
    )


def test_an_unrelated_error_is_no_rate_limit() -> None:
    output = get_adapter("claude").parse_output(
        _claude_result("API Error: 401 invalid x-api-key"), ""
    )
    assert output.is_error and output.rate_limit is None


@pytest.mark.parametrize(
    ("line", "limited"),
    [
        ("running tests: test_rate_limit_handler ... FAILED", False),
        ("  File 'app.py', line 3, in check_rate_limit", False),
        ("Error: rate limit exceeded", True),
        ("openai.RateLimitError: Error code: 429", True),
        ('{"type":"error","error":{"type":"rate_limit_error"}}', True),
        ("rate-limited by the upstream API", True),
    ],
)
def test_the_words_rate_limit_count_never_inside_a_name(line: str, limited: bool) -> None:
    """A command agent's stderr is read for a rate limit: a failing test or a traceback that
    names a function about rate limits is an ordinary failure (it was waited out and re-run
    for the whole total wait, then ended exit 6), the CLIs' own words are a rate limit."""
    output = get_adapter("command").parse_output("", f"{line}\nexit 1\n")
    assert (output.rate_limit is not None) == limited


def test_codex_gives_up_after_its_own_retries() -> None:
    events = [
        {"type": "thread.started", "thread_id": "th-1"},
        {"type": "error", "message": "exceeded retry limit, last status: 429 Too Many Requests"},
        {
            "type": "turn.failed",
            "error": {"message": "exceeded retry limit, last status: 429 Too Many Requests"},
        },
    ]
    output = get_adapter("codex").parse_output("\n".join(json.dumps(e) for e in events), "")
    assert output.is_error and output.session_id == "th-1"
    assert output.rate_limit is not None and "429" in output.rate_limit.line


def test_gemini_quota_with_a_retry_delay() -> None:
    error = {
        "error": {
            "type": "Error",
            "message": "Quota exceeded for quota metric 'Generate "
            "Content API requests per minute'. Please retry in 27.5s.",
            "code": 429,
        }
    }
    output = get_adapter("gemini").parse_output("", json.dumps(error))
    assert output.rate_limit is not None
    assert output.rate_limit.resets_at is not None


def test_gemini_gives_the_session_of_its_error_printed_after_a_stack_trace() -> None:
    """Gemini CLI 0.61 with ``general.maxAttempts`` 1: log lines, the error's stack trace, then
    its JSON pretty-printed, all on stderr. The session id in it is what is continued."""
    error = {
        "session_id": "c7be1467-8458-4033-bd28-b46a0628d56b",
        "error": {"type": "Error", "message": "rate limit exceeded", "code": 429},
    }
    stderr = (
        "YOLO mode is enabled. All tool calls will be automatically approved.\n"
        "Attempt 1 failed: rate limit exceeded. Max attempts reached\n"
        "RetryableQuotaError: rate limit exceeded\n"
        "    at classifyGoogleError (file:///gemini/bundle/chunk.js:307333:14) {\n"
        "  cause: {\n    code: 429,\n    details: []\n  },\n  status: 429\n}\n"
        + json.dumps(error, indent=2)
        + "\n"
    )
    output = get_adapter("gemini").parse_output("", stderr)
    assert output.session_id == "c7be1467-8458-4033-bd28-b46a0628d56b"
    assert output.is_error and output.rate_limit is not None


def test_opencode_auggie_aider_and_a_command() -> None:
    opencode = json.dumps(
        {
            "type": "error",
            "sessionID": "ses_1",
            "error": {"name": "APIError", "data": {"message": "Rate limit exceeded (429)"}},
        }
    )
    assert get_adapter("opencode").parse_output(opencode, "").rate_limit is not None
    auggie = json.dumps({"type": "result", "is_error": True, "result": "429 Too Many Requests"})
    assert get_adapter("auggie").parse_output(auggie, "").rate_limit is not None
    aider = "litellm.RateLimitError: AnthropicException - rate_limit_error\nThe API provider has rate limited you. Try again later or check your quotas.\n"
    output = get_adapter("aider").parse_output(aider, "")
    assert output.is_error and output.rate_limit is not None
    overloaded = "litellm.InternalServerError: AnthropicException - Overloaded\n"
    assert get_adapter("aider").parse_output(overloaded, "").rate_limit is not None
    assert (
        get_adapter("command")
        .parse_output("working…\n", "HTTP 429: too many requests\n")
        .rate_limit
        is not None
    )


def test_output_a_cli_prints_nothing_parseable_with_is_still_read_on_stderr() -> None:
    output = get_adapter("claude").parse_output("", "Error: 529 overloaded_error\n")
    assert output.rate_limit is not None and output.session_id is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Claude AI usage limit reached|1766502000", 1766502000.0),
        # 3:50pm in Tokyo (UTC+9) on 26 Nov is 06:50 UTC: passed at 12:00 UTC, so the next day
        (
            "You've hit your session limit · resets 3:50pm (Asia/Tokyo)",
            dt.datetime(2026, 11, 27, 15, 50, tzinfo=ZoneInfo("Asia/Tokyo")).timestamp(),
        ),
        (
            "Claude usage limit reached. Your limit will reset at 9pm (America/Chicago).",
            dt.datetime(2026, 11, 26, 21, 0, tzinfo=ZoneInfo("America/Chicago")).timestamp(),
        ),
        (
            "Limit reached · resets Dec 3 at 4pm (America/Recife)",
            dt.datetime(2026, 12, 3, 16, 0, tzinfo=ZoneInfo("America/Recife")).timestamp(),
        ),
        # a dated reset months before now is next year's (read on 26 Nov: Jan 2 is 2027's),
        # one a few days past is this year's (past: the run backs off, docs/supervisor.md)
        (
            "Limit reached · resets Jan 2 at 4pm (UTC)",
            dt.datetime(2027, 1, 2, 16, 0, tzinfo=dt.timezone.utc).timestamp(),
        ),
        (
            "Limit reached · resets Nov 24 at 4pm (UTC)",
            dt.datetime(2026, 11, 24, 16, 0, tzinfo=dt.timezone.utc).timestamp(),
        ),
        ("Limit reached · resets Feb 30 at 4pm (UTC)", None),
        (
            "You've hit your usage limit. Try again in 2 days 3 hours 4 minutes.",
            NOW + 2 * 86400 + 3 * 3600 + 240,
        ),
        ("Quota exceeded. Please retry in 27.5s.", NOW + 27.5),
        ("429 Too Many Requests (retry-after: 12)", NOW + 12),
        ("exceeded retry limit, last status: 429 Too Many Requests", None),
        ("resets 3:50pm (Not/AZone)", None),
    ],
)
def test_reset_times(line: str, expected: float | None) -> None:
    assert reset_time(line, NOW) == expected


def test_try_again_at_a_local_clock_time_is_the_next_such_moment() -> None:
    at = reset_time("You've hit your usage limit. Try again at 3:45 PM.", NOW)
    assert at is not None and NOW < at <= NOW + 86400
    local = dt.datetime.fromtimestamp(at).astimezone()
    assert (local.hour, local.minute) == (15, 45)


def test_the_last_rate_limit_line_counts_and_none_without_one() -> None:
    assert rate_limit(None, "", "all fine\n") is None
    found = rate_limit("Attempt 1 failed with status 429\nQuota exceeded, retry in 5s", now=NOW)
    assert found is not None and found.line == "Quota exceeded, retry in 5s"
    assert found.resets_at == NOW + 5


# What Claude Code 2.1.330 printed (trimmed) when the stand-in answered 429, then 529, past its
# CLAUDE_CODE_MAX_RETRIES: the API's message need not say "rate limit"; the status fields do.
CLAUDE_2_1_REFUSED = {
    "type": "result",
    "subtype": "success",
    "is_error": True,
    "session_id": "65da9da6-8d4a-48a3-9097-b3b739e58c68",
    "terminal_reason": "api_error",
    "api_error_status": 429,
    "api_error_type": "rate_limit_error",
    "result": "API Error: Request rejected (429) · the server says no",
    "usage": {"input_tokens": 0, "output_tokens": 0},
    "total_cost_usd": 0,
}


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"result": "API Error: Request rejected (429)"},
        {"result": "The server said no", "api_error_status": 529, "api_error_type": None},
        {
            "result": "The server said no",
            "api_error_status": None,
            "api_error_type": "overloaded_error",
        },
    ],
)
def test_claude_2_1_states_the_api_status_beside_its_message(fields: dict[str, object]) -> None:
    result = {**CLAUDE_2_1_REFUSED, **fields}
    output = get_adapter("claude").parse_output(json.dumps(result), "")
    assert output.rate_limit is not None and output.session_id == CLAUDE_2_1_REFUSED["session_id"]


def test_claude_other_api_errors_are_not_rate_limits() -> None:
    result = {
        **CLAUDE_2_1_REFUSED,
        "api_error_status": 401,
        "api_error_type": "authentication_error",
    }
    result["result"] = "API Error: 401 invalid x-api-key"
    assert get_adapter("claude").parse_output(json.dumps(result), "").rate_limit is None
