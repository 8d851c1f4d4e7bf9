"""The shape of a `.flow/` YAML file (``shape.TOP``) as a JSON Schema, for editors.

``init`` writes it to ``.flow/flow-config.schema.json``. It is generated, never written by hand,
so it cannot drift from what the loader checks. Draft 2020-12, using only keywords that
draft-07 tools understand too. It checks one layer: keys that are required only in the merged
configuration (``completion_workflow.template``) are not required here.
"""

from __future__ import annotations

import json
from typing import Any

from gitflow_agents.config.shape import TOP
from gitflow_agents.config.spec import (
    AnyMap,
    Bool,
    Command,
    Int,
    MapOf,
    Num,
    Obj,
    Spec,
    Str,
    StrList,
)

SCHEMA_FILE = "flow-config.schema.json"
"""The schema's file name in ``.flow/`` (``init`` writes it) and its ``$id``."""

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def flow_config_schema() -> dict[str, Any]:
    """The JSON Schema of one `.flow/` layer file."""
    return {
        "$schema": DIALECT,
        "$id": SCHEMA_FILE,
        "title": "gitflow-agents flow configuration (.flow/*.yaml)",
        **_schema(TOP),
    }


def schema_text() -> str:
    """``flow_config_schema()`` as the text of a JSON file (2-space indent, final newline)."""
    return json.dumps(flow_config_schema(), indent=2, ensure_ascii=False) + "\n"


def _schema(spec: Spec) -> dict[str, Any]:
    if isinstance(spec, Obj):
        out: dict[str, Any] = {"type": "object", "additionalProperties": False}
        out["properties"] = {key: _schema(sub) for key, sub in spec.fields.items()}
    elif isinstance(spec, MapOf):
        out = {"type": "object", "propertyNames": {"pattern": f"^{spec.key_pattern}$"}}
        out["additionalProperties"] = _schema(spec.item)
    elif isinstance(spec, Str):
        out = _string(spec)
    elif isinstance(spec, Int):
        out = {"type": "integer", "minimum": spec.minimum, "maximum": spec.maximum}
    elif isinstance(spec, Num):
        out = {"type": "number", "minimum": 0, "maximum": spec.maximum}
    elif isinstance(spec, Bool):
        out = {"type": "boolean"}
    elif isinstance(spec, StrList):
        item: dict[str, Any] = {"type": "string"}
        if spec.pattern is not None:
            item["pattern"] = f"^{spec.pattern}$"
        out = {"type": "array", "items": item, **spec.schema_extra}
    elif isinstance(spec, Command):
        out = {
            "oneOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "minItems": 1, "items": {"type": "string"}},
                {"type": "null"},
            ]
        }
    else:
        assert isinstance(spec, AnyMap)
        out = {"type": "object"}
    return _annotated(out, spec)


def _string(spec: Str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": ["string", "null"] if spec.nullable else "string"}
    choices: list[str | None] = list(spec.allowed())
    if choices:
        out["enum"] = [*choices, None] if spec.nullable else choices
    else:
        out["minLength"] = 1
    out.update(spec.schema_extra)
    return out


def _annotated(out: dict[str, Any], spec: Spec) -> dict[str, Any]:
    """``out`` with the spec's default and description, when it has them."""
    default = getattr(spec, "default", None)
    if default is not None:
        out["default"] = list(default) if isinstance(default, tuple) else default
    if spec.doc:
        out["description"] = spec.doc
    return out
