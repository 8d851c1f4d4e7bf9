"""End-to-end harness: the real agent CLIs, the real adapters and supervisor, a scripted model.

The CLIs come from the cache that ``tests/e2e/install_agents.sh`` fills (pinned in
``agents.lock``); a test of a CLI that is not installed skips with the install command. Each test
gets its own stand-in server (own port), its own temp git repository and its own agent config
directory, so the tests can run in parallel (``pytest -n 2``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import psutil
import pytest

from gitflow_agents.agents import get_adapter
from gitflow_agents.agents.base import Invocation, LaunchSpec
from gitflow_agents.config import load_flow_config
from gitflow_agents.git import queries as gitmod
from gitflow_agents.plan import parse_plan
from gitflow_agents.prompt import PromptRequest, assemble_prompt, write_system_prompt
from gitflow_agents.runs import (
    RESULT_SCHEMAS,
    RunPaths,
    create_run,
    implement_result,
    read_json,
    result_status,
    review_result,
    write_result,
)
from gitflow_agents.runs.events import EventHub, JsonlChannel, MemoryChannel, read_jsonl
from gitflow_agents.supervisor import TREE_ENV, Launch, Limits, Outcome, ReportFiles, supervise

from ..conftest import git
from .model_standin import Standin, Step

HERE = Path(__file__).resolve().parent
LOCK = HERE / "agents.lock"
INSTALL_COMMAND = "bash tests/e2e/install_agents.sh"
# Read once at import, before the autouse fixture points HOME at a temp dir.
CACHE = Path(
    os.environ.get("GITFLOW_AGENTS_E2E_CACHE")
    or Path(os.environ.get("HOME") or Path.home()) / ".cache" / "gitflow-agents-e2e"
)
FLOW = "e2e"
# (adapter, agent id, outcome, seconds, reason) of every supervised run, for the summary.
RUNS: list[tuple[str, str, str, float, str]] = []
PLAN_MARKER = "E2E-PLAN-MARKER-7f3a"


@dataclass(frozen=True)
class Pinned:
    adapter: str
    registry: str
    package: str
    version: str
    exe: str


def pinned() -> dict[str, Pinned]:
    """The CLIs of agents.lock, by adapter name."""
    rows: dict[str, Pinned] = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        adapter, registry, package, version, exe = line.split()
        rows[adapter] = Pinned(adapter, registry, package, version, exe)
    return rows


def cli_path(adapter: str) -> Path | None:
    """The pinned CLI's executable in the cache, when install_agents.sh completed it."""
    pin = pinned()[adapter]
    dest = CACHE / f"{adapter}-{pin.version}"
    if not (dest / ".installed").is_file():
        return None
    sub = ("venv", "bin") if pin.registry == "pip" else ("node_modules", ".bin")
    path = dest.joinpath(*sub, pin.exe)
    return path if os.access(path, os.X_OK) else None


def require_cli(adapter: str) -> Path:
    path = cli_path(adapter)
    if path is None:
        pin = pinned()[adapter]
        pytest.skip(
            f"{pin.package}@{pin.version} is not installed in {CACHE}: run `{INSTALL_COMMAND}`"
        )
    return path


# --- the project under test ---------------------------------------------------------------

PLAN_TEXT = f"""# Plan: Greeting

Add a greeting module. {PLAN_MARKER}

## Implementation Steps

### Status: ❌ | Step 1: Add the greeting module

Write `greeting.py` with a `greet(name)` function that returns `Hello, <name>!`.
The marker line for the end-to-end test: {PLAN_MARKER}-STEP-1.

### Status: ❌ | Step 2: Document it

Mention `greet` in the README.
"""

GREETING_V1 = 'def greet(name):\n    return "Hello, " + name\n'
GREETING_V2 = 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n'


@dataclass
class AgentRun:
    """One supervised run of a real CLI, and everything a test asserts on."""

    outcome: Outcome
    spec: LaunchSpec
    invocation: Invocation
    run: RunPaths
    agent_dir: Path
    prompt: str
    result: dict[str, Any]
    events: list[dict[str, Any]]
    leftover: list[int]
    wall: float


