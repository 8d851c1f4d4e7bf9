"""Trim GitHub's webhook descriptions to the events gitflow-agents handles.

Usage:
    python trim_webhooks.py WEBHOOKS.json EXAMPLES.json OUT_DIR

WEBHOOKS.json: ``generated/api.github.com.json`` of the npm package @octokit/openapi-webhooks
(12.1.0 was used). EXAMPLES.json: ``api.github.com/index.json`` of @octokit/webhooks-examples
(7.6.1 was used). Writes OUT_DIR/webhooks.subset.json (the kept webhooks, their payload schemas
and every component they reference, transitively) and OUT_DIR/examples/examples.subset.json
(GitHub's example payloads of the kept events and actions, in the package's own shape).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

KEEP: dict[str, tuple[str, ...]] = {
    # event name: the actions kept (empty: the event has no action)
    "pull_request": ("opened", "synchronize", "reopened", "ready_for_review", "closed"),
    "issue_comment": ("created", "edited"),
    "merge_group": ("checks_requested", "destroyed"),
    "push": (),
    "workflow_dispatch": (),
}


def webhook_key(event: str, action: str | None) -> str:
    """``pull_request`` + ``ready_for_review`` -> ``pull-request-ready-for-review``."""
    return "-".join(part.replace("_", "-") for part in (event, action) if part)


def refs(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/"):
            out.add(ref)
        for value in node.values():
            refs(value, out)
    elif isinstance(node, list):
        for value in node:
            refs(value, out)


def trim_schemas(src: dict[str, Any]) -> dict[str, Any]:
    keys = [webhook_key(e, a) for e, actions in KEEP.items() for a in (actions or (None,))]
    missing = [k for k in keys if k not in src["webhooks"]]
    if missing:
        sys.exit(f"missing webhooks: {missing}")
    hooks = {k: src["webhooks"][k] for k in keys}
    seen: set[str] = set()
    todo: set[str] = set()
    refs(hooks, todo)
    comps: dict[str, dict[str, Any]] = {}
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        _, _, kind, name = ref.split("/", 3)
        obj = src["components"][kind][name]
        comps.setdefault(kind, {})[name] = obj
        new: set[str] = set()
        refs(obj, new)
        todo |= new - seen
    out = {k: src[k] for k in ("openapi", "info", "externalDocs") if k in src}
    out["info"] = dict(
        out["info"],
        description=(
            "Subset of GitHub's webhook description (octokit/openapi-webhooks "
            f"{src['info']['version']}, api.github.com.json): only the events gitflow-agents "
            "handles, with every component they reference."
        ),
    )
    out["webhooks"] = hooks
    out["components"] = {k: dict(sorted(v.items())) for k, v in sorted(comps.items())}
    return out


def trim_examples(index: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for entry in index:
        if entry["name"] not in KEEP:
            continue
        actions = KEEP[entry["name"]]
        examples = [x for x in entry["examples"] if not actions or x.get("action") in actions]
        out.append({**entry, "examples": examples})
    return out


def main(argv: list[str]) -> None:
    webhooks, examples, out_dir = Path(argv[0]), Path(argv[1]), Path(argv[2])
    schemas = trim_schemas(json.loads(webhooks.read_text()))
    kept = trim_examples(json.loads(examples.read_text()))
    (out_dir / "examples").mkdir(parents=True, exist_ok=True)
    (out_dir / "webhooks.subset.json").write_text(json.dumps(schemas, indent=1) + "\n")
    (out_dir / "examples" / "examples.subset.json").write_text(json.dumps(kept, indent=1) + "\n")
    count = sum(len(v) for v in schemas["components"].values())
    print(len(schemas["webhooks"]), "webhooks,", count, "components,", end=" ")
    print(sum(len(e["examples"]) for e in kept), "examples")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1:])
