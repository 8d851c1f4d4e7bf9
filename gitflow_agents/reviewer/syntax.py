"""The builtin reviewer's syntax rules: parse a changed file's new content (Python, JSON, YAML,
TOML) and report the error line. A rule for a file is ``syntax_rule(path)``; a finding is
``syntax_finding(change, data)``, from the file's bytes: Python decodes them as the file's
coding declaration says (PEP 263), the other three formats must be UTF-8."""

from __future__ import annotations

import functools
import sys
import warnings
from _ast import PyCF_ONLY_AST  # the flag alone: ``ast`` costs a small review more (issue 20)
from collections.abc import Callable

from gitflow_agents.base.lazy import Lazy, on_first_use
from gitflow_agents.base.records import TYPE_CHECKING
from gitflow_agents.findings import Finding
from gitflow_agents.git.diffparse import FileChange
from gitflow_agents.reviewer.checks import (
    BOM,
    finding,
    is_python,
    python_line_in_git,
    python_source,
)

if TYPE_CHECKING:
    from typing import Any

# The parsers only a file of their kind needs, imported when one is reviewed (most small
# reviews have none: issue 20)
_JSON = on_first_use("json")
_YAML_BUILD = on_first_use("gitflow_agents.reviewer.yaml_build")  # PyYAML
_TOML = on_first_use("tomllib" if sys.version_info >= (3, 11) else "tomli")


