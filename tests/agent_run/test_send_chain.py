"""`send` to an agent run of a chain (`run`, `flow implement|fix`): it continues exactly that run,
in its own agent folder (``step-01-builder``), with its own system prompt and report files, in
the step's work tree; `send` to a whole step run names the agent runs that can be continued.

A fake `claude` on PATH (it can resume) logs where it ran and what it was given; the builder
asks a question on its first turn (needs_input, so the step fails with exit 3) and answers the
message on the next. The commands run in-process (``Cli``); the agents are real processes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKES, Cli, git
from tests.helpers.fake_claude import STDIN_TASK

FAKE_CLAUDE = (
    """#!{python}
import json, os, pathlib, sys
argv = sys.argv[1:]
"""
    + STDIN_TASK
    + """agent_dir = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
prompt_file = argv[argv.index("--append-system-prompt-file") + 1]
resume = argv[argv.index("--resume") + 1] if "--resume" in argv else None
task = argv[argv.index("-p") + 1]
with open({log!r}, "a") as f:
    f.write(json.dumps({{"cwd": os.getcwd(), "agentDir": str(agent_dir), "resume": resume,
                         "prompt": prompt_file, "task": task}}) + "\\n")
asks = resume is None and {asker!r} in agent_dir.name and "ASK" in pathlib.Path(prompt_file).read_text()
pathlib.Path("answer.txt").write_text(task.splitlines()[0] + "\\n")
(agent_dir / "report.md").write_text("## Summary\\n\\nTurn done.\\n")
os.rename(agent_dir / "report.md", agent_dir / ("report.failed.md" if asks else "report.complete.md"))
reply = ("<SUMMARY>Need a colour.</SUMMARY><QUESTIONS>\\n- Which colour?\\n</QUESTIONS>"
         "<STATUS>needs_input</STATUS>" if asks else "<SUMMARY>Done.</SUMMARY><STATUS>completed</STATUS>")
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": reply,
                  "session_id": resume or "sess-" + agent_dir.name}}))
"""
)

PLAN = """\
# Plan: Feature

## Implementation Steps

### Status: | Step 1: Add the module

