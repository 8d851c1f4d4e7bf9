"""The one way gitflow-agents reads YAML: bounded, typed, and never a traceback.

Every YAML reader (``.flow/`` layers, frontmatter of cards and ``.agents-flow/`` files, the
builtin reviewer's syntax check) goes through here. PyYAML's event parser (libyaml when
installed) reads the text; the nodes are composed here, without recursion, so that:

- nesting deeper than :data:`MAX_DEPTH` levels is an error, not a ``RecursionError``;
- aliases may add at most :data:`ALIAS_BUDGET` values to what is written (a 600-byte "billion
  laughs" alias bomb stops after a few hundred events, in milliseconds);
- only plain values exist: strings, integers, floats, booleans, null, lists and mappings. A date
  written without quotes stays the string it looks like; other tags (``!!timestamp``,
  ``!!binary``, ``!!set``, ``!!python/...``, ``!Custom``) are errors, and so is a value the tag
  cannot hold (``!!int abc``);
- no value holds a NUL character or a lone surrogate (both break paths, argv and UTF-8 output).

Errors are :class:`YamlProblem` with a 0-based line of the text; callers add the file and its
offset (docs/security.md, "Bounds").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from gitflow_agents.base.errors import TextProblem

MAX_DEPTH = 64
"""Lists and mappings nested deeper than this are refused."""
ALIAS_BUDGET = 50_000
"""Values aliases may add, in total, to the values written in one document."""

TAB_MESSAGE = "a tab character where YAML allows none (indent with spaces)"
"""A parser error at a tab (the commonest YAML mistake, and an invisible one)."""

_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null")
)
_BAD_CHARACTER = re.compile(r"[\x00\ud800-\udfff]")


class YamlProblem(TextProblem):
    """Why a YAML text cannot be read; ``line`` and ``column`` are 0-based in the text (None
    when unknown)."""


@cache
def _loader_class() -> type[Any]:
    base: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    # YAML 1.1 resolves 2026-01-02 to a date (and 2026-13-45 to a crash): here it stays a string.
    resolvers = {
        first: [(tag, regex) for tag, regex in entries if not tag.endswith(":timestamp")]
        for first, entries in base.yaml_implicit_resolvers.items()
    }
    return type("PlainLoader", (base,), {"yaml_implicit_resolvers": resolvers})


def _short(tag: str) -> str:
    return tag.replace("tag:yaml.org,2002:", "!!")


def _check_text(text: str) -> None:
    bad = _BAD_CHARACTER.search(text)
    if bad is not None:
        raise YamlProblem(_character_message(bad.group()), text.count("\n", 0, bad.start()))


def _character_message(char: str) -> str:
    if char == "\x00":
        return "contains a NUL character (\\0), which no setting can hold"
    return f"contains a lone surrogate (\\u{ord(char):04x}), which is not text"


class _Composer:
    """Nodes from the parser's events, with depth, alias and tag checks (one document)."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.anchors: dict[str, Any] = {}
        self.weight: dict[int, int] = {}  # id(node) -> values it stands for, aliases expanded
        self.open: set[int] = set()  # collections not yet closed: an alias to one is recursive
        self.added = 0  # values added by aliases so far

    def document(self) -> Any:
        """The next document's root node (None for an empty document)."""
        loader = self.loader
        loader.get_event()  # DocumentStartEvent
        stack: list[tuple[Any, list[Any]]] = []  # (collection node, its children so far)
        root: Any = None
        while True:
            event = loader.get_event()
            if isinstance(event, yaml.DocumentEndEvent):
                return root
            line = event.start_mark.line if event.start_mark is not None else None
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                node, children = stack.pop()
                node.end_mark = event.end_mark
                self.open.discard(id(node))
                node.value = (
                    list(zip(children[::2], children[1::2], strict=True))
                    if isinstance(node, yaml.MappingNode)
                    else children
                )
                self.weight[id(node)] = 1 + sum(self.weight[id(child)] for child in children)
            elif isinstance(event, yaml.AliasEvent):
                node = self._alias(event, line)
            else:
                node = self._start(event, line)
                if isinstance(node, yaml.CollectionNode):
                    if len(stack) >= MAX_DEPTH:
                        raise YamlProblem(f"nested more than {MAX_DEPTH} levels deep", line)
                    stack.append((node, []))
                    self.open.add(id(node))
                    continue
            if stack:
                stack[-1][1].append(node)
            else:
                root = node

    def _alias(self, event: Any, line: int | None) -> Any:
        node = self.anchors.get(event.anchor)
        if node is None:
            raise YamlProblem(f"alias *{event.anchor} names no anchor defined before it", line)
        if id(node) in self.open:
            raise YamlProblem(
                f"recursive YAML alias *{event.anchor} (an anchor that contains itself)", line
            )
        self.added += self.weight[id(node)]
        if self.added > ALIAS_BUDGET:
            raise YamlProblem(
                f"aliases expand to more than {ALIAS_BUDGET:,} values (an alias bomb?)", line
            )
        return node

    def _start(self, event: Any, line: int | None) -> Any:
        loader = self.loader
        if isinstance(event, yaml.ScalarEvent):
            tag = event.tag
            if tag is None or tag == "!":
                tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
            elif tag not in _SCALAR_TAGS:
                raise YamlProblem(f"unsupported tag {_short(tag)} (only plain values)", line)
            bad = _BAD_CHARACTER.search(event.value)
            if bad is not None:
                raise YamlProblem(_character_message(bad.group()), line)
            start: Any = event.start_mark  # libyaml's marks are not yaml.Mark to mypy
            end: Any = event.end_mark
            node: Any = yaml.ScalarNode(tag, event.value, start, end, style=event.style)
            self.weight[id(node)] = 1
        else:
            mapping = isinstance(event, yaml.MappingStartEvent)
            kind = yaml.MappingNode if mapping else yaml.SequenceNode
            tag = event.tag
            if tag is None or tag == "!":
                tag = loader.resolve(kind, None, event.implicit)
            elif tag != (_MAP if mapping else _SEQ):
                raise YamlProblem(f"unsupported tag {_short(tag)} (only plain values)", line)
            node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
        if event.anchor is not None:
            self.anchors[event.anchor] = node
        return node


