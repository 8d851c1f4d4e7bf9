"""base/records.py: ``NamedTuple`` behaves as ``typing.NamedTuple`` without importing ``typing``."""

from __future__ import annotations

import pickle
import subprocess
import sys
import typing

import pytest

from gitflow_agents.base import records
from gitflow_agents.base.records import NamedTuple


class Point(NamedTuple):
    """A point."""

    x: int
    y: int = 0
    label: str = "p"

    def moved(self, by: int) -> Point:
        return self._replace(x=self.x + by)

    @property
    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)


class TypedPoint(typing.NamedTuple):
    """A point."""

    x: int
    y: int = 0
    label: str = "p"


def test_the_same_record_as_typing_builds() -> None:
    point, typed = Point(3), TypedPoint(3)
    assert tuple(point) == tuple(typed) == (3, 0, "p")
    assert point == (3, 0, "p")
    assert Point._fields == TypedPoint._fields
    assert Point._field_defaults == TypedPoint._field_defaults
    assert list(Point.__annotations__) == list(TypedPoint.__annotations__)
    assert Point.__bases__ == TypedPoint.__bases__ == (tuple,)
    assert Point.__doc__ == TypedPoint.__doc__
    assert (Point.__module__, Point.__qualname__) == (__name__, "Point")
    assert repr(Point(1, 2)) == "Point(x=1, y=2, label='p')"
    assert Point(1, 2).moved(3) == Point(4, 2) and Point(-1, 2).norm1 == 3
    assert Point(1)._asdict() == {"x": 1, "y": 0, "label": "p"}
    assert pickle.loads(pickle.dumps(Point(5, 6, "q"))) == Point(5, 6, "q")
    assert isinstance(Point(1), tuple)
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]


def test_what_typing_refuses_is_refused() -> None:
    with pytest.raises(TypeError, match="follows"):

        class Bad(NamedTuple):
            a: int = 1
            b: int  # type: ignore[misc]

    with pytest.raises(AttributeError, match="_replace"):

        class Worse(NamedTuple):
            a: int

            def _replace(self) -> None:  # type: ignore[misc]
                pass

    with pytest.raises(TypeError, match="only inherit"):

        class Mixed(NamedTuple, Exception):  # type: ignore[misc]
            a: int


def test_type_checking_is_false_at_run_time() -> None:
    assert records.TYPE_CHECKING is False


def test_importing_it_does_not_import_typing() -> None:
    code = (
        "import sys\n"
        "from gitflow_agents.base.records import NamedTuple\n"
        "class P(NamedTuple):\n    x: int\n"
        "print(P(1), 'typing' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["P(x=1)", "False"]


def test_fields_come_from_a_lazy_annotate_function_as_python_3_14_gives_one() -> None:
    """Without ``from __future__ import annotations``, 3.14 puts ``__annotate__`` in the class
    namespace instead of ``__annotations__`` (PEP 649/749)."""
    namespace = {
        "__module__": __name__,
        "y": 2,
        "__annotate__": lambda format: {"x": int, "y": int},
    }
    point = type(records.NamedTuple)("Point", (records.NamedTuple,), namespace)
    assert point._fields == ("x", "y") and point(1) == (1, 2)
