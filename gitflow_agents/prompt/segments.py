"""Attribution: cut each rendered section into segments, each naming the layer and file its text
came from (docs/prompt.md, "Segments")."""

from __future__ import annotations

from collections.abc import Sequence

from gitflow_agents.prompt.agent import AgentDefinition
from gitflow_agents.prompt.request import Part, Segment
from gitflow_agents.prompt.shared_files import File


def block_parts(
    template_source: str,
    agent: AgentDefinition,
    writable: Sequence[File],
    readable: Sequence[File],
    layers: Sequence[Part],
    assignment: Sequence[Part],
) -> dict[str, tuple[Part, list[Part]]]:
    """Per template block: how its text is attributed (head) and the parts it is cut into."""

    def head(scope: str, label: str, source: str = template_source) -> Part:
        return Part("", scope, label, source)

    def files(items: Sequence[File], kind: str) -> list[Part]:
        return [Part(_file_marker(f), "shared-file", f"{f.name} ({kind})", f.source) for f in items]

    return {
        "frontmatter": (head("frontmatter", "agent frontmatter (hoisted)", agent.source), []),
        "protocol": (head("protocol", "Multi-Agent Flow Protocol"), []),
        "identity": (head("identity", "Your Identity"), []),
        "shared_files": (head("shared-files", "Shared Context Files"), []),
        "writable_files": (
            head("shared-files", "Writable Shared Files"),
            files(writable, "writable"),
        ),
        "readable_files": (
            head("shared-files", "Readable Shared Files"),
            files(readable, "readable"),
        ),
        "previous_reports": (head("previous-reports", "Previous Agent Reports", "cli:--after"), []),
        "output_requirements": (
            head("completion-workflow", "Output Requirements", agent.workflow.template_source),
            [],
        ),
        # The label is shown by `prompt --segments` and pinned by the golden files.
        "reply_format": (head("reply-format", "Reply Format (seed 004)"), []),
        "agent_definition": (
            head("agent-definition", "Agent Definition", agent.source),
            list(layers),
        ),
        "assignment": (head("assignment", "Your Assignment"), list(assignment)),
    }


def _file_marker(file: File) -> str:
    return f"#### {file.name}\n\n**Path**: {file.path}\n"


def split(content: str, head: Part, inner: Sequence[Part]) -> list[Segment]:
    """Cut a rendered block into the head (text before the first part) and one segment per part,
    each running up to the next part. Falls back to one segment when a part is not found
    (e.g. a customised template that words it differently)."""
    if not content:
        return []
    starts: list[int] = []
    position = 0
    for part in inner:
        found = content.find(part.text, position) if part.text else -1
        if found < 0:
            return [Segment(head.scope, head.label, head.source, content)]
        starts.append(found)
        position = found + len(part.text)
    segments = []
    if not starts or starts[0] > 0:
        segments.append(
            Segment(head.scope, head.label, head.source, content[: starts[0] if starts else None])
        )
    for index, (part, start) in enumerate(zip(inner, starts, strict=True)):
        end = starts[index + 1] if index + 1 < len(starts) else len(content)
        segments.append(Segment(part.scope, part.label, part.source, content[start:end]))
    return segments