def _refusal(text: str, exc: Exception, reread: Callable[[str], object]) -> YamlProblem:
    """A parser error as a YamlProblem, unless one of this module's bounds is crossed first.

    libyaml (PyYAML 6.0.4 and later) has a nesting limit of its own, 1,000 levels, and on one
    line it reaches it before the parser hands out the events of the 65th level (a ``[`` may
    still start a key, so libyaml holds them back for up to 1,024 characters). So, after a
    libyaml error, ``reread`` reads the text before the error's mark again, with the same
    parser and the same bounds: what it refuses comes first in the text and is the answer
    (``nested more than 64 levels deep``); the text is never parsed again by PyYAML's own
    parser, which is quadratic in that nesting. PyYAML's own parser has no limits of its own,
    so its errors stand. Other parser errors keep the parser's wording (libyaml's and PyYAML's
    differ) and always name the line."""
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow
        position = exc.position if isinstance(exc.position, int) else 0
        return YamlProblem(
            f"contains the control character U+{exc.character:04X} (YAML allows none but tab "
            "and line breaks)"
            if isinstance(exc.character, int)
            else "contains bytes YAML does not allow",
            text.count("\n", 0, position),
        )
    mark = exc.problem_mark or exc.context_mark if isinstance(exc, yaml.MarkedYAMLError) else None
    if mark is not None and not issubclass(_loader_class(), yaml.SafeLoader):
        try:
            reread(text[: mark.index])
        except YamlProblem as first:
            return first
        except yaml.YAMLError:  # the cut text ends in the middle of something: no bound crossed
            pass
    at_tab = mark is not None and text[mark.index : mark.index + 1] == "\t"
    if at_tab and mark is not None and isinstance(exc, yaml.scanner.ScannerError):
        return YamlProblem(TAB_MESSAGE, mark.line, mark.column)  # libyaml does not name it
    return _problem_of(exc)


def _problem_of(exc: Exception) -> YamlProblem:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        if mark is None:
            return YamlProblem(problem or str(exc))
        return YamlProblem(problem or str(exc), mark.line, mark.column)
    return YamlProblem(str(exc).splitlines()[0] if str(exc) else "invalid YAML")


def _run(text: str, documents: bool) -> list[Any]:
    """Composed root nodes; YamlProblem for anything malformed."""
    _check_text(text)
    try:
        return _compose_all(text, documents)
    except yaml.YAMLError as exc:
        raise _refusal(text, exc, lambda head: _compose_all(head, documents)) from None


def _compose_all(text: str, documents: bool) -> list[Any]:
    roots: list[Any] = []
    loader = _loader_class()(text)  # PyYAML's own reader checks the characters right here
    try:
        loader.get_event()  # StreamStartEvent
        while not loader.check_event(yaml.StreamEndEvent):
            if roots and not documents:
                event = loader.peek_event()
                raise YamlProblem(
                    "expected a single document in the stream but found another document",
                    event.start_mark.line if event.start_mark is not None else None,
                )
            roots.append(_Composer(loader).document())
    finally:
        loader.dispose()
    return roots


def compose(text: str) -> Any:
    """The single document of ``text`` as a PyYAML node tree (None when empty or comments)."""
    roots = _run(text, documents=False)
    return roots[0] if roots else None


def check_syntax(text: str) -> None:
    """YamlProblem unless every document of ``text`` is well-formed YAML (application tags such
    as ``!Ref`` allowed: only the syntax is checked, nothing is built), within the same bounds
    as every YAML read here: nesting at most :data:`MAX_DEPTH` levels, aliases adding at most
    :data:`ALIAS_BUDGET` values, no recursive alias."""
    for _ in checked_events(text):
        pass


