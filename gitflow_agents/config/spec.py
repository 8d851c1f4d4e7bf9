"""The kinds of value a `.flow/` YAML file holds (``Str``, ``Int``, ``Obj``, ``MapOf``...), the
words ``check.py`` reads to validate a layer and ``json_schema.py`` to describe it; ``shape.py``
declares the file with them. Apart from ``shape.py`` so that checking the ``review:`` section
(``review_shape.py``) loads no part of the rest of the shape (issue 20: the builtin reviewer
reads it on every commit). NamedTuples, not frozen dataclasses, for the same reason (the
dataclasses module and the code a frozen dataclass generates cost a small review ~6 ms); give
their values by keyword, and compare them by type first (as tuples, ``Bool(doc="x")`` equals
``Num(doc="x")``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

# Names of agents, shared files, flow types and variants.
NAME_PATTERN = "[A-Za-z0-9][A-Za-z0-9_.-]*"


_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})

MAX_WHOLE = 10**15
"""The most a whole number in a layer may be (``Int``): 15 digits, exact in every JSON reader
(doubles) and far beyond any count the tool keeps (``agents.output.MAX_COUNT``)."""
MAX_SECONDS = 365 * 86400
"""The most a ``defaults:`` limit may be: a year, in seconds."""
MAX_USD = 10**9
"""The most an amount in USD may be (``Num``: a budget, a price), as a cost an agent reports
(``agents.output.MAX_USD``)."""


class Str(NamedTuple):
    """A non-empty string; ``nullable``: or null. ``choices`` is a tuple, or a function
    returning one (read when a file is checked, so a registry can supply it). ``hint`` is added
    to the message for a value that is not a string."""

    doc: str = ""
    hint: str = ""
    default: str | None = None
    nullable: bool = False
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()
    schema_extra: Mapping[str, Any] = _NO_EXTRA

    def allowed(self) -> tuple[str, ...]:
        return self.choices() if callable(self.choices) else self.choices


class Int(NamedTuple):
    """A whole number from ``minimum`` to ``maximum``."""

    minimum: int
    what: str = "a whole number of seconds"
    doc: str = ""
    default: int | None = None
    maximum: int = MAX_WHOLE


class Num(NamedTuple):
    """A finite number (integer or decimal) from 0 to ``maximum``."""

    doc: str = ""
    maximum: int = MAX_USD


class Bool(NamedTuple):
    doc: str = ""
    default: bool | None = None


class StrList(NamedTuple):
    """A list of strings, each matching ``pattern`` (a regular expression, whole string)."""

    pattern: str | None = None
    what: str = ""
    doc: str = ""
    default: tuple[str, ...] | None = None
    schema_extra: Mapping[str, Any] = _NO_EXTRA


class Command(NamedTuple):
    """An argv: a list of strings, or one string split like a shell would (no shell runs)."""

    doc: str = ""


class AnyMap(NamedTuple):
    doc: str = ""


class Obj(NamedTuple):
    fields: Mapping[str, Spec]
    doc: str = ""


class MapOf(NamedTuple):
    """A mapping from names to ``item``: names match ``key_pattern`` (default ``NAME_PATTERN``),
    ``key_what`` says what a name is in the message for one that does not."""

    item: Obj
    doc: str = ""
    key_pattern: str = NAME_PATTERN
    key_what: str = "use letters, digits, '.', '_' and '-' (starting with a letter or digit)"


Spec = Str | Int | Num | Bool | StrList | Command | AnyMap | Obj | MapOf


# Keys of the original Flow CLI that mean something else here: say so instead of "unknown".
HINTS = {
    "agent_interface": "choose the agent CLI per agent with agents.<name>.adapter",
    "base_config": "layers are fixed: .flow/base.yaml, .flow/<flow-type>/base.yaml, "
    ".flow/<flow-type>/<variant>.yaml",
    "flow_type": "the flow type is the folder name: .flow/<flow-type>/base.yaml",
    "stuck_timeout_secs": "put it under defaults:",
    "max_wait_secs": "put it under defaults:",
    "stuck_retry_grace_secs": "put it under defaults:",
    "rate_limit_wait_secs": "put it under defaults:",
    "mcp_config": "pass adapter settings under agents.<name>.options",
}