class SyntaxProblem(Exception):
    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _python(source: str | bytes, path: str) -> None:
    """``source`` compiles: bytes as Python reads the file (a BOM skipped, the coding
    declaration obeyed, UTF-8 without one)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(
                python_source(source) if isinstance(source, str) else source,
                path,
                "exec",
                flags=PyCF_ONLY_AST,
                dont_inherit=True,
            )
        except SyntaxError as exc:  # line 0: the file's encoding (a BOM with a latin-1 cookie)
            line = python_line_in_git(source, exc.lineno) if exc.lineno else None
            raise SyntaxProblem(line, f"{type(exc).__name__}: {exc.msg}") from None
        except ValueError as exc:  # e.g. source contains null bytes
            raise SyntaxProblem(None, str(exc)) from None


def _json(text: str, path: str) -> None:
    """``text`` parses as JSON. A UTF-8 BOM before it is read as ``json.loads`` reads the file's
    bytes (and pre-commit-hooks' check-json with it): skipped, once; RFC 8259 lets a parser
    ignore it."""
    json = _JSON()
    text = text.removeprefix(BOM)
    try:
        json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        message = f"invalid JSON: duplicate key {exc.args[0][:80]!r}"
        where = _repeated_key_lines(text)
        if where is None:  # (nested too deeply for the second, pure-Python parse)
            raise SyntaxProblem(None, message) from None
        raise SyntaxProblem(where[1], f"{message} (first on line {where[0]})") from None
    except json.JSONDecodeError as exc:
        raise SyntaxProblem(exc.lineno, f"invalid JSON: {exc.msg}") from None
    except ValueError as exc:  # a number too long to convert (Python's 4,300-digit limit)
        raise SyntaxProblem(None, f"invalid JSON: {exc}") from None


class _DuplicateKey(Exception):
    """The key an object repeats, and the indexes of its pairs that hold it (first, second)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different (JSON says names SHOULD be unique; a repeated
    one silently loses a value, and pre-commit-hooks' check-json refuses it too)."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: dict[str, int] = {}
        for index, (key, _) in enumerate(pairs):
            if key in seen:
                raise _DuplicateKey(key, seen[key], index)
            seen[key] = index
    return result


class _Repeated(Exception):
    """The 1-based lines of the first repeated key's first and second occurrence."""


def _repeated_key_lines(text: str) -> tuple[int, int] | None:
    """Where the first key an object of ``text`` repeats is written (its first and second
    line), found by parsing again with json's pure-Python scanner, whose object parser is
    handed the function that parses each value (``json.decoder.JSONObject``): where the
    repeated pair's value starts, its key is the string before the ``:`` before it. Only
    when ``json.loads`` found a repeated key; None when that parse cannot tell."""
    json = _JSON()
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)

    def parse_object(s_and_end: tuple[str, int], strict: bool, scan_once: Any, *rest: Any) -> Any:
        starts: list[int] = []

        def scan(s: str, index: int) -> Any:
            starts.append(index)
            return scan_once(s, index)

        try:
            return json.decoder.JSONObject(s_and_end, strict, scan, *rest)
        except _DuplicateKey as exc:  # this object's own (an inner one's is _Repeated)
            first, second = (_key_line(text, starts[i]) for i in exc.args[1:])
            raise _Repeated(first, second) from None

    decoder.parse_object = parse_object
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    try:
        decoder.decode(text)
    except _Repeated as found:
        return found.args[0], found.args[1]
    except (ValueError, RecursionError, MemoryError):
        return None
    return None


def _key_line(text: str, value_start: int) -> int:
    """The line of the key whose value starts at ``value_start``: of the closing quote before
    the ``:`` (a JSON string holds no line break)."""
    return text.count("\n", 0, text.rindex('"', 0, text.rindex(":", 0, value_start))) + 1


def _yaml(text: str, path: str) -> None:
    problem: tuple[int | None, str] | None = _YAML_BUILD().yaml_problem(text)
    if problem is not None:
        raise SyntaxProblem(*problem)


def toml_parser() -> Callable[[str], object] | None:
    """``tomllib.loads`` (3.11+), else ``tomli.loads`` when installed, else None."""
    try:
        loads: Callable[[str], object] = _TOML().loads
    except ImportError:
        return None
    return loads


_TOML_LINE = Lazy(r"at line (\d+)")


def _toml(text: str, path: str) -> None:
    loads = toml_parser()
    assert loads is not None  # callers check toml_parser() first
    try:
        loads(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError subclasses ValueError
        match = _TOML_LINE.search(str(exc))
        raise SyntaxProblem(
            int(match.group(1)) if match else None, f"invalid TOML: {exc}"
        ) from None


# Files named *.json that the tool reading them documents as JSON with comments (JSONC): the
# TypeScript configs, dev containers and VS Code's settings, and ESLint's legacy config
# ("JSON files also allow JavaScript-style comments"), Babel's ("parsed as JSON5"),
# Turborepo's, Deno's, TypeDoc's ("parsed as JSONC") and API Extractor's (its template is
# commented). Not biome.json: Biome reads it as plain JSON (biome.jsonc takes comments).
# docs/review.md, json-syntax, lists them.
_JSONC = Lazy(
    r"(^|/)(tsconfig[^/]*|jsconfig[^/]*|\.?devcontainer|\.eslintrc|\.babelrc|babel\.config|turbo"
    r"|deno|typedoc|api-extractor)\.json$|(^|/)\.vscode/"
)

Parse = Callable[[bytes, str], None]
"""A syntax rule's parser: the file's bytes and path; ``SyntaxProblem`` when they do not parse,
at the line git numbers (``\\n`` alone ends a line)."""

# (rule, which paths, its parser, the name of the format when it must be UTF-8: None for
# Python, whose files say their encoding)
SYNTAX: tuple[tuple[str, Callable[[str], bool], Callable[[Any, str], None], str | None], ...] = (
    ("python-syntax", is_python, _python, None),
    ("json-syntax", lambda p: p.endswith(".json") and not _JSONC.search(p), _json, "JSON"),
    ("yaml-syntax", lambda p: p.endswith((".yaml", ".yml")), _yaml, "YAML"),
    ("toml-syntax", lambda p: p.endswith(".toml"), _toml, "TOML"),
)


def syntax_rule(path: str) -> tuple[str, Parse] | None:
    for rule, matches, parse, utf8 in SYNTAX:
        if matches(path):
            return rule, functools.partial(_within_limits, parse, utf8)
    return None


def _within_limits(
    parse: Callable[[Any, str], None], utf8: str | None, data: bytes, path: str
) -> None:
    """``parse`` of ``data`` (decoded first when the format, ``utf8``, must be UTF-8), where
    nesting too deep for a recursive parser (json, tomllib, Python's own: ``[[[[…`` in a
    reviewed file) is a finding, not a crash."""
    try:
        parse(data if utf8 is None else _utf8(data, utf8), path)
    except (RecursionError, MemoryError):
        raise SyntaxProblem(None, "nested too deeply to parse") from None


def _utf8(data: bytes, kind: str) -> str:
    """``data`` decoded as UTF-8 (RFC 8259 for JSON, the YAML and TOML specifications: what
    ``json.loads`` of the bytes, PyYAML and ``tomllib.load`` read); the first byte that is not
    UTF-8 is an error at its line, not a replacement character."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        message = f"invalid {kind}: not UTF-8 (byte 0x{data[exc.start]:02x})"
        raise SyntaxProblem(line, message) from None


def syntax_finding(change: FileChange, new_data: bytes) -> tuple[Finding, bool] | None:
    """The finding for a syntax error in ``new_data``, the new content of ``change`` (its bytes;
    None when it parses, has no syntax rule, or is a template), and whether it stands only if
    the old version parsed: an error that is not on an added line was not introduced by a
    change whose old version was already broken."""
    found = syntax_rule(change.path)
    if found is None:
        return None
    rule, parse = found
    try:
        parse(new_data, change.path)
        return None
    except SyntaxProblem as problem:
        new_problem = problem
    if rule == "yaml-syntax" and (b"{{" in new_data or b"{%" in new_data):
        return None  # a Helm / Jinja template, not plain YAML
    ends = new_data.endswith(b"\n") or not new_data
    last_line = new_data.count(b"\n") + (0 if ends else 1)
    if new_problem.line is not None and new_problem.line > last_line:
        # "unexpected end of file" errors point one past the end: anchor on the last line.
        new_problem.line = max(last_line, 1)
    added_at = {a.number: a.text for a in change.added_lines}
    content = added_at.get(new_problem.line or 0, "")
    result = finding(rule, new_problem.message, change, new_problem.line, content)
    return result, new_problem.line not in added_at


def parses(path: str, data: bytes) -> bool:
    """Whether ``data`` (a file's bytes) parses by the syntax rule of ``path`` (True when it
    has none)."""
    found = syntax_rule(path)
    if found is None:
        return True
    try:
        found[1](data, path)
    except SyntaxProblem:
        return False
    return True
