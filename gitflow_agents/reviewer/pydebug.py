"""Python debugger statements, read from Python's AST (the builtin reviewer's ``debugger`` rule
for Python files, ``checks.check_python_debugger``): what pre-commit-hooks' debug-statements
finds, so a debugger named inside a string or a comment is no statement. Imported only for a
file whose added lines pass ``checks.DEBUGGER_WORDS`` (``ast`` is a small review's
milliseconds, issue 20)."""

from __future__ import annotations

import ast
import warnings

from gitflow_agents.reviewer.checks import DEBUGGER_MODULES as MODULES


def debug_statements(text: str) -> dict[int, str] | None:
    """Line -> the first debugger statement that starts on it (imports of debugger modules,
    ``breakpoint()``, ``<debugger module>.set_trace()``); None when ``text`` does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: dict[tuple[int, int], str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Call)):
            what = _debug_statement(node)
            if what is not None:
                found[(node.lineno, node.col_offset)] = what
    by_line: dict[int, str] = {}
    for (line, _), what in sorted(found.items()):
        by_line.setdefault(line, what)  # one finding per line: `import pdb; pdb.set_trace()`
    return by_line


def _debug_statement(node: ast.Import | ast.ImportFrom | ast.Call) -> str | None:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names if a.name.split(".")[0] in MODULES]
        return f"import {names[0]}" if names else None
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        debugger = node.level == 0 and module.split(".")[0] in MODULES
        return f"from {module} import ..." if debugger else None
    func = node.func
    if isinstance(func, ast.Name) and func.id == "breakpoint":
        return "breakpoint()"
    if (
        isinstance(func, ast.Attribute)
        and func.attr == "set_trace"
        and isinstance(func.value, ast.Name)
        and func.value.id in MODULES
    ):
        return f"{func.value.id}.set_trace()"
    return None
