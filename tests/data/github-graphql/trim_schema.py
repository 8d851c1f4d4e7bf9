"""Trim GitHub's GraphQL schema (npm @octokit/graphql-schema, schema.graphql) to what the
operations gitflow-agents sends use, so graphql-core builds it in milliseconds and the GitHub
stand-in can validate every query, and execute it to shape every answer.

Usage: python trim_schema.py FULL.graphql OPERATIONS.graphql OUT.graphql

OPERATIONS.graphql holds the operations the product sends, as it sends them (operations.graphql
beside this script: PyGithub's enablePullRequestAutoMerge and disablePullRequestAutoMerge, the
review threads, the open pull requests). Each is validated, alone, against the full schema
first. Kept:
- every field an operation selects, on the type it is selected on, with all its arguments;
- every input type, enum and scalar an argument or a variable reaches, whole;
- for an abstract type an operation selects (an interface, a union), every type it can be, with
  the fields selected on the abstract type (an executor resolves it to one of them);
- the fields a kept type owes a kept interface it implements (only kept interfaces are listed);
- ``Query.node`` (``Node.id``) when no operation is a query: a schema needs a query type;
- every directive definition.
So a query valid against the subset is valid against GitHub's schema; a query selecting a field
the subset left out is refused by the stand-in (loudly, never silently): run the script again
with that operation added. The published file declares two fields of EnterpriseOwnerInfo
twice, which GraphQL forbids; a field declared again is dropped (the first declaration kept).
At the end the subset is built and every operation validated against it.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

from graphql import (
    GraphQLSchema,
    TypeInfo,
    TypeInfoVisitor,
    Visitor,
    build_ast_schema,
    get_named_type,
    is_abstract_type,
    is_input_object_type,
    parse,
    print_ast,
    validate,
    visit,
)
from graphql.language import (
    DocumentNode,
    FieldNode,
    OperationDefinitionNode,
    VariableDefinitionNode,
)


def unique_fields(doc: DocumentNode) -> DocumentNode:
    """``doc`` with every field declared a second time in one type dropped (and named)."""
    definitions = []
    for d in doc.definitions:
        fields = getattr(d, "fields", None)
        if fields:
            seen: set[str] = set()
            kept = []
            for f in fields:
                if f.name.value in seen:
                    print(f"dropped a second declaration of {d.name.value}.{f.name.value}")  # type: ignore[attr-defined]
                    continue
                seen.add(f.name.value)
                kept.append(f)
            d = d.__class__(**{**{k: getattr(d, k) for k in d.keys}, "fields": tuple(kept)})
        definitions.append(d)
    return DocumentNode(definitions=tuple(definitions))


class _Uses(Visitor):
    """Collects, while a TypeInfoVisitor walks an operation, the fields it selects (by parent
    type), the abstract types it selects on, and the input types it reaches."""

    def __init__(
        self, info: TypeInfo, used: dict[str, set[str]], abstract: set[str], inputs: set[str]
    ):
        super().__init__()
        self.info, self.used, self.abstract, self.inputs = info, used, abstract, inputs

    def enter_field(self, node: FieldNode, *_: object) -> None:
        parent, field = self.info.get_parent_type(), self.info.get_field_def()
        if parent is None or field is None or node.name.value.startswith("__"):
            return
        self.used[parent.name].add(node.name.value)
        named = get_named_type(field.type)
        if is_abstract_type(named):
            self.abstract.add(named.name)
        for argument in field.args.values():
            self.inputs.add(get_named_type(argument.type).name)

    def enter_inline_fragment(self, *_: object) -> None:
        kind = self.info.get_type()
        if kind is not None and is_abstract_type(get_named_type(kind)):
            self.abstract.add(get_named_type(kind).name)

    def enter_variable_definition(self, node: VariableDefinitionNode, *_: object) -> None:
        kind = self.info.get_input_type()
        if kind is not None:
            self.inputs.add(get_named_type(kind).name)


def inputs_closure(schema: GraphQLSchema, names: set[str]) -> set[str]:
    """``names`` and every input type, enum and scalar their input fields reach."""
    todo, found = set(names), set()
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        kind = schema.get_type(name)
        if is_input_object_type(kind):
            todo |= {get_named_type(f.type).name for f in kind.fields.values()}  # type: ignore[union-attr]
    return found


def uses(schema: GraphQLSchema, operations: DocumentNode) -> tuple[dict[str, set[str]], set[str]]:
    """(fields to keep by type, input types to keep whole) for ``operations``."""
    used: dict[str, set[str]] = defaultdict(set)
    abstract: set[str] = set()
    inputs: set[str] = set()
    info = TypeInfo(schema)
    visit(operations, TypeInfoVisitor(info, _Uses(info, used, abstract, inputs)))
    if not any(
        isinstance(d, OperationDefinitionNode) and d.operation.value == "query"
        for d in operations.definitions
    ):
        used["Query"].add("node")
        used["Node"].add("id")
        inputs.add("ID")
    changed = True
    while (
        changed
    ):  # possible types of a selected abstract type; what a kept type owes its interfaces
        changed = False
        for name in abstract:
            for possible in schema.get_possible_types(schema.get_type(name)):  # type: ignore[arg-type]
                missing = used[name] - used[possible.name]
                if missing or possible.name not in used:
                    used[possible.name] |= used[name]
                    changed = True
        for name in list(used):
            for interface in getattr(schema.get_type(name), "interfaces", ()):
                if interface.name in used and used[interface.name] - used[name]:
                    used[name] |= used[interface.name]
                    changed = True
    for name, fields in used.items():
        kind = schema.get_type(name)
        for field in fields:
            definition = kind.fields[field]  # type: ignore[union-attr]
            inputs |= {get_named_type(a.type).name for a in definition.args.values()}
            leaf = get_named_type(definition.type)
            if not hasattr(leaf, "fields"):
                inputs.add(leaf.name)  # a scalar or enum result: kept whole
    return used, inputs_closure(schema, inputs)


def problems_of(schema: GraphQLSchema, operations: DocumentNode) -> list[str]:
    """What ``schema`` refuses in ``operations``, each validated alone, as GitHub receives it:
    PyGithub names every mutation it sends ``Mutation``, so two of them in one document would
    break the rule that a document's operation names are unique."""
    return [
        str(problem)
        for definition in operations.definitions
        for problem in validate(schema, DocumentNode(definitions=(definition,)))
    ]


