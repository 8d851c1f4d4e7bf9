"""The built-in reviewer's checks. Each looks at one changed file and yields findings.

Line checks look only at ADDED lines; syntax checks parse the new full file and report the
error line. Every finding carries a rule id (listed in ``findings/rules.py`` and docs/review.md).
Secrets are never quoted in full: ``mask`` (gitflow_agents/base/redact.py) keeps a short prefix.
Python debugger statements are read from Python's AST (``debug_statements``), as
pre-commit-hooks' debug-statements reads them, with ``compile``'s AST flag and the node classes
of ``_ast`` (built in, and loaded by every review's syntax rule): the ``ast`` module is a small
review's milliseconds (issue 20).
"""

from __future__ import annotations

import _ast
import re
import warnings
from collections.abc import Iterator, Sequence

from gitflow_agents.base.lazy import Lazy
from gitflow_agents.base.records import NamedTuple
from gitflow_agents.base.redact import mask
from gitflow_agents.base.redact import secret_values as redact_secret_values
from gitflow_agents.base.secret_keywords import (
    ENTROPY_THRESHOLD,
    MIN_LENGTH,
    char_quote_file,
    file_kind,
    keyword_hits,
)
from gitflow_agents.base.secret_rules import (
    ANY_BEGIN,
    ANY_END,
    KEY_BODY_LINE,
    PRIVATE_KEY,
    PRIVATE_KEY_END,
    is_key_body,
    may_begin_key,
    token_hits,
)
from gitflow_agents.findings import Finding
from gitflow_agents.findings.rules import RULES
from gitflow_agents.git.diffparse import AddedLine, FileChange, git_lines


class CheckOptions(NamedTuple):
    max_file_bytes: int = 1024 * 1024
    entropy_threshold: float = ENTROPY_THRESHOLD  # bits per character
    min_secret_length: int = MIN_LENGTH


def finding(
    rule: str,
    message: str,
    change: FileChange,
    line: int | None,
    content: str = "",
    occurrence: int = 1,
) -> Finding:
    severity = RULES[rule][0]
    return Finding(
        severity, message, file=change.path, line=line, rule=rule, occurrence=occurrence
    ).with_fingerprint(content)


def is_python(path: str) -> bool:
    return path.endswith((".py", ".pyi"))


BOM = "\ufeff"
"""A UTF-8 byte order mark, as the file's first character (Notepad and Visual Studio write it)."""


def python_source(text: str) -> str | bytes:
    """What to compile for a Python file whose content is ``text``: a file starting with a
    UTF-8 BOM as its bytes, so Python decides as it does for the file (``compile`` of bytes
    skips the BOM, and refuses one beside a coding declaration other than UTF-8); else the
    text, as before."""
    return text.encode("utf-8") if text.startswith(BOM) else text


def python_line_in_git(source: str | bytes, line: int) -> int:
    """git's number of the line Python numbers ``line`` in ``source`` (a file's content as
    written): Python also ends a line at a lone ``\\r``, git at ``\\n`` alone, so after a lone
    ``\\r`` Python's numbers run ahead of the diff's."""
    data = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
    one_end = data.replace(b"\r\n", b"\n") if b"\r" in data else data
    if line <= 1 or b"\r" not in one_end:
        return line
    # the start of Python's line ``line``: after its ``line - 1``-th line end (\n or \r)
    rest = one_end.replace(b"\r", b"\n").split(b"\n", line - 1)[-1]
    return one_end.count(b"\n", 0, len(one_end) - len(rest)) + 1


# --- added-line checks ----------------------------------------------------------------------

# compiled when a line starts like one (a small review compiles no regex it does not run)
_CONFLICT_STARTS = ("<<<<<<<", ">>>>>>>", "|||||||")
_CONFLICT = Lazy(r"^(<{7}|>{7}|\|{7})(?: |$)")
_CONFLICT_MIDDLE = Lazy(r"^={7}$")


