"""The built-in reviewer's checks. Each looks at one changed file and yields findings.

Line checks look only at ADDED lines; syntax checks parse the new full file and report the
error line. Every finding carries a rule id (listed in ``RULES`` and docs/review.md).
Secrets are never quoted in full: ``mask`` keeps a short prefix.
"""

from __future__ import annotations

import importlib
import json
import math
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from gitflow_agents.findings import Finding, Severity
from gitflow_agents.git import AddedLine, CommitPatch, FileChange

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


def mask(secret: str) -> str:
    """A recognisable but useless prefix: ``AKIA****************`` style, never the whole value."""
    keep = min(4, len(secret) // 4)
    return secret[:keep] + "*" * min(len(secret) - keep, 12) + f" ({len(secret)} chars)"


# --- syntax ---------------------------------------------------------------------------------


class SyntaxProblem(Exception):
    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _python(text: str, path: str) -> None:
    import ast

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
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise SyntaxProblem(exc.lineno, f"invalid JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:  # a 5,000-digit number, absurd nesting
        raise SyntaxProblem(None, f"JSON cannot be read: {str(exc).splitlines()[0]}") from None


def _yaml(text: str, path: str) -> None:
    """Syntax only (gitflow_agents/safe_yaml.py): application tags (``!Ref``) are fine, nothing
    is built, so an alias bomb or a deep nesting in the reviewed file costs no more than reading it."""
    from gitflow_agents.safe_yaml import YamlProblem, check_syntax

    try:
        check_syntax(text)
    except YamlProblem as exc:
        line = exc.line + 1 if exc.line is not None else None
        raise SyntaxProblem(line, f"invalid YAML: {exc.message}") from None


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


# Files with comments or trailing commas (JSONC) that are conventionally named *.json.
_JSONC = re.compile(r"(^|/)(tsconfig[^/]*|jsconfig[^/]*|\.?devcontainer)\.json$|(^|/)\.vscode/")

SYNTAX: tuple[tuple[str, Callable[[str], bool], Callable[[str, str], None]], ...] = (
    ("python-syntax", lambda p: p.endswith((".py", ".pyi")), _python),
    ("json-syntax", lambda p: p.endswith(".json") and not _JSONC.search(p), _json),
    ("yaml-syntax", lambda p: p.endswith((".yaml", ".yml")), _yaml),
    ("toml-syntax", lambda p: p.endswith(".toml"), _toml),
)


def syntax_rule(path: str) -> tuple[str, Callable[[str, str], None]] | None:
    for rule, matches, parse in SYNTAX:
        if matches(path):
            return rule, parse
    return None


def check_syntax(
    change: FileChange,
    new_text: str,
    old_text: Callable[[], str | None],
) -> Iterator[Finding]:
    """Parse the new content; report an error introduced (or touched) by this change.

    When the old version was already broken the same way, report only if the error line is
    one of the added lines: the change did not introduce it otherwise.
    """
    found = syntax_rule(change.path)
    if found is None:
        return
    rule, parse = found
    try:
        parse(new_text, change.path)
        return
    except SyntaxProblem as problem:
        new_problem = problem
    if rule == "yaml-syntax" and ("{{" in new_text or "{%" in new_text):
        return  # a Helm / Jinja template, not plain YAML
    last_line = new_text.count("\n") + (0 if new_text.endswith("\n") or not new_text else 1)
    if new_problem.line is not None and new_problem.line > last_line:
        # "unexpected end of file" errors point one past the end: anchor on the last line.
        new_problem.line = max(last_line, 1)
    added_at = {a.number: a.text for a in change.added_lines}
    if new_problem.line not in added_at:
        before = old_text()
        if before is not None:
            try:
                parse(before, change.path)
            except SyntaxProblem:
                return  # already broken before this change, and not on a changed line
    content = added_at.get(new_problem.line or 0, "")
    yield finding(rule, new_problem.message, change, new_problem.line, content)


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


_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_TOKENS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    (
        "aws-access-key",
        "AWS access key id",
        re.compile(r"\b((?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16})\b"),
    ),
    ("github-token", "GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{36,255})\b")),
    (
        "github-token",
        "GitHub fine-grained token",
        re.compile(r"\b(github_pat_[A-Za-z0-9_]{22,255})\b"),
    ),
    ("slack-token", "Slack token", re.compile(r"\b(xox[abprs]-[A-Za-z0-9-]{10,})")),
)
_ASSIGNMENT = re.compile(
    r"""(?ix)
    (?P<name>[a-z0-9_.-]*(?:secret|passw(?:or)?d|pwd|token|api[_-]?key|apikey|access[_-]?key|
        auth[_-]?key|client[_-]?secret|private[_-]?key|credential)[a-z0-9_.-]*)
    ["']?\s*(?::=|=>|[:=])\s*
    (?P<quote>["'`]?)(?P<value>[^\s"'`,;)]+)(?P=quote)
    """
)
_PLACEHOLDER = re.compile(
    r"^(?:\$\{?|<|%\(|\{\{|os\.|env\.|process\.env|getenv|xxx|\*\*\*|changeme)", re.I
)


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts: dict[str, int] = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values()) if n else 0.0


