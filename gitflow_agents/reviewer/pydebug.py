"""Python debugger statements, read from Python's AST (the builtin reviewer's ``debugger`` rule
for Python files, ``checks.check_python_debugger``): what pre-commit-hooks' debug-statements
finds, so a debugger named inside a string or a comment is no statement."""

from __future__ import annotations

import ast
import re
import warnings

# What pre-commit-hooks' debug-statements treats as a debugger: importing one of these modules
# (or a submodule), and calling breakpoint(); we also report ``<module>.set_trace()`` calls.
MODULES = frozenset(
    ("bpdb", "ipdb", "pdb", "pdbr", "pudb", "pydevd_pycharm", "q", "rdb", "rpdb", "wdb")
)
# The pre-filter: a Python file is parsed for debugger statements only when an added line has
# one of these words (every line the regex or the AST rule can report has one).
WORDS = re.compile(r"\b(?:breakpoint|set_trace|" + "|".join(sorted(MODULES)) + r")\b")


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