def check_conflict_markers(change: FileChange) -> Iterator[Finding]:
    opening = [
        a
        for a in change.added_lines
        if a.text.startswith(_CONFLICT_STARTS) and _CONFLICT.match(a.text)
    ]
    # A bare ======= is also a reStructuredText / markdown underline: only with other markers.
    middle = [a for a in change.added_lines if _CONFLICT_MIDDLE.match(a.text)] if opening else []
    for added in sorted(opening + middle, key=lambda a: a.number):
        yield finding(
            "merge-conflict-marker",
            f"merge-conflict marker {added.text[:7]!r} left in the file",
            change,
            added.number,
            added.text,
        )


# Unicode's embeddings, overrides and isolates: each reorders the text after it on screen (to
# its line's end), so a reviewer reads code in another order than the compiler does ("Trojan
# Source", CVE-2021-42574). The marks (U+200E, U+200F, U+061C) reorder nothing beyond
# themselves and are common in right-to-left text: not reported (the output escapes them all).
_BIDI = Lazy("[\u202a-\u202e\u2066-\u2069]")
_BIDI_NAMES = {
    "\u202a": "LEFT-TO-RIGHT EMBEDDING",
    "\u202b": "RIGHT-TO-LEFT EMBEDDING",
    "\u202c": "POP DIRECTIONAL FORMATTING",
    "\u202d": "LEFT-TO-RIGHT OVERRIDE",
    "\u202e": "RIGHT-TO-LEFT OVERRIDE",
    "\u2066": "LEFT-TO-RIGHT ISOLATE",
    "\u2067": "RIGHT-TO-LEFT ISOLATE",
    "\u2068": "FIRST STRONG ISOLATE",
    "\u2069": "POP DIRECTIONAL ISOLATE",
}


def check_bidi_controls(change: FileChange) -> Iterator[Finding]:
    """A bidirectional control in an added line of source code or configuration (``file_kind``),
    where it can hide what the code does; prose, data and translation catalogs, where right-to-
    left text uses them, are not checked."""
    if file_kind(change.path) == "other":
        return
    for added in change.added_lines:
        text = added.text
        match = None if text.isascii() else _BIDI.search(text)
        if match:
            char = match.group()
            yield finding(
                "bidi-control",
                f"Unicode bidirectional control U+{ord(char):04X} ({_BIDI_NAMES[char]}) in "
                "the line: the text after it shows in another order than the code runs "
                f"(Trojan Source); remove it, or write it as an escape (\\u{ord(char):04x})",
                change,
                added.number,
                text,
            )


def check_secrets(change: FileChange, options: CheckOptions) -> Iterator[Finding]:
    """Private keys, known token formats, and secret-named literals that look like secrets
    (``gitflow_agents/base/secret_keywords.py``). The rules live in ``gitflow_agents/base/secret_rules.py``
    and are the ones that mask the same secrets in every output. Every secret of a line is a
    finding (``Finding.occurrence`` tells two of one rule apart); a secret-named value that is
    a token already found, or holds one (``token = "eyJ…"``), is left to the token's rule."""
    for found, _ in secret_hits(change, options):
        yield found


def secret_hits(
    change: FileChange, options: CheckOptions
) -> Iterator[tuple[Finding, frozenset[str]]]:
    """``check_secrets``' findings, each with the exact values it is about: the token, the
    secret-named value, or the base64 runs of a private key's body (none when the change
    does not show the body)."""
    kind, char_quotes = file_kind(change.path), char_quote_file(change.path)
    lines = change.added_lines
    for index, added in enumerate(lines):
        text = added.text
        if may_begin_key(text):
            if _key_block(text, lines[index + 1 :]):
                key = finding(
                    "private-key",
                    "private key block added to the repository",
                    change,
                    added.number,
                    text,
                )
                yield key, _key_values(change.path, text, lines[index + 1 :], options)
            continue
        counts: dict[str, int] = {}
        tokens: list[str] = []
        for rule, token in token_hits(text):
            tokens.append(token)
            counts[rule.id] = counts.get(rule.id, 0) + 1
            hit = finding(
                rule.id,
                f"{rule.label} {mask(token)} added; revoke it and load it from the environment",
                change,
                added.number,
                text,
                counts[rule.id],
            )
            yield hit, frozenset((token,))
        named = 0
        for found in keyword_hits(
            text,
            kind=kind,
            char_quotes=char_quotes,
            min_length=options.min_secret_length,
            entropy_threshold=options.entropy_threshold,
        ):
            if any(token in found.value or found.value in token for token in tokens):
                continue
            named += 1
            hit = finding(
                "high-entropy-secret",
                f"{found.name} is assigned a secret-looking value {mask(found.value)}; load "
                "secrets from the environment or a secret store",
                change,
                added.number,
                text,
                named,
            )
            yield hit, frozenset((found.value,))


