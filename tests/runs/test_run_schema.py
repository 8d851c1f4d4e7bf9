"""One schema for a step run's record (issue 21, item 4): ``runs/schema.py`` writes the
``chain`` key of result.json and reads it back into the same typed values, and a record an
earlier version wrote (tests/data/records/step-run.json, a real step run with a builtin
reviewer's finding and an accepted finding) reads back and writes out byte for byte."""

from __future__ import annotations

import json
from dataclasses import replace

from gitflow_agents.findings import Overall, Severity
from gitflow_agents.runs.schema import PullRef, StepChain, step_chain
from tests.conftest import ROOT

STORED = ROOT / "tests" / "data" / "records" / "step-run.json"


def stored() -> dict[str, object]:
    data: dict[str, object] = json.loads(STORED.read_text(encoding="utf-8"))
    return data


def test_a_stored_step_record_reads_back_into_typed_values() -> None:
    chain = step_chain(stored())
    assert chain is not None
    assert (chain.outcome, chain.step, chain.iterations, chain.fixes) == ("approved", 1, 1, 0)
    assert chain.merged is not None and chain.merged.kind == "fast-forward"
    assert [(a.kind, a.agent_id, a.reused) for a in chain.agents] == [
        ("implement", "step-01-builder", False),
        ("review", "step-01-offline-1", False),
    ]
    [round_] = chain.rounds
    assert round_.approved and round_.reviewed_sha == chain.head_sha
    [reviewer] = round_.reviewers
    review = reviewer.review
    assert review.overall is Overall.APPROVE
    assert review.reviewed_sha == round_.reviewed_sha and review.base_sha == chain.base_sha
    [finding] = review.findings
    assert (finding.severity, finding.file, finding.line) == (Severity.WARN, "app.py", 2)
    [accepted] = review.accepted
    assert accepted.by == "marker" and accepted.finding.rule == "github-token"


def test_reading_and_writing_a_stored_record_changes_no_byte() -> None:
    data = stored()
    chain = step_chain(data)
    assert chain is not None
    assert json.dumps(chain.to_json(), indent=2) == json.dumps(data["chain"], indent=2)


def test_the_pull_request_is_one_more_key_and_reads_back() -> None:
    chain = step_chain(stored())
    assert chain is not None
    written = replace(chain, pull_request=PullRef(7, "https://github.example/o/r/pull/7")).to_json()
    assert list(written)[-1] == "pullRequest"
    again = StepChain.from_json(written)
    assert again.pull_request == PullRef(7, "https://github.example/o/r/pull/7")
    assert again.to_json() == written


def test_fields_an_agent_broke_read_as_absent() -> None:
    chain = json.loads(STORED.read_text(encoding="utf-8"))["chain"]
    chain["step"] = "two"
    chain["agents"] = [{"agent": 3, "runID": ["x"]}, "not an entry"]
    chain["rounds"] = [{"reviewers": [{"overall": "maybe", "findings": [{"severity": "?"}]}]}]
    read = StepChain.from_json(chain)
    assert read.step is None
    [agent] = read.agents
    assert agent.agent == "" and agent.run_id == ""
    [reviewer] = read.rounds[0].reviewers
    assert reviewer.review.overall is None and reviewer.review.findings == ()
    assert step_chain({"run": {}}) is None


def test_an_agents_reply_reads_back_into_the_reply_it_was_written_from() -> None:
    from gitflow_agents.agent_run.record import reply_from_json, reply_json
    from gitflow_agents.findings.reply import ReplyStatus, parse_reply

    asks = parse_reply(
        "<SUMMARY>Added the module.</SUMMARY>\n<STATUS>needs_input</STATUS>\n"
        "<QUESTIONS>\n- Which name?\n</QUESTIONS>\n<FILES_CREATED>\n- src/new.py\n"
        "</FILES_CREATED>\n"
    )
    odd = parse_reply("<SUMMARY>Done.</SUMMARY>\n<STATUS>bogus</STATUS>\n")
    assert asks.status is ReplyStatus.NEEDS_INPUT and odd.warnings
    for reply in (asks, odd):
        written = json.loads(json.dumps(reply_json(reply)))
        assert reply_from_json(written) == replace(reply, raw="")
    assert reply_from_json({"status": "maybe", "actions": "x"}).status is None
