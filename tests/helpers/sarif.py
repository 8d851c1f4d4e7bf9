"""SARIF 2.1.0 checked against the OASIS schema (tests/data/sarif/: the final schema, Draft 7, and
the rtm.5 one GitHub code scanning documents, Draft 4)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from tests.conftest import DATA

SCHEMAS = (
    ("sarif-schema-2.1.0.json", jsonschema.Draft7Validator),
    ("sarif-2.1.0-rtm.5.json", jsonschema.Draft4Validator),
)
"""Each schema file with the JSON Schema draft it is written in."""


def schema(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "sarif" / name).read_text(encoding="utf-8"))
    return data


def schema_errors(sarif: Any, name: str, validator: Any) -> list[str]:
    """Where ``sarif`` breaks the schema ``name`` (``path: message`` each; [] when valid)."""
    checker = validator(schema(name), format_checker=jsonschema.FormatChecker())
    return [f"{list(e.absolute_path)}: {e.message}" for e in checker.iter_errors(sarif)]


def sarif_errors(sarif: Any) -> list[str]:
    """Where ``sarif`` breaks either schema of ``SCHEMAS`` ([] when it is valid against both)."""
    return [
        f"{name}: {error}"
        for name, validator in SCHEMAS
        for error in schema_errors(sarif, name, validator)
    ]