Add src/new_module.py. ASK which colour first.
"""


BUILTIN = "    adapter: builtin\n"
REVISES = (
    "    adapter: command\n"
    f"    command: {json.dumps([sys.executable, str(FAKES / 'fake_flow_agent'), 'reviewer', 'revise'])}\n"
)


class Setup:
    def __init__(
        self, repo: Path, tmp_path: Path, *, asker: str = "builder", reviewer: str = BUILTIN
    ) -> None:
        self.repo = repo
        self.log = tmp_path / "claude.jsonl"
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        fake = bin_dir / "claude"
        fake.write_text(FAKE_CLAUDE.format(python=sys.executable, log=str(self.log), asker=asker))
        fake.chmod(0o755)
        self.env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        (repo / ".flow").mkdir()
        (repo / ".flow" / "base.yaml").write_text(
            "flow_dir: flows\ndefault_branch: main\n"
            "defaults:\n  stuck_timeout_secs: 30\n  max_wait_secs: 60\n"
            'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'
            "agents:\n"
            "  builder:\n    adapter: claude\n"
            "  fixer:\n    adapter: claude\n"
            f"  reviewer:\n{reviewer}"
        )
        (repo / "specs").mkdir()
        (repo / "specs" / "feature.md").write_text(PLAN)
        git(repo, "add", "specs")
        git(repo, "commit", "-q", "-m", "plan")
        with (repo / ".git" / "info" / "exclude").open("a") as handle:
            handle.write("/.flow/\n")

    def calls(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def records(self) -> dict[str, dict[str, Any]]:
        runs = self.repo / "flows" / "feature" / "runs"
        return {p.parent.name: json.loads(p.read_text()) for p in runs.glob("*/result.json")}

    def step_run(self) -> tuple[str, dict[str, Any]]:
        [(run_id, found)] = [
            (k, r) for k, r in self.records().items() if r["run"]["kind"] == "chain"
        ]
        return run_id, found


CHAINS = {
    "run": ("run", "specs/feature.md", "--step", "1", "--quiet"),
    "flow implement": ("flow", "implement", "--plan", "specs/feature.md", "--step", "1", "--quiet"),
}


@pytest.mark.parametrize("chain", list(CHAINS))
def test_send_continues_the_chains_builder_in_its_own_folder_and_work_tree(
    repo: Path, tmp_path: Path, cli: Cli, chain: str
) -> None:
    s = Setup(repo, tmp_path)
    first = cli.main(*CHAINS[chain], cwd=repo, env=s.env)
    assert first.returncode == 3, first.stderr
    [asked] = s.calls()
    workdir, own_folder = (
        Path(asked["cwd"]),
        repo / "flows" / "feature" / "agents" / "step-01-builder",
    )
    assert Path(asked["agentDir"]) == own_folder and workdir != repo
    [builder_id] = [k for k, r in s.records().items() if r["run"]["kind"] == "implement"]
    # a folder named after the agent's config key, as `spawn builder` would leave it
    decoy = repo / "flows" / "feature" / "agents" / "builder"
    decoy.mkdir()
    (decoy / "system_prompt.md").write_text("ANOTHER RUN'S PROMPT\n")

    sent = cli.main("send", builder_id, "Blue.", "--quiet", cwd=repo, env=s.env)

    assert sent.returncode == 0, sent.stderr
    _, resumed = s.calls()
    assert resumed["resume"] == "sess-step-01-builder"
    assert Path(resumed["cwd"]) == workdir  # the step's work tree, not the user's checkout
    assert Path(resumed["agentDir"]) == own_folder
    assert Path(resumed["prompt"]) == own_folder / "system_prompt.md"
    assert str(own_folder / "report.md") in resumed["task"]
    assert (workdir / "answer.txt").read_text() == "Blue.\n"
    assert not (repo / "answer.txt").exists()
    assert (own_folder / "report.complete.md").exists()
    assert sorted(p.name for p in decoy.iterdir()) == ["system_prompt.md"]  # untouched
    [turn] = [r for k, r in s.records().items() if r["run"].get("session")]
    assert turn["status"] == "succeeded"
    assert turn["run"]["agentId"] == "step-01-builder"
    assert Path(turn["run"]["workdir"]) == workdir


def test_send_to_a_step_run_names_the_agent_runs_to_continue(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    s = Setup(repo, tmp_path)
    assert cli.main(*CHAINS["run"], cwd=repo, env=s.env).returncode == 3
    step_id, step = s.step_run()
    [builder] = step["chain"]["agents"]
    for args in (("send", step_id, "Blue."), ("send", "--close", step_id)):
        refused = cli.main(*args, cwd=repo, env=s.env)
        assert refused.returncode == 2
        assert refused.stderr.strip().splitlines() == [
            f"gitflow-agents: error: send: run {step_id} is the run of step 1 of "
            "specs/feature.md, not one agent's run; continue one of its agent runs: "
            f"{builder['runID']} (step-01-builder)"
        ]
    assert len(s.calls()) == 1  # no agent was started
    assert (
        cli.main("send", builder["runID"], "Blue.", "--quiet", cwd=repo, env=s.env).returncode == 0
    )
    refused = cli.main("send", step_id, "Green.", cwd=repo, env=s.env)
    [turn] = [k for k, r in s.records().items() if r["run"].get("session")]
    assert f"continue one of its agent runs: {turn} (step-01-builder)" in refused.stderr


def test_send_to_a_step_run_whose_agents_cannot_be_continued(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    s = Setup(repo, tmp_path)
    (repo / "specs" / "feature.md").write_text(PLAN.replace(" ASK which colour first.", ""))
    git(repo, "commit", "-qam", "no question")
    assert cli.main(*CHAINS["run"], cwd=repo, env=s.env).returncode == 0
    step_id, _step = s.step_run()
    sent = cli.main("send", step_id, "More.", cwd=repo, env=s.env)
    assert sent.returncode == 2
    [line] = sent.stderr.strip().splitlines()
    # the builder ran in the landed step's work tree, which is gone; the builtin reviewer has
    # no session
    assert line == (
        f"gitflow-agents: error: send: run {step_id} is the run of step 1 of specs/feature.md, "
        "not one agent's run, and none of its agent runs can be continued"
    )


def test_send_when_the_steps_work_tree_is_gone(repo: Path, tmp_path: Path, cli: Cli) -> None:
    s = Setup(repo, tmp_path)
    assert cli.main(*CHAINS["run"], cwd=repo, env=s.env).returncode == 3
    [asked] = s.calls()
    git(repo, "worktree", "remove", "--force", asked["cwd"])
    _step_id, step = s.step_run()
    [builder] = step["chain"]["agents"]
    sent = cli.main("send", builder["runID"], "Blue.", cwd=repo, env=s.env)
    assert sent.returncode == 2
    assert sent.stderr.strip().splitlines() == [
        f"gitflow-agents: error: send: run {builder['runID']} worked in {asked['cwd']}, which "
        "is gone (its step was landed, or the work tree removed); run the step again instead"
    ]
    assert len(s.calls()) == 1


def test_a_record_naming_a_foreign_working_directory_is_refused(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    s = Setup(repo, tmp_path)
    assert cli.main(*CHAINS["run"], cwd=repo, env=s.env).returncode == 3
    _step_id, step = s.step_run()
    [builder] = step["chain"]["agents"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result_file = repo / "flows" / "feature" / "runs" / builder["runID"] / "result.json"
    record = json.loads(result_file.read_text())
    record["run"]["workdir"] = str(elsewhere)
    result_file.write_text(json.dumps(record))
    sent = cli.main("send", builder["runID"], "Blue.", cwd=repo, env=s.env)
    assert sent.returncode == 2
    assert sent.stderr.strip().splitlines() == [
        f"gitflow-agents: error: send: run {builder['runID']} records the working directory "
        f"{elsewhere}, which is neither this checkout nor one of its work trees; not continued"
    ]
    assert len(s.calls()) == 1 and list(elsewhere.iterdir()) == []


def test_send_continues_the_chains_fixer_in_its_own_folder_and_work_tree(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """The builder changes a file, the reviewer revises, the fixer asks: send answers the
    fixer, in its folder and the step's work tree."""
    s = Setup(repo, tmp_path, asker="fixer", reviewer=REVISES)
    first = cli.main(*CHAINS["run"], cwd=repo, env=s.env)
    assert first.returncode == 3, first.stderr
    built, asked = s.calls()
    assert Path(asked["cwd"]) == Path(built["cwd"]) != repo
    own_folder = Path(asked["agentDir"])
    assert own_folder.parent == repo / "flows" / "feature" / "agents"
    assert own_folder.name.startswith("step-01-fixer")
    [fixer_id] = [k for k, r in s.records().items() if r["run"].get("agentId") == own_folder.name]
    sent = cli.main("send", fixer_id, "Blue.", "--quiet", cwd=repo, env=s.env)
    assert sent.returncode == 0, sent.stderr
    *_, resumed = s.calls()
    assert resumed["resume"] == f"sess-{own_folder.name}"
    assert Path(resumed["cwd"]) == Path(asked["cwd"])
    assert Path(resumed["agentDir"]) == own_folder
    assert Path(resumed["prompt"]) == own_folder / "system_prompt.md"
    assert (Path(asked["cwd"]) / "answer.txt").read_text() == "Blue.\n"


