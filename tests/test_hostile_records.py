"""Run records, events, notes and webhook payloads written by someone else: bounded JSON
(gitflow_agents/base/jsondata.py) and fields of the wrong type read as absent (or, for a key
`history` and `status` show, the record left out with a line), never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitflow_agents.base.errors import ExitCode, InputError
from gitflow_agents.base.jsondata import MAX_DEPTH, JsonProblem, loads
from gitflow_agents.github.action.event import decide, load_event, pull_from_event
from gitflow_agents.github.action.runner import Options
from gitflow_agents.reviewer import parse_review_note
from tests.conftest import Cli
from tests.helpers.files import commit_files
from tests.helpers.spawn import setup_project

RUN_ID = "01900000-0000-7000-8000-000000000001"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000, f"nested more than {MAX_DEPTH} levels deep"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested more than"),
        ("NaN", "NaN is not a number JSON allows"),
        ('{"a": -Infinity}', "-Infinity is not a number JSON allows"),
        ('{"a": 1e999}', "number 1e999 is out of range"),
        ("9" * 5000, "is out of range"),
        (str(2**64), "is out of range"),
        ('{"a": 1', "not valid JSON"),
        (b'{"a": "caf\xe9"}', "not valid UTF-8"),
    ],
)
def test_hostile_json_is_one_problem(text: str | bytes, message: str) -> None:
    with pytest.raises(JsonProblem, match=message):
        loads(text)


def test_lone_surrogates_become_replacement_characters() -> None:
    data = loads('{"login": "x\\ud800y", "\\udfff": ["\\ud83d\\ude00"]}')
    assert data == {"login": "x\ufffdy", "\ufffd": ["😀"]}
    json.dumps(data, ensure_ascii=False).encode("utf-8")  # printable and writable


def test_a_note_nested_too_deeply_is_no_note() -> None:
    assert parse_review_note("[" * 100_000) is None


def write_records(repo: Path, status: object, result: object) -> Path:
    run_dir = repo / "flows" / "f" / "runs" / RUN_ID
    run_dir.mkdir(parents=True)
    for name, value in (("status.json", status), ("result.json", result)):
        text = value if isinstance(value, str) else json.dumps(value)
        (run_dir / name).write_text(text)
    return run_dir


@pytest.mark.parametrize(
    ("status", "result"),
    [
        ({"state": ["running"], "started": "yesterday", "flow": {"a": 1}}, {"run": [1, 2]}),
        ({"state": "running", "started": 1e300, "ended": -1e300}, {"run": {"reply": "x"}}),
        ({"pid": 2**62, "create_time": True, "tree_token": 5}, {"chain": {"iterations": "3"}}),
        ("[" * 10_000, '{"run": {"durationMs": 1e999, "finishedAt": 1e308}}'),
        ({"agent": "x\ud800"}, {"run": {"finishedAt": 1e18, "replies": {"structured": "9"}}}),
        ({"state": None}, {"gitStats": {"commits": "abc", "filesChanged": [1]}, "chain": {}}),
    ],
)
def test_status_history_send_cancel_read_hostile_records(
    repo: Path, cli: Cli, status: object, result: object
) -> None:
    setup_project(repo, {"builder": ["true"]})
    write_records(repo, status, result)
    for args in (
        ("status",),
        ("status", "--json"),
        ("history",),
        ("history", "--json", "--agents"),
        ("history", "--format", "mermaid", "--agents"),
        ("send", RUN_ID, "hi", "--quiet"),
        ("cancel", RUN_ID, "--wait", "0"),
        ("worktrees", "--json"),
        ("gc", "--dry-run"),
    ):
        outcome = cli.main(*args, cwd=repo)
        assert outcome.returncode in (ExitCode.OK, ExitCode.USAGE), (args, outcome.stderr)
        assert "Traceback" not in outcome.stderr
        assert outcome.stderr.count("\n") <= 1


def test_history_names_each_run_it_skips_and_lists_the_others(repo: Path, cli: Cli) -> None:
    import os

    setup_project(repo, {"builder": ["true"]})
    runs = repo / "flows" / "f" / "runs"
    good, huge, fifo, running = (f"0190000{n}-0000-7000-8000-000000000001" for n in range(1, 5))
    for run_id, text in (
        (good, '{"run": {"agent": "builder"}}'),
        (huge, '{"run": 1' + "0" * 30 + "}"),
    ):
        (runs / run_id).mkdir(parents=True)
        (runs / run_id / "result.json").write_text(text)
    (runs / fifo).mkdir()
    os.mkfifo(runs / fifo / "result.json")
    (runs / running).mkdir()  # no result.json yet: still running, not a problem
    for args in (("history",), ("history", "--json"), ("history", "--format", "mermaid")):
        for _ in range(2):  # a second run says the same
            outcome = cli.main(*args, cwd=repo)
            assert outcome.returncode == ExitCode.OK, outcome.stderr
            assert good[:13] in outcome.stdout and huge[:13] not in outcome.stdout
            lines = outcome.stderr.splitlines()
            assert [line.split(": ")[1] for line in lines] == [
                f"skipped run {huge}",
                f"skipped run {fifo}",
            ], lines
            assert f"flows/f/runs/{huge}/result.json: " in lines[0] and "out of range" in lines[0]
            assert f"flows/f/runs/{fifo}/result.json: " in lines[1] and "FIFO" in lines[1]
    assert json.loads(cli.main("history", "--json", cwd=repo).stdout)[0]["runId"] == good


@pytest.mark.parametrize(
    ("result", "why"),
    [
        (
            {"run": {"runID": 5, "durationMs": "long"}, "chain": {"outcome": 3, "agents": 4}},
            "run.runID: expected a string, got a number",
        ),
        ({"chain": {"step": 1, "agents": 4}}, "chain.agents: expected a list, got a number"),
        ({"run": {"costUsd": "0.25"}}, "run.costUsd: expected a number, got a string"),
        ({"gitStats": [1]}, "gitStats: expected an object, got a list"),
    ],
)
def test_history_and_status_leave_out_a_record_with_a_key_of_the_wrong_kind(
    repo: Path, cli: Cli, result: dict[str, object], why: str
) -> None:
    """Valid JSON of the wrong kinds was shown as `step None ? 0/0 $0.0000` by `history` and
    with 0/0 $0 by `status`, exit 0 and nothing said: figures no run stated, shown as known.
    Each leaves it out, with one line on stderr naming the file and the key."""
    setup_project(repo, {"builder": ["true"]})
    write_records(repo, {"state": "succeeded", "agent": "builder"}, result)
    good = repo / "flows" / "f" / "runs" / "01a00000-0000-7000-8000-000000000002"
    good.mkdir()
    (good / "result.json").write_text('{"run": {"agent": "builder", "kind": "implement"}}')
    where = f"flows/f/runs/{RUN_ID}/result.json"
    for command in ("history", "status"):
        for args in ((command,), (command, "--json")):
            outcome = cli.main(*args, cwd=repo)
            assert outcome.returncode == ExitCode.OK, outcome.stderr
            assert RUN_ID[:13] not in outcome.stdout and good.name[:13] in outcome.stdout
            line = f"gitflow-agents {command}: skipped run {RUN_ID}: {where}: {why}\n"
            assert outcome.stderr == line


def test_send_refuses_a_damaged_session_file_in_one_line(repo: Path, cli: Cli) -> None:
    setup_project(repo, {"builder": ["true"]})
    write_records(repo, {"state": "succeeded", "agent": "builder"}, {"run": {"sessionId": "s"}})
    session = repo / "flows" / "f" / "sessions" / f"{RUN_ID}.json"
    session.parent.mkdir(parents=True)
    session.write_text(json.dumps({"root": "../../../etc", "runs": "x"}))
    outcome = cli.main("send", RUN_ID, "hi", cwd=repo)
    assert outcome.returncode == ExitCode.USAGE
    assert outcome.stderr.startswith("gitflow-agents: error: send: ")
    assert outcome.stderr.endswith(
        f"{session.name}: damaged session record: 'root' must be a run id\n"
    )


def test_send_refuses_an_agent_id_that_is_a_path(repo: Path, cli: Cli) -> None:
    setup_project(repo, {"builder": ["true"]})
    write_records(repo, {"state": "succeeded"}, {"run": {"agent": "../../x", "sessionId": "s"}})
    outcome = cli.main("send", RUN_ID, "hi", cwd=repo)
    assert outcome.returncode == ExitCode.USAGE
    assert "invalid agent id in the run's record '../../x'" in outcome.stderr


def test_event_fields_of_the_wrong_type(tmp_path: Path) -> None:
    """A payload field of the wrong type is a malformed payload naming file and key (exit 2),
    never read as absent (which skipped the run: docs/github.md, "Exit codes"); ``null`` is
    absent."""
    path = tmp_path / "event.json"
    pr = {
        "number": 5,
        "title": {"x": 1},
        "user": "someone",
        "head": {"sha": "a" * 40, "ref": 7, "repo": "not an object"},
        "base": {"sha": "b" * 40, "ref": None, "repo": {"full_name": "o/r"}},
    }
    event = {"action": ["opened"], "pull_request": pr}
    with pytest.raises(InputError, match=r": action: expected str in the event payload, got list"):
        decide("pull_request", event, path, Options())
    wrong = {
        "title": "pull_request.title",
        "user": "pull_request.user",
        "head": "pull_request.head",
    }
    for field, key in wrong.items():
        fixed = {**pr, **{k: None for k in wrong if k != field}}
        with pytest.raises(InputError, match=rf": {key}(\.\w+)?: expected "):
            pull_from_event({"pull_request": fixed}, path)
    fine = {**pr, "title": None, "user": None, "head": {"sha": "a" * 40, "repo": None}}
    pull = pull_from_event({"pull_request": fine}, path)
    assert (pull.title, pull.author, pull.head_ref, pull.base_ref, pull.head_repo) == (
        "",
        "",
        "",
        "",
        None,
    )
    issue = {"number": 1, "pull_request": {"url": "https://api.github.example/pulls/1"}}
    comment = {"action": "created", "issue": issue, "comment": "x"}
    with pytest.raises(InputError, match=r": comment: expected object"):
        decide("issue_comment", comment, path, Options())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"[" * 100_000, "event payload: nested more than"),
        (b'{"action": "caf\xe9"}', "event payload is not valid UTF-8"),
        (b'"just a string"', "expected a JSON object, got str"),
    ],
)
def test_event_payload_problems_are_one_line(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "event.json"
    path.write_bytes(data)
    with pytest.raises(InputError, match=message):
        load_event(path)


def test_lone_surrogate_login_is_usable(tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    path.write_text(
        '{"action": "created", "issue": {"number": 3, "pull_request": {"url": "u"}}, '
        '"comment": {"body": "/agent review", "user": {"login": "ev\\ud800il"}}}'
    )
    trigger = decide("issue_comment", load_event(path), path, Options())
    assert trigger.commenter == "ev\ufffdil"


# --- a reviewer's findings block with lone surrogates (issue 19) ------------------------------

SURROGATE_REPORT = (
    "Summary.\n\n```json\n"
    '{"overall": "revise", "summary": "odd \\ud800 text", "findings": [{"severity": "error", '
    '"file": "app\\udfff.py", "line": 1, "message": "bad \\ud800\\udc00x \\udc00", '
    '"rule": "r\\ud800"}]}\n'
    "```\n\nREVIEW_RESULT: REVISE\n"
)


def test_a_lone_surrogate_in_a_findings_block_is_replaced_not_a_crash() -> None:
    from gitflow_agents.findings import Overall, parse_review

    review = parse_review(SURROGATE_REPORT)
    assert review.overall is Overall.REVISE
    [finding] = review.findings
    assert finding.message == "bad \U00010000x \ufffd"  # a pair is one character
    assert finding.file == "app\ufffd.py" and finding.rule == "r\ufffd"
    assert review.summary == "odd \ufffd text" and finding.fingerprint
    nan = parse_review(SURROGATE_REPORT.replace('"line": 1', '"line": NaN'))
    assert nan.overall is None and "report.md:3: findings block cannot be read" in nan.reason


@pytest.mark.parametrize("fmt", ["terminal", "json", "sarif", "rdjsonl", "annotations", "markdown"])
def test_git_agent_review_of_a_report_with_lone_surrogates_renders_every_format(
    repo: Path, tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from tests.helpers.secrets import reviewer_config

    report = tmp_path / "report.md"
    report.write_text(SURROGATE_REPORT)
    commit_files(repo, {".flow/base.yaml": reviewer_config(report)}, "reviewer")
    commit_files(repo, {"app.py": "x = 1\n"}, "change")
    out = tmp_path / "out.txt"
    result = Cli(monkeypatch, capsys).review(
        "HEAD", "--agent", "leaky", "--format", fmt, "--output", str(out), cwd=repo
    )
    assert result.returncode == 1, result.stdout + result.stderr  # REVISE, one error finding
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert "\ufffd" in result.stdout + out.read_text(encoding="utf-8")
