"""``gitflow-agents history --format mermaid`` on a real chain run (real git, fake agents):
a flowchart per step run shown, a one-node chart per single run, the filters kept, and what
an agent could leave in the run folders (usage, a run id pointing elsewhere, a broken record).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from markdown_it import MarkdownIt

from gitflow_agents.render.history import agent_results, step_chart
from gitflow_agents.render.mermaid import step_flowchart
from tests.conftest import init_repo, isolate_home
from tests.golden.mermaid_cases import agent, step_result
from tests.helpers.chain import call, configure, results, run
from tests.helpers.mermaid import skeleton


class Ran(NamedTuple):
    repo: Path
    result: dict[str, Any]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """``run --step 1`` with two reviewers, one asking for a fix once: implement → two
    reviewers → fix → two reviewers → merged. Run once; the tests only read what it left,
    except those that copy it first."""
    base = tmp_path_factory.mktemp("history-mermaid")
    with pytest.MonkeyPatch.context() as patch:
        isolate_home(base / "home", patch)
        repo = init_repo(base / "repo")
        configure(repo, extra_reviewers={"security": "until-fixed"})
        out = run(repo, "--step", "1", "--reviewers", "reviewer,security")
        assert out.returncode == 0, out.stderr + out.stdout
        [result] = results(repo)
        return Ran(repo, result)


def fences(markdown: str) -> list[str]:
    """The contents of the ```mermaid blocks, each checked to be one."""
    tokens = MarkdownIt("commonmark").parse(markdown)
    blocks = [t for t in tokens if t.type == "fence"]
    assert all(t.info == "mermaid" for t in blocks)
    return [t.content for t in blocks]


def history(repo: Path, *args: str) -> str:
    out = call(repo, "history", *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_step_run_is_one_flowchart_of_its_chain(ran: Ran) -> None:
    text = history(ran.repo, "--format", "mermaid")
    [chart] = fences(text)
    assert text.startswith(f"### step 1 · feature · approved · run {ran.result['run']['runID']}")
    skeleton(chart)
    assert chart.count("subgraph") == 2  # the two reviewers of each round, side by side
    assert '"review 1#58; REVISE, 1 finding"' in chart and '"review 2#58; APPROVED"' in chart
    assert '(["merged #40;fast-forward#41;<br/>total ' in chart
    assert chart == step_flowchart(
        ran.result, agent_results=agent_results(run_dir(ran), ran.result)
    )


def run_dir(ran: Ran) -> Path:
    return Path(ran.result["run"]["logDirectory"])


def test_agents_adds_a_one_node_chart_per_agent_run_and_flow_filters(ran: Ran) -> None:
    charts = fences(history(ran.repo, "--format", "mermaid", "--agents"))
    assert len(charts) == 1 + 6  # the step run and its six agent runs
    assert all(len(skeleton(c)) == 2 + 3 for c in charts[1:])  # header, one node, 3 classDefs
    assert fences(history(ran.repo, "--format", "mermaid", "--flow", "other")) == []
    assert history(ran.repo, "--format", "mermaid", "--flow", "other").startswith("no runs")


def test_json_and_the_table_are_unchanged_and_json_conflicts_with_mermaid(ran: Ran) -> None:
    assert json.loads(history(ran.repo, "--json")) == json.loads(
        history(ran.repo, "--format", "json")
    )
    assert "step 1" in history(ran.repo, "--format", "table")
    out = call(ran.repo, "history", "--json", "--format", "mermaid")
    assert out.returncode == 2 and "give one" in out.stderr and "Traceback" not in out.stderr


def test_the_second_time_gives_the_same_charts(ran: Ran) -> None:
    assert history(ran.repo, "--format", "mermaid") == history(ran.repo, "--format", "mermaid")


def test_tokens_and_cost_come_from_the_agents_own_records(ran: Ran, tmp_path: Path) -> None:
    data = ran.result
    first = data["chain"]["agents"][0]["runID"]
    folder = run_dir(ran).parent / first
    record = json.loads((folder / "result.json").read_text())
    original = (folder / "result.json").read_text()
    try:
        record["run"].update(inputTokens=1000, outputTokens=234, costUsd=0.5)
        (folder / "result.json").write_text(json.dumps(record))
        chart = fences(history(ran.repo, "--format", "mermaid"))[0]
        assert "1,234 tokens #183; #36;0.50" in chart and "total " in chart
        record["run"].update(costUsd=0.25, costEstimated=True)  # priced from the price table
        (folder / "result.json").write_text(json.dumps(record))
        assert (
            "1,234 tokens #183; #126;#36;0.25"
            in fences(history(ran.repo, "--format", "mermaid"))[0]
        )
        (folder / "result.json").write_text("{not json")  # a broken record: no usage, no crash
        chart = fences(history(ran.repo, "--format", "mermaid"))[0]
        assert "tokens" not in chart and "spend unknown" in chart
    finally:
        (folder / "result.json").write_text(original)


def test_a_run_id_that_is_not_a_plain_name_reads_nothing_outside(ran: Ran, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "result.json").write_text(json.dumps({"run": {"costUsd": 99.0}}))
    data = json.loads(json.dumps(ran.result))
    data["chain"]["agents"][0]["runID"] = str(Path("..") / ".." / ".." / str(outside))
    data["chain"]["agents"][1]["runID"] = str(outside)
    found = agent_results(run_dir(ran), data)
    assert not any(key.startswith((".", "/")) for key in found)
    assert "#36;99" not in step_flowchart(data, agent_results=found)


def _write(folder: Path, data: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "result.json").write_text(json.dumps(data))


@pytest.mark.parametrize("recorded", [True, False])
def test_the_total_counts_a_reused_agent_as_history_does(tmp_path: Path, recorded: bool) -> None:
    """A re-run reuses the implementer an earlier step run ran: the end node's total is the
    step run's spend as ``history`` counts it (``runs.spend.step_spend``), without the reused
    agent when its step run recorded it (that run counts it) and with it when that run left no
    record (killed). The reused node still shows its own spend."""
    runs = tmp_path / "runs"
    earlier = {"run": {"runID": "step-1", "kind": "chain"}, "chain": {"agents": []}}
    if recorded:
        _write(runs / "step-1", earlier)
    spent = {"inputTokens": 20_000, "outputTokens": 4_000, "costUsd": 0.12}
    _write(runs / "impl-1", {"run": {"chainRunID": "step-1", **spent}})
    _write(runs / "rev-2", {"run": {"chainRunID": "step-2", **spent, "costUsd": 0.03}})
    agents = [
        agent("implement", "builder", "b", "impl-1", 1_000, reused=True),
        agent("review", "reviewer", "r", "rev-2", 1_000),
    ]
    data = step_result("approved", "", agents, [], merged=True, duration_ms=1_200)
    _write(runs / "step-2", data)
    chart = step_chart(runs / "step-2", data)
    assert "reused<br/>1.0 s #183; 24,000 tokens #183; #36;0.12" in chart
    total = "#36;0.03" if recorded else "#36;0.15"
    assert f'<br/>total 1.2 s #183; {total}"]):::ok' in chart


def test_a_step_run_killed_before_its_record_is_left_out(ran: Ran) -> None:
    """A run folder without result.json (killed before ``finally``) is not shown, as in the
    table; the complete run still is."""
    killed = run_dir(ran).parent / "01ffffff-0000-7000-8000-000000000000"
    killed.mkdir()
    try:
        assert len(fences(history(ran.repo, "--format", "mermaid"))) == 1
    finally:
        killed.rmdir()


def test_history_charts_parse_with_mermaid(ran: Ran) -> None:
    from tests.helpers.mermaid import PREFIX, check, parse

    if not (PREFIX and shutil.which("node")):
        pytest.skip("set MERMAID_PREFIX (bash tests/e2e/install_mermaid.sh prints it)")
    charts = fences(history(ran.repo, "--format", "mermaid", "--agents"))
    for chart, parsed in zip(charts, parse(charts), strict=True):
        check(chart, parsed)
    assert re.search(r"n\d+ --> n\d+", charts[0])
