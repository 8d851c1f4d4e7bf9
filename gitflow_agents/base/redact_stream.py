"""Masking a byte stream as it arrives: an agent's stdout and stderr on their way to
``worker.log`` and the live ``agent:output`` events (docs/security.md, "Secrets in review output").

The masking is ``redact.redact_text``'s (the builtin reviewer's rules and the exact values of
the reviewed diff's secrets), applied to whole lines: a line is held back until its newline
arrives, so a secret the agent writes in two pieces is masked as one. A line longer than
``max_line`` (64 KiB) is not held forever: it is cut at its last whitespace before the bound
(a hard cut when it has none) and that part is masked and let through. Tokens and key bodies
never contain whitespace, so such a cut splits none; a quoted secret-named value may (a
password with a space), and a cut inside it, or between a name and its value, leaves the
parts masked only where they are tokens or hold one of the exact values.

A private key block spans lines: its body lines are masked up to its END line even when they
arrive in later writes. The stream is bytes in and bytes out: text that is not UTF-8 passes
through unchanged (``surrogateescape``).
"""

from __future__ import annotations

from collections.abc import Iterable

from gitflow_agents.base.redact import MIN_EXACT_LENGTH, redact_text
from gitflow_agents.base.secret_rules import KEY_BODY, PRIVATE_KEY, PRIVATE_KEY_END, may_begin_key

MAX_LINE = 64 * 1024
"""Bytes of a line held back before part of it is masked and let through without its end."""

_WHITESPACE = (b" ", b"\t", b"\r")


class LineMasker:
    """One stream's masker: :meth:`feed` each chunk as it arrives, write what it returns, and
    :meth:`flush` at the end of the stream for the last, unterminated line."""

    def __init__(self, secrets: Iterable[str] = (), *, max_line: int = MAX_LINE) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self.secrets = frozenset(s for s in secrets if len(s) >= MIN_EXACT_LENGTH)
        self.max_line = max_line
        # the start of a line whose newline has not come yet (so it holds no newline: a chunk's
        # is looked for in the chunk alone, and a chunk without one is only appended)
        self._pending = bytearray()
        self._in_key = False  # inside a private key block that began in an earlier line

    def feed(self, chunk: bytes) -> bytes:
        """The masked complete lines ``chunk`` ends (with what came before it); the start of
        an unfinished line stays back, up to ``max_line`` bytes."""
        end = chunk.rfind(b"\n") + 1
        if end:
            out = self._mask(bytes(self._pending) + chunk[:end])
            self._pending = bytearray(chunk[end:])
        else:
            out = b""
            self._pending += chunk
        if len(self._pending) > self.max_line:
            out += self._cut_long_line()
        return out

    def flush(self) -> bytes:
        """The rest of the stream (a last line without its newline), masked."""
        rest, self._pending = bytes(self._pending), bytearray()
        return self._mask(rest) if rest else b""

    def _cut_long_line(self) -> bytes:
        parts: list[bytes] = []
        while len(self._pending) > self.max_line:
            head = self._pending[: self.max_line]
            cut = max(head.rfind(space) for space in _WHITESPACE) + 1 or self.max_line
            parts.append(self._mask(bytes(self._pending[:cut])))
            self._pending = self._pending[cut:]
        return b"".join(parts)

    def _mask(self, data: bytes) -> bytes:
        if not data:
            return data
        text = data.decode("utf-8", "surrogateescape")
        if self._in_key:  # the body of a key block that began in an earlier write
            end = PRIVATE_KEY_END.search(text)
            stop = end.start() if end else len(text)
            text = KEY_BODY.sub("[masked]", text[:stop]) + text[stop:]
            self._in_key = end is None
        if may_begin_key(text):
            begins = [m.end() for m in PRIVATE_KEY.finditer(text)]
            ends = [m.end() for m in PRIVATE_KEY_END.finditer(text)]
            if begins and (not ends or begins[-1] > ends[-1]):
                self._in_key = True
        masked = redact_text(text, self.secrets)
        return masked.encode("utf-8", "surrogateescape")
