"""The built-in reviewer's checks. Each looks at one changed file and yields findings.

Line checks look only at ADDED lines; syntax checks parse the new full file and report the
error line. Every finding carries a rule id (listed in ``RULES`` and docs/review.md).
Secrets are never quoted in full: ``mask`` (gitflow_agents/redact.py) keeps a short prefix.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gitflow_agents.diffparse import AddedLine, CommitPatch, FileChange
from gitflow_agents.findings import Finding, Severity
from gitflow_agents.redact import PRIVATE_KEY, assignment_hits, is_config_file, mask, token_hits
from gitflow_agents.redact import entropy as entropy  # re-exported: checks.entropy
from gitflow_agents.redact import secret_values as redact_secret_values
from gitflow_agents.reviewer import pydebug

# rule id -> (severity, one-line description); the table docs/review.md shows.
RULES: dict[str, tuple[Severity, str]] = {
    "python-syntax": (Severity.ERROR, "Python file does not compile"),
    "json-syntax": (Severity.ERROR, "JSON file does not parse"),
    "yaml-syntax": (Severity.ERROR, "YAML file does not parse (every document)"),
    "toml-syntax": (Severity.ERROR, "TOML file does not parse"),
    "merge-conflict-marker": (Severity.ERROR, "leftover merge-conflict marker"),
    "private-key": (Severity.ERROR, "private key block"),
    "aws-access-key": (Severity.ERROR, "AWS access key id"),
    "github-token": (Severity.ERROR, "GitHub token"),
    "slack-token": (Severity.ERROR, "Slack token"),
    "high-entropy-secret": (Severity.WARN, "secret-looking assignment with a high-entropy value"),
    "large-file": (Severity.WARN, "file larger than the size limit"),
    "debugger": (Severity.WARN, "debugger or debug-print leftover"),
    "todo": (Severity.INFO, "new TODO / FIXME"),
    "no-final-newline": (Severity.INFO, "file does not end with a newline"),
}


@dataclass(frozen=True)
class Options:
    max_file_bytes: int = 1024 * 1024
    entropy_threshold: float = 3.5  # bits per character
    min_secret_length: int = 16


def finding(
    rule: str, message: str, change: FileChange, line: int | None, content: str = ""
) -> Finding:
    severity = RULES[rule][0]
    return Finding(severity, message, file=change.path, line=line, rule=rule).with_fingerprint(
        content
    )


# --- syntax ---------------------------------------------------------------------------------


class SyntaxProblem(Exception):
    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _python(text: str, path: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as exc:
            raise SyntaxProblem(exc.lineno, f"{type(exc).__name__}: {exc.msg}") from None
        except ValueError as exc:  # e.g. source contains null bytes
            raise SyntaxProblem(None, str(exc)) from None


def _json(text: str, path: str) -> None:
    try:
        json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise SyntaxProblem(None, f"invalid JSON: duplicate key {exc.args[0][:80]!r}") from None
    except json.JSONDecodeError as exc:
        raise SyntaxProblem(exc.lineno, f"invalid JSON: {exc.msg}") from None
    except ValueError as exc:  # a number too long to convert (Python's 4,300-digit limit)
        raise SyntaxProblem(None, f"invalid JSON: {exc}") from None


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different (JSON says names SHOULD be unique; a repeated
    one silently loses a value, and pre-commit-hooks' check-json refuses it too)."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return result


def _yaml(text: str, path: str) -> None:
    """The syntax first (gitflow_agents/safe_yaml.py: bounded, nothing built), then the values
    the safe loader builds (``2024-13-45``, ``!!int abc`` are refused by every PyYAML consumer);
    application tags (``!Ref``) are opaque. An alias only references its anchor's value, so
    building costs no more than reading."""
    import yaml

    from gitflow_agents.safe_yaml import YamlProblem, check_syntax

    try:
        check_syntax(text)
    except YamlProblem as exc:
        line = exc.line + 1 if exc.line is not None else None
        raise SyntaxProblem(line, f"invalid YAML: {exc.message}") from None
    try:
        for _ in yaml.load_all(text, Loader=_yaml_loader()):  # a SafeLoader subclass
            pass
    except yaml.YAMLError as exc:
        raise SyntaxProblem(None, f"invalid YAML: {exc}") from None
    except Exception as exc:
        # PyYAML's constructors raise what their conversion raises on a value they cannot
        # build (ValueError for 2024-13-45, KeyError for !!bool maybe): the file does not load.
        what = str(exc) if not isinstance(exc, KeyError) else f"cannot build {exc}"
        raise SyntaxProblem(None, f"invalid YAML: {what}") from None


@functools.cache
def _yaml_loader() -> type[Any]:
    import yaml

    base: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc]
        """Safe loading that accepts application tags (!Ref, !!python/name:...) as opaque."""

    def _opaque(loader: Any, suffix: str, node: Any) -> None:
        return None

    Loader.add_multi_constructor("!", _opaque)
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", _opaque)
    return Loader


def toml_parser() -> Callable[[str], object] | None:
    """``tomllib.loads`` (3.11+), else ``tomli.loads`` when installed, else None."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads
    try:
        tomli = importlib.import_module("tomli")
    except ImportError:
        return None
    loads: Callable[[str], object] = tomli.loads
    return loads


