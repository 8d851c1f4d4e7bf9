"""``gitflow-agents prompt``: print the system prompt an agent would get, or where each part is from."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gitflow_agents.errors import UsageError
from gitflow_agents.prompt import AssembledPrompt, PromptRequest, Segment, assemble_prompt


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.assets import load_manifest
    from gitflow_agents.config import find_project_root, load_flow_config
    from gitflow_agents.plan import parse_plan

    if args.plan is None and args.task is None:
        raise UsageError("prompt: give --plan with --step, or --task")
    if args.plan is not None and args.step is None and args.task is None:
        raise UsageError("prompt: --plan needs --step (or give --task)")
    root = find_project_root(Path.cwd())
    config = load_flow_config(root, args.flow_type, args.variant)
    plan = parse_plan(Path(args.plan).absolute(), config.spec_plan) if args.plan else None
    request = PromptRequest(
        root=root,
        config=config,
        agent=args.agent,
        agent_id=args.agent_name,
        flow_name=args.flow_name,
        step=args.step,
        plan=plan,
        task=_read_task(args.task),
        after=_split_after(args.after),
        preamble=args.preamble,
        manifest=load_manifest(root),
    )
    prompt = assemble_prompt(request)
    if args.json:
        print(json.dumps(_as_json(prompt, with_text=not args.segments), indent=2))
    elif args.segments:
        sys.stdout.write(format_segments(prompt.segments))
    else:
        sys.stdout.write(prompt.text)
    return 0


def _read_task(task: str | None) -> str | None:
    """``--task @path`` reads the task from a file (the Flow CLI ``@file`` convention)."""
    if task is None or not task.startswith("@"):
        return task
    path = Path(task[1:])
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"--task: {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--task: {path}: cannot read: {exc}") from None


def _split_after(after: str | None) -> tuple[str, ...]:
    if after is None:
        return ()
    names = tuple(name.strip() for name in after.split(",") if name.strip())
    if not names:
        raise UsageError("--after: give one or more agent ids, comma separated")
    return names


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
