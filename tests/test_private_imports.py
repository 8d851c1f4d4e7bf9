"""A module's private names (``_name``) are its own: no other module of the package imports one.
What two modules share is a public name of the module that owns the idea (``github/pr/tend.py``
took ``_guard`` and ``_no_target`` from ``step.py``; ``git/lease.py`` took ``_push`` from
``git/remote.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = "gitflow_agents"

# supervisor/ re-exports its watcher's libc look-up for chain/agents.py's warm-up; the supervisor
# is being reworked on another branch, which owns that name.
KNOWN = {"gitflow_agents/supervisor/__init__.py: _libc from gitflow_agents.supervisor.watch"}


def private_imports(package_dir: Path) -> set[str]:
    """``file: name from module`` for every private name imported from a module of the package
    (relative imports included)."""
    found = set()
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = node.module or ""
            if not node.level and not module.startswith(package_dir.name):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.add(f"{relative}: {alias.name} from {'.' * node.level}{module}")
    return found


def test_no_module_imports_another_modules_private_name() -> None:
    assert private_imports(ROOT / PACKAGE) - KNOWN == set()


def test_a_private_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE
    (package / "pr").mkdir(parents=True)
    (package / "pr" / "step.py").write_text("def _guard(): ...\ndef guard(): ...\n")
    (package / "pr" / "tend.py").write_text(
        "from gitflow_agents.pr.step import _guard, guard\n"
        "from .step import _guard as g\n"
        "from os.path import _get_sep\n"
        "from gitflow_agents.pr.step import failure as _fail\n"
        "def f():\n"
        "    from gitflow_agents.pr import _hidden\n"
    )
    assert private_imports(package) == {
        "gitflow_agents/pr/tend.py: _guard from gitflow_agents.pr.step",
        "gitflow_agents/pr/tend.py: _guard from .step",
        "gitflow_agents/pr/tend.py: _hidden from gitflow_agents.pr",
    }
