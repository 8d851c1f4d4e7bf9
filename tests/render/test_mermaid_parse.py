"""Every flowchart the tests draw, parsed by Mermaid itself (npm ``mermaid``, in Node).

Runs when ``MERMAID_PREFIX`` names the install that tests/e2e/install_mermaid.sh makes (.ci/run
does it and exports the variable) and ``node`` is on PATH; skipped otherwise. One Node process
parses all charts (tests/e2e/mermaid_parse.mjs): the golden charts, a single run's chart, the
chart cut at ``MAX_AGENTS``, the charts in docs/, and hostile text
(tests/golden/mermaid_cases.py's ``HOSTILE`` and a hundred-odd random strings). Each must parse
as a left-to-right flowchart holding exactly the nodes, edges and boxes of our own lines, no
link, click, tooltip or style, and show every label as the text we meant, literally.
(tests/render/test_history_mermaid.py parses ``history --format mermaid`` of a real chain run.)
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest

from gitflow_agents.github.api.client import PullRequest
from gitflow_agents.github.pr.plan_comment import StepGlance, plan_body
from gitflow_agents.plan.model import Plan
from gitflow_agents.render.mermaid import (
    MAX_AGENTS,
    MAX_PLAN_STEPS,
    PlanNode,
    label_text,
    plan_flowchart,
    single_run_flowchart,
    step_flowchart,
)
from tests.conftest import ROOT
from tests.golden.mermaid_cases import CASES, HOSTILE, agent, chart, golden_path, hostile_case
from tests.helpers.mermaid import PREFIX, check, ours, parse, shown

pytestmark = pytest.mark.skipif(
    not (PREFIX and shutil.which("node")),
    reason="set MERMAID_PREFIX (bash tests/e2e/install_mermaid.sh prints it) to parse the charts",
)


def test_every_golden_and_generated_chart_parses_as_drawn(tmp_path: Path) -> None:
    many = [agent("review", "r", f"id-{n}", f"run-{n}", 10) for n in range(MAX_AGENTS + 3)]
    charts = [golden_path(name).read_text(encoding="utf-8") for name in sorted(CASES)]
    charts += [
        step_flowchart({"chain": {"outcome": "failed", "agents": many}}),
        single_run_flowchart({"run": {"kind": "review", "agentId": "x", "status": "stuck"}}),
        step_flowchart({}),
    ]
    for text, parsed in zip(charts, parse(charts), strict=True):
        check(text, parsed)


def test_the_charts_in_the_docs_parse() -> None:
    charts = [
        block
        for page in sorted((ROOT / "docs").glob("*.md"))
        for block in re.findall(
            r"^```mermaid\n(.*?)^```$", page.read_text(encoding="utf-8"), re.M | re.S
        )
    ]
    assert charts, "docs/chains.md shows a step run's chart"
    for text, parsed in zip(charts, parse(charts), strict=True):
        plan_chart = "classDef ready" in text  # docs/spec-plans.md, "The plan at a glance"
        check(text, parsed, PLAN_CLASSES if plan_chart else frozenset({"ok", "warn", "bad"}))


def _values() -> list[str]:
    """Hostile text: the crafted one, each of its lines, and random strings drawn from the
    characters that matter to Mermaid and markdown, plus any code point."""
    rng = random.Random(14)
    alphabet = '"[](){}<>|`#;%:&@\\/-.=*~!?\n\r\t \u2028\u202e' + "abcXYZ019"
    values = [HOSTILE, *HOSTILE.splitlines()]
    for _ in range(120):
        size = rng.randint(0, 80)
        if rng.random() < 0.8:
            values.append("".join(rng.choice(alphabet) for _ in range(size)))
        else:
            values.append("".join(chr(rng.randint(1, 0x2FFFF)) for _ in range(size)))
    return [v for v in values if v not in ("review", "fix")]


def test_hostile_text_parses_to_the_same_graph_and_shows_literally() -> None:
    values = _values()
    charts = [chart(hostile_case(value)) for value in values]
    benign = chart(hostile_case("benign text"))
    parsed = parse([benign, *charts])
    check(benign, parsed[0])
    structure = (
        [v["id"] for v in parsed[0]["vertices"]],
        [(e["start"], e["end"], e["text"]) for e in parsed[0]["edges"]],
        [(s["id"], s["nodes"]) for s in parsed[0]["subgraphs"]],
    )
    for value, text, result in zip(values, charts, parsed[1:], strict=True):
        check(text, result)
        assert (
            [v["id"] for v in result["vertices"]],
            [(e["start"], e["end"], e["text"]) for e in result["edges"]],
            [(s["id"], s["nodes"]) for s in result["subgraphs"]],
        ) == structure, value
        name = ours(f'"{label_text(value)}"')  # the agent name, as the chart means to show it
        lines = [line for v in result["vertices"] for line in shown(v["text"]).split("\n")]
        assert not name or name in lines, value


PLAN_CLASSES = frozenset({"ok", "warn", "bad", "ready", "wait"})


def test_the_plan_chart_parses_with_hostile_titles() -> None:
    """``plan show --format mermaid``: every state, a cycle, a title of hostile text each, and
    a plan cut at ``MAX_PLAN_STEPS``."""
    values = _values()[:40]
    states = ["done", "running", "red", "ready", "waiting"]
    charts = [
        plan_flowchart(
            PlanNode(
                n, title, states[n % 5], f"{states[n % 5]}: {title}", (n - 1,) if n > 1 else (3,)
            )
            for n, title in enumerate([value, "b", "c", "d", "e"], 1)
        )
        for value in values
    ]
    many = [PlanNode(n, "s", "waiting", "waiting", (n - 1,)) for n in range(1, MAX_PLAN_STEPS + 9)]
    charts.append(plan_flowchart(many))
    for text, parsed in zip(charts, parse(charts), strict=True):
        check(text, parsed, PLAN_CLASSES)
    for value, parsed in zip(values, parse(charts[:-1]), strict=True):
        first = shown(parsed["vertices"][0]["text"]).split("\n")[0]
        assert first == ours(f'"{label_text(f"Step 1: {value}", 80)}"'), value


def test_the_plan_comment_chart_parses_with_hostile_titles(tmp_path: Path) -> None:
    """The chart of the plan comment on GitHub (``github/pr/plan_comment.py``), taken from the
    comment's body as posted: every state, steps with pull requests, hostile titles."""
    values = _values()[:20]
    pull = PullRequest(
        number=12,
        title="t",
        author="bot",
        head_sha="a" * 40,
        base_sha="b" * 40,
        head_ref="agents/p/step-2",
        base_ref="main",
        head_repo="octo/demo",
        base_repo="octo/demo",
        draft=False,
        html_url="https://github.example/octo/demo/pull/12",
    )
    states = ["done", "running", "red", "ready", "waiting"]
    charts = []
    for value in values:
        steps = [
            StepGlance(
                PlanNode(n, t, states[n - 1], f"{states[n - 1]}: {t}", (1,) if n > 1 else ()),
                pull if n in (2, 3) else None,
            )
            for n, t in enumerate([value, "b", value, "d", "e"], 1)
        ]
        body = plan_body(Plan(tmp_path / "p.md", "p", f"# {value}\n", ()), "specs/p.md", steps)
        [block] = re.findall(r"^```mermaid\n(.*?)^```$", body, re.M | re.S)
        charts.append(block)
    for text, parsed in zip(charts, parse(charts), strict=True):
        check(text, parsed, PLAN_CLASSES)