def test_a_send_whose_cli_is_missing_records_no_turn(repo: Path, tmp_path: Path, cli: Cli) -> None:
    """A send that cannot start the CLI is one line (exit 3) before the session changes: the
    session's latest turn stays the run it was, so the send works once the CLI is back."""
    s = Setup(repo, tmp_path)
    assert cli.main(*CHAINS["run"], cwd=repo, env=s.env).returncode == 3
    [builder_id] = [k for k, r in s.records().items() if r["run"]["kind"] == "implement"]
    fake = tmp_path / "bin" / "claude"
    fake.rename(tmp_path / "claude.off")
    no_claude = os.pathsep.join(
        d for d in s.env["PATH"].split(os.pathsep) if not (Path(d) / "claude").exists()
    )
    sessions = repo / "flows" / "feature" / "sessions"
    before = {p.name: p.read_bytes() for p in sessions.glob("*")}

    missing = cli.main("send", builder_id, "Blue.", "--quiet", cwd=repo, env={"PATH": no_claude})

    assert missing.returncode == 3
    assert len(missing.stderr.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in sessions.glob("*")} == before
    (tmp_path / "claude.off").rename(fake)
    sent = cli.main("send", builder_id, "Blue.", "--quiet", cwd=repo, env=s.env)
    assert sent.returncode == 0, sent.stderr
    assert [c["resume"] for c in s.calls()] == [None, "sess-step-01-builder"]