@dataclass
class Project:
    """A temp git repo with a spec plan; runs agents on it through adapter + supervisor."""

    root: Path
    tmp: Path
    adapter: str
    executable: Path
    env: dict[str, str]
    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    base_sha: str = ""

    def prompt_for(self, agent: str, agent_id: str, step: int, after: Sequence[str] = ()) -> str:
        config = load_flow_config(self.root)
        plan = parse_plan(self.root / "specs" / "greeting.md", config.spec_plan)
        assembled = assemble_prompt(
            PromptRequest(
                root=self.root,
                config=config,
                agent=agent,
                agent_id=agent_id,
                flow_name=FLOW,
                step=step,
                plan=plan,
                after=tuple(after),
            )
        )
        write_system_prompt(self.root, config, agent_id, FLOW, assembled.text)
        return assembled.text

    def agent_dir(self, agent_id: str) -> Path:
        return self.root / "flows" / FLOW / "agents" / agent_id

    def run(
        self,
        agent: str,
        agent_id: str,
        *,
        step: int = 1,
        after: Sequence[str] = (),
        # Above every CLI's silent start-up under load (opencode: 10-20 s under `-n 2`): the
        # CLI's own CPU is not activity, only that of the tools it runs (docs/supervisor.md).
        stuck_timeout: float = 30.0,
        timeout: float = 45.0,
        task: str | None = None,
    ) -> AgentRun:
        prompt = self.prompt_for(agent, agent_id, step, after)
        agent_dir = self.agent_dir(agent_id)
        for stale in agent_dir.glob("report*.md"):
            stale.unlink()
        config_dir = self.tmp / "agent-config" / agent_id
        config_dir.mkdir(parents=True, exist_ok=True)
        report = f"flows/{FLOW}/agents/{agent_id}/report.md"
        invocation = Invocation(
            agent_id=agent_id,
            agent_dir=agent_dir,
            workdir=self.root,
            system_prompt_path=agent_dir / "system_prompt.md",
            system_prompt=prompt,
            task=task or f"Follow your system prompt. Your report is {report}.",
            model=self.model,
            options={"executable": str(self.executable), **self.options},
            config_dir=config_dir,
            env=self.env,
        )
        adapter = get_adapter(self.adapter)
        spec = adapter.launch(invocation)
        run = create_run(self.root, "flows", FLOW)
        memory = MemoryChannel()
        hub = EventHub([JsonlChannel(run.events), memory], run_id=run.run_dir.name)
        started = time.monotonic()
        try:
            outcome = supervise(
                Launch(spec, adapter.parse_output, (self.root,), (self.root / "flows",)),
                ReportFiles.named(agent_dir, "report.md", ".complete.md", ".failed.md"),
                Limits(stuck_timeout, timeout, kill_grace=2.0, exit_grace=10.0),
                hub=hub,
                run_dir=run.run_dir,
            )
        finally:
            hub.close()
        wall = time.monotonic() - started
        RUNS.append((self.adapter, agent_id, outcome.status, wall, outcome.reason))
        result = self._result(agent, outcome)
        write_result(run, {**result, "run": outcome.to_json()})
        return AgentRun(
            outcome=outcome,
            spec=spec,
            invocation=invocation,
            run=run,
            agent_dir=agent_dir,
            prompt=prompt,
            result=read_json(run.result) or {},
            events=read_jsonl(run.events),
            leftover=tree_leftovers(run),
            wall=wall,
        )

    def _result(self, agent: str, outcome: Outcome) -> dict[str, Any]:
        status = result_status(outcome.status)
        reply = getattr(outcome.output, "reply", None) or ""
        if agent == "reviewer":
            from gitflow_agents.findings import parse_review

            text = outcome.report_path.read_text() if outcome.report_path else reply
            review = parse_review(text)
            overall = (
                "approve" if review.overall and review.overall.value == "approve" else "revise"
            )
            findings = [
                {"severity": f.severity.value, "message": f.message, "file": f.file, "line": f.line}
                for f in review.findings
            ]
            return review_result(status, findings=findings, overall=overall, summary=review.summary)
        changed = sorted(self.changed_files())
        return implement_result(status, summary=reply[:500], changed_files=changed)

    def changed_files(self) -> list[str]:
        """Paths git sees as changed or new in the work tree (the flow dir is excluded)."""
        out = git(self.root, "status", "--porcelain=v1", "-z", "--untracked-files=all")
        return [entry[3:] for entry in out.split("\0") if entry]

    def commit_all(self, message: str) -> str:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", message)
        return git(self.root, "rev-parse", "HEAD").strip()

    def numstat(self, base: str, head: str) -> dict[str, tuple[int | None, int | None]]:
        """The chain's git statistics for base..head (gitflow_agents.git.queries.numstat)."""
        return gitmod.numstat(self.root, gitmod.DiffSpec(base=base, head=head))


def validate_result(kind: str, result: Mapping[str, Any]) -> None:
    jsonschema.validate(dict(result), RESULT_SCHEMAS[kind])


