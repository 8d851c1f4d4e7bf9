"""``gitflow-agents prompt``: print the system prompt an agent would get, or where each part is from."""

from __future__ import annotations

import argparse
import json
import sys

from gitflow_agents.prompt import AssembledPrompt, Segment, assemble_prompt


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.prompt.args import prompt_request

    prompt = assemble_prompt(prompt_request(args, "prompt", flow=args.flow_name))
    if args.json:
        print(json.dumps(_as_json(prompt, with_text=not args.segments), indent=2))
    elif args.segments:
        sys.stdout.write(format_segments(prompt.segments))
    else:
        sys.stdout.write(prompt.text)
    return 0


def format_segments(segments: tuple[Segment, ...]) -> str:
    """A plain table: index, scope, label, source, line count."""
    header = ("#", "SCOPE", "LABEL", "SOURCE", "LINES")
    rows = [
        (str(index), seg.scope, seg.label, seg.source, str(seg.line_count))
        for index, seg in enumerate(segments, 1)
    ]
    widths = [max(len(row[col]) for row in [header, *rows]) for col in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=False)]
        lines.append("  ".join([*cells, row[-1].rjust(widths[-1])]).rstrip())
    total = sum(seg.line_count for seg in segments)
    lines.append(f"{len(segments)} segments, {total} lines")
    return "\n".join(lines) + "\n"


def _as_json(prompt: AssembledPrompt, *, with_text: bool) -> dict[str, object]:
    out: dict[str, object] = {
        "segments": [
            {
                "scope": seg.scope,
                "label": seg.label,
                "source": seg.source,
                "lines": seg.line_count,
                "content": seg.content,
            }
            for seg in prompt.segments
        ]
    }
    if with_text:
        out = {"text": prompt.text, **out}
    return out
