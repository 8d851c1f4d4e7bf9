"""Session mode: `send`/`reply` continue a finished agent's CLI session as a new run; `--close`,
`--max-turns`, refusals; `abort` = cancel. A fake `claude` on PATH records its argv (incl.
--resume) and prints Claude's result JSON with a session id, through the real supervisor. The
commands run in-process (``Cli``); the agents are real processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.agent_run import sessions
from gitflow_agents.agents import ADAPTERS
from gitflow_agents.agents.base import Invocation, LaunchSpec
from gitflow_agents.agents.claude import ClaudeAdapter
from gitflow_agents.base.errors import UsageError
from gitflow_agents.config import load_flow_config
from tests.conftest import Cli
from tests.helpers.session import setup


def runs(repo: Path, flow: str = "f") -> list[Path]:
    return sorted((repo / "flows" / flow / "runs").iterdir())


def result(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "result.json").read_text())
    return data


def events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def spawn(cli: Cli, repo: Path, env: dict[str, str], task: str, *extra: str) -> Any:
    return cli.main(
        "spawn", "painter", "--flow", "f", "--task", task, "--quiet", *extra, cwd=repo, env=env
    )


@pytest.fixture(autouse=True)
def _python(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setenv("PYTHON", sys.executable)


def test_needs_input_then_send_continues_the_session(repo: Path, tmp_path: Path, cli: Cli) -> None:
    env, log = setup(repo, tmp_path)
    first = spawn(cli, repo, env, "Paint the fence. ASK")
    assert first.returncode == 3, first.stderr
    [run1] = runs(repo)
    # needs_input: the questions are printed, recorded and emitted
    assert "Which colour?" in first.stdout and "Dark mode too?" in first.stdout
    assert f"gitflow-agents send {run1.name}" in first.stdout
    rec1 = result(run1)["run"]
    assert rec1["reply"]["status"] == "needs_input"
    assert rec1["reply"]["questions"] == ["Which colour?", "Dark mode too?"]
    assert rec1["sessionId"] == "sess-1"
    assert rec1["costUsd"] == 0.25
    assert json.loads((run1 / "status.json").read_text())["session_id"] == "sess-1"
    reply_events = [e for e in events(run1) if e["type"] == "agent:reply"]
    assert reply_events[0]["data"]["questions"] == ["Which colour?", "Dark mode too?"]

    second = cli.main("send", run1.name, "Blue, no dark mode.", "--quiet", cwd=repo, env=env)
    assert second.returncode == 0, second.stderr
    assert "succeeded" in second.stdout and "Painted it: Blue, no dark mode." in second.stdout
    run1_again, run2 = runs(repo)
    assert run1_again == run1 and run2.name != run1.name  # a new run with a fresh id
    argv = [json.loads(line) for line in log.read_text().splitlines()]
    assert "--resume" not in argv[0]
    assert argv[1][argv[1].index("--resume") + 1] == "sess-1"
    assert argv[1][argv[1].index("-p") + 1].startswith("Blue, no dark mode.\n")
    assert "--append-system-prompt-file" in argv[1]
    rec2 = result(run2)["run"]
    assert rec2["session"] == {
        "root": run1.name,
        "turn": 2,
        "previousRunId": run1.name,
        "resumedSessionId": "sess-1",
        "maxTurns": None,
    }
    assert result(run2)["status"] == "succeeded"
    # the turn's own cost: the CLI said the session's $0.50, of which $0.25 was the turn before
    assert (rec2["costUsd"], rec2["inputTokens"]) == (0.25, 10)
    # and the event that ended it (the console's end line, the live views) says the same
    (ended,) = [e["data"] for e in events(run2) if e["type"] == "agent:complete"]
    assert (ended["cost_usd"], ended["input_tokens"]) == (0.25, 10)
    kinds = [e["type"] for e in events(run2)]
    assert kinds[:3] == ["harness:start", "session:message", "phase:start"]
    message = events(run2)[1]
    assert message["data"]["content"] == "Blue, no dark mode."
    assert message["data"]["previousRunId"] == run1.name
    assert message["runId"] == run2.name
    # the earlier turn's renamed report was moved aside, the new one is in place
    agent_dir = repo / "flows" / "f" / "agents" / "painter"
    assert (agent_dir / "report.complete.md").exists()
    assert [p.name[-16:] for p in (agent_dir / "previous").iterdir()] == ["report.failed.md"]
    session = json.loads((repo / "flows" / "f" / "sessions" / f"{run1.name}.json").read_text())
    assert session["runs"] == [run1.name, run2.name] and session["turns"] == 2
    assert session["sessionId"] == "sess-1" and not session["closed"]

    # only the latest turn can be continued
    stale = cli.main("send", run1.name, "again", cwd=repo, env=env)
    assert stale.returncode == 2
    assert stale.stderr.strip().splitlines() == [
        f"gitflow-agents: error: send: run {run1.name} is not the latest turn of its session; "
        f"send to run {run2.name}"
    ]
    # reply = send, emitting session:reply
    third = cli.main("reply", run2.name, "Thanks", "--quiet", cwd=repo, env=env)
    assert third.returncode == 0, third.stderr
    run3 = runs(repo)[-1]
    assert [e["type"] for e in events(run3)][1] == "session:reply"
    assert result(run3)["run"]["session"]["turn"] == 3
    # status: per-run reply status and session, structured vs unstructured replies summed up
    table = cli.main("status", cwd=repo, env=env)
    assert "replies: 3 structured, 0 unstructured (100% structured)" in table.stdout
    assert f"needs input: {run1.name[:13]}" in table.stdout
    rows = json.loads(cli.main("status", "--json", cwd=repo, env=env).stdout)
    assert [r["replyStatus"] for r in rows] == ["needs_input", "completed", "completed"]
    assert [r["replies"]["structured"] for r in rows] == [1, 1, 1]
    assert rows[0]["questions"] == ["Which colour?", "Dark mode too?"]
    assert rows[2]["session"] == {"root": run1.name, "turn": 3, "previousRunId": run2.name}
    assert {r["sessionId"] for r in rows} == {"sess-1"}


def test_max_turns_closes_the_session(repo: Path, tmp_path: Path, cli: Cli) -> None:
    env, log = setup(repo, tmp_path)
    assert spawn(cli, repo, env, "Paint.").returncode == 0
    [run1] = runs(repo)
    ok = cli.main("send", run1.name, "More.", "--max-turns", "2", "--quiet", cwd=repo, env=env)
    assert ok.returncode == 0, ok.stderr
    assert "is now closed: max turns (2) reached" in ok.stdout
    run2 = runs(repo)[-1]
    assert result(run2)["run"]["session"]["maxTurns"] == 2
    refused = cli.main("send", run2.name, "Even more.", cwd=repo, env=env)
    assert refused.returncode == 2
    assert "is closed (max turns (2) reached)" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert len(runs(repo)) == 2 and len(log.read_text().splitlines()) == 2


def test_max_turns_already_used_up(repo: Path, tmp_path: Path, cli: Cli) -> None:
    env, _log = setup(repo, tmp_path)
    assert spawn(cli, repo, env, "Paint.").returncode == 0
    [run1] = runs(repo)
    refused = cli.main("send", run1.name, "More.", "--max-turns", "1", cwd=repo, env=env)
    assert refused.returncode == 2 and "has had 1 of its 1 turns" in refused.stderr
    assert len(runs(repo)) == 1


def test_a_blank_message_continues_no_session(repo: Path, tmp_path: Path, cli: Cli) -> None:
    """As without a MESSAGE: a turn saying nothing would be a new, paid agent run."""
    env, log = setup(repo, tmp_path)
    assert spawn(cli, repo, env, "Paint.").returncode == 0
    [run1] = runs(repo)
    for blank in ("", "   ", "\n\t"):
        refused = cli.main("send", run1.name, blank, cwd=repo, env=env)
        assert refused.returncode == 2
        assert refused.stderr.strip() == (
            "gitflow-agents: error: send: the MESSAGE is blank: give a MESSAGE "
            "(or --close to end the session)"
        )
    assert len(runs(repo)) == 1 and len(log.read_text().splitlines()) == 1


def test_close_refuses_later_sends(repo: Path, tmp_path: Path, cli: Cli) -> None:
    env, _log = setup(repo, tmp_path)
    assert spawn(cli, repo, env, "Paint.").returncode == 0
    [run1] = runs(repo)
    inbox = run1 / "inbox"  # a message sent while it ran, for a next turn there will not be
    inbox.mkdir()
    (inbox / "0001.json").write_text(json.dumps({"text": "And the gate."}))
    closed = cli.main("send", "--close", run1.name, cwd=repo, env=env)
    assert closed.returncode == 0 and f"closed session {run1.name} after 1 turn(s)" in closed.stdout
    assert f"1 message(s) queued for its next turn were never sent ({inbox})" in closed.stdout
    refused = cli.main("send", run1.name, "More.", cwd=repo, env=env)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        f"gitflow-agents: error: send: the session of run {run1.name} is closed "
        "(closed by gitflow-agents send --close)"
    )
    assert len(runs(repo)) == 1


def test_refused_when_the_cli_cannot_resume(repo: Path, tmp_path: Path, cli: Cli) -> None:
    env, _log = setup(repo, tmp_path)
    spawned = cli.main(
        "spawn", "scripted", "--flow", "f", "--task", "t", "--quiet", cwd=repo, env=env
    )
    assert spawned.returncode == 0, spawned.stderr
    [run1] = runs(repo)
    cannot = (
        "gitflow-agents: error: send: the command adapter cannot resume a session "
        "(its CLI has no resume mode)"
    )
    # the command adapter reports no session id, but the real reason is that it cannot resume
    refused = cli.main("send", run1.name, "More.", cwd=repo, env=env)
    assert refused.returncode == 2
    assert refused.stderr.strip() == cannot
    # the same with a session id on record
    data = result(run1)
    data["run"]["sessionId"] = "abc"
    (run1 / "result.json").write_text(json.dumps(data))
    refused = cli.main("send", run1.name, "More.", cwd=repo, env=env)
    assert refused.returncode == 2
    assert refused.stderr.strip() == cannot
    assert len(runs(repo)) == 1


def test_refused_without_a_session_id(repo: Path, tmp_path: Path, cli: Cli) -> None:
    env, log = setup(repo, tmp_path)
    assert spawn(cli, repo, env, "Paint. NOSESSION").returncode == 0
    [run1] = runs(repo)
    refused = cli.main("send", run1.name, "More.", cwd=repo, env=env)
    assert refused.returncode == 2
    assert f"run {run1.name} recorded no session id" in refused.stderr
    assert len(log.read_text().splitlines()) == 1


def test_refused_while_running_and_for_unknown_runs(repo: Path, tmp_path: Path, cli: Cli) -> None:
    env, log = setup(repo, tmp_path)
    assert spawn(cli, repo, env, "Paint.").returncode == 0
    [run1] = runs(repo)
    ended = {name: (run1 / name).read_text() for name in ("result.json", "status.json")}
    (run1 / "result.json").unlink()
    status = json.loads(ended["status.json"])
    # running, its supervisor alive (this process) but not listening (no control channel):
    # the message is queued for the next turn, and said so
    (run1 / "status.json").write_text(json.dumps({**status, "state": "running"}))
    queued = cli.main("send", run1.name, "More.", cwd=repo, env=env)
    assert queued.returncode == 0, queued.stderr
    assert queued.stdout.startswith(f"queued: run {run1.name} is not listening")
    # closing its session while it runs: refused until it has finished
    busy = cli.main("send", "--close", run1.name, cwd=repo, env=env)
    assert busy.returncode == 2
    assert "has not finished (state running)" in busy.stderr
    assert f"gitflow-agents abort {run1.name}" in busy.stderr
    # its supervisor gone (a lost run): refused, as lost (waiting would never help)
    lost = {**status, "state": "running", "supervisor_pid": 2**22 + 1}
    (run1 / "status.json").write_text(json.dumps(lost))
    gone = cli.main("send", run1.name, "Even more.", cwd=repo, env=env)
    assert gone.returncode == 2 and "has not finished" not in gone.stderr
    assert f"run {run1.name} was lost: the gitflow-agents process supervising it died" in (
        gone.stderr
    )
    assert f"end it with `gitflow-agents cancel {run1.name}`" in gone.stderr
    unknown = cli.main("send", "0000000000", "x", cwd=repo, env=env)
    assert unknown.returncode == 2 and "no run '0000000000'" in unknown.stderr
    missing = cli.main("send", run1.name, cwd=repo, env=env)
    assert missing.returncode == 2
    blank = cli.main("send", run1.name, " \n\t ", cwd=repo, env=env)  # a running run's too
    assert blank.returncode == 2 and "the MESSAGE is blank" in blank.stderr
    # once it has ended, the queued message goes first in the next turn, then leaves the queue
    for name, text in ended.items():
        (run1 / name).write_text(text)
    assert cli.main("send", run1.name, "Now.", cwd=repo, env=env).returncode == 0
    task = json.loads(log.read_text().splitlines()[-1])
    assert task[task.index("-p") + 1].startswith("More.\n\nNow.\n")
    assert not list((run1 / "inbox").iterdir())


def test_abort_is_cancel(repo: Path, tmp_path: Path, cli: Cli) -> None:
    env, _log = setup(repo, tmp_path)
    assert spawn(cli, repo, env, "Paint.").returncode == 0
    [run1] = runs(repo)
    done = cli.main("abort", run1.name, cwd=repo, env=env)
    assert done.returncode == 0 and "already ended: succeeded" in done.stdout
    unknown = cli.main("abort", "0000000000", cwd=repo, env=env)
    assert unknown.returncode == 2 and "cancel: no run" in unknown.stderr


def test_cancel_of_a_step_run_still_running_names_what_to_cancel(repo: Path, cli: Cli) -> None:
    """A run folder without an agent's status.json and without a result yet is a step run
    still running: cancel says to cancel one of its agents (it waited, then said canceled)."""
    folder = repo / "flows" / "f" / "runs" / "01a21e11-0000-7000-8000-000000000000"
    folder.mkdir(parents=True)
    out = cli.main("cancel", folder.name, cwd=repo)
    assert out.returncode == 2 and "not an agent's run" in out.stderr
    assert list(folder.iterdir()) == []


def test_unstructured_reply_is_counted_and_guessed(repo: Path, tmp_path: Path, cli: Cli) -> None:
    env, _log = setup(repo, tmp_path)
    script = tmp_path / "prose-agent"
    script.write_text(
        "#!/usr/bin/env python3\nimport os, pathlib\n"
        "d = pathlib.Path(os.environ['GITFLOW_AGENTS_AGENT_DIR'])\n"
        "(d / 'report.md').write_text('done\\n')\n"
        "os.rename(d / 'report.md', d / 'report.complete.md')\n"
        "print('I created greet.py for you.\\n\\nShould I add tests?')\n"
    )
    script.chmod(0o755)
    config = repo / ".flow" / "base.yaml"
    config.write_text(
        config.read_text() + f"  prose:\n    adapter: command\n    command: [{str(script)!r}]\n"
    )
    done = cli.main("spawn", "prose", "--flow", "f", "--task", "t", "--quiet", cwd=repo, env=env)
    assert done.returncode == 0, done.stderr
    assert "(unstructured reply: fields guessed from the text)" in done.stdout
    record = result(runs(repo)[0])["run"]
    assert record["replies"] == {"structured": 0, "unstructured": 1}
    assert record["reply"]["structured"] is False
    assert record["reply"]["filesCreated"] == ["greet.py"]
    assert record["reply"]["questions"] == ["Should I add tests?"]
    table = cli.main("status", cwd=repo, env=env)
    assert "replies: 0 structured, 1 unstructured (0% structured)" in table.stdout


def test_preparing_a_turn_builds_no_launch(
    repo: Path, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prepare_turn only checks: the turn's launch is built once, by execute (issue 21)."""
    env, _log = setup(repo, tmp_path)
    assert spawn(cli, repo, env, "Paint the fence.").returncode == 0
    [run1] = runs(repo)
    config = load_flow_config(repo, None, None)
    prior = sessions.finished_run(repo, config.flow_dir, run1.name)

    def no_launch(self: object, invocation: Invocation) -> LaunchSpec:
        raise AssertionError("prepare_turn built a launch")

    monkeypatch.setattr(ClaudeAdapter, "launch", no_launch)
    monkeypatch.setenv("PATH", env["PATH"])  # the fake claude is "installed"
    turn = sessions.prepare_turn(repo, config, prior, "More.")
    assert turn.agent == "painter" and "More." in turn.task


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_an_adapter_says_whether_it_resumes_as_its_launch_does(name: str, tmp_path: Path) -> None:
    """``Cli.resumes`` (what send asks) agrees with the adapter's launch refusing a resume."""
    adapter = ADAPTERS[name]
    invocation = Invocation(
        agent_id="a",
        agent_dir=tmp_path,
        workdir=tmp_path,
        system_prompt_path=tmp_path / "system_prompt.md",
        system_prompt="p",
        task="t",
        model=None,
        options={},
        config_dir=tmp_path / "config",
        env={},
        command=("prog", "{task}"),
        resume_session_id="sess-1",
    )
    if adapter.cli.resumes:
        adapter.launch(invocation)
    else:
        with pytest.raises(UsageError):
            adapter.launch(invocation)
