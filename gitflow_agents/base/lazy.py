"""What a small review's start-up does not pay for until it is used (issue 20): the names a
package imports from its modules only when first asked for (PEP 562 ``__getattr__``), the
modules only some content needs (``on_first_use``), paths made without importing pathlib at
start-up (``path``), and regular expressions compiled on first use (``Lazy``)."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType

from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from _typeshed import StrPath


def lazy_names(package: str, table: Mapping[str, str]) -> Callable[[str], object]:
    """The module ``__getattr__`` of ``package`` for ``table`` (name → its module under the
    package): the module is imported on first use and the name kept on the package."""

    def __getattr__(name: str) -> object:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{table[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


def on_first_use(name: str) -> Callable[[], ModuleType]:
    """The module ``name``, imported by the first call. For a module only some content needs
    (a JSON file's parser, the AST reader of a line naming a debugger, the hash of a finding):
    declared at the top of the module that uses it, with its reason, so that what a module
    depends on is read there as from its imports (issue 21); no import inside a function."""
    # no cache of our own: as an import statement, each call asks sys.modules (a dict lookup
    # once imported), so what a test puts there is seen
    return lambda: importlib.import_module(name)


_pathlib = on_first_use("pathlib")


def path(*parts: StrPath) -> Path:
    """``pathlib.Path(*parts)``, pathlib imported by the first call: it costs a small review
    ~3 ms of start-up (with urllib.parse and ipaddress), and a review passes the top of the
    work tree on as the string git printed; only what some reviews do (a baseline, a cache
    write, ``--output``) needs a Path (issue 20)."""
    made: Path = _pathlib().Path(*parts)
    return made


class Lazy:
    """A regular expression compiled when it is first used. Most of the ~50 secret patterns
    never run in a small review (a token rule's regex only runs on a line holding its
    ``starts`` literal), nor do those that only a finding, a JSON or TOML file or an agent
    reviewer needs, and compiling them all at import took a large share of the start-up of
    every ``git agent-review`` (issue 20)."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source, self._flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def ready(self) -> bool:
        """Whether it has been compiled (the start-up test holds what a small review compiles)."""
        return self._compiled is not None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.search(text, pos)

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.match(text, pos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.fullmatch(text, pos, endpos)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text)

    def findall(self, text: str) -> list[str]:
        return self.compiled.findall(text)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str) -> str:
        return self.compiled.sub(repl, text)
