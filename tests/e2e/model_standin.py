"""A scripted model-API stand-in for the end-to-end tests of the real agent CLIs.

One thread-based HTTP server on 127.0.0.1 (random port) speaks the streamed formats of the four
model APIs the CLIs use (shapes recorded in shared/research/agent-clis.md):

- Anthropic Messages (Claude Code): ``POST /v1/messages`` SSE ``message_start``,
  ``content_block_start/delta/stop`` (``text_delta`` or ``tool_use`` + ``input_json_delta``),
  ``message_delta`` with ``stop_reason``, ``message_stop``;
- OpenAI Responses (Codex): ``POST /v1/responses`` SSE ``response.created``,
  ``response.output_item.added/done`` (``function_call``, ``custom_tool_call`` or an assistant
  ``message``), ``response.completed``;
- OpenAI chat completions (opencode with tools, aider without): ``POST /v1/chat/completions``
  streamed ``chat.completion.chunk`` objects with ``delta.tool_calls`` or ``delta.content``,
  then ``data: [DONE]``;
- Gemini (Gemini CLI): ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` chunks with
  ``functionCall`` or ``text`` parts;
- Augment (Auggie, reverse-engineered, research notes §5): ``POST /chat-stream`` newline-delimited
  JSON with a ``tool_use`` node (``stop_reason`` 3) or a text node (``stop_reason`` 1); its other
  endpoints (models, MCP settings, remote tools, error reports) answer ``{}``.

Each reply comes from a per-test script of steps (:class:`Write`, :class:`Shell`, :class:`Say`).
The step is chosen by how many assistant turns the request's history already holds, so a step is
answered once whatever the CLI retries (without tools, as for aider, by the request count), and a
tool step is mapped onto a tool the CLI offered in
THAT request (``tools[].name`` and the property names of its parameter schema). A request that
offers no tools while the script needs them (a title or summary side request) gets a short text
reply and does not advance the script. Every request is recorded (path, headers, JSON body) for
assertions. Faults, for all conversation requests: ``stall`` (accept, read, send no byte),
``401`` and ``close`` (headers and one event, then the connection is cut).

Limits (issue 23): :meth:`Standin.refuse` answers conversation requests with HTTP 429 (each API's
rate-limit error body, with or without a ``retry-after`` header) or 529 (Anthropic's
``overloaded_error``), a given number of times, from a given turn on (a limit hit mid-run); every
reply streams its usage (input and output tokens) as its API does. ``in_flight`` /
``most_in_flight`` count the conversation requests being answered at once, and ``hold`` keeps
each answer open that long (seconds), so concurrent requests overlap where they would.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

Fault = Literal["stall", "401", "close"]
LimitStatus = Literal[429, 529]
Dialect = Literal["anthropic", "responses", "chat", "gemini", "augment"]


# --- the script -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    """Write ``content`` to ``path`` (absolute) with the CLI's file-writing tool (or its shell)."""

    path: str
    content: str


@dataclass(frozen=True)
class Shell:
    """Run ``command`` with the CLI's shell tool."""

    command: str


@dataclass(frozen=True)
class Read:
    """Read ``path`` (absolute) with the CLI's file-reading tool (Claude's Write refuses to
    overwrite a file it has not read), or ``cat`` it with the shell."""

    path: str


@dataclass(frozen=True)
class Say:
    """End the turn with ``text`` (no tool call). For aider this is how files are edited too.
    ``held``: seconds before the answer is sent (a message the CLI takes meanwhile comes after
    the turn: Claude Code starts another turn with it)."""

    text: str
    held: float = 0.0


Step = Write | Shell | Read | Say

# In a Say text, stands for the code fence the CLI asked for (aider picks ``` or, when a file in
# the chat holds ``` itself, ```` and so on; its prompt shows the one it wants).
FENCE = "<<FENCE>>"
# In a Write path or a Shell command, stands for the folder of the report the request names (the
# agent's folder), so one script serves agents that run at the same time (parallel reviewers).
AGENT_DIR = "<<AGENT_DIR>>"
_REPORT_PATH = re.compile(r"(/[^\s'\"`()]+)/report\.md")
_AIDER_FENCE = re.compile(r"path/to/filename\.js\n(\S+)\n")


