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
