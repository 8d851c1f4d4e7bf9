"""Usage, complete and comparable (issue 23, item 1): what each adapter reads, the price table
that estimates a cost the CLI does not state (and its ``prices:`` override in ``.flow/``), the
sums per step and per plan in ``history``, and the Action's usage outputs for an agent reviewer.
Unknown is None / absent / ``unknown`` / empty, never 0."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from gitflow_agents.agents import get_adapter
from gitflow_agents.agents.prices import Price, price_for, shipped_prices, usage_of
from gitflow_agents.base.errors import ConfigError, ExitCode
from gitflow_agents.config import load_flow_config
from gitflow_agents.config.json_schema import flow_config_schema
from gitflow_agents.github.action.comment import run_history
from gitflow_agents.github.pr.history import history_rows
from gitflow_agents.runs.events import ConsoleChannel, EventHub
from gitflow_agents.runs.spend import Spend, cost_text, run_spend, tokens_text, total
from tests.conftest import DATA, FAKES, Cli, CliResult, git
from tests.github_standin import GitHubStandIn, Pull, gh
from tests.helpers.action_runner import Runner, add_pull, pr_event, runner
from tests.helpers.adapters import sample

__all__ = ["gh", "runner"]

GPT5 = Price(input=1.25, output=10, cached=0.125)

# An agent CLI in the shape of Claude's result JSON, usage without a cost ("usage" mode) or
# plain text without usage ("quiet" mode), through the generic command adapter.
METERED_AGENT = """#!{python}
import json, os, pathlib, sys
d = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
(d / "report.md").write_text("## Summary\\n\\ndone\\n")
os.rename(d / "report.md", d / "report.complete.md")
if sys.argv[1] == "usage":
    print(json.dumps({{"type": "result", "is_error": False, "result": "done", "model": "gpt-5",
                      "usage": {{"input_tokens": 200000, "cache_read_input_tokens": 800000,
                                "output_tokens": 10000}}}}))
else:
    print("done, and no word on usage")
"""

FLOW = """completion_workflow:
  template: "Rename {{report_file}} to {{success_file}}."
defaults:
  stuck_timeout_secs: 30
  max_wait_secs: 60
agents:
  metered:
    adapter: command
    command: [{agent}, usage]
  silent:
    adapter: command
    command: [{agent}, quiet]
