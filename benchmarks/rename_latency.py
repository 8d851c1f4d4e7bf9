"""Completion-detection latency of the supervisor: report.md renamed -> the supervisor knows.

Usage: python benchmarks/rename_latency.py [--runs N]

A fake agent (tests/fakes/fake_agent, mode ``rename-late``) waits a moment, notes the time, renames
its report to report.complete.md and stays alive, so what is measured is the file watcher, not
process exit. Latency = the supervisor's ``signal_at`` minus the fake's time taken just before
``rename`` (an upper bound). Both watchers are measured: inotify (the default on Linux) and the
20 ms stat poll used where inotify is unavailable. Also printed: the orchestrator's memory with 8
agents at once, and orchestration overhead per agent: an instantly succeeding fake agent started
bare, against the same fake run

- through ``supervise()`` alone;
- through the whole in-process launch path of ``spawn`` / ``send`` (the project's config loaded
  once, as the chain does): prompt assembly, ``agent_run.run.execute`` (run folder, status.json,
  events.jsonl, system_prompt.md, ``launch.prepare``, ``AgentRunner.run``, result.json
  with the changed files);
- as ``gitflow-agents spawn AGENT --task ... --quiet``, end to end: a new interpreter, imports,
  config, prompt, run and record, i.e. what a user waits for.

Every variant ends when the agent's process has exited. Targets (issue 3): detection <= 50 ms,
overhead <= 100 ms. Not an assertion: a measurement to watch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitflow_agents.agents.base import LaunchSpec  # noqa: E402
from gitflow_agents.runs.events import EventHub  # noqa: E402
from gitflow_agents.supervisor import Launch, Limits, Outcome, ReportFiles, supervise  # noqa: E402

FAKE = ROOT / "tests" / "fakes" / "fake_agent"


def one_run(
    base: Path, mode: str, *extra: str, exit_grace: float = 0.0
) -> tuple[Outcome, dict[str, float]]:
    work = Path(tempfile.mkdtemp(dir=base))
    agent_dir, run_dir = work / "agent", work / "run"
    agent_dir.mkdir()
    record = work / "record.json"
    spec = LaunchSpec(
        argv=(str(FAKE), mode, "--record", str(record), "--agent-dir", str(agent_dir), *extra),
        env=dict(os.environ),
        cwd=work,
    )
    outcome = supervise(
        Launch(spec, watch=(work,)),
        ReportFiles.named(agent_dir, "report.md", ".complete.md", ".failed.md"),
        Limits(stuck_timeout=30, timeout=30, kill_grace=1.0, exit_grace=exit_grace),
        hub=EventHub(),
        run_dir=run_dir,
    )
    return outcome, json.loads(record.read_text())


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def latency(base: Path, runs: int, watcher: str) -> list[float]:
    if watcher == "poll":
        os.environ["GITFLOW_AGENTS_WATCH"] = "poll"
    else:
        os.environ.pop("GITFLOW_AGENTS_WATCH", None)
    samples = []
    for _ in range(runs):
        outcome, facts = one_run(base, "rename-late", "--seconds", "0.2")
        assert outcome.status == "succeeded", outcome.reason
        assert outcome.watcher == watcher, outcome.watcher
        assert outcome.signal_at is not None
        samples.append((outcome.signal_at - facts["renamed_at"]) * 1000)
    os.environ.pop("GITFLOW_AGENTS_WATCH", None)
    return samples


def overhead(base: Path, runs: int) -> tuple[list[float], list[float]]:
    bare, supervised = [], []
    for _ in range(runs):
        work = Path(tempfile.mkdtemp(dir=base))
        start = time.perf_counter()
        subprocess.run([str(FAKE), "succeed", "--agent-dir", str(work)], check=True)
        bare.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        # As spawn does: after the rename the agent may exit by itself (exit_grace), so the
        # supervised run, like the bare one, ends when the process has exited.
        outcome, _facts = one_run(base, "succeed", exit_grace=10.0)
        supervised.append((time.perf_counter() - start) * 1000)
        assert outcome.status == "succeeded"
    return bare, supervised


def make_project(base: Path) -> Path:
    """A git repository with one commit and a .flow config whose agent is the instant fake."""
    root = Path(tempfile.mkdtemp(dir=base)) / "project"
    (root / ".flow").mkdir(parents=True)
    (root / ".flow" / "base.yaml").write_text(
        "completion_workflow:\n"
        '  template: "Rename {report_file} to {success_file}."\n'
        "agents:\n"
        "  builder:\n"
        "    adapter: command\n"
        f"    command: {json.dumps([str(FAKE), 'succeed'])}\n"
    )
    (root / "README.md").write_text("# bench\n")
    git = ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@example.com"]
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "init"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return root


def launch_path(root: Path, runs: int) -> tuple[list[float], list[float]]:
    """Per agent, in-process: prompt assembly + spawn's execute (prepare, supervise, record);
    and the bare fake, alternated (a loaded machine drifts: each run has its own baseline)."""
    from gitflow_agents.agent_run.run import AgentJob, execute
    from gitflow_agents.assets import load_manifest
    from gitflow_agents.config import load_flow_config
    from gitflow_agents.prompt import PromptRequest, assemble_prompt

    config = load_flow_config(root)
    manifest = load_manifest(root)
    bare, samples = [], []
    for i in range(runs + 1):  # the first run (imports, first compile) is not counted
        work = Path(tempfile.mkdtemp(dir=root.parent))
        start = time.perf_counter()
        subprocess.run([str(FAKE), "succeed", "--agent-dir", str(work)], check=True)
        bare.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        request = PromptRequest(
            root=root,
            config=config,
            agent="builder",
            agent_id=f"inproc-{i}",
            flow_name="bench",
            task="t",
            manifest=manifest,
        )
        prompt = assemble_prompt(request)
        result = execute(
            AgentJob(
                root=root,
                config=config,
                agent="builder",
                agent_id=f"inproc-{i}",
                flow_name="bench",
                kind="implement",
                prompt_text=prompt.text,
                limits=Limits(stuck_timeout=30.0, timeout=30.0),
                quiet=True,
            )
        )
        took = (time.perf_counter() - start) * 1000
        assert result["status"] == "succeeded", result["run"]["reason"]
        if i:
            samples.append(took)
    return bare[1:], samples


SPAWN = (sys.executable, "-m", "gitflow_agents", "spawn", "builder")
SPAWN_ARGS = ("--flow", "cli", "--task", "t", "--quiet")


def spawn_cli(root: Path, runs: int) -> tuple[list[float], list[float]]:
    """``gitflow-agents spawn`` end to end, and the bare fake, alternated."""
    # Byte-code caches as in an installed package (a PYTHONDONTWRITEBYTECODE environment would
    # recompile every module of ours on every run).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    bare, cli = [], []
    for i in range(runs + 1):
        work = Path(tempfile.mkdtemp(dir=root.parent))
        start = time.perf_counter()
        subprocess.run([str(FAKE), "succeed", "--agent-dir", str(work)], env=env, check=True)
        took_bare = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        done = subprocess.run(
            [*SPAWN, *SPAWN_ARGS, "--agent-name", f"cli-{i}"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            check=False,
        )
        took_cli = (time.perf_counter() - start) * 1000
        assert done.returncode == 0, done.returncode
        if i:  # the first run warms the byte-code and page caches
            bare.append(took_bare)
            cli.append(took_cli)
    return bare, cli


def memory_with_agents(base: Path, agents: int = 8) -> tuple[float, float]:
    import psutil

    me = psutil.Process()
    before = me.memory_info().rss / 2**20
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], me.memory_info().rss / 2**20)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    threads = [
        threading.Thread(target=one_run, args=(base, "busy-stdout", "--seconds", "1.5"))
        for _ in range(agents)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    sampler.join()
    return before, peak[0]


def row(name: str, values: list[float]) -> str:
    return (
        f"| {name:<43} | {statistics.median(values):8.2f} | {percentile(values, 95):8.2f} "
        f"| {max(values):8.2f} | {len(values):4d} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        inotify = latency(base, args.runs, "inotify")
        poll = latency(base, args.runs, "poll")
        bare, supervised = overhead(base, max(5, args.runs // 2))
        extra = [s - b for s, b in zip(supervised, bare, strict=True)]
        project = make_project(base)
        in_bare, in_process = launch_path(project, max(5, args.runs // 2))
        in_extra = [s - b for s, b in zip(in_process, in_bare, strict=True)]
        cli_bare, cli = spawn_cli(project, max(5, args.runs // 2))
        cli_extra = [c - b for c, b in zip(cli, cli_bare, strict=True)]
        before, peak = memory_with_agents(base)
    print("| measurement (ms)                            |      p50 |      p95 |      max |    n |")
    print("|---------------------------------------------|---------:|---------:|---------:|-----:|")
    print(row("rename detection, inotify", inotify))
    print(row("rename detection, 20 ms poll", poll))
    print(row("instant agent, bare spawn", bare + in_bare + cli_bare))
    print(row("instant agent, supervise() only", supervised))
    print(row("  overhead: supervise() only", extra))
    print(row("instant agent, in-process launch path", in_process))
    print(row("  overhead: in-process launch path", in_extra))
    print(row("instant agent, `gitflow-agents spawn` CLI", cli))
    print(row("  overhead: CLI end to end", cli_extra))
    print()
    print(f"orchestrator RSS: {before:.1f} MiB before, {peak:.1f} MiB peak with 8 agents at once")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
