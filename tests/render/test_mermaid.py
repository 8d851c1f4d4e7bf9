"""The Mermaid flowchart of a step run (gitflow_agents/render/mermaid.py): golden charts, their
structure, and hostile text that stays inert in every label.

Mermaid's own parser reads every chart here in tests/render/test_mermaid_parse.py; these tests pin the
text with a strict grammar of the lines the renderer writes, so that any text an agent or a user
controls (names, ids, kinds, statuses, reasons, verdicts, the outcome) can be shown to add no
node, edge, click, style or directive, and to never close the ```mermaid fence.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from gitflow_agents.render.mermaid import (
    MAX_AGENTS,
    MAX_FIELD,
    fence_chart,
    label_text,
    single_run_flowchart,
    step_flowchart,
    step_flowchart_markdown,
)
from gitflow_agents.runs.spend import NOTHING, Spend
from tests.golden.mermaid_cases import (
    CASES,
    HOSTILE,
    agent,
    chart,
    golden_path,
    hostile_case,
    lost_reviewer_result,
    usage,
)
from tests.helpers.mermaid import skeleton


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_chart_is_the_golden_one(name: str) -> None:
    """Regenerate with ``python -m tests.golden.regen`` and review the diff."""
    assert chart(CASES[name]) == golden_path(name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_golden_chart_keeps_to_the_grammar(name: str) -> None:
    skeleton(chart(CASES[name]))


def test_revise_then_approve_reads_as_the_chain_ran() -> None:
    text = chart(CASES["revise_then_approve"])
    nodes = re.findall(r"n\d+\(?\[\"([^\"]*)\"", text)
    assert [n.split("<br/>")[0] for n in nodes] == [
        "implement",
        "review 1#58; REVISE, 2 findings",
        "fix 1",
        "review 2#58; APPROVED",
        "merged #40;fast-forward#41;",
    ]
    assert re.findall(r"n(\d+) --> n(\d+)", text) == [
        ("1", "2"),
        ("2", "3"),
        ("3", "4"),
        ("4", "5"),
    ]
    assert "15,400 tokens #183; #36;0.21" in nodes[0]  # input + output tokens, cost
    assert "tokens" not in nodes[3]  # the adapter reported no usage: nothing is made up
    assert nodes[3].endswith("9.8 s #183; spend unknown")  # ... and it says so
    # the known costs added up: a lower bound, since one agent's cost is unknown
    assert "total 1 min 35 s #183; #8805; #36;0.38" in nodes[4]


def _last_lines(text: str) -> list[str]:
    """The last line of each node's label (duration and spend)."""
    return [label.split("<br/>")[-1] for label in re.findall(r'n\d+\(?\["([^"]*)"', text)]


def test_spend_is_marked_as_the_tables_mark_it() -> None:
    """``~`` for a cost estimated from the price table, ``≥`` for a sum with unknown parts,
    ``unknown`` for what no record states (docs/decisions.md, "Spend (issue 23)")."""
    text = chart(CASES["estimated_and_unknown_spend"])
    assert _last_lines(text) == [
        "30.0 s #183; 12,000 tokens #183; #36;0.30",  # the CLI's own cost
        "10.0 s #183; 6,500 tokens #183; #126;#36;0.04",  # ~$0.04: from the price table
        "20.0 s #183; 5,000 tokens #183; cost unknown",  # tokens, but no price for the model
        "10.0 s #183; spend unknown",  # the CLI said nothing
        "total 1 min 35 s #183; #8805; #126;#36;0.34",  # ≥ ~$0.34
    ]


@pytest.mark.parametrize(
    ("run", "last"),
    [
        ({"inputTokens": 7, "outputTokens": 3, "costUsd": 0.5}, "10 tokens #183; #36;0.50"),
        (
            {"inputTokens": 7, "outputTokens": 3, "costUsd": 0.5, "costEstimated": True},
            "10 tokens #183; #126;#36;0.50",
        ),
        ({"inputTokens": 7, "costUsd": 0.5}, "#8805; 7 tokens #183; #36;0.50"),
        ({"costUsd": 0.5}, "tokens unknown #183; #36;0.50"),
        ({"inputTokens": 7, "outputTokens": 3}, "10 tokens #183; cost unknown"),
        ({}, "spend unknown"),
        ({"inputTokens": 0, "outputTokens": 0, "costUsd": 0}, "0 tokens #183; #36;0.00"),
    ],
)
def test_a_single_runs_chart_marks_its_spend(run: dict[str, object], last: str) -> None:
    text = single_run_flowchart({"run": {"kind": "review", "agentId": "x", **run}})
    assert _last_lines(text) == [last]


