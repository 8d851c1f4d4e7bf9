"""What PyYAML's safe loader could not build in a reviewed YAML file, found while the builtin
reviewer walks the file's parser events once (``safe_yaml.checked_events``: syntax and bounds).

A file every PyYAML consumer refuses is a finding: a value its tag cannot hold (``2024-13-45``
resolves to a date, ``!!int abc``), a list or mapping as a key, ``<<:`` merging something that
is not a mapping, a tag no constructor knows (``!!foo``; ``=`` or ``<<`` as a value), an anchor
defined twice, a key repeated in one mapping (PyYAML keeps the last value; ruamel.yaml, and so
pre-commit-hooks' check-yaml, refuses it). Application tags (``!Ref``, ``!!python/name:…``) are
opaque, as the reviewer has always read them: what is inside one is built only when an alias
or a merge reaches it.

Keys are the same when PyYAML builds them equal with the same tag (``1`` and ``0x1``, ``~``
and ``null``, ``'a'`` and ``a``; not ``1`` and ``'1'``), the keys written in the mapping
alone: a ``<<`` merge key (there may be several) and the pairs it merges, which the mapping's
own keys override, are no repetition.

Nothing is built but the scalars whose tag is not ``!!str``, one at a time: each finished
value is summed up (:class:`_Value`: would building it fail, would merging it fail) and the
summary goes up to its parent, so the work is linear in the events. One known difference:
the items of ``!!omap`` / ``!!pairs`` are judged as mappings, where PyYAML builds their one
key and value without the mapping rules (``!!omap [{[a]: 1}]`` is refused here).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple

import yaml  # this module is imported only when a YAML file is reviewed
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from gitflow_agents.base.safe_yaml import YamlProblem, checked_events

_CORE = "tag:yaml.org,2002:"
_STR = _CORE + "str"
_MERGE = _CORE + "merge"
_VALUE = _CORE + "value"  # ``=``: a string as a key (PyYAML's flatten), unbuildable elsewhere
_PAIRS = (_CORE + "omap", _CORE + "pairs")
_KIND = {  # the node each of PyYAML's safe constructors takes
    **{_CORE + t: "scalar" for t in ("null", "bool", "int", "float", "binary", "timestamp")},
    _STR: "scalar",
    **{_CORE + t: "sequence" for t in ("seq", "omap", "pairs")},
    **{_CORE + t: "mapping" for t in ("map", "set")},
}


class Fault(NamedTuple):
    """Why a value cannot be built; ``line`` is 0-based."""

    message: str
    line: int


class _Value(NamedTuple):
    """A finished node, as its parent sees it."""

    kind: str  # "scalar", "sequence" or "mapping"
    tag: str
    line: int
    fault: Fault | None  # building it fails (None for an opaque tag)
    merged: Fault | None  # a collection: ``<<: it`` fails in a mapping it holds
    odd: _Value | None  # a sequence: its first item that is not a mapping (so no ``<<: it``)
    size: int  # a mapping's pairs
    same: Any = None  # a scalar as a key: a string itself, else (tag, built value); None: never
    text: str = ""  # a scalar: as written


class _Open:
    """A collection whose end has not come yet. (A plain class: a dataclass would import
    dataclasses, ~5 ms, for every YAML file reviewed: issue 20.)"""

    __slots__ = (
        *("anchor", "fault", "key", "key_at", "kind", "line", "merged", "odd", "repeated"),
        *("seen", "size", "tag"),
    )

    def __init__(self, kind: str, tag: str, anchor: str | None, line: int) -> None:
        self.kind = kind
        self.tag = tag
        self.anchor = anchor
        self.line = line
        self.fault: Fault | None = None  # the first fault inside it
        self.merged: Fault | None = None  # first fault of merging it (a mapping) or its mappings
        self.odd: _Value | None = None  # a sequence: its first item that is not a mapping
        self.key: _Value | None = None  # a mapping: the key waiting for its value
        self.key_at = line  # the line where that key is written (an alias: not its anchor's)
        self.seen: dict[Any, int] | None = None  # a mapping: its keys so far, and their lines
        self.repeated: Fault | None = None  # a mapping: the first key it repeats
        self.size = 0


def _opaque(tag: str) -> bool:
    return tag.startswith(("!", _CORE + "python/"))


def _tag_fault(kind: str, tag: str, line: int) -> Fault | None:
    wanted = _KIND.get(tag)
    if wanted is None:
        return None if _opaque(tag) else Fault(f"no constructor for the tag {tag!r}", line)
    return Fault(f"{tag!r} needs a {wanted}, not a {kind}", line) if wanted != kind else None


class BuildCheck:
    """Follows the events of one YAML stream; ``fault`` is the first value that PyYAML's safe
    loader could not build (None when it builds everything). ``git_line``: the 1-based line git
    numbers for one of PyYAML's 0-based lines (``git_line_of``), for the lines a message names."""

    def __init__(self, git_line: Callable[[int], int] = lambda line: line + 1) -> None:
        self.git_line = git_line
        self.fault: Fault | None = None
        self.anchors: dict[str, _Value | None] = {}  # None while its collection is open
        self.stack: list[_Open] = []

    def event(self, event: Any) -> None:
        follow = _FOLLOW.get(type(event))
        if follow is not None:
            follow(self, event)

    def _scalar(self, event: Any) -> None:
        line = event.start_mark.line
        self._anchor(event.anchor, line)
        tag = event.tag
        if tag is None or tag == "!":
            tag = _resolver().resolve(yaml.ScalarNode, event.value, event.implicit)
        fault, same = _scalar_fault(event, tag, line)
        value = _Value("scalar", tag, line, fault, None, None, 0, same, event.value)
        self._add(event.anchor, value)

    def _alias(self, event: Any) -> None:
        found = self.anchors[str(event.anchor)]  # safe_yaml refuses unknown and open anchors
        assert found is not None
        self._add(None, found, event.start_mark.line)

    def _start(self, event: Any) -> None:
        self._anchor(event.anchor, event.start_mark.line)
        kind = "mapping" if isinstance(event, yaml.MappingStartEvent) else "sequence"
        tag = event.tag
        if tag is None or tag == "!":
            tag = _CORE + ("map" if kind == "mapping" else "seq")
        self.stack.append(_Open(kind, tag, event.anchor, event.start_mark.line))

    def _end(self, event: Any) -> None:
        done = self.stack.pop()
        if _KIND.get(done.tag) == done.kind:  # a core tag that takes it: build what it holds
            faults = [f for f in (done.fault, done.repeated) if f is not None]
            fault = min(faults, key=lambda f: f.line) if faults else None
        else:  # opaque (nothing inside is built), or a tag that cannot take it
            fault = _tag_fault(done.kind, done.tag, done.line)
        merged = done.fault if done.kind == "mapping" else done.merged
        value = _Value(done.kind, done.tag, done.line, fault, merged, done.odd, done.size)
        self._add(done.anchor, value)

    def _document(self, event: Any) -> None:
        self.anchors.clear()  # anchors are per document

    def _anchor(self, anchor: str | None, line: int) -> None:
        if anchor is None:
            return
        if anchor in self.anchors:  # PyYAML's composer refuses it, whatever the tags
            self._found(Fault(f"the anchor &{anchor} is defined twice", line))
        self.anchors[anchor] = None

    def _found(self, fault: Fault | None) -> None:
        if self.fault is None:
            self.fault = fault

    def _add(self, anchor: str | None, value: _Value, line: int | None = None) -> None:
        """``value`` is finished (``line``: where it is written, when not its own line: an
        alias)."""
        if anchor is not None:
            self.anchors[anchor] = value
        if not self.stack:  # a document's root: building the document builds it
            self._found(value.fault)
            return
        parent = self.stack[-1]
        if parent.kind == "mapping":
            if parent.key is None:
                parent.key, parent.key_at = value, value.line if line is None else line
            else:
                fault = _pair_fault(parent.key, value)
                if parent.key.same is not None and parent.repeated is None:
                    parent.repeated = _repeated(parent, parent.key, self.git_line)
                parent.key, parent.size = None, parent.size + 1
                parent.fault = parent.fault or fault
            return
        fault = value.fault
        if parent.tag in _PAIRS and (value.kind != "mapping" or value.size != 1):
            fault = Fault(f"an item of {parent.tag!r} must be a mapping of one pair", value.line)
        parent.fault = parent.fault or fault
        if value.kind != "mapping":
            parent.odd = parent.odd or value
        else:
            parent.merged = parent.merged or value.merged