def _key_block(begin: str, after: Sequence[AddedLine]) -> bool:
    """Whether a BEGIN line (``begin``) and the added lines ``after`` it are a real key: a body
    before its END line (the rest of the BEGIN line included: a key in a string, its line
    ends escaped), or no line after it in the change (the rest is not shown)."""
    start = PRIVATE_KEY.search(begin)
    rest = begin[start.end() :] if start else ""
    end = PRIVATE_KEY_END.search(rest)
    if end:  # BEGIN and END on one line
        return is_key_body(rest[: end.start()].split())
    body: list[str] = []
    for added in after[:200]:
        if PRIVATE_KEY_END.search(added.text) or ANY_BEGIN.search(added.text):
            break
        body.append(added.text)
    else:
        if not body:
            return True
    return is_key_body([rest, *body])


def _key_values(
    path: str, begin: str, after: Sequence[AddedLine], options: CheckOptions
) -> frozenset[str]:
    """The body values (``secret_values``) of the private key whose BEGIN line is ``begin``,
    read up to its END line among the added lines ``after`` it."""
    block = [begin]
    start = PRIVATE_KEY.search(begin)
    if not (start and PRIVATE_KEY_END.search(begin[start.end() :])):  # not all on one line
        for added in after[:200]:
            if ANY_BEGIN.search(added.text):
                break
            block.append(added.text)
            if PRIVATE_KEY_END.search(added.text):
                break
    return frozenset(
        redact_secret_values(
            block,
            path,
            min_length=options.min_secret_length,
            entropy_threshold=options.entropy_threshold,
        )
    )


def may_hold_key_body(change: FileChange) -> bool:
    """Whether ``change`` adds lines that may be the body of a private key whose BEGIN line it
    does not add (a rotated key): then ``key_body_lines`` needs the file's new content."""
    return any(KEY_BODY_LINE.fullmatch(a.text) for a in change.added_lines) and not any(
        may_begin_key(a.text) for a in change.added_lines
    )


_KEY_LOOKBACK = 1000  # lines above an added body line that may hold its key's BEGIN line


def key_body_lines(change: FileChange, text: str) -> list[AddedLine]:
    """The added lines of ``change`` that sit inside a private key block of ``text`` (the new
    content of the file, as written) whose BEGIN line is not part of the change: the nearest
    armour line (a BEGIN or END line) among the ``_KEY_LOOKBACK`` lines above a body line is a
    private key's BEGIN line (an END line wins when a line holds both).

    One pass down the file, remembering the nearest armour line: each line is searched once,
    not once per body line below it, up to 1,000 times (a list of 10,000 hashes took ~10 s)."""
    bodies = [a for a in change.added_lines if KEY_BODY_LINE.fullmatch(a.text)]
    if not bodies:
        return []
    lines = git_lines(text)
    last = len(lines) - 1
    armour, private = -1, False  # the nearest armour line at or above ``scanned``
    scanned = -1  # the index of the last line searched
    kept: set[int] = set()
    for position, added in sorted(enumerate(bodies), key=lambda item: item[1].number):
        above = min(added.number - 2, last)  # the index of the line above it, in the file
        low = max(0, added.number - 1 - _KEY_LOOKBACK)  # the highest line looked at
        for number in range(max(scanned + 1, low), above + 1):
            line = lines[number]
            if ANY_END.search(line):
                armour, private = number, False
            elif ANY_BEGIN.search(line):
                armour, private = number, bool(PRIVATE_KEY.search(line))
        scanned = max(scanned, above)
        if private and low <= armour <= above:
            kept.add(position)
    return [added for position, added in enumerate(bodies) if position in kept]