def test_the_total_is_unknown_only_when_no_agent_run_states_a_cost() -> None:
    agents = [agent("implement", "builder", "b", "run-1", 1_000)]
    result = {"chain": {"outcome": "failed", "agents": agents}}
    assert _last_lines(step_flowchart(result))[-1] == "total cost unknown"
    found = {"run-1": {"run": {"costUsd": 0.25, "costEstimated": True}}}
    assert _last_lines(step_flowchart(result, agent_results=found))[-1] == "total #126;#36;0.25"
    assert "total" not in step_flowchart({"chain": {"outcome": "failed", "agents": []}})


def test_a_reused_agent_is_drawn_but_not_in_the_total() -> None:
    """A reused agent run was counted by the step run that ran it (``runs.spend.step_spend``):
    its node shows its spend, marked ``reused``, and the total leaves it out, or the step run's
    own figure given as ``spend`` when the caller read the run folders."""
    agents = [
        agent("implement", "builder", "b", "run-1", 1_000, reused=True),
        agent("review", "reviewer", "r", "run-2", 1_000),
    ]
    result = {"chain": {"outcome": "failed", "agents": agents}}
    found = {"run-1": usage(20_000, 4_000, 0.12), "run-2": usage(5_000, 1_000, 0.03)}
    text = step_flowchart(result, agent_results=found)
    assert "reused<br/>1.0 s #183; 24,000 tokens #183; #36;0.12" in text
    assert _last_lines(text)[-1] == "total #36;0.03"
    given = Spend(input_tokens=25_000, output_tokens=5_000, cost_usd=0.15)
    assert _last_lines(step_flowchart(result, agent_results=found, spend=given))[-1] == (
        "total #36;0.15"
    )
    alone = {"chain": {"outcome": "failed", "agents": agents[:1]}}
    assert "total" not in step_flowchart(alone, agent_results=found)
    assert _last_lines(step_flowchart(alone, agent_results=found, spend=NOTHING))[-1] == (
        "total #36;0.00"
    )


def test_parallel_reviewers_fan_out_and_in_inside_one_box() -> None:
    text = chart(CASES["parallel_reviewers"])
    assert text.count("subgraph") == 2 and text.count("    end\n") == 2
    edges = re.findall(r"(n\d+) --> (n\d+)", text)
    assert ("n1", "n2") in edges and ("n1", "n3") in edges  # implement → both reviewers
    assert ("n2", "n4") in edges and ("n3", "n4") in edges  # both reviewers → fix
    assert '"security#58; REVISE, 1 finding' in text and '"reviewer#58; APPROVE' in text
    assert '(["APPROVED<br/>PR #35;12<br/>total ' in text  # the outcome, then the step's PR


def _classes(text: str) -> dict[str, str]:
    """First line of each node's label → its class."""
    return {
        label.split("<br/>")[0]: cls
        for label, cls in re.findall(r'n\d+\(?\["([^"]*)"\]\)?:::(\w+)', text)
    }


def test_only_an_approval_is_green_never_a_review_without_a_valid_verdict() -> None:
    text = chart(CASES["no_valid_verdict"])
    classes = _classes(text)
    assert classes["review 1#58; NOT APPROVED"] == "warn"  # alone in its round
    assert classes["reviewer#58; NO VERDICT"] == "warn"  # beside another reviewer
    assert classes["security#58; APPROVE"] == "ok"
    assert classes["implement"] == classes["fix 1"] == "ok"
    assert (
        '(["REJECTED<br/>PR #35;3<br/>not approved after 2 review#40;s#41;#58; no verdict' in text
    )
    # an approving reviewer alone in a round the gate did not pass (findings at the threshold)
    blocked = CASES["revise_then_approve"].result
    blocked = {**blocked, "chain": {**blocked["chain"], "outcome": "rejected"}}
    blocked["chain"]["rounds"] = [
        *blocked["chain"]["rounds"][:1],
        {**blocked["chain"]["rounds"][1], "approved": False},
    ]
    assert _classes(step_flowchart(blocked))["review 2#58; NOT APPROVED"] == "warn"


