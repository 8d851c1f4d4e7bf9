"""Imports are at the top of every module but the entry points (issue 21, "Done when":
function-level imports outside ``cli.py`` / ``commands/``: 0). ruff's ``PLC0415`` says so too,
unless a ``noqa`` silences it; this reads the code itself."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gitflow_agents"
# argv -> command: these choose which modules a command imports (start-up, issue 2 and 20)
ENTRY = ("cli.py", "git_agent_review.py", "commands/")


def _imports_in_functions(path: Path, root: Path = PACKAGE) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_module_but_the_entry_points_imports_in_a_function() -> None:
    modules = [
        p
        for p in sorted(PACKAGE.rglob("*.py"))
        if not str(p.relative_to(PACKAGE)).startswith(ENTRY)
    ]
    assert len(modules) > 200
    assert [line for path in modules for line in _imports_in_functions(path)] == []


def test_an_import_in_a_function_is_found(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os\n\ndef f():\n    import json  # noqa: PLC0415\n")
    assert _imports_in_functions(module, tmp_path) == ["m.py:4"]