def checked_events(text: str) -> Iterator[Any]:
    """The parser's events for every document of ``text``, each once :func:`check_syntax`'s
    bounds accept it; YamlProblem as check_syntax raises it. So a caller that follows the
    events (the builtin reviewer's value check) has bounded work in the same single pass."""
    _check_text(text)
    try:
        yield from _walk_all(text)
    except yaml.YAMLError as exc:
        raise _refusal(text, exc, _walk_to_end) from None


def _walk_to_end(text: str) -> None:
    for _ in _walk_all(text):
        pass


def _walk_all(text: str) -> Iterator[Any]:
    walk = _Walk()
    loader = _loader_class()(text)
    try:
        while loader.check_event():
            event = loader.get_event()
            walk.event(event)
            yield event
    finally:
        loader.dispose()


class _Walk:
    """The bounds of :class:`_Composer` kept over the parser's events alone (no nodes)."""

    def __init__(self) -> None:
        self.weight: dict[str, int] = {}  # anchor -> values it stands for, aliases expanded
        self.stack: list[list[Any]] = []  # open collections: [anchor, weight so far]
        self.added = 0

    def event(self, event: Any) -> None:
        line = event.start_mark.line if event.start_mark is not None else None
        if isinstance(event, yaml.DocumentStartEvent):
            self.weight.clear()
            self.added = 0
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if len(self.stack) >= MAX_DEPTH:
                raise YamlProblem(f"nested more than {MAX_DEPTH} levels deep", line)
            self.stack.append([event.anchor, 1])
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor, weight = self.stack.pop()
            self._value(anchor, weight)
        elif isinstance(event, yaml.ScalarEvent):
            self._value(event.anchor, 1)
        elif isinstance(event, yaml.AliasEvent):
            self._alias(str(event.anchor), line)

    def _alias(self, anchor: str, line: int | None) -> None:
        if any(open_anchor == anchor for open_anchor, _ in self.stack):
            raise YamlProblem(
                f"recursive YAML alias *{anchor} (an anchor that contains itself)", line
            )
        weight = self.weight.get(anchor)
        if weight is None:
            raise YamlProblem(f"alias *{anchor} names no anchor defined before it", line)
        self.added += weight
        if self.added > ALIAS_BUDGET:
            raise YamlProblem(
                f"aliases expand to more than {ALIAS_BUDGET:,} values (an alias bomb?)", line
            )
        self._value(None, weight)

    def _value(self, anchor: str | None, weight: int) -> None:
        if anchor is not None:
            self.weight[anchor] = weight
        if self.stack:
            self.stack[-1][1] += weight


def scalar(node: Any) -> Any:
    """The Python value of a scalar node (its tag is one of the plain ones); YamlProblem when
    the text is not a value of that tag (``!!int abc``, ``!!bool maybe``)."""
    if node.tag == _STR:  # most values: no constructor needed
        return node.value

    constructor = _constructor()
    build = constructor.yaml_constructors.get(node.tag)
    if build is None:  # a tag nobody resolves to: compose() refuses those
        raise YamlProblem(f"unsupported tag {_short(node.tag)}", node.start_mark.line)
    try:
        return build(constructor, node)
    except (ValueError, KeyError, TypeError, OverflowError, yaml.YAMLError):
        kind = {"int": "an integer", "float": "a number", "bool": "a boolean"}.get(
            node.tag.rsplit(":", 1)[-1], _short(node.tag)
        )
        raise YamlProblem(f"{node.value!r} is not {kind}", node.start_mark.line) from None


@cache
def _constructor() -> Any:
    return SafeConstructor()


def flatten(node: Any) -> None:
    """Apply YAML merge keys (``<<: *defaults``) of a mapping node in place."""
    try:
        _constructor().flatten_mapping(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlProblem(
            exc.problem or "invalid merge key", mark.line if mark is not None else None
        ) from None


def is_merge_key(node: Any) -> bool:
    return bool(node.tag == _MERGE)


def to_python(node: Any) -> Any:
    """Plain Python values (dict, list, str, int, float, bool, None) of a composed node tree.

    A node reached through several aliases becomes one shared object (as PyYAML builds it), so
    the work is linear in the composed tree. Keys must be scalars.
    """
    built: dict[int, Any] = {}

    def build(current: Any) -> Any:  # recursion: depth is bounded by MAX_DEPTH
        if id(current) in built:
            return built[id(current)]
        if isinstance(current, yaml.ScalarNode):
            value = scalar(current)
        elif isinstance(current, yaml.SequenceNode):
            value = built[id(current)] = []
            value.extend(build(item) for item in current.value)
        else:
            flatten(current)
            value = built[id(current)] = {}
            for key_node, value_node in current.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise YamlProblem(
                        "a key must be a plain value, not a list or mapping",
                        key_node.start_mark.line,
                    )
                value[scalar(key_node)] = build(value_node)
        built[id(current)] = value
        return value

    return None if node is None else build(node)


def load(text: str) -> Any:
    """The single document of ``text`` as plain Python values (None when empty)."""
    return to_python(compose(text))
