"""One CommonMark block parser for plans and reviewer reports (built once, reused).

Only the block structure is parsed (what is a heading, a fence, an HTML block, a paragraph): the
inline rules (emphasis, links…) are switched off, which halves the time on large files, and no
caller reads inline children. The tokens of the last text are kept, because one report is read
by several functions in a row (verdict, findings, reply).
"""

from __future__ import annotations

import threading
from functools import cache
from typing import TYPE_CHECKING

from markdown_it import MarkdownIt

if TYPE_CHECKING:
    from markdown_it.token import Token

_last: tuple[str, list[Token]] | None = None
_lock = threading.Lock()


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").disable(["inline", "text_join"])


def block_tokens(text: str) -> list[Token]:
    """markdown-it's block tokens for ``text``; each has ``.map`` = (first line, end line), 0-based.

    The list is shared with other callers asking for the same text: read it, never change it.
    """
    global _last
    last = _last
    if last is not None and last[0] == text:
        return last[1]
    with _lock:  # markdown-it's parser object is not documented as thread-safe
        tokens = _parser().parse(text)
    _last = (text, tokens)
    return tokens