def check_key_body(change: FileChange, text: str) -> Iterator[Finding]:
    """One finding for a private key whose body lines ``change`` adds without its BEGIN line."""
    inside = key_body_lines(change, text)
    if inside and is_key_body([a.text for a in inside]):
        yield finding(
            "private-key",
            "private key body changed (a new key in an existing block); revoke the key and "
            "keep it out of the repository",
            change,
            inside[0].number,
            inside[0].text,
        )


def secret_values(change: FileChange, options: CheckOptions) -> set[str]:
    """The exact values of the secrets ``change`` adds (what ``check_secrets`` reports), for
    masking wherever a reviewer quotes them."""
    return redact_secret_values(
        (a.text for a in change.added_lines),
        change.path,
        min_length=options.min_secret_length,
        entropy_threshold=options.entropy_threshold,
    )


# Compiled when first used: Python files are read by their AST (check_python_debugger).
_PY_DEBUG = Lazy(
    r"^\s*(?:breakpoint\(\)|import (?:i?pdb|pudb)\b|from (?:i?pdb|pudb) import\b)|\b(?:i?pdb|pudb)\.set_trace\("
)
_JS_DEBUG = Lazy(r"(?:^|[^\w.])console\.log\(|^\s*debugger\s*;?\s*$|[;{]\s*debugger\s*;")
_JS_FILES = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".vue", ".svelte")


def check_debugger(change: FileChange) -> Iterator[Finding]:
    """The debugger rule by line regex (JS/TS; Python files that do not parse)."""
    if is_python(change.path):
        pattern, what = _PY_DEBUG, "Python debugger call"
    elif change.path.endswith(_JS_FILES):
        pattern, what = _JS_DEBUG, "debug statement"
    else:
        return
    for added in change.added_lines:
        if _is_comment(added.text):
            continue
        match = pattern.search(added.text)
        if match and not _in_string(added.text, match.end() - 1):
            yield finding(
                "debugger",
                f"{what} left in: {match.group(0).strip()}",
                change,
                added.number,
                added.text,
            )


def _in_string(text: str, position: int) -> bool:
    """Whether ``position`` in a line of code is inside a quoted string (``'…'``, ``"…"`` or
    a template), read from the line's start: ``writeFileSync(f, 'console.log(x)')`` writes a
    debug statement into a file rather than leaving one in."""
    quote = ""
    escaped = False
    for ch in text[:position]:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
    return bool(quote)


# What pre-commit-hooks' debug-statements treats as a debugger: importing one of these modules
# (or a submodule), and calling breakpoint(); we also report ``<module>.set_trace()`` calls.
DEBUGGER_MODULES = frozenset(
    ("bpdb", "ipdb", "pdb", "pdbr", "pudb", "pydevd_pycharm", "q", "rdb", "rpdb", "wdb")
)


def debug_statements(source: str | bytes) -> dict[int, str] | None:
    """Line -> the first debugger statement that starts on it (imports of debugger modules,
    ``breakpoint()``, ``<debugger module>.set_trace()``); None when ``source`` (a text, or the
    file's bytes, read as Python reads the file) does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = compile(
                python_source(source) if isinstance(source, str) else source,
                "<unknown>",
                "exec",
                flags=_ast.PyCF_ONLY_AST,
                dont_inherit=True,
            )
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: dict[tuple[int, int], str] = {}
    for node in _walk(tree):
        if isinstance(node, (_ast.Import, _ast.ImportFrom, _ast.Call)):
            what = _debug_statement(node)
            if what is not None:
                found[(node.lineno, node.col_offset)] = what
    by_line: dict[int, str] = {}
    for (line, _), what in sorted(found.items()):
        by_line.setdefault(line, what)  # one finding per line: `import pdb; pdb.set_trace()`
    return by_line


def _walk(tree: _ast.AST) -> Iterator[_ast.AST]:
    """Every node of ``tree`` (in no particular order: ``ast.walk`` without ``ast``)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, _ast.AST):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(item for item in value if isinstance(item, _ast.AST))