def fence_asked_for(body: Any) -> str:
    match = _AIDER_FENCE.search("\n".join(_texts(body)))
    return match[1] if match else "```"


@dataclass(frozen=True)
class Recorded:
    """One request as the stand-in received it."""

    method: str
    path: str
    headers: Mapping[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None
    dialect: Dialect | None
    at: float

    def system_text(self) -> str:
        """Every instruction-like text of the request: where each API carries the system prompt.

        Anthropic ``system``; Responses ``instructions`` and developer/system input messages;
        chat ``system``/``developer`` messages; Gemini ``systemInstruction``.
        """
        body = self.body if isinstance(self.body, dict) else {}
        texts: list[str] = []
        if self.dialect == "anthropic":
            texts += _texts(body.get("system"))
        elif self.dialect == "responses":
            texts += _texts(body.get("instructions"))
            for item in body.get("input") or []:
                if isinstance(item, dict) and item.get("role") in ("developer", "system"):
                    texts += _texts(item.get("content"))
        elif self.dialect == "chat":
            for message in body.get("messages") or []:
                if isinstance(message, dict) and message.get("role") in ("system", "developer"):
                    texts += _texts(message.get("content"))
        elif self.dialect == "gemini":
            texts += _texts(body.get("systemInstruction") or body.get("system_instruction"))
        elif self.dialect == "augment":
            # The system prompt is assembled server-side; the client sends rules and guidelines.
            for key in ("rules", "user_guidelines", "workspace_guidelines"):
                texts += _texts(body.get(key))
        return "\n".join(texts)

    def all_text(self) -> str:
        """Every string anywhere in the body, joined (for prompts carried as user context)."""
        return "\n".join(_texts(self.body))

    def tool_names(self) -> list[str]:
        return [tool.name for tool in _offered_tools(self.dialect, self.body)]

    def conversation_tokens(self) -> int:
        """The stand-in's count of the conversation's input tokens: words and punctuation marks
        of every text in the request's turns (the task, tool calls and their output, replies).
        Left out: the system prompt, the offered tools and the CLI's own ``<system-reminder>``
        blocks (Claude Code's environment, skills and agent lists: about 11 KB, the same for
        every run of a CLI). Not a model's tokenizer: a count that grows with what the agent was
        given to read."""
        body = self.body if isinstance(self.body, dict) else {}
        turns = body.get("messages") or body.get("input") or body.get("contents") or []
        texts = (_REMINDER.sub("", text) for text in _texts(turns))
        return sum(len(_TOKEN.findall(text)) for text in texts)


_TOKEN = re.compile(r"\w+|[^\w\s]")
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def _texts(value: Any) -> list[str]:
    """All strings inside ``value`` (texts of content blocks, parts, messages...)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _texts(item)]
    return []


# --- tools the CLI offered --------------------------------------------------------------------


@dataclass(frozen=True)
class _Tool:
    name: str
    kind: str  # "function" or "custom" (Responses freeform tools, e.g. apply_patch)
    properties: tuple[str, ...]


def _offered_tools(dialect: Dialect | None, body: Any) -> list[_Tool]:
    if not isinstance(body, dict):
        return []
    tools: list[_Tool] = []
    if dialect == "augment":
        for tool in body.get("tool_definitions") or []:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                try:
                    schema = json.loads(tool.get("input_schema_json") or "{}")
                except ValueError:
                    schema = {}
                tools.append(_Tool(tool["name"], "function", _props(schema)))
        return tools
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if dialect == "gemini":
            for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
                if isinstance(decl, dict) and isinstance(decl.get("name"), str):
                    schema = decl.get("parameters") or decl.get("parametersJsonSchema") or {}
                    tools.append(_Tool(decl["name"], "function", _props(schema)))
        elif dialect == "chat" and isinstance(tool.get("function"), dict):
            fn = tool["function"]
            tools.append(_Tool(str(fn.get("name")), "function", _props(fn.get("parameters"))))
        elif isinstance(tool.get("name"), str):
            schema = tool.get("input_schema") or tool.get("parameters") or {}
            kind = "custom" if tool.get("type") == "custom" else "function"
            tools.append(_Tool(tool["name"], kind, _props(schema)))
    return tools


def _props(schema: Any) -> tuple[str, ...]:
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        return tuple(schema["properties"])
    return ()


_CREATE_ONLY = frozenset({"save-file"})
_READ_TOOLS = ("Read", "read_file", "read", "view")
_WRITE_TOOLS = ("Write", "write_file", "write", "save-file", "create_file")
_SHELL_TOOLS = (
    "Bash",
    "run_shell_command",
    "bash",
    "exec_command",
    "shell_command",
    "shell",
    "launch-process",
)
_PATH_KEYS = ("file_path", "filePath", "absolute_path", "path")
_CONTENT_KEYS = ("content", "file_content", "text")


def _first(tools: Sequence[_Tool], names: Sequence[str]) -> _Tool | None:
    by_name = {tool.name: tool for tool in tools}
    for name in names:
        if name in by_name:
            return by_name[name]
    return None


def _key(tool: _Tool, candidates: Sequence[str], default: str) -> str:
    for key in candidates:
        if key in tool.properties:
            return key
    return default


@dataclass(frozen=True)
class _Call:
    """A tool call to send: ``arguments`` for function tools, ``raw`` for custom tools."""

    name: str
    kind: str
    arguments: dict[str, Any]
    raw: str = ""


def _shell_call(tool: _Tool, command: str) -> _Call:
    if tool.name == "launch-process":
        return _Call(
            tool.name, tool.kind, {"command": command, "wait": True, "max_wait_seconds": 30}
        )
    if tool.name == "exec_command":
        return _Call(tool.name, tool.kind, {_key(tool, ("cmd", "command"), "cmd"): command})
    if tool.name == "shell":
        # Codex's classic shell tool takes an argv list.
        return _Call(tool.name, tool.kind, {"command": ["bash", "-lc", command]})
    args: dict[str, Any] = {_key(tool, ("command", "cmd"), "command"): command}
    if "description" in tool.properties:
        args["description"] = "scripted step"
    return _Call(tool.name, tool.kind, args)


def map_step(step: Write | Shell | Read, tools: Sequence[_Tool]) -> _Call:
    """The tool call that carries out ``step`` with the tools offered (ValueError if none fits)."""
    names = [tool.name for tool in tools]
    if isinstance(step, Read):
        tool = _first(tools, _READ_TOOLS)
        if tool is not None:
            args: dict[str, Any] = {_key(tool, _PATH_KEYS, "file_path"): step.path}
            if tool.name == "view":
                args["type"] = "file"
            return _Call(tool.name, tool.kind, args)
        step = Shell(f"cat {shlex.quote(step.path)}")
    if isinstance(step, Write):
        tool = _first(tools, _WRITE_TOOLS)
        if tool is not None and tool.name in _CREATE_ONLY and Path(step.path).exists():
            tool = None  # e.g. Auggie's save-file refuses to overwrite: use the shell
        if tool is not None:
            return _Call(
                tool.name,
                tool.kind,
                {
                    _key(tool, _PATH_KEYS, "file_path"): step.path,
                    _key(tool, _CONTENT_KEYS, "content"): step.content,
                },
            )
        shell = _first(tools, _SHELL_TOOLS)
        if shell is None:
            raise ValueError(f"no tool to write a file among {names}")
        command = f"cat > {shlex.quote(step.path)} <<'STANDIN_EOF'\n{step.content}STANDIN_EOF"
        if not step.content.endswith("\n"):
            command = f"printf %s {shlex.quote(step.content)} > {shlex.quote(step.path)}"
        return _shell_call(shell, command)
    tool = _first(tools, _SHELL_TOOLS)
    if tool is None:
        raise ValueError(f"no shell tool among {names}")
    return _shell_call(tool, step.command)


# --- turn counting: which step a request asks for --------------------------------------------


# The model turn Gemini CLI 0.61 puts in a resumed session whose last request failed (a 429):
# the stand-in never answered it, so it is no step of the script.
_INTERRUPTED = [{"text": "[The previous response was interrupted before it completed.]"}]


def assistant_turns(dialect: Dialect, body: Any) -> int:
    """How many model turns the request's history already holds (one per answered step)."""
    if not isinstance(body, dict):
        return 0
    if dialect == "anthropic":
        return sum(1 for m in body.get("messages") or [] if _role(m) == "assistant")
    if dialect == "chat":
        return sum(1 for m in body.get("messages") or [] if _role(m) == "assistant")
    if dialect == "gemini":
        contents = body.get("contents") or []
        return sum(1 for c in contents if _role(c) == "model" and c.get("parts") != _INTERRUPTED)
    if dialect == "augment":
        return len(body.get("chat_history") or [])
    count = 0
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        call = kind in ("function_call", "custom_tool_call", "local_shell_call")
        if call or (kind == "message" and item.get("role") == "assistant"):
            count += 1
    return count


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


# --- SSE writers per dialect ------------------------------------------------------------------


def _sse(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def anthropic_events(model: str, reply: _Call | str, seq: int) -> list[bytes]:
    usage = {"input_tokens": 120, "output_tokens": 0}
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_standin_{seq}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        )
    ]
    if isinstance(reply, str):
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": reply}
        stop = "end_turn"
    else:
        block = {"type": "tool_use", "id": f"toolu_standin_{seq}", "name": reply.name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(reply.arguments)}
        stop = "tool_use"
    out += [
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 30},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    return out