"""


# --------------------------------------------------------------------------- adapters


def test_auggie_reports_no_usage_and_it_stays_unknown() -> None:
    parsed = get_adapter("auggie").parse_output(sample("auggie-success.json"), "")
    usage = (parsed.input_tokens, parsed.output_tokens, parsed.cached_tokens, parsed.cost_usd)
    assert usage == (None, None, None, None)
    assert usage_of(parsed, "gpt-5", shipped_prices()).cost_usd is None


def test_aider_cache_hits_are_cached_input() -> None:
    text = "Tokens: 12k sent, 1.1k cache write, 8.5k cache hit, 300 received.\n"
    parsed = get_adapter("aider").parse_output(text, "")
    assert (parsed.input_tokens, parsed.cached_tokens, parsed.output_tokens) == (12000, 8500, 300)
    assert parsed.cost_usd is None  # aider printed no price: unknown, not 0


def test_command_adapter_counts_cache_reads_as_input_like_claude() -> None:
    out = json.dumps(
        {
            "result": "ok",
            "model": "gpt-5",
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 5},
        }
    )
    parsed = get_adapter("command").parse_output(out, "")
    assert (parsed.input_tokens, parsed.cached_tokens, parsed.model) == (100, 90, "gpt-5")


# --------------------------------------------------------------------------- prices


@pytest.mark.parametrize(
    ("model", "found"),
    [
        ("gpt-5", True),
        ("openai/gpt-5", True),  # opencode and aider name the provider
        ("claude-sonnet-4-20250514", True),  # a dated version of a listed model
        ("gpt-5-pro", False),  # not priced as gpt-5: a different, dearer model
        ("my-local-model", False),
        (None, False),
    ],
)
def test_price_lookup(model: str | None, found: bool) -> None:
    assert (price_for(model, shipped_prices()) is not None) is found


def test_cost_is_estimated_only_when_the_cli_gives_none() -> None:
    prices = {"gpt-5": GPT5}
    codex = get_adapter("codex").parse_output(sample("codex-success.jsonl"), "")
    estimated = usage_of(codex, "gpt-5", prices)
    # 24763 input of which 24448 cached, 122 output: (315 * 1.25 + 24448 * 0.125 + 122 * 10) / 1e6
    assert estimated.cost_usd == pytest.approx((315 * 1.25 + 24448 * 0.125 + 1220) / 1e6)
    assert estimated.cost_estimated is True
    assert usage_of(codex, "unpriced-model", prices).cost_usd is None
    assert usage_of(codex, None, prices).cost_usd is None  # codex names no model
    claude = get_adapter("claude").parse_output(sample("claude-success.json"), "")
    stated = usage_of(claude, None, {"claude-sonnet-4-5": GPT5})
    assert (stated.cost_usd, stated.cost_estimated) == (0.0123, False)  # the CLI's own figure


def test_sums_are_unknown_or_lower_bounds_never_zero() -> None:
    known = Spend(input_tokens=100, output_tokens=10, cost_usd=0.5, cost_estimated=True)
    assert total([]) == Spend()
    assert cost_text(total([Spend(), Spend()])) == "unknown"
    assert tokens_text(total([Spend(), Spend()])) == "unknown"
    partial = total([known, Spend()])
    assert (partial.cost_usd, partial.cost_partial, partial.tokens_partial) == (0.5, True, True)
    assert cost_text(partial) == "≥ $0.5000 est."
    assert tokens_text(partial) == "≥ 100/10"
    whole = total([known, known])
    assert (cost_text(whole), tokens_text(whole)) == ("$1.0000 est.", "200/20")


# --------------------------------------------------------------------------- prices: in .flow/


def write_flow(repo: Path, text: str) -> None:
    (repo / ".flow").mkdir(exist_ok=True)
    (repo / ".flow" / "base.yaml").write_text(text)


MINIMAL = 'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'


def test_prices_override_the_shipped_table_key_by_key(tmp_path: Path) -> None:
    write_flow(
        tmp_path,
        MINIMAL + "prices:\n  gpt-5: {input: 2}\n  openrouter/qwen3: {input: 0.2, output: 0.8}\n",
    )
    prices = load_flow_config(tmp_path).prices
    assert prices["gpt-5"] == Price(input=2.0, output=10.0, cached=0.125)
    assert price_for("openrouter/qwen3", prices) == Price(input=0.2, output=0.8)
    assert prices["o3"] == shipped_prices()["o3"]


@pytest.mark.parametrize(
    ("entry", "where"),
    [
        ("gpt-6: {inptu: 2, output: 3}", ".flow/base.yaml:4: prices.gpt-6.inptu: unknown key"),
        ("gpt-6: {input: 2}", ".flow/base.yaml:4: prices.gpt-6: needs output"),
        ("gpt-6: {input: -1, output: 3}", ".flow/base.yaml:4: prices.gpt-6.input: must be"),
        ("gpt-6: {input: cheap, output: 3}", ".flow/base.yaml:4: prices.gpt-6.input: expected"),
        ("'bad name': {input: 1, output: 3}", ".flow/base.yaml:4: prices.bad name: invalid"),
    ],
)
def test_bad_prices_name_file_line_and_key(tmp_path: Path, entry: str, where: str) -> None:
    write_flow(tmp_path, MINIMAL + "prices:\n  " + entry + "\n")
    with pytest.raises(ConfigError) as info:
        load_flow_config(tmp_path)
    assert str(info.value).startswith(where)
    assert info.value.exit_code == ExitCode.USAGE


def test_the_schema_is_generated_with_prices() -> None:
    prices = flow_config_schema()["properties"]["prices"]
    entry = prices["additionalProperties"]
    assert entry["properties"]["input"] == {
        "type": "number",
        "minimum": 0,
        "maximum": 10**9,  # MAX_USD: a price past it is an error (decisions "Hostile ..." 18)
        "description": entry["properties"]["input"]["description"],
    }
    assert "openai/gpt-5" not in ("",) and prices["propertyNames"]["pattern"].startswith("^")


# --------------------------------------------------------------------------- records and history


def setup_agents(repo: Path, tmp_path: Path) -> None:
    agent = tmp_path / "metered-agent"
    agent.write_text(METERED_AGENT.format(python=os.environ.get("PYTHON", sys.executable)))
    agent.chmod(0o755)
    write_flow(repo, FLOW.format(agent=json.dumps(str(agent))))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "flow")


def test_records_and_history_show_spend_and_unknown(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_agents(repo, tmp_path)
    cli = Cli(monkeypatch, capsys)
    metered = cli.main("spawn", "metered", "--flow", "f", "--task", "go", "--json", cwd=repo)
    silent = cli.main("spawn", "silent", "--flow", "f", "--task", "go", "--json", cwd=repo)
    assert (metered.returncode, silent.returncode) == (0, 0), (metered.stderr, silent.stderr)
    run = json.loads(metered.stdout)["run"]
    # 200k fresh input at $1.25/M, 800k cached at $0.125/M, 10k output at $10/M
    assert run["costUsd"] == pytest.approx(0.45) and run["costEstimated"] is True
    assert (run["inputTokens"], run["cachedTokens"], run["model"]) == (1_000_000, 800_000, "gpt-5")
    quiet = json.loads(silent.stdout)["run"]
    assert not {"inputTokens", "outputTokens", "costUsd", "costEstimated"} & quiet.keys()
    rows = json.loads(cli.main("history", "--json", cwd=repo).stdout)
    assert [(r["costUsd"], r["inputTokens"]) for r in rows] == [(pytest.approx(0.45), 1_000_000),
                                                               (None, None)]  # fmt: skip
    table = cli.main("history", cwd=repo).stdout.splitlines()
    assert "$0.4500 est." in table[1] and "1,000,000/10,000" in table[1]
    assert table[2].count("unknown") == 2
    status = cli.main("status", cwd=repo).stdout.splitlines()
    assert "TOKENS" in status[0] and "$0.4500 est." in status[1] and status[2].count("unknown") == 2
    # a second run is recorded on its own; the first keeps its numbers
    again = cli.main("spawn", "metered", "--flow", "f", "--task", "go", "--rerun", cwd=repo)
    assert again.returncode == 0, again.stderr
    rows = json.loads(cli.main("history", "--json", cwd=repo).stdout)
    assert [r["costUsd"] is not None for r in rows] == [True, False, True]


def step_record(run_dir: Path, plan: str, step: int, agent_runs: list[str]) -> None:
    data = json.loads((DATA / "records" / "step-run.json").read_text())
    data["chain"]["plan"], data["chain"]["step"] = plan, step
    template = data["chain"]["agents"][0]
    data["chain"]["agents"] = [{**template, "runID": run_id} for run_id in agent_runs]
    data["run"].pop("chainRunID", None)
    run_dir.mkdir(parents=True)
    (run_dir / "result.json").write_text(json.dumps(data))


def agent_record(run_dir: Path, **usage: object) -> None:
    run_dir.mkdir(parents=True)
    run = {"runID": run_dir.name, "kind": "implement", "chainRunID": "x", **usage}
    (run_dir / "result.json").write_text(json.dumps({"status": "succeeded", "run": run}))


def test_a_step_sums_its_agent_runs_and_a_plan_its_steps(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = repo / "flows" / "plan-a" / "runs"
    agent_record(runs / "a1", inputTokens=1000, outputTokens=100, costUsd=0.25)
    agent_record(runs / "a2", inputTokens=500, outputTokens=50, costUsd=0.5, costEstimated=True)
    agent_record(runs / "a3")  # a CLI that says nothing
    step_record(runs / "s1", "plan-a", 1, ["a1", "a2"])
    step_record(runs / "s2", "plan-a", 2, ["a1", "a3"])
    cli = Cli(monkeypatch, capsys)
    rows = {r["runId"]: r for r in json.loads(cli.main("history", "--json", cwd=repo).stdout)}
    assert rows["s1"]["costUsd"] == 0.75 and rows["s1"]["costPartial"] is False
    assert rows["s1"]["inputTokens"] == 1500 and rows["s1"]["costEstimated"] is True
    assert rows["s2"]["costUsd"] == 0.25 and rows["s2"]["costPartial"] is True
    out = cli.main("history", cwd=repo).stdout
    assert "≥ $0.2500" in out
    assert "plan plan-a: 2 step runs, tokens ≥ 2,500/250, cost ≥ $1.0000 est." in out
    step_record(runs / "s3", str(repo / "specs" / "b.md"), 1, ["a1"])  # as `run` records it
    assert "plan specs/b.md: 1 step run, tokens 1,000/100" in cli.main("history", cwd=repo).stdout


# --------------------------------------------------------------------------- the Action


def _review_pull_with(
    runner: Runner, gh: GitHubStandIn, repo: Path, flow: str
) -> tuple[Pull, CliResult]:
    """The Action on a new pull request (returned with its run), reviewed by the agent ``gate``
    that ``flow`` (the `.flow/` text after MINIMAL) configures on the base branch."""
    write_flow(repo, MINIMAL + flow)
    git(repo, "add", ".flow")
    git(repo, "commit", "-q", "-m", "configure the reviewer")
    pull = add_pull(gh, repo, {"fine.py": "x = 1\n"})
    return pull, runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--agent", "gate")


def test_action_outputs_carry_an_agent_reviewers_measured_usage(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """A reviewer whose CLI reports tokens (a wrapper around the fake reviewer printing Claude-
    shaped usage): the outputs are its run record's numbers, the cost estimated."""
    wrapper = tmp_path / "metered-reviewer"
    wrapper.write_text(
        f"#!{sys.executable}\n"
        "import json, subprocess, sys\n"
        f"code = subprocess.call([sys.executable, {str(FAKES / 'fake_reviewer')!r}, 'approve'])\n"
        "print(json.dumps({'result': 'reviewed', 'model': 'gpt-5',\n"
        "                  'usage': {'input_tokens': 4000, 'output_tokens': 300}}))\n"
        "sys.exit(code)\n"
    )
    wrapper.chmod(0o755)
    flow = f"agents:\n  gate:\n    adapter: command\n    command: [{json.dumps(str(wrapper))}]\n"
    _, result = _review_pull_with(runner, gh, repo, flow)
    assert result.returncode == 0, result.stderr
    outputs = runner.outputs()
    assert (outputs["input-tokens"], outputs["output-tokens"]) == ("4000", "300")
    assert float(outputs["cost-usd"]) == pytest.approx((4000 * 1.25 + 300 * 10) / 1e6)
    assert outputs["cost-estimated"] == "true"