def main(source: str, operations_file: str, out: str) -> None:
    doc = unique_fields(parse(Path(source).read_text(encoding="utf-8")))
    full = build_ast_schema(doc, assume_valid=True)
    operations = parse(Path(operations_file).read_text(encoding="utf-8"))
    problems = problems_of(full, operations)
    if problems:
        raise SystemExit(f"{operations_file} is not valid against {source}: {problems}")
    used, whole = uses(full, operations)
    parts = []
    for d in doc.definitions:
        name = getattr(getattr(d, "name", None), "value", None)
        if d.kind in ("directive_definition", "schema_definition") or name in whole:
            parts.append(print_ast(d))
            continue
        if name not in used:
            continue
        fields = tuple(f for f in d.fields if f.name.value in used[name])  # type: ignore[attr-defined]
        interfaces = tuple(i for i in getattr(d, "interfaces", None) or () if i.name.value in used)
        values = {k: getattr(d, k) for k in d.keys}
        values.update(
            fields=fields, **({"interfaces": interfaces} if "interfaces" in d.keys else {})
        )
        parts.append(print_ast(d.__class__(**values)))
    text = "\n\n".join(parts) + "\n"
    # GitHub's schema breaks one rule graphql-core checks on top (an implementation field
    # deprecated where the interface's is not), so that check is skipped, as the stand-in
    # skips it: the schema is GitHub's, the queries are what is validated.
    subset = build_ast_schema(parse(text), assume_valid=True)
    problems = problems_of(subset, operations)
    if problems:
        raise SystemExit(f"the subset refuses {operations_file}: {problems}")
    Path(out).write_text(text, encoding="utf-8")
    kept = sum(1 for p in parts if not p.startswith("directive"))
    print(f"{kept} of {len(full.type_map)} types, {len(text):,} characters")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3])
