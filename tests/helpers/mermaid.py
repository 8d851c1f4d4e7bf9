"""The shape of a Mermaid chart, each line reduced to its kind (`skeleton`), to check that no text adds a node, an edge or a click."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any

from tests.conftest import ROOT


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


PREFIX = os.environ.get("MERMAID_PREFIX", "")


def parse(charts: list[str]) -> list[dict[str, Any]]:
    """What Mermaid's parser made of each chart (tests/e2e/mermaid_parse.mjs)."""
    proc = subprocess.run(
        ["node", str(ROOT / "tests" / "e2e" / "mermaid_parse.mjs")],
        input=json.dumps(charts),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MERMAID_PREFIX": PREFIX},
    )
    assert proc.returncode == 0, proc.stderr
    parsed: list[dict[str, Any]] = json.loads(proc.stdout)
    assert len(parsed) == len(charts)
    return parsed


def check(
    text: str, parsed: dict[str, Any], classes: frozenset[str] = frozenset({"ok", "warn", "bad"})
) -> None:
    assert "error" not in parsed, f"{parsed.get('error')}\n{text}"
    assert parsed["type"] == "flowchart-v2" and parsed["direction"] == "LR"
    nodes = dict(_NODE.findall(text))
    vertices = {v["id"]: v for v in parsed["vertices"]}
    assert set(vertices) == set(nodes)
    for node_id, vertex in vertices.items():
        assert vertex["link"] is None and not vertex["styles"]
        assert set(vertex["classes"]) <= classes  # never "clickable"
        assert shown(vertex["text"]) == ours(nodes[node_id])
    edges = [(start, end, label) for start, label, end in _EDGE.findall(text)]
    assert [(e["start"], e["end"], e["text"]) for e in parsed["edges"]] == edges
    boxes = dict(_SUBGRAPH.findall(text))
    assert {s["id"]: shown(s["title"]) for s in parsed["subgraphs"]} == {
        k: ours(v) for k, v in boxes.items()
    }
    assert set(parsed["classes"]) == classes and not parsed["tooltips"]


_NODE = re.compile(r'^ +(n\d+)\(?\[("[^"]*")\]', re.M)


_SUBGRAPH = re.compile(r'^ +subgraph (r\d+)\[("[^"]*")\]', re.M)


_EDGE = re.compile(r"^ +(n\d+) -->(?:\|(retry)\|)? (n\d+)$", re.M)


def ours(label: str) -> str:
    """A label of ours as we mean it to be shown: entity codes and line breaks decoded."""
    inner = label[1:-1].replace("<br/>", "\n")
    return re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), inner)


def shown(text: str) -> str:
    """A label as Mermaid's parser keeps it (its own placeholders for entity codes)."""
    text = text.replace("<br>", "\n")
    return re.sub("\ufb02\u00b0\u00b0(\\d+)\u00b6\u00df", lambda m: chr(int(m.group(1))), text)