@pytest.mark.parametrize(
    ("outcome", "merged", "first"),
    [
        ("approved", None, "APPROVED"),
        ("approved", {"kind": "fast-forward"}, "merged #40;fast-forward#41;"),
        ("rejected", None, "REJECTED"),
        ("failed", None, "FAILED"),
    ],
)
def test_the_end_node_is_the_outcome_then_the_pull_request_when_there_is_one(
    outcome: str, merged: dict[str, str] | None, first: str
) -> None:
    chain: dict[str, object] = {"outcome": outcome, "merged": merged, "reason": "why"}
    [without] = re.findall(r'\(\["([^"]*)"\]\)', step_flowchart({"chain": chain}))
    assert without.split("<br/>")[0] == first and "PR #35;" not in without
    chain["pullRequest"] = {"number": 41, "url": "https://github.com/o/r/pull/41"}
    [label] = re.findall(r'\(\["([^"]*)"\]\)', step_flowchart({"chain": chain}))
    assert label.split("<br/>")[:2] == [first, "PR #35;41"]
    for wrong in ("41", True, -1, 0, 10**40, None, [41]):
        chain["pullRequest"] = {"number": wrong}
        assert "PR #35;" not in step_flowchart({"chain": chain})  # an agent wrote it: ignored


def test_a_stuck_attempt_and_its_retry_and_a_crash_are_shown() -> None:
    text = chart(CASES["stuck_retry_then_reviewer_crash"])
    assert "n1 -->|retry| n2" in text
    assert "STUCK#58; no activity for 600 s" in text and "attempt 2" in text
    assert 'CRASHED#58; exit code 1<br/>1.0 s #183; spend unknown"]:::bad' in text
    assert '(["FAILED<br/>' in text


def test_more_agent_runs_than_drawn_are_counted_in_one_node() -> None:
    runs = [agent("review", "r", f"id-{n}", f"run-{n}", 10) for n in range(MAX_AGENTS + 25)]
    text = step_flowchart({"chain": {"outcome": "failed", "agents": runs}})
    assert len(re.findall(r"^ +n\d+\[", text, re.M)) == MAX_AGENTS + 1
    assert '"#8230; 25 more agent runs"' in text
    skeleton(text)


def test_a_record_that_is_not_a_step_run_still_gives_a_chart() -> None:
    for data in ({}, {"chain": []}, {"chain": {"agents": "x", "rounds": [1, "a", None]}}):
        assert skeleton(step_flowchart(data))[0] == "flowchart LR"


def test_label_text_is_bounded_one_line_and_masks_secrets() -> None:
    assert label_text("x" * 500) == "x" * (MAX_FIELD - 1) + "#8230;"  # …
    assert label_text("a\nb\r\nc\u2028d\te") == "a b c d e"
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    assert token not in label_text(f"leaked {token}", 200)
    assert label_text('"') == "#34;" and label_text("#quot;") == "#35;quot#59;"


def test_single_run_is_one_node() -> None:
    data = {
        "status": "succeeded",
        "overall": "revise",
        "run": {"kind": "review", "agentId": "reviewer", "status": "succeeded", "durationMs": 1500,
                "inputTokens": 10, "outputTokens": 5, "costUsd": 0.01},
    }  # fmt: skip
    text = single_run_flowchart(data)
    assert skeleton(text)[:2] == ["flowchart LR", '    n1[""]'] and "]:::warn" in text
    assert '"review<br/>reviewer<br/>SUCCEEDED #40;REVISE#41;<br/>1.5 s #183; 15 tokens' in text
    assert "]:::ok" in single_run_flowchart({**data, "overall": "approve"})  # only APPROVE


