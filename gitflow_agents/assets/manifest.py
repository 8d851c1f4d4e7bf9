"""Scan ``.agents-flow/`` into a manifest, and refuse to run an agent whose assets have errors.

Layout under the project root::

    .agents-flow/
      global-system-prompt.md            repo-wide baseline prompt (no frontmatter)
      agents/*.agent.md                  agent definitions (frontmatter + body)
      instructions/*.instructions.md     instruction fragments, referenced by their ``name``
      skills/<name>/SKILL.md             skills, referenced by their folder name

``load_manifest`` never raises for bad assets: it collects ``ManifestError`` values, and an
agent with errors (its own, or those of what it includes) refuses to run (``require_runnable``).
Every ``source_path`` here is relative to ``.agents-flow/``; messages use the path from the
project root (``.agents-flow/agents/x.agent.md:3: ...``) so they can be clicked. The error codes
and the rules are in docs/agents-flow-assets.md, "Errors".
"""

from __future__ import annotations

import re
from pathlib import Path
from types import MappingProxyType

from gitflow_agents.assets import fields as read
from gitflow_agents.assets.fields import Errors, Fields
from gitflow_agents.assets.model import (
    AGENT_SUFFIX,
    AGENTS_FLOW_DIR,
    DEFAULT_ADAPTER_KIND,
    GLOBAL_SYSTEM_PROMPT_FILE,
    INSTRUCTION_SUFFIX,
    SKILL_FILE,
    TURN_MODES,
    ManifestError,
    PromptAssetManifest,
    ResolvedAgentAsset,
    ResolvedInstructionAsset,
    ResolvedSkillAsset,
)
from gitflow_agents.base.bounded import broken_link
from gitflow_agents.base.errors import ConfigError, InputError
from gitflow_agents.base.frontmatter import Frontmatter, split_frontmatter
from gitflow_agents.base.fsutil import ReadRefused, inside_root, outside_root, read_limited


def load_manifest(root: Path) -> PromptAssetManifest:
    """Scan ``root/.agents-flow``; an absent folder gives an empty manifest. Never raises for
    bad assets: problems become ``ManifestError`` values in ``errors``."""
    base = root / AGENTS_FLOW_DIR
    if not base.exists() and not base.is_symlink():
        return PromptAssetManifest()
    scan = _Scan(root, base)
    if inside_root(root, base) is None:
        scan.errors.add("file_read_error", "", None, outside_root(base))
        return scan.manifest()
    if not base.is_dir():
        scan.errors.add("file_read_error", "", None, "is not a directory")
        return scan.manifest()
    scan.global_prompt()
    for path in _entries(scan, base / "instructions", "instructions"):
        if path.name.endswith(INSTRUCTION_SUFFIX):
            scan.instruction(path)
    for path in _entries(scan, base / "skills", "skills"):
        if path.name.startswith("."):
            continue
        if path.is_dir():
            scan.skill(path)
        elif path.is_symlink() and not path.exists():  # a skill folder's link that leads nowhere
            scan.broken_skill_link(path)
    for path in _entries(scan, base / "agents", "agents"):
        if path.name.endswith(AGENT_SUFFIX):
            scan.agent(path)
    scan.check_includes()
    return scan.manifest()


def _entries(scan: _Scan, folder: Path, rel: str) -> list[Path]:
    if not folder.exists():
        return []
    try:
        return sorted(folder.iterdir())
    except OSError as exc:
        scan.errors.add("file_read_error", rel, None, f"cannot list folder: {exc.strerror or exc}")
        return []


MAX_ASSET_BYTES = 4 * 1024 * 1024
"""An ``.agents-flow/`` file larger than this is refused (docs/security.md, "Bounds")."""
_AGENT_ID_LINE = re.compile(r"^agentId:[ \t]*[\"']?([\w.:-]+)[\"']?[ \t]*$", re.MULTILINE)


