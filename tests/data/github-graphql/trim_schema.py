"""Trim GitHub's GraphQL schema (npm @octokit/graphql-schema, schema.graphql) to the root fields
gitflow-agents uses and every type they reach, so graphql-core can validate queries against it.

Usage: python trim_schema.py FULL.graphql OUT.graphql [Type.field ...]

Kept: the named root fields (default: Mutation.enablePullRequestAutoMerge, Query.node), every
type reachable from them (fields, arguments, interfaces, union members, implementations of a kept
interface), every directive definition, and the fields a kept root type owes its interfaces.
The published file declares two fields of
EnterpriseOwnerInfo twice, which GraphQL forbids (graphql-core refuses to build it); a field
declared again is dropped, the first declaration kept, and the script prints which.
"""

from __future__ import annotations

import sys
from pathlib import Path

from graphql import build_ast_schema, parse, print_ast
from graphql.language import NamedTypeNode, Node

ROOTS = ["Mutation.enablePullRequestAutoMerge", "Query.node"]


def named_types(node: object) -> set[str]:
    """Every type name ``node`` refers to (field types, argument types, interfaces, members)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, NamedTypeNode):
            found.add(item.name.value)
        elif isinstance(item, Node):
            for key in item.keys:
                if key not in ("loc", "description", "directives"):
                    stack.append(getattr(item, key))
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return found


def main(source: str, out: str, roots: list[str]) -> None:
    doc = parse(Path(source).read_text(encoding="utf-8"))
    types = {
        d.name.value: d
        for d in doc.definitions
        if hasattr(d, "name") and d.name is not None and not d.kind.startswith("directive")
    }
    keep_fields: dict[str, set[str]] = {}
    for root in roots:
        type_name, field = root.split(".")
        keep_fields.setdefault(type_name, set()).add(field)
    implementations: dict[str, set[str]] = {}
    for name, d in types.items():
        for interface in getattr(d, "interfaces", None) or ():
            implementations.setdefault(interface.name.value, set()).add(name)
    for name in list(keep_fields):  # a root type keeps what its interfaces ask of it (Node.id)
        for interface in getattr(types[name], "interfaces", None) or ():
            keep_fields[name] |= {f.name.value for f in types[interface.name.value].fields}
    todo = set(keep_fields)
    kept: set[str] = set()
    while todo:
        name = todo.pop()
        if name in kept or name not in types:
            continue
        kept.add(name)
        d = types[name]
        fields = getattr(d, "fields", None) or ()
        if name in keep_fields:
            fields = [f for f in fields if f.name.value in keep_fields[name]]
        todo |= named_types(list(fields)) | named_types(getattr(d, "interfaces", None) or [])
        todo |= named_types(getattr(d, "types", None) or [])
        todo |= implementations.get(name, set())
    parts = []
    for d in doc.definitions:
        name = getattr(getattr(d, "name", None), "value", None)
        if d.kind == "directive_definition" or d.kind == "schema_definition":
            parts.append(print_ast(d))
            continue
        if name not in kept:
            continue
        fields = getattr(d, "fields", None)
        if fields:
            seen: set[str] = set()
            unique = []
            for f in fields:
                if name in keep_fields and f.name.value not in keep_fields[name]:
                    continue
                if f.name.value in seen:
                    print(f"dropped a second declaration of {name}.{f.name.value}")
                    continue
                seen.add(f.name.value)
                unique.append(f)
            d = d.__class__(**{**{k: getattr(d, k) for k in d.keys}, "fields": tuple(unique)})
        parts.append(print_ast(d))
    text = "\n\n".join(parts) + "\n"
    # It must still build. GitHub's schema breaks one rule graphql-core checks on top (an
    # implementation field deprecated where the interface's is not), so that check is skipped,
    # as the stand-in skips it: the schema is GitHub's, the queries are what is validated.
    build_ast_schema(parse(text), assume_valid=True)
    Path(out).write_text(text, encoding="utf-8")
    print(f"{len(kept)} of {len(types)} types, {len(text):,} characters")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:] or ROOTS)
