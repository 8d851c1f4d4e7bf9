"""The shape of a Mermaid chart, each line reduced to its kind (`skeleton`), to check that no text adds a node, an edge or a click."""

from __future__ import annotations

import re


def skeleton(text: str) -> list[str]:
    """The chart with its labels and node classes blanked: the structure (nodes, boxes,
    edges), each line checked against the renderer's grammar (so no ``click``, ``style``,
    ``linkStyle`` or directive line can be in it)."""
    lines = text.split("\n")
    assert lines[-1] == "", "a chart ends with a line break"
    out = []
    for line in lines[:-1]:
        kind = next((k for k, rx in LINE_KINDS.items() if rx.fullmatch(line)), None)
        assert kind is not None, f"not a line the renderer writes: {line!r}"
        out.append(re.sub(CLASS, "", re.sub(LABEL, '""', line)))
    return out


# Every line the renderer writes, and nothing else: a label is a quoted string of letters,
# digits, blanks, ".,-_/+=!?*", #N; entity codes and our <br/> line breaks.
LABEL = r'"(?:[^\W]|[ .,\-_/+=!?*]|#\d+;|<br/>)*"'


CLASS = r":::(?:ok|warn|bad)"


LINE_KINDS = {
    "header": re.compile(r"flowchart LR"),
    "node": re.compile(rf" {{4}}(?: {{4}})?n\d+\[{LABEL}\](?:{CLASS})?"),
    "end_node": re.compile(rf" {{4}}n\d+\(\[{LABEL}\]\){CLASS}"),
    "subgraph": re.compile(rf" {{4}}subgraph r\d+\[{LABEL}\]"),
    "subgraph_end": re.compile(r" {4}end"),
    "edge": re.compile(r" {4}n\d+ -->(?:\|retry\|)? n\d+"),
    "class_def": re.compile(
        r" {4}classDef (?:ok|warn|bad) fill:#[0-9a-f]{6},stroke:#[0-9a-f]{6},color:#1f2328"
    ),
}
