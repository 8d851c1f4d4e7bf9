"""The lander is the chain's strategy for its ending (issue 21, item 4): ``run_step(ctx, step,
lander)`` takes it as an argument, and a run steered by ``BranchLander`` (what ``run --pr``
passes) records under the lander's run id, marks the step on its branch and leaves the target
and the shared ``Context`` as they were. Real git, the fake agents of tests/fakes."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from gitflow_agents import chain
from gitflow_agents.chain.lander import BranchLander
from gitflow_agents.config import load_flow_config
from gitflow_agents.plan import parse_plan
from gitflow_agents.runs import new_run_id
from gitflow_agents.runs.events import EventHub
from tests.conftest import git
from tests.helpers.chain import committed_status, configure, main_sha


def test_a_branch_lander_steers_the_run_without_touching_the_context(repo: Path) -> None:
    configure(repo)
    before = main_sha(repo)
    config = load_flow_config(repo)
    plan = parse_plan(repo / "specs" / "feature.md", config.spec_plan)
    settings = chain.ChainSettings(max_iterations=1, stuck_timeout=20, timeout=30)
    ctx = chain.Context(repo, config, plan, plan.name, settings, EventHub())
    run_id = new_run_id()
    lander = BranchLander(None, run_id)

    result = chain.run_step(ctx, 1, lander)

    assert result.outcome == "approved" and result.run_id == run_id
    assert result.result_path == repo / "flows" / "feature" / "runs" / run_id / "result.json"
    assert main_sha(repo) == before and result.merged is None  # nothing merged
    assert lander.tip == git(repo, "rev-parse", "agents/feature/step-1").strip()
    assert committed_status(repo, "agents/feature/step-1", 1) == "✅"
    assert committed_status(repo, "main", 1) == "❌"
    # what run --pr used to write into the shared context is as it was
    assert (ctx.target_remote, ctx.commit_identity, ctx.plan) == (None, {}, plan)
    assert asdict(ctx.settings) == asdict(settings)