def test_the_live_line_shows_an_unknown_count_as_unknown_not_zero() -> None:
    out = io.StringIO()
    hub = EventHub([ConsoleChannel(out, is_tty=False)], run_id="r")
    hub.emit("agent:complete", {"agent": "reviewer", "status": "succeeded", "input_tokens": 900})
    hub.close()
    assert out.getvalue().rstrip().endswith("tokens 900/?")


def test_the_step_pull_requests_table_marks_a_partial_total(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    agent_record(runs / "a1", inputTokens=1000, outputTokens=100, costUsd=0.25)
    agent_record(runs / "a2", inputTokens=500, outputTokens=50)  # tokens, but no price known
    step_record(runs / "s1", "plan-a", 1, ["a1", "a2"])
    data = json.loads((runs / "s1" / "result.json").read_text())
    table = run_history(history_rows(data, runs)).splitlines()
    assert table[2].endswith("| 1,100 | $0.25 |")
    assert table[3].endswith("| 550 | unknown |")
    assert table[4].endswith("| 1,650 | ≥ $0.25 |")  # the step's total: tokens whole, cost not


def test_action_outputs_are_empty_when_the_reviewers_cli_says_no_usage(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """An agent reviewer whose CLI prints no usage: the outputs are empty (unknown), never 0."""
    reviewer = [sys.executable, str(FAKES / "fake_reviewer"), "approve"]
    flow = f"agents:\n  gate:\n    adapter: command\n    command: {json.dumps(reviewer)}\n"
    _, result = _review_pull_with(runner, gh, repo, flow)
    assert result.returncode == 0, result.stderr
    outputs = runner.outputs()
    assert outputs["review-result"] == "approved"
    spend = {k: outputs[k] for k in ("cost-usd", "input-tokens", "output-tokens")}
    assert spend == {"cost-usd": "", "input-tokens": "", "output-tokens": ""}
    assert outputs["cost-estimated"] == "false"


def test_action_with_a_review_budget_stops_the_reviewer_and_fails_the_status(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """The `.flow/` review budget holds in the Action: a reviewer streaming more usage than the
    budget is stopped, the review is not approved, the status fails with the numbers."""
    flow = (
        "budget:\n  review: {tokens: 3000}\n"
        "agents:\n  gate:\n    adapter: claude\n"
        f"    options: {{executable: {json.dumps(str(FAKES / 'fake_spender'))}}}\n"
    )
    pull, result = _review_pull_with(runner, gh, repo, flow)
    assert result.returncode == 5, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert "budget: review spent" in result.stdout + result.stderr
    (status,) = [s for s in gh.statuses_for(pull.head_sha) if s["state"] != "pending"]
    assert status["state"] in ("failure", "error") and "budget" in status["description"]


def test_a_negative_figure_in_a_record_is_unknown_not_a_smaller_sum() -> None:
    """An agent can write into its run folder: a negative cost or count in a record would
    shrink every sum it is in (a plan's spend, a budget's): it reads as unknown."""
    spend = run_spend({"inputTokens": -1000, "outputTokens": 200, "costUsd": -5.0})
    assert (spend.input_tokens, spend.output_tokens, spend.cost_usd) == (None, 200, None)


def test_the_step_pull_requests_total_leaves_out_what_it_reused(tmp_path: Path) -> None:
    """A re-run that reused the implementer of a step run before it (which recorded it): the
    implementer's row shows what it spent, marked reused, but the step's total is what the
    re-run spent, as `history` counts it (not the implementer a second time)."""
    runs = tmp_path / "runs"
    step_record(runs / "s1", "plan-a", 1, ["a1"])
    agent_record(runs / "a1", inputTokens=1000, outputTokens=100, costUsd=0.25)
    record = json.loads((runs / "a1" / "result.json").read_text())
    record["run"]["chainRunID"] = "s1"  # run by the first step run, which has a record
    (runs / "a1" / "result.json").write_text(json.dumps(record))
    agent_record(runs / "a2", inputTokens=500, outputTokens=50, costUsd=0.5)
    step_record(runs / "s2", "plan-a", 1, ["a1", "a2"])
    data = json.loads((runs / "s2" / "result.json").read_text())
    data["run"]["runID"] = "s2"
    data["chain"]["agents"][0]["reused"] = True
    table = run_history(history_rows(data, runs)).splitlines()
    assert table[2].endswith("| 1,100 | $0.25 |")  # the reused implementer's own figures
    assert table[4].endswith("| 550 | $0.50 |")  # the step's: the re-run's reviewer alone
