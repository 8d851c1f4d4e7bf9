"""The input surfaces the fuzz suite drives, each a hypothesis strategy and what runs on one
input (in-process, in a :class:`~tests.fuzz.sandbox.Sandbox`).

A surface's ``run`` returns nothing: the sandbox counts exit codes, exceptions, hangs and writes
outside the repository. Surfaces: config layers, plans, frontmatter (cards), asset manifests
(``.agents-flow/``), agent reports and replies, run records, GitHub events, the files a change
hands the builtin reviewer, argv.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from gitflow_agents import cli, git_agent_review
from tests.fuzz import strategies as s
from tests.fuzz.sandbox import Sandbox, Tally

RUN_ID = "01900000-0000-7000-8000-000000000001"


@dataclass(frozen=True)
class Surface:
    name: str
    strategy: st.SearchStrategy[Any]
    run: Callable[[Sandbox, Tally, Any], None]


def _main(*argv: str) -> Callable[[], int]:
    return lambda: cli.main(list(argv))


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.is_file():
        path.unlink()
    path.write_bytes(data)


# --- config layers --------------------------------------------------------------------------


@st.composite
def _config(draw: st.DrawFn) -> tuple[str, bytes]:
    from tests.fuzz.sandbox import fake_config

    layer = draw(st.sampled_from(["base.yaml", "ci/base.yaml", "ci/fast.yaml"]))
    return layer, draw(s.encoded(draw(s.yaml_text(fake_config()))))


def run_config(box: Sandbox, tally: Tally, value: tuple[str, bytes]) -> None:
    layer, data = value
    _write(box.repo / ".flow" / layer, data)
    args = ("--flow-type", "ci") + (("--variant", "fast") if layer == "ci/fast.yaml" else ())
    extra = args if layer != "base.yaml" else ()
    box.run(tally, _main("prompt", "--agent", "builder", "--task", "t", *extra), "prompt")
    box.run(tally, _main("plan", "lint", "specs/feature.md", *extra[:2]), "plan lint")
    for path in (box.repo / ".flow" / "ci").glob("*"):
        path.unlink()
    box.restore_config()


# --- plans ----------------------------------------------------------------------------------


@st.composite
def _plan(draw: st.DrawFn) -> tuple[bytes, int, str]:
    data = draw(s.encoded(draw(s.plan_text())))
    return data, draw(st.integers(-1, 12)), draw(st.sampled_from(["✅", "❌", "", "x\ny", "|"]))


def run_plan(box: Sandbox, tally: Tally, value: tuple[bytes, int, str]) -> None:
    from gitflow_agents.plan import set_step_status

    data, step, status = value
    _write(box.repo / "specs" / "fz.md", data)
    for args in (("show", "--json"), ("show",), ("lint",), ("matrix", "--pending-only")):
        command, *rest = args
        box.run(tally, _main("plan", command, "specs/fz.md", *rest), f"plan {command}")
    box.run(tally, lambda: set_step_status(Path("specs/fz.md"), step, status), "set_step_status")
    box.run(tally, lambda: set_step_status(Path("out-plan.md"), 1, "✅"), "plan via link")


# --- frontmatter (cards) --------------------------------------------------------------------


@st.composite
def _card(draw: st.DrawFn) -> bytes:
    front = draw(s.yaml_text())
    body = "\n".join(
        draw(
            st.lists(
                st.sampled_from(
                    ["# T", "## Acceptance Criteria", "- [ ] a", "- [x] b", "## History", "```"]
                ),
                max_size=8,
            )
        )
    )
    text = draw(st.sampled_from(["---\n{f}---\n{b}\n", "{b}\n", "---\n{f}", "---\r\n{f}---\n{b}"]))
    return draw(s.encoded(text.format(f=front, b=body)))


def run_card(box: Sandbox, tally: Tally, data: bytes) -> None:
    from gitflow_agents.base.frontmatter import split_frontmatter
    from gitflow_agents.runs import cards

    card = box.repo / "fz-card.md"
    _write(card, data)
    box.run(tally, lambda: cards.set_card_status(card, "implement", "running"), "card status")
    box.run(tally, lambda: cards.append_history(card, "2026-01-02: Run x started."), "history")
    box.run(tally, lambda: cards.apply_checked_criteria(card, [0, 1, 5]), "checklist")
    box.run(tally, lambda: cards.card_status(card), "card_status")
    text = data.decode("utf-8", "replace")
    box.run(tally, lambda: split_frontmatter(text, path="x").key_lines(), "key_lines")
    box.run(
        tally, lambda: cards.set_card_status(box.repo / "out-card.md", "review", "queued"), "link"
    )


# --- asset manifests (.agents-flow) ---------------------------------------------------------


@st.composite
def _assets(draw: st.DrawFn) -> dict[str, bytes]:
    agent = "name: A\ndescription: d\nagentId: fz\noutput:\n  kind: text\n"
    files = {
        "agents/fz.agent.md": f"---\n{draw(s.yaml_text(agent))}---\nYou are fz.\n",
        "instructions/i.instructions.md": f"---\n{draw(s.yaml_text('name: i'))}---\nDo.\n",
        "skills/sk/SKILL.md": f"---\n{draw(s.yaml_text('name: sk'))}---\nSkill.\n",
        "global-system-prompt.md": draw(st.text(max_size=30)),
    }
    return {name: draw(s.encoded(text)) for name, text in files.items() if draw(st.booleans())}


def run_assets(box: Sandbox, tally: Tally, files: dict[str, bytes]) -> None:
    import shutil

    root = box.repo / ".agents-flow"
    shutil.rmtree(root, ignore_errors=True)
    for name, data in files.items():
        _write(root / name, data)
    box.run(tally, _main("prompt", "--agent", "fz", "--task", "t", "--segments"), "prompt fz")
    box.run(tally, _main("plan", "lint", "specs/feature.md"), "plan lint")
    shutil.rmtree(root, ignore_errors=True)


# --- agent reports and replies --------------------------------------------------------------


@st.composite
def _report(draw: st.DrawFn) -> tuple[str, str]:
    return draw(s.report_text()), draw(st.one_of(s.report_text(), st.text(max_size=60)))


def run_report(box: Sandbox, tally: Tally, value: tuple[str, str]) -> None:
    from gitflow_agents import render
    from gitflow_agents.agents import ADAPTERS
    from gitflow_agents.findings import Severity, gate, parse_review
    from gitflow_agents.findings.reply import format_reply, parse_reply
    from gitflow_agents.runs import flow_result

    report, stdout = value

    def review() -> None:
        result = parse_review(report, reviewed_sha="a" * 40, source="report.md")
        verdict = gate(result, threshold=Severity.WARN, head_sha="a" * 40)
        for fmt in render.FORMATS:
            render.render(result, verdict, fmt)

    box.run(tally, review, "parse_review + render")
    box.run(tally, lambda: format_reply(parse_reply(stdout)), "parse_reply")
    for kind in ("implement", "review", "research"):
        box.run(tally, lambda k=kind: flow_result(k, "succeeded", report_text=report), kind)
    for name, adapter in ADAPTERS.items():
        box.run(tally, lambda a=adapter: a.parse_output(stdout, report), f"{name}.parse_output")


# --- run records ----------------------------------------------------------------------------

_ANY = s.hostile_json()
STATUS_SHAPE = {
    key: _ANY
    for key in (
        "run_id",
        "flow",
        "agent",
        "state",
        "started",
        "pid",
        "pgid",
        "create_time",
        "supervisor_pid",
        "last_activity",
        "ended",
        "reason",
        "kind",
        "tree_token",
        "session_id",
    )
}
RESULT_SHAPE = {
    "status": st.sampled_from(["succeeded", "failed", "canceled"]),
    "summary": st.text(max_size=10),
    "overall": st.sampled_from(["approve", "revise"]),
    "chain": st.fixed_dictionaries(
        {},
        optional={
            key: _ANY
            for key in ("step", "iterations", "outcome", "reason", "merged", "agents", "rounds")
        },
    ),
    "gitStats": st.fixed_dictionaries({}, optional={"filesChanged": _ANY, "commits": _ANY}),
    "run": st.fixed_dictionaries(
        {},
        optional={
            key: _ANY
            for key in (
                "durationMs",
                "finishedAt",
                "chainRunID",
                "session",
                "replies",
                "reply",
                "sessionId",
                "costUsd",
                "inputTokens",
                "agentId",
                "kind",
                "flow",
                "historyLine",
            )
        },
    ),
}


@st.composite
def _records(draw: st.DrawFn) -> dict[str, bytes]:
    lines = [draw(s.json_document(STATUS_SHAPE)) for _ in range(draw(st.integers(0, 3)))]
    return {
        "status.json": draw(s.json_document(STATUS_SHAPE)),
        "result.json": draw(s.json_document(RESULT_SHAPE)),
        "events.jsonl": b"\n".join(lines),
        "session": draw(s.json_document({"turns": _ANY, "closed": _ANY, "root": _ANY})),
    }


def run_records(box: Sandbox, tally: Tally, files: dict[str, bytes]) -> None:
    import shutil

    flows = box.repo / "flows"
    shutil.rmtree(flows, ignore_errors=True)
    run_dir = flows / "fz" / "runs" / RUN_ID
    for name in ("status.json", "result.json", "events.jsonl"):
        _write(run_dir / name, files[name])
    _write(flows / "fz" / "sessions" / f"{RUN_ID}.json", files["session"])
    for args in (
        ("status",),
        ("status", "--json"),
        ("history",),
        ("history", "--json", "--agents"),
        ("history", "--format", "mermaid", "--agents"),
        ("cancel", RUN_ID, "--wait", "0"),
        ("send", RUN_ID, "hello", "--quiet"),
    ):
        box.run(tally, _main(*args), " ".join(args[:2] if args[0] == "status" else args[:1]))
    from gitflow_agents.runs.events import read_jsonl

    box.run(tally, lambda: read_jsonl(run_dir / "events.jsonl"), "read_jsonl")


# --- GitHub events --------------------------------------------------------------------------

_LOGIN = st.one_of(st.text(max_size=8), st.sampled_from(["\ud800", "x[bot]", "a\udfff"]), _ANY)
_USER = st.fixed_dictionaries(
    {}, optional={"login": _LOGIN, "type": st.sampled_from(["Bot", "User"])}
)
_PULL = st.fixed_dictionaries(
    {},
    optional={
        "number": st.one_of(st.integers(-5, 2**70), _ANY),
        "title": _ANY,
        "draft": _ANY,
        "user": st.one_of(_USER, _ANY),
        "head": st.one_of(
            st.fixed_dictionaries({"sha": _ANY, "ref": _ANY, "repo": _ANY}), st.just("a string")
        ),
        "base": st.one_of(
            st.fixed_dictionaries(
                {"sha": _ANY, "ref": _ANY, "repo": st.fixed_dictionaries({"full_name": _ANY})}
            ),
            _ANY,
        ),
    },
)
EVENT_SHAPE = {
    "action": st.sampled_from(
        ["opened", "synchronize", "created", "closed", "checks_requested", "destroyed"]
    ),
    "pull_request": st.one_of(_PULL, st.just("{}")),
    "issue": st.fixed_dictionaries(
        {}, optional={"number": _ANY, "pull_request": st.one_of(st.just({"url": "u"}), _ANY)}
    ),
    "comment": st.fixed_dictionaries(
        {},
        optional={
            "body": st.sampled_from(["/agent review", "/agent fix", "/agent x", "hi", ""]),
            "user": st.one_of(_USER, _ANY),
        },
    ),
    "sender": st.one_of(_USER, _ANY),
    "merge_group": st.one_of(
        st.fixed_dictionaries(
            {}, optional={"head_sha": _ANY, "base_sha": _ANY, "head_ref": _ANY, "base_ref": _ANY}
        ),
        _ANY,
    ),
    "reason": _ANY,
}


@st.composite
def _event(draw: st.DrawFn) -> tuple[str, bytes]:
    name = draw(
        st.sampled_from(
            ["pull_request", "pull_request_target", "issue_comment", "merge_group", "push"]
        )
    )
    return name, draw(s.json_document(EVENT_SHAPE))


def run_event(box: Sandbox, tally: Tally, value: tuple[str, bytes]) -> None:
    name, data = value
    path = box.runner / "event.json"
    _write(path, data)
    box.env.update(
        GITHUB_EVENT_NAME=name,
        GITHUB_EVENT_PATH=str(path),
        GITHUB_REPOSITORY="owner/repo",
        GITHUB_OUTPUT=str(box.runner / "output"),
        GITHUB_STEP_SUMMARY=str(box.runner / "summary"),
    )
    try:
        box.run(tally, _main("action"), f"action ({name})")
    finally:
        for key in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY"):
            box.env.pop(key)


# --- reviewed files (what a pull request hands the builtin reviewer) --------------------------

REVIEWED = {
    "x.yaml": s.yaml_text(),
    "ci/.github.yml": s.yaml_text("on: push\njobs:\n  t:\n    runs-on: x\n"),
    "x.json": st.one_of(s.hostile_json().map(json.dumps), st.sampled_from(s.JSON_EXTRAS)),
    "x.toml": st.sampled_from(["a = 1", 'a = "\\ud800"', "[" * 5000, "x = 1979-05-27T07:32:00Z"]),
    "x.py": st.sampled_from(["def f(:\n", "x = 1\n", "(" * 5000, "\x00", "if x:\n\tpass\n  y"]),
    ".env": st.sampled_from(["TOKEN=" + "A" * 40, "password = " + "x" * 5000, "a=b"]),
    "notes.md": st.text(max_size=40),
}


@st.composite
def _reviewed(draw: st.DrawFn) -> dict[str, bytes]:
    names = draw(st.lists(st.sampled_from(sorted(REVIEWED)), min_size=1, max_size=3, unique=True))
    return {name: draw(s.encoded(draw(REVIEWED[name]))) for name in names}


def run_reviewed(box: Sandbox, tally: Tally, files: dict[str, bytes]) -> None:
    import shutil
    import subprocess

    for name, data in files.items():
        _write(box.repo / "pr" / name, data)
    subprocess.run(["git", "add", "pr"], cwd=box.repo, check=True, capture_output=True)
    try:
        box.run(tally, _main("review", "--staged", "--format", "json"), "review --staged")
    finally:
        subprocess.run(["git", "reset", "-q"], cwd=box.repo, check=True, capture_output=True)
        shutil.rmtree(box.repo / "pr", ignore_errors=True)


# --- argv -----------------------------------------------------------------------------------

VALUES = [
    "specs/feature.md",
    "card.md",
    "out-plan.md",
    "out-card.md",
    "out-dir",
    "missing.md",
    ".",
    "sub",
    "builder",
    "reviewer",
    "fixer",
    "builtin",
    "nosuch",
    "1",
    "0",
    "-1",
    "99999999999999999999",
    "nan",
    "inf",
    "1e999",
    "HEAD",
    "HEAD~5",
    "main..HEAD",
    "..",
    "@{-1}",
    "json",
    "sarif",
    "review.sarif",
    "out-dir/x.sarif",
    "error",
    "a,b",
    "",
    "\x00",
    "-",
    "--",
    "é",
    RUN_ID,
]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


COMMANDS = sorted(_subcommands(cli.build_parser()))


def _options(command: str) -> list[str]:
    chosen = _subcommands(cli.build_parser([command])).get(command)
    if chosen is None:
        return []
    return sorted(o for a in chosen._actions for o in a.option_strings if o not in ("-h", "--help"))


# Valid invocations: half the inputs start from one, so they get past argparse.
VALID_ARGV = [
    ["plan", "show", "specs/feature.md"],
    ["plan", "lint", "specs/feature.md"],
    ["plan", "matrix", "specs/feature.md"],
    ["prompt", "--agent", "builder", "--plan", "specs/feature.md", "--step", "1"],
    ["spawn", "builder", "--task", "t", "--quiet"],
    ["spawn", "reviewer", "--task", "t", "--quiet", "--card", "card.md"],
    ["status"],
    ["history", "--json"],
    ["history", "--format", "mermaid"],
    ["review", "--staged"],
    ["review", "HEAD", "--format", "json"],
    ["hook", "gate"],
    ["init"],
    ["flow", "implement", "--plan", "specs/feature.md", "--step", "1", "--quiet"],
    ["run", "specs/feature.md", "--step", "1", "--quiet"],
]


@st.composite
def _argv(draw: st.DrawFn) -> tuple[bool, list[str]]:
    agent_review = draw(st.integers(0, 3)) == 0
    if not agent_review and draw(st.integers(0, 3)) > 0:
        words = list(draw(st.sampled_from(VALID_ARGV)))
        options = _options(words[0])
        for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3]))):
            value = draw(st.one_of(st.sampled_from(VALUES + options), st.text(max_size=6)))
            if len(words) > 1 and draw(st.booleans()):
                words[draw(st.integers(1, len(words) - 1))] = value
            else:
                words.append(value)
        return False, words
    words = [] if agent_review else [draw(st.sampled_from(COMMANDS))]
    extra = {"plan": ["show", "lint", "matrix"], "flow": ["implement", "review", "fix", "research"]}
    if words and words[0] in extra:
        words.append(draw(st.sampled_from(extra[words[0]])))
    if words and words[0] == "hook":
        words.append("gate")
    options = _options(words[0] if words else "review")
    for _ in range(draw(st.integers(0, 6))):
        if options and draw(st.booleans()):
            words.append(draw(st.sampled_from(options)))
        words.append(draw(st.one_of(st.sampled_from(VALUES), st.text(max_size=6))))
    if draw(st.integers(0, 9)) == 0:
        # -C into a linked folder outside the repository is where the user asked to work (like
        # `cd`): a folder in no repository is written there by design (docs/security.md,
        # "Writes"; tests/test_hostile_files.py), so not counted here; -C into a file link is.
        words = ["-C", draw(st.sampled_from(["sub", ".", "missing", "out-card.md"])), *words]
    return agent_review, words


def run_argv(box: Sandbox, tally: Tally, value: tuple[bool, list[str]]) -> None:
    agent_review, argv = value
    entry: Callable[[], int] = (
        (lambda: git_agent_review.main(argv)) if agent_review else (lambda: cli.main(argv))
    )
    box.run(tally, entry, ("git agent-review " if agent_review else "") + " ".join(argv[:2]))
    box.restore_config()


SURFACES = {
    surface.name: surface
    for surface in (
        Surface("config layers", _config(), run_config),
        Surface("plans", _plan(), run_plan),
        Surface("frontmatter (cards)", _card(), run_card),
        Surface("asset manifests", _assets(), run_assets),
        Surface("reports and replies", _report(), run_report),
        Surface("run records", _records(), run_records),
        Surface("GitHub events", _event(), run_event),
        Surface("reviewed files", _reviewed(), run_reviewed),
        Surface("argv", _argv(), run_argv),
    )
}


def describe(value: Any) -> str:
    return json.dumps(value, default=repr)[:200]
