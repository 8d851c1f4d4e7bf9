"""``typing.NamedTuple`` and ``typing.TYPE_CHECKING`` without importing ``typing`` (issue 20).

Importing ``typing`` took about a tenth of a small review's CPU (3.3 ms of ~34) although the
review only needs it for class-based named tuples and ``TYPE_CHECKING``. Type checkers see the
real ``typing.NamedTuple``; at run time ``NamedTuple`` builds the same
``collections.namedtuple`` that ``typing.NamedTuple`` builds (fields from the annotations, the
defaults and methods from the class body), so instances, ``_replace``, ``_asdict`` and
pickling are unchanged. Annotations stay strings (``from __future__ import annotations``);
names used only in them are imported under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False  # type checkers read any ``if TYPE_CHECKING:`` as true

if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    # what a class body may not redefine, and what is not copied from it (as typing does)
    _PROHIBITED = frozenset(
        {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults"}
        | {"_make", "_replace", "_asdict", "_source"}
    )
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _NamedTupleMeta(type):
        def __new__(mcs, typename, bases, ns):
            if not bases:  # NamedTuple itself
                return super().__new__(mcs, typename, bases, ns)
            if bases != (NamedTuple,):
                raise TypeError("can only inherit from NamedTuple")
            types = ns.get("__annotations__")
            if types is None and "__annotate__" in ns:  # 3.14+ without the __future__ import
                types = ns["__annotate__"](1)  # annotationlib.Format.VALUE
            types = types or {}
            defaults = [name for name in types if name in ns]
            if defaults and defaults != list(types)[-len(defaults) :]:
                raise TypeError(f"{typename}: a field without a default follows one with it")
            record = collections.namedtuple(
                typename, types, defaults=[ns[name] for name in defaults], module=ns["__module__"]
            )
            record.__annotations__ = record.__new__.__annotations__ = types
            for key, value in ns.items():
                if key in _PROHIBITED:
                    raise AttributeError(f"Cannot overwrite NamedTuple attribute {key}")
                if key not in _SPECIAL and key not in record._fields:
                    setattr(record, key, value)
            return record

    class NamedTuple(metaclass=_NamedTupleMeta):
        """``class Point(NamedTuple): x: int; y: int = 0`` as with ``typing.NamedTuple``."""
