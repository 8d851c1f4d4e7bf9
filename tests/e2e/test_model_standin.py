"""The model stand-in itself (no agent CLI needed): dialects, tool mapping, turn counting, faults."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from .model_standin import (
    FENCE,
    Read,
    Say,
    Shell,
    Standin,
    Write,
    assistant_turns,
    dialect_of,
)


def post(url: str, body: Any, timeout: float = 5.0) -> tuple[int, str]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def sse_data(text: str) -> list[Any]:
    return [
        json.loads(line[6:])
        for line in text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


CLAUDE_TOOLS = [
    {"name": "Write", "input_schema": {"properties": {"file_path": {}, "content": {}}}},
    {"name": "Bash", "input_schema": {"properties": {"command": {}, "description": {}}}},
]


def test_dialects_by_path() -> None:
    assert dialect_of("/v1/messages?beta=true") == "anthropic"
    assert dialect_of("/v1/responses") == "responses"
    assert dialect_of("/v1/chat/completions") == "chat"
    assert dialect_of("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse") == "gemini"
    assert dialect_of("/chat-stream") == "augment"
    assert dialect_of("/v1beta/models/x:countTokens") is None


def test_anthropic_write_then_shell_then_text() -> None:
    with Standin([Write("/tmp/x.txt", "hi\n"), Shell("mv a b"), Say("done")]) as standin:
        url = f"{standin.base_url}/v1/messages?beta=true"
        body: dict[str, Any] = {"system": "SYS", "messages": [], "tools": CLAUDE_TOOLS}
        status, text = post(url, body)
        events = sse_data(text)
        assert status == 200
        assert events[0]["type"] == "message_start"
        start = next(e for e in events if e["type"] == "content_block_start")
        assert start["content_block"]["name"] == "Write"
        delta = next(e for e in events if e["type"] == "content_block_delta")["delta"]
        assert json.loads(delta["partial_json"]) == {"file_path": "/tmp/x.txt", "content": "hi\n"}
        # A retry of the same request gets the same step; one more assistant turn, the next.
        assert sse_data(post(url, body)[1])[1]["content_block"]["name"] == "Write"
        body["messages"] = [{"role": "user"}, {"role": "assistant"}]
        delta = next(e for e in sse_data(post(url, body)[1]) if e["type"] == "content_block_delta")
        assert json.loads(delta["delta"]["partial_json"])["command"] == "mv a b"
        body["messages"] += [{"role": "user"}, {"role": "assistant"}]
        final = sse_data(post(url, body)[1])
        assert final[-2]["delta"]["stop_reason"] == "end_turn"
        # A side request without tools gets a short text and does not count.
        side = sse_data(post(url, {"messages": []})[1])
        assert side[2]["delta"]["text"] == "Scripted stand-in"
        assert len(standin.main_requests()) == 4
        assert standin.main_requests()[0].system_text() == "SYS"


def test_tools_are_chosen_from_what_the_cli_offered() -> None:
    gemini = {
        "systemInstruction": {"parts": [{"text": "G-SYS"}]},
        "contents": [],
        "tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}],
    }
    with Standin([Write("/tmp/y.txt", "no newline")]) as standin:
        url = f"{standin.base_url}/v1beta/models/m:streamGenerateContent?alt=sse"
        call = sse_data(post(url, gemini)[1])[0]["candidates"][0]["content"]["parts"][0]
        assert call["functionCall"]["name"] == "run_shell_command"  # no write tool: the shell
        assert call["functionCall"]["args"]["command"] == "printf %s 'no newline' > /tmp/y.txt"
        assert standin.main_requests()[0].system_text() == "G-SYS"
    codex = {"input": [], "tools": [{"type": "function", "name": "exec_command"}]}
    with Standin([Read("/tmp/z")]) as standin:
        events = sse_data(post(f"{standin.base_url}/v1/responses", codex)[1])
        done = next(e for e in events if e["type"] == "response.output_item.done")
        assert json.loads(done["item"]["arguments"]) == {"cmd": "cat /tmp/z"}
        assert events[-1]["type"] == "response.completed"


def test_chat_without_tools_counts_requests_and_fills_the_fence() -> None:
    prompt = "path/to/filename.js\n````\n// entire file\n````"
    reply = f"a.py\n{FENCE}\nx = 1\n{FENCE}\n"
    with Standin([Say(reply), Say("second")], tools_required=False) as standin:
        url = f"{standin.base_url}/v1/chat/completions"
        body = {"messages": [{"role": "system", "content": prompt}]}
        first = "".join(
            c["choices"][0]["delta"].get("content") or "" for c in sse_data(post(url, body)[1])
        )
        assert first == "a.py\n````\nx = 1\n````\n"
        second = sse_data(post(url, body)[1])
        assert second[0]["choices"][0]["delta"]["content"] == "second"
        assert second[-1]["choices"][0]["finish_reason"] == "stop"


def test_fault_401() -> None:
    with Standin([Say("x")], fault="401") as standin:
        status, text = post(f"{standin.base_url}/v1/messages", {"tools": CLAUDE_TOOLS})
        assert status == 401
        assert json.loads(text)["error"]["type"] == "authentication_error"


def test_fault_stall_sends_nothing() -> None:
    with Standin([Say("x")], fault="stall") as standin:
        with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
            post(f"{standin.base_url}/v1/messages", {"tools": CLAUDE_TOOLS}, timeout=0.5)
        assert len(standin.main_requests()) == 1  # accepted and recorded


def test_fault_close_cuts_the_first_event() -> None:
    with Standin([Say("x")], fault="close") as standin:
        status, text = post(f"{standin.base_url}/v1/messages", {"tools": CLAUDE_TOOLS})
        assert status == 200
        assert "\n\n" not in text and "message_start" in text  # half an event, then EOF


def test_turn_counting_per_dialect() -> None:
    assert assistant_turns("gemini", {"contents": [{"role": "user"}, {"role": "model"}]}) == 1
    items = [
        {"type": "message", "role": "developer"},
        {"type": "function_call"},
        {"type": "function_call_output"},
        {"type": "message", "role": "assistant"},
    ]
    assert assistant_turns("responses", {"input": items}) == 2
    assert assistant_turns("augment", {"chat_history": [{}, {}, {}]}) == 3


def test_the_model_turn_gemini_adds_to_a_resumed_session_is_no_step() -> None:
    """Gemini CLI resumes a session whose last request was refused with a model turn of its
    own: the script goes on from the step that was refused."""
    interrupted = {"text": "[The previous response was interrupted before it completed.]"}
    contents = [
        {"role": "user", "parts": [{"text": "task"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "write_file"}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "write_file"}}]},
        {"role": "model", "parts": [interrupted]},
        {"role": "user", "parts": [{"text": "continue"}]},
    ]
    assert assistant_turns("gemini", {"contents": contents}) == 1


def post_headers(url: str, body: Any) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def test_429_with_and_without_retry_after_then_the_script_goes_on() -> None:
    with Standin([Say("after the limit")]) as standin:
        url = f"{standin.base_url}/v1/messages"
        body = {"messages": [], "tools": CLAUDE_TOOLS}
        standin.refuse(429, times=1, retry_after=2)
        status, headers, text = post_headers(url, body)
        assert status == 429 and headers.get("retry-after") == "2"
        assert json.loads(text)["error"]["type"] == "rate_limit_error"
        standin.refuse(429, times=1)
        status, headers, _ = post_headers(url, body)
        assert status == 429 and "retry-after" not in {k.lower() for k in headers}
        status, _, text = post_headers(url, body)  # the refusals are used up
        assert status == 200 and "after the limit" in text
        assert len(standin.refused) == 2 and len(standin.main_requests()) == 3


def test_529_overloaded_and_a_limit_from_a_later_turn() -> None:
    with Standin([Shell("true"), Say("end")]) as standin:
        url = f"{standin.base_url}/v1/messages"
        standin.refuse(529, times=1, from_turn=1)
        first = {"messages": [], "tools": CLAUDE_TOOLS}
        assert post(url, first)[0] == 200  # turn 0: before the limit
        later = {"messages": [{"role": "user"}, {"role": "assistant"}], "tools": CLAUDE_TOOLS}
        status, text = post(url, later)
        assert status == 529 and json.loads(text)["error"]["type"] == "overloaded_error"
        assert post(url, later)[0] == 200
    with Standin([Say("x")]) as standin:
        standin.refuse(429, times=1)
        gemini = {"contents": [], "tools": [{"functionDeclarations": [{"name": "x"}]}]}
        status, text = post(f"{standin.base_url}/v1beta/models/m:streamGenerateContent", gemini)
        assert status == 429 and json.loads(text)["error"]["status"] == "RESOURCE_EXHAUSTED"
        standin.refuse(429, times=1)
        chat = {"messages": [], "tools": [{"type": "function", "function": {"name": "bash"}}]}
        status, text = post(f"{standin.base_url}/v1/chat/completions", chat)
        assert status == 429 and json.loads(text)["error"]["code"] == "rate_limit_exceeded"


def test_every_dialect_streams_its_usage() -> None:
    with Standin([Say("x")], tools_required=False) as standin:
        base = standin.base_url
        anthropic = sse_data(post(f"{base}/v1/messages", {"messages": []})[1])
        assert anthropic[0]["message"]["usage"]["input_tokens"] > 0
        assert anthropic[-2]["usage"]["output_tokens"] > 0
        chat = sse_data(post(f"{base}/v1/chat/completions", {"messages": []})[1])
        assert chat[-1]["usage"]["completion_tokens"] > 0
        responses = sse_data(post(f"{base}/v1/responses", {"input": []})[1])
        assert responses[-1]["response"]["usage"]["output_tokens"] > 0
        gemini = sse_data(
            post(f"{base}/v1beta/models/m:streamGenerateContent", {"contents": []})[1]
        )
        assert gemini[-1]["usageMetadata"]["candidatesTokenCount"] > 0


def test_concurrent_requests_are_counted() -> None:
    with Standin([Say("x")], tools_required=False, hold=0.3) as standin:
        url = f"{standin.base_url}/v1/chat/completions"
        threads = [threading.Thread(target=post, args=(url, {"messages": []})) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert standin.most_in_flight == 3 and standin.in_flight == 0
    with Standin([Say("x")], tools_required=False) as standin:
        post(f"{standin.base_url}/v1/chat/completions", {"messages": []})
        post(f"{standin.base_url}/v1/chat/completions", {"messages": []})
        assert standin.most_in_flight == 1
