"""Who may ask: the token, the Host header, cross-site writes."""

from __future__ import annotations

from gitflow_agents.serve.security import (
    cross_site_problem,
    host_problem,
    new_token,
    token_ok,
)


def test_tokens_are_fresh_and_compared_whole() -> None:
    token = new_token()
    assert token != new_token() and len(token) >= 40
    assert token_ok(token, token)
    assert not token_ok(token, None) and not token_ok(token, token[:-1]) and not token_ok(token, "")


def test_only_the_servers_own_host_names_pass() -> None:
    assert host_problem({"Host": "127.0.0.1:8080"}, 8080) is None
    assert host_problem({"Host": "LOCALHOST:8080"}, 8080) is None
    for bad in ("127.0.0.1:8081", "evil.example:8080", "127.0.0.1"):
        assert host_problem({"Host": bad}, 8080) is not None
    assert host_problem({}, 8080) is not None


def test_a_write_from_another_site_is_refused() -> None:
    assert cross_site_problem({}, 80) is None  # not a browser: the token decides
    assert cross_site_problem({"Origin": "http://127.0.0.1:80"}, 80) is None
    assert cross_site_problem({"Sec-Fetch-Site": "same-origin"}, 80) is None
    assert cross_site_problem({"Sec-Fetch-Site": "none"}, 80) is None  # typed by the user
    for headers in (
        {"Origin": "http://127.0.0.1:81"},
        {"Origin": "https://127.0.0.1:80"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example"},
    ):
        assert cross_site_problem(headers, 80) is not None, headers
