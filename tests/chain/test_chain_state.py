"""A stateful property test of chain re-runs (issue 11): random sequences of what a team does.

Rules: run a step (``chain.run_step`` in this process) with the reviewer's verdict drawn, run a
step and ``kill -9`` its orchestrator while the implementer works (a forked copy of this process:
a real orchestrator dying, its agent left running), land a commit on the target, switch the
user's branch, and edit the plan in the user's copy (and maybe commit the edits). The agents are tiny
``sh`` scripts behind the ``command`` adapter, so a step costs a few git calls and processes.

After every rule: no step merged twice (each implementation reached the target at most once),
every commit the target gained by a chain carries an approved note on exactly that commit (and
of a change), no user edit lost, no agent process left (but a lost run's, until its step runs
again), and the plan (the user's copy and the target's) never half-written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    get_state_machine_test,
    initialize,
    invariant,
    rule,
)

from tests.conftest import git, init_repo

PLAN = """\
# Plan: Feature

Overview of the feature.

## Implementation Steps

### Status: | Step 1: One

Do one.

### Status: | Step 2: Two

Do two.
"""

AGENT_DIR = '"$GITFLOW_AGENTS_AGENT_DIR"'
RENAME = f"mv {AGENT_DIR}/report.md {AGENT_DIR}/report.complete.md"


def _agents(box: Path) -> dict[str, list[str]]:
    """The builder appends a line to impl/<its agent id>.log (sleeping first while box/slow
    exists), the reviewer reports the verdict in box/verdict, the fixer appends to fix-<its
    agent id>.log. Each step writes its own files, so two steps never conflict."""
    done = f"printf '# Done\\n' > {AGENT_DIR}/report.md; {RENAME}"
    builder = (
        f'if [ -f "{box}/slow" ]; then sleep 4; fi; mkdir -p impl; echo implemented >> "impl/$1.log"; '
        f"{done}"
    )
    reviewer = (
        f"printf '# Review\\n\\nREVIEW_RESULT: %s\\n' \"$(cat '{box}/verdict')\" "
        f"> {AGENT_DIR}/report.md; {RENAME}"
    )
    fixer = f'echo fixed >> "fix-$1.log"; {done}'
    return {
        name: ["sh", "-c", script, "sh", "{agent_id}"]
        for name, script in (("builder", builder), ("reviewer", reviewer), ("fixer", fixer))
    }


def _config(box: Path) -> str:
    text = (
        "flow_dir: flows\ndefault_branch: main\n"
        "defaults:\n  stuck_timeout_secs: 20\n  max_wait_secs: 30\n"
        'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'
        "chain:\n  max_iterations: 2\n"
        "agents:\n"
    )
    for name, argv in _agents(box).items():
        text += f"  {name}:\n    adapter: command\n    command: {json.dumps(argv)}\n"
    return text


# the object id of a file holding "implemented\n" (one builder line): compared with what
# ``git ls-tree`` lists, it checks every file's content without a ``git show`` per file
IMPLEMENTED_ONCE = hashlib.sha1(b"blob 12\0implemented\n").hexdigest()

STEPS = st.sampled_from([1, 2])
VERDICTS = st.sampled_from(["APPROVED", "APPROVED", "REVISE"])


class ChainRuns(RuleBasedStateMachine):
    """One repository per example; see the module docstring."""

    base: Path  # set by the test before the machine runs
    examples = 0

    @classmethod
    def template(cls) -> Path:
        """A repository with the plan committed on main, made once and copied per example."""
        path = cls.base / "template"
        if not path.exists():
            init_repo(path)
            with (path / ".git" / "info" / "exclude").open("a") as handle:
                handle.write("/.flow/\n/mine.txt\n")
            (path / "specs").mkdir()
            (path / "specs" / "plan.md").write_text(PLAN)
            git(path, "add", "specs")
            git(path, "commit", "-q", "-m", "plan")
            cls._warm_up(path)
        return path

    @classmethod
    def _warm_up(cls, template: Path) -> None:
        """Run one step (reviewed, fixed, reviewed again) in a throw-away copy, so this process
        has imported what a step imports: a forked orchestrator (``run_and_kill_9``) then starts
        its agent at once instead of importing (without byte-code caches: compiling) the
        chain's modules again on every kill."""
        from gitflow_agents import chain
        from gitflow_agents.config import load_flow_config
        from gitflow_agents.plan import parse_plan
        from gitflow_agents.runs.events import EventHub

        box = cls.base / "warm-up"
        repo = box / "repo"
        shutil.copytree(template, repo, symlinks=True)
        (repo / ".flow").mkdir()
        (repo / ".flow" / "base.yaml").write_text(_config(box))
        (box / "verdict").write_text("REVISE\n")
        config = load_flow_config(repo)
        plan = parse_plan(repo / "specs" / "plan.md", config.spec_plan)
        settings_ = chain.ChainSettings(max_iterations=2, stuck_timeout=20, timeout=30)
        chain.run_step(chain.Context(repo, config, plan, plan.name, settings_, EventHub()), 1)

    @initialize(branch=st.sampled_from(["main", "elsewhere"]))
    def make_repo(self, branch: str) -> None:
        ChainRuns.examples += 1
        self.started = time.time()
        self.box = self.base / f"example-{ChainRuns.examples}"
        self.box.mkdir()
        self.repo = self.box / "repo"
        shutil.copytree(self.template(), self.repo, symlinks=True)
        (self.repo / ".flow").mkdir()
        (self.repo / ".flow" / "base.yaml").write_text(_config(self.box))
        (self.repo / "mine.txt").write_text("the user's own file\n")
        if branch != "main":
            git(self.repo, "switch", "-q", "-c", branch)
        self.notes: dict[str, str | None] = {}  # note line -> branch it is committed on (None: not)
        self.lost: dict[int, set[int]] = {}  # step -> pids of its lost run, until it runs again
        self.team = 0

    def teardown(self) -> None:
        from gitflow_agents.runs.lost import ACTIVE, kill_recorded_tree

        for status_file in self.repo.glob("flows/*/runs/*/status.json"):
            with contextlib.suppress(ValueError, OSError):
                status = json.loads(status_file.read_text())
                if status.get("state") in ACTIVE:
                    kill_recorded_tree(status, grace=0.2)  # what `gitflow-agents cancel` does

    # --- the rules ---------------------------------------------------------------------------

    def _context(self) -> Any:
        from gitflow_agents import chain
        from gitflow_agents.config import load_flow_config
        from gitflow_agents.plan import parse_plan
        from gitflow_agents.runs.events import EventHub

        config = load_flow_config(self.repo)
        plan = parse_plan(self.repo / "specs" / "plan.md", config.spec_plan)
        settings_ = chain.ChainSettings(
            max_iterations=2, stuck_timeout=20, timeout=30, kill_grace=0.2
        )
        return chain.Context(self.repo, config, plan, plan.name, settings_, EventHub())

    def _run_step(self, step: int) -> Any:
        from gitflow_agents import chain
        from gitflow_agents.base.errors import GitflowError

        try:
            return chain.run_step(self._context(), step)
        except GitflowError as exc:  # a busy step, say: as a user sees it
            return exc

    @rule(step=STEPS, verdict=VERDICTS, teammate=st.booleans())
    def run(self, step: int, verdict: str, teammate: bool) -> None:
        """Run a step (``teammate``: after a commit landed on the target, so a step branch of an
        earlier run is behind it). An approval lands unless the user's own uncommitted edit of
        the plan is in the way (the target checked out with the plan changed: git refuses)."""
        if teammate:
            self.commit_on_target()
        (self.box / "verdict").write_text(verdict + "\n")
        blocked = self._branch() == "main" and bool(
            git(self.repo, "status", "--porcelain", "specs").strip()
        )
        result = self._run_step(step)
        self.lost.pop(step, None)  # its lost run (if any) was killed before the work tree
        if verdict == "APPROVED" and not blocked:
            assert self._committed_status(step) == "✅", result

    @rule(step=STEPS, verdict=VERDICTS)
    def run_and_kill_9(self, step: int, verdict: str) -> None:
        """A forked copy of this process runs the step; it is SIGKILLed once the implementer
        works, which is left running (slowly) in the step's work tree."""
        (self.box / "verdict").write_text(verdict + "\n")
        (self.box / "slow").write_text("")
        before = set(self.repo.glob("flows/*/runs/*/status.json"))
        child = os.fork()
        if child == 0:  # pragma: no cover - the orchestrator that dies
            try:
                self._run_step(step)
            finally:
                os._exit(0)
        agent = None
        deadline = time.monotonic() + 20
        while agent is None and time.monotonic() < deadline:
            if os.waitpid(child, os.WNOHANG) != (0, 0):
                child = 0  # it ended by itself (the step is done on the target): nothing to kill
                break
            agent = self._started_agent(before)
            time.sleep(0.01)
        (self.box / "slow").unlink()
        if child:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        if agent is not None:
            self.lost.setdefault(step, set()).add(agent)

    def _started_agent(self, before: set[Path]) -> int | None:
        for status_file in set(self.repo.glob("flows/*/runs/*/status.json")) - before:
            with contextlib.suppress(ValueError, OSError):
                status = json.loads(status_file.read_text())
                if status.get("state") == "running" and isinstance(status.get("pid"), int):
                    return int(status["pid"])
        return None

    @rule()
    def commit_on_target(self) -> None:
        """A teammate lands a commit on main: in the user's tree when main is checked out there,
        else without any work tree (what a push from another clone does)."""
        self.team += 1
        name = f"team/{self.team}.txt"
        if self._branch() == "main":
            path = self.repo / name
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"teammate {self.team}\n")
            git(self.repo, "add", name)
            git(self.repo, "commit", "-q", "-m", f"team {self.team}", "--", name)
            return
        env = {**os.environ, "GIT_INDEX_FILE": str(self.box / "team.index")}
        blob = subprocess.run(
            ["git", "-C", str(self.repo), "hash-object", "-w", "--stdin"],
            input=f"teammate {self.team}\n", capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        for args in (
            ["read-tree", "main"],
            ["update-index", "--add", "--cacheinfo", f"100644,{blob},{name}"],
        ):
            subprocess.run(["git", "-C", str(self.repo), *args], env=env, check=True)
        tree = subprocess.run(
            ["git", "-C", str(self.repo), "write-tree"], env=env, capture_output=True,
            text=True, check=True,
        ).stdout.strip()  # fmt: skip
        old = git(self.repo, "rev-parse", "main").strip()
        new = git(self.repo, "commit-tree", tree, "-p", old, "-m", f"team {self.team}").strip()
        git(self.repo, "update-ref", "refs/heads/main", new, old)

    @rule(branch=st.sampled_from(["main", "elsewhere"]))
    def switch_branch(self, branch: str) -> None:
        args = ["switch", "-q", branch] if branch == "main" else ["switch", "-q", "-C", branch]
        if branch != "main" and git(self.repo, "branch", "--list", branch).strip():
            args = ["switch", "-q", branch]
        subprocess.run(["git", "-C", str(self.repo), *args], capture_output=True, check=False)

    @rule(commit=st.booleans())
    def edit_plan(self, commit: bool) -> None:
        """The user adds a note to their copy of the plan, and maybe commits their notes on the
        branch they are on (main: the target moves)."""
        line = f"A note of the user's, number {len(self.notes) + 1}."
        plan = self.repo / "specs" / "plan.md"
        plan.write_text(plan.read_text() + "\n" + line + "\n")
        self.notes[line] = None
        if not commit:
            return
        git(self.repo, "commit", "-q", "-m", "my notes", "--", "specs/plan.md")
        branch = self._branch()
        for note, where in self.notes.items():
            if where is None:
                self.notes[note] = branch

    # --- what must hold after every rule -------------------------------------------------------

    def _committed_status(self, step: int) -> str:
        from gitflow_agents.plan import parse_plan_text

        text = git(self.repo, "show", "main:specs/plan.md")
        return parse_plan_text(text, Path("plan.md")).step(step).status

    def _branch(self) -> str:
        return git(self.repo, "branch", "--show-current").strip()

    def _merged(self) -> list[dict[str, Any]]:
        chains = []
        for path in self.repo.glob("flows/*/runs/*/result.json"):
            data = json.loads(path.read_text())
            if isinstance(data.get("chain"), dict) and data["chain"].get("merged"):
                chains.append(data["chain"])
        return chains

    @invariant()
    def no_step_merged_twice(self) -> None:
        if not hasattr(self, "repo"):
            return
        merged = self._merged()
        steps = [c["step"] for c in merged]
        assert len(steps) == len(set(steps)), steps
        blobs = {}  # path -> object id, from one git call ("<mode> <type> <id>\t<path>" lines)
        for line in git(self.repo, "ls-tree", "main", "impl/").splitlines():
            meta, name = line.split("\t", 1)
            blobs[name] = meta.split()[2]
        names = sorted(blobs)
        assert names == sorted(f"impl/step-{s:02d}-builder.log" for s in steps), (names, steps)
        for name in names:  # every implementation reached main once: one line, not two
            assert blobs[name] == IMPLEMENTED_ONCE, (name, git(self.repo, "show", f"main:{name}"))

    @invariant()
    def every_landed_commit_carries_its_approval(self) -> None:
        from gitflow_agents.reviewer import approval_status

        if not hasattr(self, "repo"):
            return
        for chain in self._merged():
            sha = chain["merged"]["sha"]
            ok, reason = approval_status(self.repo, sha)
            assert ok, reason  # approved, about exactly this commit, and of a change
            assert git(self.repo, "merge-base", "--is-ancestor", sha, "main") == ""

    @invariant()
    def no_user_edit_lost(self) -> None:
        if not hasattr(self, "repo"):
            return
        assert (self.repo / "mine.txt").read_text() == "the user's own file\n"
        text = (self.repo / "specs" / "plan.md").read_text()
        committed: dict[str, str] = {}  # branch -> its plan (one git call per branch)
        for line, branch in self.notes.items():
            if branch is None:
                assert line in text, line
                continue
            if branch not in committed:
                committed[branch] = git(self.repo, "show", f"{branch}:specs/plan.md")
            assert line in committed[branch], line

    @invariant()
    def no_agent_process_left(self) -> None:
        if not hasattr(self, "repo"):
            return
        allowed = set().union(*self.lost.values()) if self.lost else set()
        marker = str(self.box)
        left = []
        for proc in psutil.process_iter(["pid", "create_time"]):
            with contextlib.suppress(psutil.Error):
                if proc.info["create_time"] < self.started - 1 or proc.pid in allowed:
                    continue  # older than this example: not one of its agents
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                cmdline = proc.cmdline()
                # (a lost agent's own child, its sleep, goes with it)
                if any(marker in part for part in cmdline) and proc.ppid() not in allowed:
                    left.append((proc.pid, cmdline))
        assert not left, left

    @invariant()
    def the_plan_is_never_half_written(self) -> None:
        from gitflow_agents.plan import parse_plan_text

        if not hasattr(self, "repo"):
            return
        texts = [(self.repo / "specs" / "plan.md").read_text()]
        texts.append(git(self.repo, "show", "main:specs/plan.md"))
        for text in texts:
            plan = parse_plan_text(text, Path("plan.md"))
            assert [(s.number, s.title) for s in plan.steps] == [(1, "One"), (2, "Two")]
            assert all(s.status in ("", "✅") for s in plan.steps), plan.steps
            lines = [ln for ln in text.splitlines() if not ln.startswith("### Status:")]
            original = [ln for ln in PLAN.splitlines() if not ln.startswith("### Status:")]
            assert lines[: len(original)] == original
            assert all(ln == "" or ln.startswith("A note") for ln in lines[len(original) :])


@pytest.mark.slow
@pytest.mark.parametrize("part", [0, 1])
def test_chain_reruns_keep_their_promises(tmp_path: Path, part: int, long_run: bool) -> None:
    """Random sequences in two parts, each its own fixed seed (so every run checks the same
    sequences and pytest-xdist runs the parts side by side): 2 x 15 in a normal run, the
    long-haul 2 x 100 under ``pytest --hypothesis-profile=long`` (CONTRIBUTING.md, "Long runs");
    GITFLOW_AGENTS_STATE_EXAMPLES sets the number per part."""
    examples = int(os.environ.get("GITFLOW_AGENTS_STATE_EXAMPLES", 0)) or (
        LONG_EXAMPLES if long_run else EXAMPLES
    )
    ChainRuns.base = tmp_path
    ChainRuns.examples = 0
    test = get_state_machine_test(
        ChainRuns,
        settings=settings(
            max_examples=examples,
            stateful_step_count=5,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    seed(20261123 + part)(test)()
    assert ChainRuns.examples >= examples


# per part, in a normal run: every rule still fires, a kill -9 among them and the re-run of its step
EXAMPLES = 15
LONG_EXAMPLES = 100  # per part, under --hypothesis-profile=long
