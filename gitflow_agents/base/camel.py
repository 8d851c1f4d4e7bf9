"""The keys of our JSON output: camelCase, from the fields of the value written
(docs/decisions.md, "CLI conventions"). Apart from ``jsondata`` (reading), which the gate hook
loads: ``dataclasses`` imports ``inspect``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


def camel_key(name: str) -> str:
    """A field's key in our JSON output: ``run_id`` → ``runId`` (camelCase, as every key we
    print or write: docs/decisions.md, "CLI conventions")."""
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


def camel_json(value: Any, /, **keys: str) -> dict[str, Any]:
    """A dataclass or NamedTuple as a JSON object, its fields in order: each under its
    :func:`camel_key`, or under the key ``keys`` gives it (a spelling kept from a seed, such as
    ``run_id="runID"``). Tuples become lists and mappings dicts; a field holding a value with
    its own ``to_json`` is the caller's to convert."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [field.name for field in dataclasses.fields(value)]
    else:
        names = list(value._fields)  # a NamedTuple
    if unknown := keys.keys() - set(names):
        raise TypeError(f"no such field: {', '.join(sorted(unknown))}")
    data: dict[str, Any] = {}
    for name in names:
        item = getattr(value, name)
        if isinstance(item, tuple):
            item = list(item)
        elif isinstance(item, Mapping):
            item = dict(item)
        data[keys.get(name) or camel_key(name)] = item
    return data