def tree_leftovers(run: RunPaths) -> list[int]:
    """Processes still alive that belong to the run's tree (by the supervisor's tree token)."""
    status = read_json(run.status) or {}
    token = status.get("tree_token")
    pid = status.get("pid")
    found: list[int] = []
    deadline = time.monotonic() + 3.0
    while True:
        found = []
        for proc in psutil.process_iter(["pid"]):
            try:
                ours = proc.pid == pid or (token and proc.environ().get(TREE_ENV) == token)
                if ours and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc.pid)
            except psutil.Error:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def make_project(
    tmp_path: Path,
    adapter: str,
    env: Mapping[str, str],
    *,
    model: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Project:
    executable = require_cli(adapter)
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# demo\n")
    (root / "specs").mkdir()
    (root / "specs" / "greeting.md").write_text(PLAN_TEXT, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    base = git(root, "rev-parse", "HEAD").strip()
    full_env = {**os.environ, **env}
    # The node CLIs find `node` on PATH; the cache's bin dirs are not needed there.
    return Project(
        root=root,
        tmp=tmp_path,
        adapter=adapter,
        executable=executable,
        env=full_env,
        model=model,
        options=dict(options or {}),
        base_sha=base,
    )


@pytest.fixture
def standin() -> Iterator[Standin]:
    with Standin() as server:
        yield server


# --- scripts shared by every CLI ----------------------------------------------------------


def implement_script(root: Path, agent_id: str) -> list[Step]:
    """Builder: write greeting.py, write the report, rename it, say done."""
    from .model_standin import Say, Shell, Write

    report = root / "flows" / FLOW / "agents" / agent_id / "report.md"
    return [
        Write(str(root / "greeting.py"), GREETING_V1),
        Write(str(report), "# Step 1 status: Completed\n\nAdded greeting.py.\n"),
        Shell(f"mv {report} {report.with_name('report.complete.md')}"),
        Say("<SUMMARY>Added greeting.py</SUMMARY>\n<STATUS>completed</STATUS>"),
    ]


def review_report(verdict: str, head: str) -> str:
    overall = "approve" if verdict == "APPROVED" else "revise"
    findings = (
        []
        if verdict == "APPROVED"
        else [
            {
                "severity": "error",
                "file": "greeting.py",
                "line": 2,
                "message": "greet() must return 'Hello, <name>!' with the exclamation mark",
                "rule": "spec-mismatch",
            }
        ]
    )
    block = json.dumps(
        {"overall": overall, "summary": f"Review of {head[:12]}", "findings": findings},
        indent=2,
    )
    title = "Approved" if verdict == "APPROVED" else "Revise"
    return (
        f"# Review: {title}\n\n## Summary\n\nChecked greeting.py against step 1.\n\n"
        f"## Findings (machine-readable)\n\n```json\n{block}\n```\n\n"
        f"REVIEW_RESULT: {verdict}\n"
    )


def review_script(root: Path, agent_id: str, verdict: str, head: str) -> list[Step]:
    from .model_standin import Say, Shell, Write

    report = root / "flows" / FLOW / "agents" / agent_id / "report.md"
    return [
        Write(str(report), review_report(verdict, head)),
        Shell(f"mv {report} {report.with_name('report.complete.md')}"),
        Say(f"Review done.\n\nREVIEW_RESULT: {verdict}"),
    ]


def fix_script(root: Path, agent_id: str) -> list[Step]:
    from .model_standin import Read, Say, Shell, Write

    report = root / "flows" / FLOW / "agents" / agent_id / "report.md"
    return [
        Read(str(root / "greeting.py")),
        Write(str(root / "greeting.py"), GREETING_V2),
        Write(str(report), "# Step 1 status: Completed\n\nFixed the greeting.\n"),
        Shell(f"mv {report} {report.with_name('report.complete.md')}"),
        Say("<SUMMARY>Fixed greet()</SUMMARY>\n<STATUS>completed</STATUS>"),
    ]


def copy_tree_for_debug(run: AgentRun, dest: Path) -> None:
    """Keep a failed run's log beside the test's tmp dir (pytest shows tmp paths on failure)."""
    if run.run.worker_log.exists():
        shutil.copy(run.run.worker_log, dest / f"{run.agent_dir.name}.worker.log")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Per run: CLI, agent, outcome, seconds (the e2e wall time stays visible in every run)."""
    if not RUNS:
        return
    write = terminalreporter.write_line
    terminalreporter.section("e2e agent runs")
    for adapter, agent_id, status, wall, reason in RUNS:
        write(f"{adapter:9} {agent_id:28} {status:10} {wall:6.1f}s  {reason[:70]}")
    totals: dict[str, float] = {}
    for adapter, _, _, wall, _ in RUNS:
        totals[adapter] = totals.get(adapter, 0.0) + wall
    write("agent time per CLI: " + ", ".join(f"{a} {t:.1f}s" for a, t in sorted(totals.items())))


def pytest_configure(config: pytest.Config) -> None:
    # Also registered in pyproject.toml; here so the suite runs with --strict-markers either way.
    config.addinivalue_line("markers", "e2e: runs a real agent CLI against the model stand-in")