def responses_events(model: str, reply: _Call | str, seq: int) -> list[bytes]:
    if isinstance(reply, str):
        item: dict[str, Any] = {
            "type": "message",
            "id": f"msg_standin_{seq}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply, "annotations": []}],
        }
    elif reply.kind == "custom":
        item = {
            "type": "custom_tool_call",
            "id": f"ctc_standin_{seq}",
            "call_id": f"call_standin_{seq}",
            "name": reply.name,
            "input": reply.raw,
            "status": "completed",
        }
    else:
        item = {
            "type": "function_call",
            "id": f"fc_standin_{seq}",
            "call_id": f"call_standin_{seq}",
            "name": reply.name,
            "arguments": json.dumps(reply.arguments),
            "status": "completed",
        }
    response = {"id": f"resp_standin_{seq}", "object": "response", "model": model}
    usage = {
        "input_tokens": 120,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 30,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 150,
    }
    out = [
        _sse(
            "response.created",
            {"type": "response.created", "response": {**response, "status": "in_progress"}},
        ),
        _sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        ),
    ]
    if isinstance(reply, str):
        out.append(
            _sse(
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": reply,
                },
            )
        )
    out += [
        _sse(
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        _sse(
            "response.completed",
            {
                "type": "response.completed",
                "response": {**response, "status": "completed", "output": [item], "usage": usage},
            },
        ),
    ]
    return out


def chat_events(model: str, reply: _Call | str, seq: int) -> list[bytes]:
    base = {
        "id": f"chatcmpl-standin-{seq}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
        return _sse(
            None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        )

    if isinstance(reply, str):
        # Several content chunks, as a real stream would send them.
        pieces = [reply[i : i + 400] for i in range(0, len(reply), 400)] or [""]
        out = [chunk({"role": "assistant", "content": pieces[0]}, None)]
        out += [chunk({"content": piece}, None) for piece in pieces[1:]]
        finish = "stop"
    else:
        call = {
            "index": 0,
            "id": f"call_standin_{seq}",
            "type": "function",
            "function": {"name": reply.name, "arguments": json.dumps(reply.arguments)},
        }
        out = [chunk({"role": "assistant", "content": None, "tool_calls": [call]}, None)]
        finish = "tool_calls"
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    out.append(
        _sse(
            None,
            {
                **base,
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                "usage": usage,
            },
        )
    )
    out.append(_sse(None, "[DONE]"))
    return out


def gemini_events(model: str, reply: _Call | str, seq: int) -> list[bytes]:
    part: dict[str, Any]
    if isinstance(reply, str):
        part = {"text": reply}
    else:
        part = {"functionCall": {"name": reply.name, "args": reply.arguments}}
    return [
        _sse(
            None,
            {
                "candidates": [
                    {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}
                ],
                "usageMetadata": {
                    "promptTokenCount": 120,
                    "candidatesTokenCount": 30,
                    "totalTokenCount": 150,
                },
                "modelVersion": model,
            },
        )
    ]


def augment_events(model: str, reply: _Call | str, seq: int) -> list[bytes]:
    if isinstance(reply, str):
        line: dict[str, Any] = {
            "text": reply,
            "nodes": [{"id": 1, "type": 0, "content": reply}],
            "stop_reason": 1,
        }
    else:
        tool_use = {
            "tool_use_id": f"toolu_standin_{seq}",
            "tool_name": reply.name,
            "input_json": json.dumps(reply.arguments),
        }
        line = {"text": "", "nodes": [{"id": 1, "type": 5, "tool_use": tool_use}], "stop_reason": 3}
    return [(json.dumps(line) + "\n").encode()]


_WRITERS = {
    "anthropic": anthropic_events,
    "responses": responses_events,
    "chat": chat_events,
    "gemini": gemini_events,
    "augment": augment_events,
}


@dataclass
class Refusal:
    """Answer ``times`` conversation requests with ``status``, once the request's history
    holds ``from_turn`` model turns (0: from the first request); ``retry_after``: seconds in a
    ``retry-after`` header (None: no header)."""

    status: LimitStatus
    times: int
    from_turn: int = 0
    retry_after: float | None = None


def _limit_body(dialect: Dialect, status: LimitStatus) -> dict[str, Any]:
    """Each API's answer to a request over its rate limit (429) or while overloaded (529)."""
    if status == 529:
        message = "Overloaded"
        if dialect == "anthropic":
            return {"type": "error", "error": {"type": "overloaded_error", "message": message}}
        if dialect == "gemini":
            return {"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}}
        return {"error": {"message": message, "type": "server_error", "code": "overloaded"}}
    message = "stand-in: rate limit exceeded, please retry later"
    if dialect == "anthropic":
        return {"type": "error", "error": {"type": "rate_limit_error", "message": message}}
    if dialect == "gemini":
        return {"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED"}}
    return {"error": {"message": message, "type": "requests", "code": "rate_limit_exceeded"}}


def _error_body(dialect: Dialect, status: int, message: str) -> dict[str, Any]:
    if dialect == "anthropic":
        return {"type": "error", "error": {"type": "authentication_error", "message": message}}
    if dialect == "gemini":
        return {"error": {"code": status, "message": message, "status": "UNAUTHENTICATED"}}
    return {
        "error": {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}
    }


# --- the server -------------------------------------------------------------------------------


_GEMINI_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)")


def dialect_of(path: str) -> Dialect | None:
    bare = path.split("?", 1)[0]
    if bare.endswith("/messages"):
        return "anthropic"
    if bare.endswith("/responses"):
        return "responses"
    if bare.endswith("/chat/completions"):
        return "chat"
    if _GEMINI_PATH.search(bare) and bare.endswith(":streamGenerateContent"):
        return "gemini"
    if bare.endswith("/chat-stream"):
        return "augment"
    return None


# Augment's side endpoints, all answered with {}.
_AUGMENT_SIDE = (
    "/get-models",
    "/report-error",
    "/settings/",
    "/agents/list-remote-tools",
    "/indexed-commits/",
    "/record-",
    "/client-metrics",
)


@dataclass
class Standin:
    """The stand-in server. Use as a context manager; ``base_url`` is ``http://127.0.0.1:PORT``.

    ``script``: the steps of the conversation (replace it between runs). ``tools_required``:
    False for CLIs that offer no tools (aider), whose every request is part of the conversation.
    ``fault``: answer every conversation request with that fault instead of the script.
    """

    script: list[Step] = field(default_factory=list)
    tools_required: bool = True
    fault: Fault | None = None
    model: str = "standin-model"
    requests: list[Recorded] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    hold: float = 0.0  # seconds each conversation answer is held open (concurrency shows)
    refused: list[Recorded] = field(default_factory=list)  # answered 429 / 529
    in_flight: int = 0
    most_in_flight: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._seq = 0
        self._text_turns = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._refusal: Refusal | None = None

    def refuse(
        self,
        status: LimitStatus = 429,
        *,
        times: int,
        from_turn: int = 0,
        retry_after: float | None = None,
    ) -> None:
        """Answer the next ``times`` conversation requests (from turn ``from_turn`` on) with
        ``status``: 429 rate limited, 529 overloaded (see :class:`Refusal`)."""
        with self._lock:
            self._refusal = Refusal(status, times, from_turn, retry_after)

    def _refusal_for(self, dialect: Dialect, body: Any) -> Refusal | None:
        """The refusal this conversation request gets (one of its ``times`` used), or None."""
        with self._lock:
            refusal = self._refusal
            if refusal is None or refusal.times <= 0:
                return None
            turn = assistant_turns(dialect, body) if self.tools_required else self._text_turns
            if turn < refusal.from_turn:
                return None
            refusal.times -= 1
            return refusal

    @contextlib.contextmanager
    def _counted(self) -> Iterator[None]:
        """One conversation request being answered (``in_flight``, ``most_in_flight``)."""
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            yield
        finally:
            with self._lock:
                self.in_flight -= 1

    def load(self, script: Sequence[Step]) -> None:
        """Start a new conversation with ``script`` (the next agent run)."""
        with self._lock:
            self.script = list(script)
            self._text_turns = 0

    # lifecycle

    def start(self) -> Standin:
        handler = _make_handler(self)
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Standin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # what tests read

    def conversation(self) -> list[Recorded]:
        """The recorded requests that are model calls (any dialect)."""
        with self._lock:
            return [r for r in self.requests if r.dialect is not None]

    def main_requests(self) -> list[Recorded]:
        """Model calls that were part of the scripted conversation (not side requests)."""
        return [r for r in self.conversation() if self._is_main(r.dialect, r.body)]

    # deciding

    def _is_main(self, dialect: Dialect | None, body: Any) -> bool:
        if dialect is None:
            return False
        return not self.tools_required or bool(_offered_tools(dialect, body))

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def _next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def reply_for(self, dialect: Dialect, body: Any) -> _Call | str:
        """The reply to one model call: the script's step for it, or a side-request answer."""
        if not self._is_main(dialect, body):
            return "Scripted stand-in"
        if self.tools_required:
            index = assistant_turns(dialect, body)
        else:
            # Without tools the history cannot tell (aider's prompts hold example assistant
            # turns): every request is the next step.
            with self._lock:
                index, self._text_turns = self._text_turns, self._text_turns + 1
        script = list(self.script)
        if index >= len(script):
            return "Done."
        step = script[index]
        if isinstance(step, (Write, Shell)) and AGENT_DIR in str(step):
            step = _in_agent_dir(step, body)
        if isinstance(step, Say):
            time.sleep(step.held)
            return step.text.replace(FENCE, fence_asked_for(body))
        try:
            return map_step(step, _offered_tools(dialect, body))
        except ValueError as exc:
            self.errors.append(str(exc))
            return f"(stand-in error: {exc})"

    def wait_released(self, timeout: float) -> bool:
        return self._release.wait(timeout)


def _in_agent_dir(step: Write | Shell, body: Any) -> Write | Shell:
    """``step`` with :data:`AGENT_DIR` replaced by the folder of the report the request names."""
    match = _REPORT_PATH.search("\n".join(_texts(body)))
    folder = match[1] if match else "/nonexistent-agent-dir"
    if isinstance(step, Write):
        return Write(step.path.replace(AGENT_DIR, folder), step.content)
    return Shell(step.command.replace(AGENT_DIR, folder))


def _make_handler(standin: Standin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                raw = _read_chunked(self.rfile)
            if self.headers.get("Content-Encoding", "").lower() in ("gzip", "zstd", "br"):
                raw = _decompress(raw, self.headers["Content-Encoding"].lower())
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                return raw.decode("utf-8", "replace")

        def _json(self, status: int, data: Any) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_HEAD(self) -> None:
            self._record(None)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self._record(None)
            path = self.path.split("?", 1)[0]
            if path.endswith("/models"):
                model = {"id": standin.model, "object": "model", "owned_by": "standin"}
                self._json(200, {"object": "list", "data": [model], "models": []})
                return
            self._json(200, {})

        def _record(self, body: Any) -> Dialect | None:
            dialect = dialect_of(self.path) if self.command == "POST" else None
            self.recorded = Recorded(
                method=self.command,
                path=self.path,
                headers={key.lower(): value for key, value in self.headers.items()},
                body=body,
                dialect=dialect,
                at=time.time(),
            )
            standin._record(self.recorded)
            return dialect

        def do_POST(self) -> None:
            body = self._body()
            dialect = self._record(body)
            path = self.path.split("?", 1)[0]
            if dialect is None:
                if path.endswith("/count_tokens"):
                    self._json(200, {"input_tokens": 100})
                elif path.endswith(":countTokens"):
                    self._json(200, {"totalTokens": 100})
                elif _GEMINI_PATH.search(path):  # e.g. non-streamed generateContent side calls
                    self._json(
                        200,
                        {
                            "candidates": [
                                {
                                    "content": {"role": "model", "parts": [{"text": "{}"}]},
                                    "finishReason": "STOP",
                                }
                            ]
                        },
                    )
                elif any(part in path for part in _AUGMENT_SIDE):
                    self._json(200, {})
                else:
                    self._json(404, {"error": {"message": f"stand-in: no route {path}"}})
                return
            main = standin._is_main(dialect, body)
            if main:
                with standin._counted():
                    self._answer(dialect, body, path, main)
                return
            self._answer(dialect, body, path, main)

        def _refuse(self, dialect: Dialect, refusal: Refusal) -> None:
            payload = json.dumps(_limit_body(dialect, refusal.status)).encode()
            self.send_response(refusal.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            if refusal.retry_after is not None:
                self.send_header("retry-after", f"{refusal.retry_after:g}")
            if dialect == "anthropic" and refusal.status == 429:
                self.send_header("anthropic-ratelimit-requests-remaining", "0")
            self.end_headers()
            self.wfile.write(payload)

        def _answer(self, dialect: Dialect, body: Any, path: str, main: bool) -> None:
            if main and standin.hold:
                time.sleep(standin.hold)
            refusal = standin._refusal_for(dialect, body) if main else None
            if refusal is not None:
                with standin._lock:
                    standin.refused.append(self.recorded)
                self._refuse(dialect, refusal)
                return
            if main and standin.fault == "stall":
                # Accept and read, then never send a byte until the stand-in stops.
                standin.wait_released(3600)
                self.close_connection = True
                return
            if main and standin.fault == "401":
                self._json(401, _error_body(dialect, 401, "stand-in: invalid API key"))
                return
            model = standin.model
            if isinstance(body, dict) and isinstance(body.get("model"), str):
                model = body["model"]
            elif dialect == "gemini":
                match = _GEMINI_PATH.search(path)
                model = match["model"] if match else model
            seq = standin._next_seq()
            events = _WRITERS[dialect](model, standin.reply_for(dialect, body), seq)
            self.send_response(200)
            ndjson = dialect == "augment"
            self.send_header(
                "Content-Type", "application/x-ndjson" if ndjson else "text/event-stream"
            )
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            if main and standin.fault == "close":
                # Half of the first event, then cut: no complete event arrives. (Cut after a
                # complete tool-call chunk, opencode 1.18 runs the tool as if the stream ended.)
                self.wfile.write(events[0][: len(events[0]) // 2])
                self.wfile.flush()
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            for event in events:
                self.wfile.write(event)
                self.wfile.flush()

    return Handler


def _read_chunked(stream: Any) -> bytes:
    data = bytearray()
    while True:
        size = int(stream.readline().strip().split(b";")[0] or b"0", 16)
        if size == 0:
            stream.readline()
            return bytes(data)
        data += stream.read(size)
        stream.readline()


def _decompress(raw: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        import gzip

        return gzip.decompress(raw)
    if encoding == "zstd":
        with contextlib.suppress(ImportError):
            import zstandard  # type: ignore[import-not-found]

            return bytes(zstandard.ZstdDecompressor().decompress(raw, max_output_size=1 << 26))
    return raw


def iter_dialects() -> Iterator[Dialect]:
    yield from ("anthropic", "responses", "chat", "gemini", "augment")