_FOLLOW: dict[type[Any], Callable[[BuildCheck, Any], None]] = {
    yaml.ScalarEvent: BuildCheck._scalar,
    yaml.AliasEvent: BuildCheck._alias,
    yaml.SequenceStartEvent: BuildCheck._start,
    yaml.MappingStartEvent: BuildCheck._start,
    yaml.SequenceEndEvent: BuildCheck._end,
    yaml.MappingEndEvent: BuildCheck._end,
    yaml.DocumentStartEvent: BuildCheck._document,
}


def _repeated(mapping: _Open, key: _Value, git_line: Callable[[int], int]) -> Fault | None:
    """The fault of ``key`` written in ``mapping`` at ``mapping.key_at`` when the mapping has
    that key already (naming the first one's line as git numbers it); else it is remembered."""
    if mapping.seen is None:
        mapping.seen = {}
    try:
        first = mapping.seen.get(key.same)
        if first is None:
            mapping.seen[key.same] = mapping.key_at
            return None
    except TypeError:  # a value that cannot be a dictionary key: PyYAML refuses it anyway
        return None
    first_line = git_line(first)
    return Fault(f"duplicate key {key.text[:80]!r} (first on line {first_line})", mapping.key_at)


def _pair_fault(key: _Value, value: _Value) -> Fault | None:
    if key.tag == _MERGE:  # PyYAML's flatten_mapping: the pairs of the merged mappings
        return _merge_fault(value)
    if key.tag == _VALUE:  # flatten_mapping makes ``=`` a string key
        key = key._replace(fault=None)
    if key.fault is None and key.kind != "scalar" and key.tag in _KIND:
        return Fault(f"a {key.kind} cannot be a key (PyYAML builds it unhashable)", key.line)
    return key.fault or value.fault


