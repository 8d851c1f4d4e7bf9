"""``gitflow-agents status`` as the user meets it (``commands/status.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import FAKES
from tests.helpers.chain import call, configure


def test_a_step_runs_row_shows_the_sum_of_its_agent_runs_spend(repo: Path) -> None:
    """A step run (a chain) has no usage of its own: its row shows what its agent runs spent,
    as `history` does, not "unknown" (which says a CLI did not tell)."""
    configure(repo)
    options = {"executable": str(FAKES / "fake_spender"), "env": {"FAKE_SPENDER_CALLS": "2"}}
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text()
        + f"  spender:\n    adapter: claude\n    options: {json.dumps(options)}\n"
        + "  offline:\n    adapter: builtin\n"
    )
    done = call(
        repo, "run", "specs/feature.md", "--step", "1", "--quiet",
        "--implementer", "spender", "--reviewers", "offline",
    )  # fmt: skip
    assert done.returncode in (0, 1), done
    rows = json.loads(call(repo, "status", "--json").stdout)
    (step,) = [r for r in rows if r["agent"] is None]
    assert (step["inputTokens"], step["outputTokens"]) == (2000, 400)
    assert step["costUsd"] > 0
    table = call(repo, "status").stdout
    (line,) = [ln for ln in table.splitlines() if ln.startswith(step["runId"][:13])]
    assert "2,000/400" in line and "unknown" not in line


def test_a_lost_runs_time_stops_at_its_last_sign_of_life() -> None:
    """A run nothing supervises any more does not go on running in `status`: its TIME ends at
    its last activity, not now."""
    from gitflow_agents.commands.status import format_table

    row = {
        "runId": "01a2-lost", "flow": "f", "agent": "a", "state": "lost", "reason": "gone",
        "startedAt": 1000.0, "endedAt": None, "lastActivityAt": 1065.0,
        "lastActivityKind": "output", "result": None,
    }  # fmt: skip
    (line,) = [ln for ln in format_table([row]).splitlines() if ln.startswith("01a2-lost")]
    assert " 1:05 " in line, line
