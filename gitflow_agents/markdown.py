"""One CommonMark block parser for plans and reviewer reports (built once, reused)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def block_tokens(text: str) -> list[Token]:
    """markdown-it's block tokens for ``text``; each has ``.map`` = (first line, end line), 0-based."""
    return _parser().parse(text)