_TOML_LINE = re.compile(r"at line (\d+)")


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


def is_python(path: str) -> bool:
    return path.endswith((".py", ".pyi"))


# Files with comments or trailing commas (JSONC) that are conventionally named *.json.
_JSONC = re.compile(r"(^|/)(tsconfig[^/]*|jsconfig[^/]*|\.?devcontainer)\.json$|(^|/)\.vscode/")

SYNTAX: tuple[tuple[str, Callable[[str], bool], Callable[[str, str], None]], ...] = (
    ("python-syntax", is_python, _python),
    ("json-syntax", lambda p: p.endswith(".json") and not _JSONC.search(p), _json),
    ("yaml-syntax", lambda p: p.endswith((".yaml", ".yml")), _yaml),
    ("toml-syntax", lambda p: p.endswith(".toml"), _toml),
)


def syntax_rule(path: str) -> tuple[str, Callable[[str, str], None]] | None:
    for rule, matches, parse in SYNTAX:
        if matches(path):
            return rule, functools.partial(_within_limits, parse)
    return None


def _within_limits(parse: Callable[[str, str], None], text: str, path: str) -> None:
    """``parse``, where nesting too deep for a recursive parser (json, tomllib, Python's own:
    ``[[[[…`` in a reviewed file) is a finding, not a crash."""
    try:
        parse(text, path)
    except (RecursionError, MemoryError):
        raise SyntaxProblem(None, "nested too deeply to parse") from None


def syntax_finding(change: FileChange, new_text: str) -> tuple[Finding, bool] | None:
    """The finding for a syntax error in ``new_text``, the new content of ``change`` (None when
    it parses, has no syntax rule, or is a template), and whether it stands only if the old
    version parsed: an error that is not on an added line was not introduced by a change whose
    old version was already broken."""
    found = syntax_rule(change.path)
    if found is None:
        return None
    rule, parse = found
    try:
        parse(new_text, change.path)
        return None
    except SyntaxProblem as problem:
        new_problem = problem
    if rule == "yaml-syntax" and ("{{" in new_text or "{%" in new_text):
        return None  # a Helm / Jinja template, not plain YAML
    last_line = new_text.count("\n") + (0 if new_text.endswith("\n") or not new_text else 1)
    if new_problem.line is not None and new_problem.line > last_line:
        # "unexpected end of file" errors point one past the end: anchor on the last line.
        new_problem.line = max(last_line, 1)
    added_at = {a.number: a.text for a in change.added_lines}
    content = added_at.get(new_problem.line or 0, "")
    result = finding(rule, new_problem.message, change, new_problem.line, content)
    return result, new_problem.line not in added_at


def parses(path: str, text: str) -> bool:
    """Whether ``text`` parses by the syntax rule of ``path`` (True when it has none)."""
    found = syntax_rule(path)
    if found is None:
        return True
    try:
        found[1](text, path)
    except SyntaxProblem:
        return False
    return True


# --- added-line checks ----------------------------------------------------------------------

_CONFLICT = re.compile(r"^(<{7}|>{7}|\|{7})(?: |$)")
_CONFLICT_MIDDLE = re.compile(r"^={7}$")


def check_conflict_markers(change: FileChange) -> Iterator[Finding]:
    opening = [a for a in change.added_lines if _CONFLICT.match(a.text)]
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


