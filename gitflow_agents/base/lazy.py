"""Names a package imports from its modules only when first asked for (PEP 562 ``__getattr__``):
what keeps a small review's start-up free of modules it never uses (issue 20)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


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
