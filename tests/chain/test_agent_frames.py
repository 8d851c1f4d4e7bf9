"""How far below the chain's loop an agent process starts (issue 21, "one way to run an agent").

A real chain step (``run --step 1``: the builder, then one reviewer) with fake agent processes;
the supervisor's ``Popen`` is observed, and for each agent the frames between the call that
starts it and ``chain.loop.run_step`` are counted. Every layer that only passed values down
was a frame here; the agent-run path is ``_loop`` → ``run_agent`` / ``review_round`` →
``run_together`` → ``_wave`` → ``AgentRunner.run`` → ``supervise`` → ``_Supervision.start``.
"""

from __future__ import annotations

import inspect
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.chain import loop
from gitflow_agents.supervisor import ReportFiles
from tests.helpers.chain import FAKE, configure, run

MAX_FRAMES = 7


def frames_below_run_step() -> int | None:
    """Frames from the caller of ``Popen`` up to ``run_step`` (None: not below it)."""
    frame = inspect.currentframe()
    # this function, then Popen.__init__ (the subclass below): the caller starts after them
    caller = frame.f_back.f_back if frame is not None and frame.f_back is not None else None
    depth = 0
    while caller is not None:
        if caller.f_code is loop.run_step.__code__:
            return depth
        depth += 1
        caller = caller.f_back
    return None


def test_an_agent_process_starts_at_most_seven_frames_below_the_chain_loop(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(repo)
    depths: list[int | None] = []

    class Observed(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, args: Any, *rest: Any, **kwargs: Any) -> None:
            if str(FAKE) in map(str, args):  # an agent (git calls go through here too)
                depths.append(frames_below_run_step())
            super().__init__(args, *rest, **kwargs)

    named: list[Path] = []
    real_named = ReportFiles.named.__func__  # type: ignore[attr-defined]

    def counted(cls: type[ReportFiles], agent_dir: Path, *rest: str) -> ReportFiles:
        named.append(agent_dir)
        return real_named(cls, agent_dir, *rest)  # type: ignore[no-any-return]

    monkeypatch.setattr(subprocess, "Popen", Observed)
    monkeypatch.setattr(ReportFiles, "named", classmethod(counted))
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    assert len(depths) == 2, depths  # the builder and the reviewer, both in the loop's thread
    assert all(depth is not None and depth <= MAX_FRAMES for depth in depths), depths
    # The report files are named once per agent and handed down (the builder's once more by
    # the resume check of chain/resume.py, which looks for an earlier implement to reuse).
    assert len(named) <= 3, named
