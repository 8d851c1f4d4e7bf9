"""Text helpers for the texts placed in the system prompt: ``{variable}`` resolution, fences,
blank-line trimming."""

from __future__ import annotations

import re
from collections.abc import Mapping

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_BACKTICK_RUN = re.compile(r"`+")


def resolve_placeholders(text: str, variables: Mapping[str, str]) -> str:
    """Replace ``{name}`` for the names in ``variables`` only, in one pass.

    Unknown ``{x}``, ``{{ jinja }}``-looking text, ``[agent-filled]`` placeholders and braces in
    values are left exactly as they are (no ``str.format``).
    """

    def replace(match: re.Match[str]) -> str:
        return variables.get(match.group(1), match.group(0))

    return _PLACEHOLDER.sub(replace, text)


def fence(text: str, info: str = "") -> str:
    """Wrap ``text`` in a backtick fence longer than any backtick run inside it (at least 3),
    so fences in the content can never close the wrapper."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    marker = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{marker}{info}\n{body}{marker}"


def clean(text: str) -> str:
    """Normalise line endings and drop blank lines around a text inserted into a section."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(line.rstrip() if not line.strip() else line for line in lines)
