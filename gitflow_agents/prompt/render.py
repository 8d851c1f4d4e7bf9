"""Render ``templates/system_prompt.md.j2``: the whole prompt, and the text of each of its blocks.

Each ``{% block %}`` of the template is one section of the prompt, which is how
``prompt --segments`` attributes the text (docs/prompt.md, "Templates"). One ``Template.render``
gives both: it renders a second template, served by the loader next to the real one, that
extends it and wraps every block's ``{{ super() }}`` in markers; the markers are then cut out.

Jinja keeps compiled templates in the environment (one per template folder and process) and
recompiles a template when its file changes (``auto_reload``); its ``FileSystemBytecodeCache``
keeps them between processes.
"""

from __future__ import annotations

import functools
import re
import secrets
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jinja2

from gitflow_agents.base.errors import TemplateError
from gitflow_agents.prompt.text import fence

SYSTEM_PROMPT_TEMPLATE = "system_prompt.md.j2"
# The name the marking template is served under: "<template>" + this suffix.
_SECTIONS_SUFFIX = ".sections"
# The template variable holding the marker; a fresh random marker per render, so no user text
# can contain it.
_MARK = "gitflow_agents_section_mark"
# A block tag in a template's source. A match that is not a block (inside a comment or a raw
# section) only adds an override that never renders; reading the names this way instead of
# through Environment.parse saves a full parse (~10 ms) in every process that renders a prompt.
_BLOCK_TAG = re.compile(r"\{%[-+]?\s*block\s+(\w+)")


def render(directory: Path, variables: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """The whole prompt and each block's text (block name, text), in the order the blocks
    open; TemplateError naming the template file and line when Jinja fails."""
    env = environment(directory)
    mark = f"\x00{secrets.token_hex(8)}\x00"
    try:
        env.get_template(SYSTEM_PROMPT_TEMPLATE)  # a missing template is reported by its name
        marking = env.get_template(SYSTEM_PROMPT_TEMPLATE + _SECTIONS_SUFFIX)
        marked = marking.render({**variables, _MARK: mark})
    except (jinja2.TemplateError, TypeError, ValueError) as exc:
        raise _template_error(exc, directory, SYSTEM_PROMPT_TEMPLATE) from None
    return _unmark(marked, mark)


@functools.cache
def environment(directory: Path) -> jinja2.Environment:
    """The Jinja environment of ``directory``, built once per process and directory."""
    files = jinja2.FileSystemLoader(str(directory))

    def marking_source(name: str) -> tuple[str, str | None, Callable[[], bool]] | None:
        if not name.endswith(_SECTIONS_SUFFIX):
            return None
        base = name.removesuffix(_SECTIONS_SUFFIX)
        source, _, uptodate = files.get_source(env, base)
        return _marking_template(base, _BLOCK_TAG.findall(source)), None, uptodate

    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader([files, jinja2.FunctionLoader(marking_source)]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        auto_reload=True,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters["fenced"] = fence
    return env


def _marking_template(base: str, blocks: list[str]) -> str:
    """A template that renders ``base`` with every block's text between two markers:
    ``<mark>(name<mark>`` before it and ``<mark>)<mark>`` after it."""
    mark = "{{ " + _MARK + " }}"
    overrides = "".join(
        f"{{% block {name} %}}{mark}({name}{mark}{{{{ super() }}}}{mark}){mark}{{% endblock %}}"
        for name in dict.fromkeys(blocks)
    )
    return f'{{% extends "{base}" %}}{overrides}'


def _unmark(marked: str, mark: str) -> tuple[str, list[tuple[str, str]]]:
    """The text without the markers, and each marked block's text in the order the blocks
    open (a nested block's text is part of its parent's too)."""
    text: list[str] = []
    open_blocks: list[list[str]] = []
    blocks: list[tuple[str, list[str]]] = []
    for index, piece in enumerate(marked.split(mark)):
        if index % 2 == 0:  # text between markers
            text.append(piece)
            for parts in open_blocks:
                parts.append(piece)
        elif piece.startswith("("):
            blocks.append((piece[1:], []))
            open_blocks.append(blocks[-1][1])
        else:
            open_blocks.pop()
    return "".join(text), [(name, "".join(parts)) for name, parts in blocks]


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between processes (Jinja's per-user folder in the temp dir,
    written atomically, checked against the template's source): compiling the system prompt
    template took ~20 ms of every ``spawn``. None when that folder cannot be used."""
    try:
        return jinja2.FileSystemBytecodeCache()
    except (OSError, RuntimeError):
        return None


def _template_error(exc: Exception, directory: Path, name: str) -> TemplateError:
    """A Jinja failure as one line naming the template file and line."""
    path = directory / name
    line: int | None = None
    if isinstance(exc, jinja2.TemplateSyntaxError):
        line = exc.lineno
        if exc.filename:
            path = Path(exc.filename)
    elif isinstance(exc, jinja2.TemplateNotFound):
        return TemplateError(f"template {exc.name!r} not found", path=directory)
    else:
        # Jinja rewrites tracebacks so template frames carry the template's file and line.
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename and Path(frame.filename).is_relative_to(directory):
                path, line = Path(frame.filename), frame.lineno
    message = getattr(exc, "message", None) or str(exc)
    return TemplateError(message, path=path, line=line)
