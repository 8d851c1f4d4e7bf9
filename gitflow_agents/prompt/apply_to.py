"""`.agents-flow/` instructions attached by path: an instruction whose ``applyTo`` globs match a
path the agent's work touches joins its Agent Definition, after the layers it includes
(docs/agents-flow-assets.md, "applyTo").

What "touches" means depends on what is known when the prompt is built: the changed paths of
the reviewed change for an agent reviewer (``PromptRequest.changed``, ``review.exclude`` left
out); for a plan step's prompt (the implementer, the fixer, a chain reviewer, ``prompt``), before
any diff exists, the step's ``Touches:`` globs, attached when one may overlap an ``applyTo``
glob (``plan/touches.py``, conservative: an instruction may be attached that no path of the
step ends up needing). Without either, none is attached.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitflow_agents.assets import AGENTS_FLOW_DIR
from gitflow_agents.findings.settings import glob_regex
from gitflow_agents.plan.touches import globs_overlap
from gitflow_agents.prompt.request import Part

if TYPE_CHECKING:
    from gitflow_agents.assets import PromptAssetManifest
    from gitflow_agents.assets.model import ResolvedInstructionAsset
    from gitflow_agents.prompt.request import PromptRequest


def apply_to_globs(value: str) -> tuple[str, ...]:
    """The globs of an ``applyTo`` value: one glob, or several separated by commas (as
    Copilot's instruction files write them)."""
    return tuple(glob for glob in (part.strip() for part in value.split(",")) if glob.strip("/"))


def _matching_glob(
    instruction: ResolvedInstructionAsset,
    changed: Sequence[str] | None,
    touches: Sequence[str],
) -> str | None:
    """The first ``applyTo`` glob of ``instruction`` that a changed path matches (or, without
    changed paths, that may overlap one of the step's ``touches``)."""
    for glob in apply_to_globs(instruction.apply_to or ""):
        if changed is not None:
            regex = glob_regex(glob)
            if any(regex.fullmatch(path) for path in changed):
                return glob
        elif any(globs_overlap(glob.lstrip("/"), touched) for touched in touches):
            return glob
    return None


def applied_instructions(request: PromptRequest, included: Sequence[str]) -> tuple[Part, ...]:
    """The instructions ``applyTo`` attaches for ``request``, as Agent Definition layers in
    path order, each labelled with the glob that matched; those whose file is among
    ``included`` (the sources of the layers the agent already has) are left out."""
    manifest: PromptAssetManifest | None = request.manifest
    if manifest is None:
        return ()
    touches: tuple[str, ...] = ()
    if request.changed is None:
        if request.plan is None or request.step is None:
            return ()
        touches = request.plan.step(request.step).touches
        if not touches:
            return ()
    parts: list[Part] = []
    for instruction in sorted(manifest.instructions.values(), key=lambda i: i.source_path):
        source = f"{AGENTS_FLOW_DIR}/{instruction.source_path}"
        if not instruction.apply_to or not instruction.content.strip() or source in included:
            continue
        glob = _matching_glob(instruction, request.changed, touches)
        if glob is not None:
            label = f"{instruction.name} (applyTo {glob})"
            parts.append(Part(instruction.content, "instruction", label, source))
    return tuple(parts)