def check_secrets(change: FileChange, options: Options) -> Iterator[Finding]:
    """Private keys, known token formats, and secret-named assignments of a high-entropy
    literal: quoted anywhere; unquoted in configuration files (KEY=VALUE, ``key: value``,
    ``key = value``), where a bare value is a string, unless it is a URL, a path or words.
    The patterns live in ``gitflow_agents/redact.py``, which masks the same secrets in every
    output."""
    config = is_config_file(change.path)
    for added in change.added_lines:
        text = added.text
        if PRIVATE_KEY.search(text):
            yield finding(
                "private-key",
                "private key block added to the repository",
                change,
                added.number,
                text,
            )
            continue
        hit = False
        for rule, label, token in token_hits(text):
            hit = True
            yield finding(
                rule,
                f"{label} {mask(token)} added; revoke it and load it from the environment",
                change,
                added.number,
                text,
            )
        if hit:
            continue
        for match in assignment_hits(
            text,
            config=config,
            min_length=options.min_secret_length,
            entropy_threshold=options.entropy_threshold,
        ):
            yield finding(
                "high-entropy-secret",
                f"{match.group('name')} is assigned a high-entropy value "
                f"{mask(match.group('value'))}; load secrets from the environment or a secret "
                "store",
                change,
                added.number,
                text,
            )
            break


def secret_values(change: FileChange, options: Options) -> set[str]:
    """The exact values of the secrets ``change`` adds (what ``check_secrets`` reports), for
    masking wherever a reviewer quotes them."""
    return redact_secret_values(
        (a.text for a in change.added_lines),
        config=is_config_file(change.path),
        min_length=options.min_secret_length,
        entropy_threshold=options.entropy_threshold,
    )


def check_history_secrets(
    patches: Sequence[CommitPatch],
    net: Sequence[FileChange],
    options: Options,
) -> Iterator[Finding]:
    """The secret rules over the lines every commit of the range adds, for what the net diff
    does not show: a secret committed and removed again before the push still goes into the
    remote's history. Lines the net diff adds are left to it; each (path, text) is reported
    once, for the first commit that adds it. The finding is about the whole file (its line
    numbers are the commit's, not head's); the message names the commit and line."""
    seen = {(c.path, a.text) for c in net for a in c.added_lines}
    for patch in patches:
        for path, (lines, _) in patch.added.items():
            fresh = tuple(a for a in lines if (path, a.text) not in seen)
            if not fresh:
                continue
            seen.update((path, a.text) for a in fresh)
            change = FileChange(path, "M", added_lines=fresh)
            for found in check_secrets(change, options):
                message = (
                    f"{path}:{found.line} in commit {patch.sha[:12]} ({patch.subject}): "
                    f"{found.message}; the final change no longer adds it, but the commit "
                    "keeps it in the history: rewrite the commits before pushing, or revoke it"
                )
                text = next(a.text for a in fresh if a.number == found.line)
                yield Finding(
                    found.severity,
                    message,
                    file=path,
                    rule=found.rule,
                ).with_fingerprint(text)


_PY_DEBUG = re.compile(
    r"^\s*(?:breakpoint\(\)|import (?:i?pdb|pudb)\b|from (?:i?pdb|pudb) import\b)|\b(?:i?pdb|pudb)\.set_trace\("
)
_JS_DEBUG = re.compile(r"(?:^|[^\w.])console\.log\(|^\s*debugger\s*;?\s*$|[;{]\s*debugger\s*;")
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
        if match:
            yield finding(
                "debugger",
                f"{what} left in: {match.group(0).strip()}",
                change,
                added.number,
                added.text,
            )


def check_python_debugger(change: FileChange, text: str | None) -> Iterator[Finding]:
    """The debugger rule for a Python file whose new content is ``text``: Python's AST decides
    (an import of a debugger module, ``breakpoint()``, ``pdb.set_trace()``; words inside
    strings and comments are not statements), on the line where the statement starts, when
    that line is added. A file that does not parse (or whose content is unknown, None) falls
    back to the line regex of ``check_debugger``."""
    if not any(pydebug.WORDS.search(a.text) for a in change.added_lines):
        return
    statements = pydebug.debug_statements(text) if text is not None else None
    if statements is None:
        yield from check_debugger(change)
        return
    added = {a.number: a.text for a in change.added_lines}
    for line, what in sorted(statements.items()):
        if line in added:
            message = f"Python debugger call left in: {what}"
            yield finding("debugger", message, change, line, added[line])


def _is_comment(text: str) -> bool:
    return text.lstrip().startswith(("#", "//", "/*", "*"))


_TODO = re.compile(r"\b(TODO|FIXME)\b")


def check_todo(change: FileChange) -> Iterator[Finding]:
    for added in change.added_lines:
        match = _TODO.search(added.text)
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


def check_line_rules(change: FileChange, options: Options) -> Iterator[Finding]:
    """All checks that need only the added lines."""
    yield from check_conflict_markers(change)
    yield from check_secrets(change, options)
    if not is_python(change.path):  # Python: check_python_debugger, with the file's content
        yield from check_debugger(change)
    yield from check_todo(change)
    yield from check_final_newline(change)
