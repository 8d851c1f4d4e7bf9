"""``chain.tend.tend_step``: a pushed step branch whose target moved is merged with it and
reviewed once, no implementer, no fix round (``plan tend``'s chain part; issue 22, item 1).
Real git, the fake agents of tests/fakes, a local target (no remote)."""

from __future__ import annotations

import json
from pathlib import Path

from gitflow_agents import chain
from gitflow_agents.chain.lander import BranchLander
from gitflow_agents.chain.tend import tend_step
from gitflow_agents.config import load_flow_config
from gitflow_agents.plan import parse_plan
from gitflow_agents.runs import new_run_id
from gitflow_agents.runs.events import EventHub
from tests.chain.test_chain import configure, main_sha
from tests.conftest import git

BRANCH = "agents/feature/step-1"


def _context(repo: Path) -> chain.Context:
    config = load_flow_config(repo)
    plan = parse_plan(repo / "specs" / "feature.md", config.spec_plan)
    settings = chain.ChainSettings(max_iterations=1, stuck_timeout=20, timeout=30)
    return chain.Context(repo, config, plan, plan.name, settings, EventHub())


def _approved_branch_then_main_moves(repo: Path, path: str, text: str) -> tuple[str, str]:
    """Step 1 approved on its branch (nothing merged), then a commit on main; both shas."""
    result = chain.run_step(_context(repo), 1, BranchLander(None, new_run_id()))
    assert result.outcome == "approved"
    head = git(repo, "rev-parse", BRANCH).strip()
    (repo / path).write_text(text)
    git(repo, "add", path)
    git(repo, "commit", "-q", "-m", "landed meanwhile")
    return head, main_sha(repo)


def test_a_behind_branch_is_merged_with_its_target_and_reviewed_once(repo: Path) -> None:
    configure(repo)
    head, moved = _approved_branch_then_main_moves(repo, "OTHER.md", "other\n")
    lander = BranchLander(head, new_run_id())
    result = tend_step(_context(repo), 1, lander, head)
    assert result.outcome == "approved" and result.exit_code == 0
    assert lander.tip is not None and lander.tip == git(repo, "rev-parse", BRANCH).strip()
    assert git(repo, "rev-list", "--parents", "-n1", lander.tip).split()[1:] == [head, moved]
    assert main_sha(repo) == moved  # the target is never touched
    record = json.loads(result.result_path.read_text())  # type: ignore[union-attr]
    kinds = [agent["kind"] for agent in record["chain"]["agents"]]
    assert kinds == ["review"] and record["chain"]["rounds"][0]["reviewedSha"] == lander.tip


def test_an_up_to_date_head_is_reviewed_as_it_is(repo: Path) -> None:
    configure(repo)
    result = chain.run_step(_context(repo), 1, BranchLander(None, new_run_id()))
    head = git(repo, "rev-parse", BRANCH).strip()
    lander = BranchLander(head, new_run_id())
    again = tend_step(_context(repo), 1, lander, head)
    assert result.outcome == again.outcome == "approved"
    assert lander.tip == head == git(repo, "rev-parse", BRANCH).strip()  # nothing new committed
