"""Cards: frontmatter lifecycle, the lock, seed-001 history lines, checklist flips."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import psutil
import pytest

from gitflow_agents.base.errors import InputError
from gitflow_agents.runs.cards import (
    CardLockedError,
    add_history_line,
    append_history,
    apply_checked_criteria,
    card_lock,
    card_status,
    flip_checklist,
    history_line,
    lock_path,
    set_card_status,
    set_frontmatter,
)

CARD = """---
title: Add login   # keep this comment
tags:
  - auth
agent_status: failed
---
# Add login

## Acceptance Criteria

- [ ] form renders
- [x] password hashed
- [ ] errors shown

```md
- [ ] not a criterion (in code)
```

## Notes

- [ ] unrelated todo
"""

DAY = date(2026, 1, 2)
RUN = "0194f3c2-0000-7000-8000-000000000001"


def test_lifecycle_keeps_the_rest_byte_for_byte(tmp_path: Path) -> None:
    card = tmp_path / "card.md"
    card.write_text(CARD)
    set_card_status(card, "implement", "queued")
    assert card_status(card) == ("implement", "queued")
    set_card_status(card, "implement", "running")
    set_card_status(card, "implement", "succeeded", branch="feature/login")
    text = card.read_text()
    assert card_status(card) == ("implement", "succeeded")
    assert "title: Add login   # keep this comment\ntags:\n  - auth\n" in text
    assert "branch: feature/login\n" in text
    assert text.count("agent_status") == 1
    # everything after the frontmatter is untouched
    assert text.split("---\n", 2)[2] == CARD.split("---\n", 2)[2]


def test_frontmatter_created_when_absent_and_crlf_kept() -> None:
    assert set_frontmatter("# T\n", {"agent_status": "queued"}) == (
        "---\nagent_status: queued\n---\n# T\n"
    )
    crlf = "---\r\na: 1\r\n---\r\nbody\r\n"
    assert set_frontmatter(crlf, {"agent_flow": "review"}) == (
        "---\r\na: 1\r\nagent_flow: review\r\n---\r\nbody\r\n"
    )


def test_values_needing_quotes_are_quoted() -> None:
    text = set_frontmatter("---\n---\n", {"branch": "feat: x"})
    assert 'branch: "feat: x"' in text


def test_malformed_frontmatter_is_an_input_error(tmp_path: Path) -> None:
    card = tmp_path / "bad.md"
    card.write_text("---\ntitle: [unclosed\n---\n")
    with pytest.raises(InputError, match=r"bad\.md:\d+"):
        set_card_status(card, "implement", "queued")


def test_history_lines_match_the_seed_templates() -> None:
    assert (
        history_line("implement", "queued", run_id=RUN, day=DAY, branch="feat/x")
        == f"2026-01-02: Run {RUN} queued (implement) on branch feat/x."
    )
    assert (
        history_line("implement", "started", run_id=RUN, day=DAY)
        == f"2026-01-02: Run {RUN} started (implement)."
    )
    assert (
        history_line("implement", "succeeded", run_id=RUN, day=DAY, checked=2, tests="fail")
        == f"2026-01-02: Run {RUN} succeeded (implement); checked 2 items; tests: fail."
    )
    assert (
        history_line("review", "queued", run_id=RUN, day=DAY, target="main..feat")
        == f"2026-01-02: Run {RUN} queued (review) for main..feat."
    )
    assert (
        history_line(
            "review", "succeeded", run_id=RUN, day=DAY, findings=(1, 2, 3), overall="approve"
        )
        == f"2026-01-02: Run {RUN} succeeded (review); findings blocking/warn/info: 1/2/3;"
        " overall=approve."
    )
    assert (
        history_line("research", "queued", run_id=RUN, day=DAY, topic="rate limits")
        == f'2026-01-02: Run {RUN} queued (research) topic "rate limits".'
    )
    assert (
        history_line("research", "succeeded", run_id=RUN, day=DAY, sources=4)
        == f"2026-01-02: Run {RUN} succeeded (research); 4 sources captured."
    )
    for flow in ("implement", "review", "research"):
        assert (
            history_line(flow, "failed", run_id=RUN, day=DAY, log_path="flows/f/runs/x/")  # type: ignore[arg-type]
            == f"2026-01-02: Run {RUN} failed ({flow}); see logs at flows/f/runs/x/."
        )
        assert (
            history_line(flow, "canceled", run_id=RUN, day=DAY)  # type: ignore[arg-type]
            == f"2026-01-02: Run {RUN} canceled ({flow})."
        )


def test_history_section_created_then_appended(tmp_path: Path) -> None:
    card = tmp_path / "card.md"
    card.write_text(CARD)
    append_history(card, "2026-01-02: Run a queued (implement) on branch b.")
    append_history(card, "2026-01-02: Run a canceled (implement).")
    text = card.read_text()
    assert text.startswith(CARD)
    assert text.endswith(
        "\n## History\n\n- 2026-01-02: Run a queued (implement) on branch b.\n"
        "- 2026-01-02: Run a canceled (implement).\n"
    )


def test_history_inserted_inside_an_existing_section() -> None:
    text = "# T\n\n## History\n\n2026-01-01: Run z started (review).\n\n## Later\n\nkeep\n"
    out = add_history_line(text, "NEW")
    assert out == (
        "# T\n\n## History\n\n2026-01-01: Run z started (review).\nNEW\n\n## Later\n\nkeep\n"
    )


def test_checklist_flips_only_listed_acceptance_items(tmp_path: Path) -> None:
    card = tmp_path / "card.md"
    card.write_text(CARD)
    ticked = apply_checked_criteria(card, [0, 1, 7, -1])
    assert ticked == [0]  # 1 was already ticked; 7 and -1 are out of range
    text = card.read_text()
    assert "- [x] form renders" in text
    assert "- [ ] errors shown" in text
    assert "- [ ] not a criterion (in code)" in text
    assert "- [ ] unrelated todo" in text
    assert text.replace("- [x] form renders", "- [ ] form renders") == CARD


def test_checklist_without_acceptance_section_uses_all_boxes() -> None:
    text, ticked = flip_checklist("- [ ] a\n- [ ] b\r\n", [1])
    assert ticked == [1]
    assert text == "- [ ] a\n- [x] b\r\n"


def test_card_lock_excludes_and_recovers_stale(tmp_path: Path) -> None:
    card = tmp_path / "card.md"
    card.write_text(CARD)
    with card_lock(card, "run-a"):
        assert json.loads(lock_path(card).read_text())["runId"] == "run-a"
        with pytest.raises(CardLockedError, match="run-a"), card_lock(card, "run-b"):
            pass
    assert not lock_path(card).exists()
    # a lock left by a dead process is taken over
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    lock_path(card).write_text(
        json.dumps({"runId": "old", "pid": int(dead.stdout), "host": os.uname().nodename})
    )
    with card_lock(card, "run-c") as lock:
        assert json.loads(lock.read_text())["runId"] == "run-c"


def _card_lock_of(card: Path, pid: int, started: float | None) -> None:
    held = {"runId": "old", "pid": pid, "host": os.uname().nodename, "pidStarted": started}
    lock_path(card).write_text(json.dumps(held))


def test_card_lock_of_a_reused_pid_is_taken_over(tmp_path: Path) -> None:
    """The pid runs, but it is not the process that took the lock (it started later)."""
    card = tmp_path / "card.md"
    card.write_text(CARD)
    _card_lock_of(card, os.getpid(), 12345.0)
    with card_lock(card, "run-new") as lock:
        assert json.loads(lock.read_text())["runId"] == "run-new"
    assert not lock_path(card).exists()


def test_unreadable_card_lock_is_taken_over(tmp_path: Path) -> None:
    card = tmp_path / "card.md"
    card.write_text(CARD)
    lock_path(card).write_text("")
    with card_lock(card, "run-new") as lock:
        assert json.loads(lock.read_text())["runId"] == "run-new"


def test_card_lock_of_a_live_process_is_refused(tmp_path: Path) -> None:
    card = tmp_path / "card.md"
    card.write_text(CARD)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        _card_lock_of(card, child.pid, psutil.Process(child.pid).create_time())
        refused = pytest.raises(CardLockedError, match=f"run old \\(pid {child.pid}\\)")
        with refused, card_lock(card, "run-new"):
            pass
        assert json.loads(lock_path(card).read_text())["runId"] == "old"
    finally:
        child.kill()
        child.wait()