class _Scan:
    """Mutable state of one scan; ``manifest()`` freezes it."""

    def __init__(self, root: Path, base: Path) -> None:
        self.root = root
        self.base = base
        self.global_system_prompt: str | None = None
        self.agents: dict[str, ResolvedAgentAsset] = {}
        self.agent_lines: dict[str, dict[str, int]] = {}
        self.instructions: dict[str, ResolvedInstructionAsset] = {}
        self.instruction_paths: dict[str, list[str]] = {}  # name -> every file declaring it
        self.instruction_stems: dict[str, str] = {}  # filename stem -> source path
        self.skills: dict[str, ResolvedSkillAsset] = {}
        self.errors = Errors()

    def read(self, path: Path) -> str | None:
        rel = self.rel(path)
        if inside_root(self.root, path) is None:  # never read: it would go into a prompt
            self.errors.add("file_read_error", rel, None, f"cannot read file: {outside_root(path)}")
            return None
        try:
            data = read_limited(path, MAX_ASSET_BYTES)
        except ReadRefused as exc:
            self.errors.add("file_read_error", rel, None, f"cannot read file: {exc.reason}")
            return None
        except OSError as exc:
            why = broken_link(path, exc) or exc.strerror or str(exc)
            self.errors.add("file_read_error", rel, None, f"cannot read file: {why}")
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            self.errors.add(
                "file_read_error",
                rel,
                line,
                f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            )
            return None
        return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")

    def rel(self, path: Path) -> str:
        return path.relative_to(self.base).as_posix()

    def frontmatter(self, path: Path, *, agent_file: bool = False) -> Frontmatter | None:
        text = self.read(path)
        if text is None:
            return None
        rel = self.rel(path)
        try:
            front = split_frontmatter(text, path=f"{AGENTS_FLOW_DIR}/{rel}")
        except InputError as exc:
            # Attribute the error to the agent when its agentId line is still readable, so
            # asking for that agent lists this error instead of "unknown agent".
            agent_id = _AGENT_ID_LINE.search(text) if agent_file else None
            self.errors.add(
                "invalid_frontmatter",
                rel,
                exc.line,
                exc.detail,
                agent_id=agent_id.group(1) if agent_id else None,
            )
            return None
        if front.raw is None:
            self.errors.add(
                "invalid_frontmatter",
                rel,
                1,
                "missing frontmatter: the file must start with a '---' line, YAML "
                "(name, description, ...), and a closing '---' line",
            )
            return None
        return front

    # the four kinds of asset

    def global_prompt(self) -> None:
        path = self.base / GLOBAL_SYSTEM_PROMPT_FILE
        if path.exists() or path.is_symlink():  # a dangling link is an error, not "no file"
            text = self.read(path)
            if text is not None:
                self.global_system_prompt = _trim(text)

    def named(self, path: Path) -> tuple[Frontmatter, Fields, str | None, str] | None:
        """An instruction's or a skill's frontmatter with the two keys both require, ``name``
        and ``description`` (an error each when missing); None when it cannot be read."""
        front = self.frontmatter(path)
        if front is None:
            return None
        fields = Fields(self.errors, front, self.rel(path), None)
        name = fields.text("name", required=True)
        return front, fields, name, fields.text("description", required=True) or ""

    def instruction(self, path: Path) -> None:
        rel = self.rel(path)
        self.instruction_stems[path.name.removesuffix(INSTRUCTION_SUFFIX)] = rel
        named = self.named(path)
        if named is None:
            return
        front, fields, name, description = named
        apply_to = fields.text("applyTo")
        if name is None:
            return
        self.instruction_paths.setdefault(name, []).append(rel)
        kept = self.instructions.get(name)
        if kept is not None:
            self.errors.add(
                "duplicate_instruction_name",
                rel,
                fields.line("name"),
                f"instruction name {name!r} is already used by "
                f"{AGENTS_FLOW_DIR}/{kept.source_path}; instruction names must be unique",
                key="name",
            )
            return
        self.instructions[name] = ResolvedInstructionAsset(
            filename=path.name,
            name=name,
            description=description,
            apply_to=apply_to,
            content=_trim(front.body),
            source_path=rel,
        )

    def skill(self, folder: Path) -> None:
        path = folder / SKILL_FILE
        rel = self.rel(path)
        if not path.exists() and not path.is_symlink():  # a dangling link: read says so
            self.errors.add("file_read_error", rel, None, f"skill folder has no {SKILL_FILE}")
            return
        named = self.named(path)
        if named is None:
            return
        front, fields, name, description = named
        argument_hint = fields.text("argumentHint")
        self.skills[folder.name] = ResolvedSkillAsset(
            folder_name=folder.name,
            name=name or folder.name,
            description=description,
            argument_hint=argument_hint,
            content=_trim(front.body),
            source_path=rel,
        )

    def broken_skill_link(self, link: Path) -> None:
        """A dangling or looping symlink directly under ``skills/`` is a ``file_read_error``
        naming it, as such a link named like any other asset is (it was skipped as "not a
        folder", so an agent including it only heard "no skill folder")."""
        if inside_root(self.root, link) is None:
            why = outside_root(link)
        else:
            try:
                link.stat()
            except OSError as exc:
                why = broken_link(link, exc) or str(exc)
            else:  # its target appeared since the folder was listed: the next scan reads it
                return
        self.errors.add("file_read_error", self.rel(link), None, f"cannot read skill folder: {why}")

    def agent(self, path: Path) -> None:
        rel = self.rel(path)
        front = self.frontmatter(path, agent_file=True)
        if front is None:
            return
        # The agentId first, so every later error is attributed to the agent.
        agent_id = front.data.get("agentId")
        known_id = agent_id.strip() if isinstance(agent_id, str) and agent_id.strip() else None
        fields = Fields(self.errors, front, rel, known_id)
        fields.text("agentId", required=True)
        kept = self.agents.get(known_id) if known_id else None
        if known_id and kept is not None:
            fields.error(
                "agentId",
                f"agentId {known_id!r} is already defined in "
                f"{AGENTS_FLOW_DIR}/{kept.source_path}; agentIds must be unique",
                code="duplicate_agent_id",
            )
        asset = ResolvedAgentAsset(
            agent_id=known_id or "",
            name=fields.text("name", required=True) or known_id or "",
            description=fields.text("description", required=True) or "",
            output_kind=read.output_kind(fields),
            adapter_kind=fields.text("adapterKind") or DEFAULT_ADAPTER_KIND,
            model=fields.text("model"),
            temperature=read.temperature(fields),
            turn_mode=fields.choice("turnMode", TURN_MODES) or "normal",
            tools=fields.strings("tools"),
            user_invocable=fields.flag("userInvocable", default=False),
            argument_hint=fields.text("argumentHint"),
            includes=read.includes(fields),
            body=_trim(front.body),
            source_path=rel,
        )
        if known_id and kept is None:
            self.agents[known_id] = asset
            self.agent_lines[known_id] = fields.lines

    # cross-file checks

    def check_includes(self) -> None:
        for agent in self.agents.values():
            lines = self.agent_lines[agent.agent_id]
            for index, name in enumerate(agent.includes.instructions):
                if name not in self.instructions:
                    self.errors.add(
                        "missing_include",
                        agent.source_path,
                        lines.get(f"includes.instructions.{index}"),
                        f"includes.instructions: no instruction named {name!r}"
                        + self._instruction_hint(name),
                        agent_id=agent.agent_id,
                    )
            for index, folder in enumerate(agent.includes.skills):
                if folder not in self.skills:
                    known = ", ".join(sorted(self.skills)) or "none"
                    self.errors.add(
                        "missing_include",
                        agent.source_path,
                        lines.get(f"includes.skills.{index}"),
                        f"includes.skills: no skill folder {folder!r} "
                        f"(expected {AGENTS_FLOW_DIR}/skills/{folder}/{SKILL_FILE}; "
                        f"known: {known})",
                        agent_id=agent.agent_id,
                    )

    def _instruction_hint(self, name: str) -> str:
        stem_path = self.instruction_stems.get(name)
        if stem_path is not None:
            declared = [n for n, a in self.instructions.items() if a.source_path == stem_path]
            if declared:
                return (
                    f" (instructions are referenced by their frontmatter name, not the file "
                    f"name: {AGENTS_FLOW_DIR}/{stem_path} is named {declared[0]!r})"
                )
            return f" ({AGENTS_FLOW_DIR}/{stem_path} has errors and was not loaded)"
        known = ", ".join(sorted(self.instructions)) or "none"
        return f" (known: {known})"

    def manifest(self) -> PromptAssetManifest:
        errors = tuple(self.errors)
        per_agent: dict[str, tuple[ManifestError, ...]] = {}
        for agent in self.agents.values():
            paths = {agent.source_path}
            if agent.includes.global_system_prompt:
                paths.add(GLOBAL_SYSTEM_PROMPT_FILE)
            for name in agent.includes.instructions:
                paths.update(self.instruction_paths.get(name, ()))
            for folder in agent.includes.skills:
                skill = self.skills.get(folder)
                if skill is not None:
                    paths.add(skill.source_path)
                else:  # the folder without SKILL.md, or a link under skills/ that leads nowhere
                    paths.update((f"skills/{folder}/{SKILL_FILE}", f"skills/{folder}"))
            per_agent[agent.agent_id] = tuple(
                e for e in errors if e.agent_id == agent.agent_id or e.source_path in paths
            )
        return PromptAssetManifest(
            global_system_prompt=self.global_system_prompt,
            agents=MappingProxyType(dict(self.agents)),
            instructions=MappingProxyType(dict(self.instructions)),
            skills=MappingProxyType(dict(self.skills)),
            errors=errors,
            agent_errors=MappingProxyType(per_agent),
        )