def _debug_statement(node: _ast.Import | _ast.ImportFrom | _ast.Call) -> str | None:
    if isinstance(node, _ast.Import):
        names = [a.name for a in node.names if a.name.split(".")[0] in DEBUGGER_MODULES]
        return f"import {names[0]}" if names else None
    if isinstance(node, _ast.ImportFrom):
        module = node.module or ""
        debugger = node.level == 0 and module.split(".")[0] in DEBUGGER_MODULES
        return f"from {module} import ..." if debugger else None
    func = node.func
    if isinstance(func, _ast.Name) and func.id == "breakpoint":
        return "breakpoint()"
    if (
        isinstance(func, _ast.Attribute)
        and func.attr == "set_trace"
        and isinstance(func.value, _ast.Name)
        and func.value.id in DEBUGGER_MODULES
    ):
        return f"{func.value.id}.set_trace()"
    return None


# The pre-filter: a Python file is parsed for debugger statements only when an added line has
# one of these words (every line the regex or the AST rule can report has one).
DEBUGGER_WORDS = re.compile(
    r"\b(?:breakpoint|set_trace|" + "|".join(sorted(DEBUGGER_MODULES)) + r")\b"
)


def check_python_debugger(change: FileChange, text: str | bytes | None) -> Iterator[Finding]:
    """The debugger rule for a Python file whose new content is ``text`` (or its bytes):
    Python's AST decides (an import of a debugger module, ``breakpoint()``, ``pdb.set_trace()``;
    words inside strings and comments are not statements), on the line where the statement
    starts, when that line is added. A file that does not parse (or whose content is unknown,
    None) falls back to the line regex of ``check_debugger``."""
    if not any(DEBUGGER_WORDS.search(a.text) for a in change.added_lines):
        return
    statements = debug_statements(text) if text is not None else None
    if statements is None:
        yield from check_debugger(change)
        return
    added = {a.number: a.text for a in change.added_lines}
    assert text is not None
    for python_line, what in sorted(statements.items()):
        line = python_line_in_git(text, python_line)
        if line in added:
            message = f"Python debugger call left in: {what}"
            yield finding("debugger", message, change, line, added[line])


def _is_comment(text: str) -> bool:
    return text.lstrip().startswith(("#", "//", "/*", "*"))


_TODO = Lazy(r"\b(TODO|FIXME)\b")  # compiled when a line holds either word


def check_todo(change: FileChange) -> Iterator[Finding]:
    for added in change.added_lines:
        text = added.text
        match = _TODO.search(text) if "TODO" in text or "FIXME" in text else None
        if match:
            note = added.text[match.end() :].strip(" :-").strip()
            message = f"new {match.group(1)}" + (f": {note[:120]}" if note else "")
            yield finding("todo", message, change, added.number, added.text)


def check_final_newline(change: FileChange) -> Iterator[Finding]:
    if change.no_final_newline and change.added_lines:
        last: AddedLine = change.added_lines[-1]
        yield finding(
            "no-final-newline", "file does not end with a newline", change, last.number, last.text
        )


def check_line_rules(change: FileChange, options: CheckOptions) -> Iterator[Finding]:
    """All checks that need only the added lines."""
    yield from check_conflict_markers(change)
    yield from check_bidi_controls(change)
    yield from check_secrets(change, options)
    if not is_python(change.path):  # Python: check_python_debugger, with the file's content
        yield from check_debugger(change)
    yield from check_todo(change)
    yield from check_final_newline(change)