# Files where an unquoted value is a literal string, not a name: .env files, shell scripts,
# Dockerfiles, YAML, INI-style and TOML configuration, .npmrc / .pypirc.
_CONFIG_FILE = re.compile(
    r"""(?ix)(?:^|/)(?:
        \.env(?:\.[^/]*)?|[^/]*\.env|\.envrc|\.npmrc|\.pypirc|\.netrc|
        (?:[^/]*\.)?dockerfile|dockerfile\.[^/]*|containerfile|
        [^/]*\.(?:sh|bash|zsh|ksh|ya?ml|ini|cfg|conf|toml|properties)
    )$"""
)
# Unquoted values that are not secrets however random they look: URLs, absolute or home or
# relative paths, and words (letters, then digits) joined by - _ . (names like deploy-bot2).
_URL_OR_PATH = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|/|~|\.\.?/)|^[a-z0-9._-]+(?:/[a-z0-9._-]+)+$")
_WORDS = re.compile(r"^[A-Za-z]+\d*(?:[-_.][A-Za-z]+\d*)*$")


def _plain_literal(value: str) -> bool:
    """An unquoted config value that is a URL, a path or words, not a credential."""
    return bool(_URL_OR_PATH.match(value) or _WORDS.match(value))


def _looks_like_code(value: str) -> bool:
    # Identifiers, attribute chains and calls (settings.API_TOKEN, get_token()) are not secrets.
    return bool(
        re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(.*)?", value)
    )


def check_secrets(change: FileChange, options: Options) -> Iterator[Finding]:
    """Private keys, known token formats, and secret-named assignments of a high-entropy
    literal: quoted anywhere; unquoted in configuration files (KEY=VALUE, ``key: value``,
    ``key = value``), where a bare value is a string, unless it is a URL, a path or words."""
    config = bool(_CONFIG_FILE.search(change.path))
    for added in change.added_lines:
        text = added.text
        if _PRIVATE_KEY.search(text):
            yield finding(
                "private-key",
                "private key block added to the repository",
                change,
                added.number,
                text,
            )
            continue
        hit = False
        for rule, label, pattern in _TOKENS:
            for match in pattern.finditer(text):
                token = match.group(1)
                if "EXAMPLE" in token:  # AWS documentation's AKIAIOSFODNN7EXAMPLE
                    continue
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
        for match in _ASSIGNMENT.finditer(text):
            value = match.group("value")
            unquoted = not match.group("quote")
            if (
                len(value) < options.min_secret_length
                or _PLACEHOLDER.match(value)
                or (unquoted and config and _plain_literal(value))
                or (unquoted and not config and _looks_like_code(value))
                or entropy(value) < options.entropy_threshold
            ):
                continue
            yield finding(
                "high-entropy-secret",
                f"{match.group('name')} is assigned a high-entropy value {mask(value)}; "
                "load secrets from the environment or a secret store",
                change,
                added.number,
                text,
            )
            break


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
    if change.path.endswith((".py", ".pyi")):
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
    yield from check_debugger(change)
    yield from check_todo(change)
    yield from check_final_newline(change)