_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


def _trim(text: str) -> str:
    """Drop leading blank lines and trailing whitespace (keeps a first line's indentation)."""
    return _LEADING_BLANK_LINES.sub("", text).rstrip()


# --- errors per agent, and the run gate ---------------------------------------------------------


def errors_for_agent(manifest: PromptAssetManifest, agent_id: str) -> tuple[ManifestError, ...]:
    """The manifest errors that block ``agent_id``: those of its file, of files declaring its
    agentId, and of the instructions and skills it includes (missing ones included)."""
    stored = manifest.agent_errors.get(agent_id, ())
    extra = tuple(e for e in manifest.errors if e.agent_id == agent_id and e not in stored)
    return stored + extra


def require_runnable(agent_id: str, manifest: PromptAssetManifest) -> ResolvedAgentAsset:
    """The agent, if it can run; else ConfigError naming it and listing every error, one a line."""
    agent = manifest.agents.get(agent_id)
    if agent is None:
        # An agent whose file failed to load can still be named by its errors.
        unloaded = tuple(e for e in manifest.errors if e.agent_id == agent_id)
        if unloaded:
            raise ConfigError(
                _refusal(agent_id, unloaded), path=f"{AGENTS_FLOW_DIR}/{unloaded[0].source_path}"
            )
        known = ", ".join(sorted(manifest.agents)) or "none"
        # Files that could not be read may define it: say which, rather than only "unknown".
        unread = [
            f"\n  - {e}"
            for e in manifest.errors
            if e.code == "file_read_error"
            and e.agent_id is None
            and (e.source_path is None or e.source_path.startswith("agents"))
        ]
        raise ConfigError(
            f"no agent with agentId {agent_id!r} in {AGENTS_FLOW_DIR}/agents/ (known: {known})"
            + (
                f"; {len(unread)} file(s) there could not be read:" + "".join(unread)
                if unread
                else ""
            ),
            path=f"{AGENTS_FLOW_DIR}/agents",
            key="agentRef",
        )
    errors = errors_for_agent(manifest, agent_id)
    if errors:
        raise ConfigError(_refusal(agent_id, errors), path=f"{AGENTS_FLOW_DIR}/{agent.source_path}")
    return agent


def _refusal(agent_id: str, errors: tuple[ManifestError, ...]) -> str:
    count = f"{len(errors)} manifest error{'s' if len(errors) != 1 else ''}"
    return f"agent {agent_id!r} has {count} and refuses to run:" + "".join(
        f"\n  - {error}" for error in errors
    )
