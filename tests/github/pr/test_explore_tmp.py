"""EXPLORATORY, not to be committed: the pipeline with each round's jobs at once."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli, wait_until
from tests.github.pr.test_plan_pipeline import (
    PLAN, STEPS, Workflow, all_done, approved_trees, human_commit, records, seed_origin, snapshot,
)
from tests.conftest import git
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.step_pr import env
from tests.standin_pulls import play_auto_merge
from tests.standin_rules import strict_rule

__all__ = ["env", "gh"]


@pytest.mark.parametrize("trial", range(int(__import__("os").environ.get("TRIALS", "1"))))
def test_concurrent(trial: int, tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITFLOW_AGENTS_CLAIM_TTL", "3")
    gh.state.branch_rules["main"] = [strict_rule(strict=True)]
    seed = seed_origin(tmp_path, gh)
    flow = Workflow(tmp_path, gh)
    human = killed = ""
    idle = 0
    lock = threading.Lock()
    outs: list[str] = []

    def job(path: Path, *args: str) -> None:
        out = run_cli(*args, cwd=path)
        with lock:
            outs.append(f"--- {args[:5]} exit {out.returncode}\n{out.stdout}{out.stderr}")

    while not all_done(gh):
        before = snapshot(gh)
        threads = []
        wave = flow.ready()
        for number in wave:
            if number == 4 and not killed:
                t = threading.Thread(target=lambda: None)
                killed = "pending"
                threads.append(threading.Thread(target=lambda: flow.killed_step(4)))
                continue
            path = flow.clone(f"step-{number}")
            threads.append(threading.Thread(target=job, args=(path, "run", PLAN, "--quiet", "--kill-grace", "0.2", "--pr", "--step", str(number), "--auto-merge", "squash")))
        tpath = flow.clone("tend")
        threads.append(threading.Thread(target=job, args=(tpath, "plan", "tend", PLAN, "--quiet", "--kill-grace", "0.2", "--auto-merge", "squash")))
        for t in threads:
            t.start()
        if 2 in wave and not human:
            wait_until(lambda: any(p.head_ref.endswith("step-2") for p in gh.state.pulls.values()), 120)
            human = human_commit(tmp_path)
            tp2 = flow.clone("tend-human")
            t2 = threading.Thread(target=job, args=(tp2, "plan", "tend", PLAN, "--quiet", "--kill-grace", "0.2", "--auto-merge", "squash"))
            t2.start(); threads.append(t2)
        for t in threads:
            t.join()
        for event in play_auto_merge(gh):
            flow.landed(event)
        if snapshot(gh) == before:
            idle += 1
            assert idle < 10, "stalled\n" + "\n".join(outs[-15:])
            time.sleep(1.5)
        else:
            idle = 0
    done = records(tmp_path)
    print("\n".join(outs))
    print(done)
    assert sorted(r for r in done if r.startswith("implement")) == [f"implement {n}" for n in STEPS], done
    origin = tmp_path / "origin.git"
    approved = approved_trees(gh)
    landed = git(origin, "log", "--first-parent", "--format=%H %T %s", f"{seed}..main")
    bad = [l for l in landed.splitlines() if l.split()[1] not in approved and l.split()[0] != human]
    assert bad == [], "\n".join(outs)
    nonzero = [o for o in outs if "exit 0" not in o.splitlines()[0]]
    assert nonzero == [], "\n".join(nonzero)