def _merge_fault(value: _Value) -> Fault | None:
    if value.kind == "sequence" and value.odd is not None:
        odd = value.odd
        return Fault(f"<< merges a list of mappings, not of {odd.kind}s", odd.line)
    if value.kind == "scalar":
        return Fault("<< merges a mapping or a list of mappings, not a scalar", value.line)
    return value.merged


def _scalar_fault(event: Any, tag: str, line: int) -> tuple[Fault | None, Any]:
    """Why the scalar cannot be built (None: it can), and what it equals as a key (``_Value.same``:
    a string itself, another value its tag and the value PyYAML builds; None for a merge key,
    an application tag or a value that cannot be built)."""
    if tag in (_STR, _VALUE):  # most values; ``=``: a string as a key (flatten_mapping)
        fault = None if tag == _STR else _tag_fault("scalar", tag, line)
        return fault, event.value  # a string is its own key (never equal to a tuple below)
    fault = _tag_fault("scalar", tag, line)
    if fault is not None or _opaque(tag):
        return fault, None
    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
    constructor = _constructor()
    try:
        built = constructor.yaml_constructors[tag](constructor, node)
    except Exception as exc:
        # PyYAML's constructors raise what their conversion raises on a value they cannot
        # build (ValueError for 2024-13-45, KeyError for !!bool maybe).
        if isinstance(exc, KeyError):
            return Fault(f"cannot build {exc}", line), None
        problem = exc.problem if isinstance(exc, yaml.MarkedYAMLError) else None
        return Fault((problem or str(exc) or type(exc).__name__).splitlines()[0], line), None
    return None, (tag, built)


@cache
def _resolver() -> Any:
    """YAML 1.1's implicit types, dates included: what PyYAML's safe loader resolves."""
    return Resolver()


@cache
def _constructor() -> Any:
    return SafeConstructor()


# Where PyYAML (and libyaml) end a line: git ends one at \n alone (``diffparse.git_lines``)
_YAML_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")


def git_line_of(text: str) -> Callable[[int], int]:
    """PyYAML's 0-based line of ``text`` -> the 1-based line git numbers: PyYAML also ends a
    line at a lone ``\\r``, U+0085, U+2028 and U+2029 (a translation's scalar may hold them),
    so after one its numbers run ahead of the diff's."""
    if "\r" not in text and "\x85" not in text and "\u2028" not in text and "\u2029" not in text:
        return lambda line: line + 1
    starts = [1]  # git's line of each of PyYAML's lines
    for found in _YAML_BREAK.finditer(text):
        starts.append(starts[-1] + ("\n" in found.group()))
    return lambda line: starts[min(line, len(starts) - 1)]


def yaml_problem(text: str) -> tuple[int | None, str] | None:
    """One walk over the parser's events: the syntax within safe_yaml's bounds, and the values
    the safe loader could not build (``2024-13-45``, ``!!int abc``: every PyYAML consumer
    refuses them), each at its line. Application tags (``!Ref``) are opaque. The first problem
    as (1-based line as git numbers it, message), None for a file PyYAML reads."""
    git_line = git_line_of(text)
    build = BuildCheck(git_line)
    try:
        for event in checked_events(text):
            build.event(event)
    except YamlProblem as exc:
        line = git_line(exc.line) if exc.line is not None else None
        return line, f"invalid YAML: {exc.message}"
    if build.fault is not None:
        return git_line(build.fault.line), f"invalid YAML: {build.fault.message}"
    return None