def test_an_implement_run_that_succeeded_is_green_and_a_failed_one_red() -> None:
    run = {"kind": "implement", "agentId": "builder", "status": "succeeded"}
    assert "]:::ok" in single_run_flowchart({"status": "succeeded", "run": run})
    assert "]:::bad" in single_run_flowchart({"run": {**run, "status": "failed"}})


def test_a_canceled_agent_run_is_yellow_as_the_docs_say_not_red() -> None:
    """docs/chains.md, "History": yellow for a stuck or timed-out agent and a canceled run."""
    run = {"kind": "implement", "agentId": "builder", "status": "canceled"}
    assert "]:::warn" in single_run_flowchart({"run": run})
    case = CASES["stuck_retry_then_reviewer_crash"]
    result = json.loads(json.dumps(case.result))
    for entry in result["chain"]["agents"]:
        entry["status"], entry["reason"] = "canceled", "interrupted (SIGTERM)"
    text = step_flowchart(result)
    assert "CANCELED#58; interrupted" in text and "]:::bad" not in text  # the agents


def test_the_markdown_block_is_one_mermaid_fence_holding_the_chart() -> None:
    case = CASES["parallel_reviewers"]
    block = step_flowchart_markdown(case.result, agent_results=case.agent_results)
    [token] = MarkdownIt("commonmark").parse(block)
    assert token.type == "fence" and token.info == "mermaid" and token.content == chart(case)


def test_fence_chart_refuses_a_chart_with_a_backtick() -> None:
    with pytest.raises(ValueError):
        fence_chart('flowchart LR\n    n1["`x`"]\n')


def _hostile_checks(value: str) -> None:
    case = hostile_case(value)
    benign = hostile_case("benign text")
    text = chart(case)
    assert skeleton(text) == skeleton(chart(benign))  # no node, edge, box or class added
    assert "`" not in text and "%" not in text  # no fence, no %%{init}%% directive
    block = fence_chart(text) + "after the fence\n"
    tokens = MarkdownIt("commonmark").parse(block)
    assert [t.type for t in tokens][:1] == ["fence"] and tokens[0].content == text
    assert tokens[0].info == "mermaid"


def test_hostile_text_everywhere_stays_inside_its_labels() -> None:
    _hostile_checks(HOSTILE)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=120))
@example('"]\nclick n1 "http://x"\n```')
@example("%%{init: {'theme': 'dark'}}%%")
@example("a\u2028n9[x]\u0085n10 --> n1")
def test_any_text_never_adds_a_node_an_edge_a_click_or_closes_the_fence(value: str) -> None:
    assume(value.strip() not in ("review", "fix"))  # kinds the chart groups by
    _hostile_checks(value)


def test_a_lost_reviewer_a_new_run_listed_carries_no_verdict_of_its_successors_round() -> None:
    """A reviewer lost when its supervisor was killed, listed by the step's new run (first, as
    it ran before it), shares its agent id with the new run's reviewer of that round: its node
    is a plain canceled review, not the round's APPROVED, and the round's reviewer keeps it."""
    text = step_flowchart(lost_reviewer_result())
    labels = re.findall(r'n\d+\(?\["([^"]*)"\]', text)
    assert labels[0].startswith("review<br/>") and "APPROVED" not in labels[0], labels
    assert "CANCELED" in labels[0]
    assert labels[2].startswith("review 1#58; APPROVED"), labels


def test_a_stopped_reviews_chart_shows_no_verdict_its_record_shape_defaults_to() -> None:
    """A review record always has an ``overall`` (``revise`` when the reviewer said nothing):
    a completed review shows its verdict, one a budget or a cancel stopped shows none (it
    said `BUDGET (REVISE)`, a verdict no reviewer gave)."""
    for outcome, shown in (("succeeded", "SUCCEEDED #40;REVISE#41;"), ("budget", "BUDGET<br/>")):
        result = {"status": "failed", "overall": "revise", "findings": [], "summary": ""}
        result["run"] = {"kind": "review", "agentId": "rev", "status": outcome}
        text = single_run_flowchart(result)
        assert shown in text, text
        assert outcome == "succeeded" or "REVISE" not in text, text
