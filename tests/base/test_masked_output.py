"""What an agent prints is masked as it streams: ``worker.log``, the events, the terminal.

A fake agent prints the AWS key, the GitHub token and the ``.env`` password the reviewed change
adds (the password bare, which only its exact value can mask) to stdout and stderr, every
value split over writes. None of the three may reach ``worker.log``, ``events.jsonl``, the
console lines or any file the tool writes under the run folder: for ``git agent-review``, for
a supervised run with the values handed in, and for a chain step (its reviewers and fixer).
The masker itself (``redact_stream.LineMasker``) is tested byte by byte first.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gitflow_agents.agents.base import LaunchSpec
from gitflow_agents.base import secret_keywords, secret_rules
from gitflow_agents.base.redact import mask, redact_text
from gitflow_agents.base.redact_stream import LineMasker
from gitflow_agents.runs.events import ConsoleChannel, EventHub, JsonlChannel, MemoryChannel
from gitflow_agents.supervisor import Launch, Limits, ReportFiles, output, supervise
from tests.conftest import FAKES, Cli, git
from tests.helpers.chain import configure, results
from tests.helpers.chain import run as run_chain
from tests.helpers.files import commit_files
from tests.helpers.review import run
from tests.helpers.secrets import (
    AWS_KEY,
    CHANGE,
    ENV_PASSWORD,
    GH_TOKEN,
    SECRETS,
    assert_no_secret,
    assert_no_secret_in_records,
    leaky_report,
    reviewer_config,
)

__all__ = ["run"]

SAID = (
    f"checking config.py: AWS key {AWS_KEY}\n"
    f"deploy.sh exports {GH_TOKEN}\n"
    f"and the .env password is {ENV_PASSWORD}, in plain prose\n"
    f"last line without its newline: {ENV_PASSWORD}"
)


def feed_in_pieces(masker: LineMasker, data: bytes, size: int) -> bytes:
    out = b"".join(masker.feed(data[i : i + size]) for i in range(0, len(data), size))
    return out + masker.flush()


# ---------------------------------------------------------------------------------------------
# The masker


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 10_000])
def test_a_secret_split_over_writes_is_masked_as_one(size: int) -> None:
    data = SAID.encode()
    masked = feed_in_pieces(LineMasker(SECRETS), data, size)
    assert_no_secret(masked.decode(), f"pieces of {size}")
    assert masked.decode() == redact_text(SAID, SECRETS)  # as if masked whole
    assert masked.count(mask(ENV_PASSWORD).encode()) == 2


def test_without_the_exact_values_only_the_patterns_mask() -> None:
    masked = feed_in_pieces(LineMasker(), SAID.encode(), 3).decode()
    assert AWS_KEY not in masked and GH_TOKEN not in masked
    assert ENV_PASSWORD in masked  # prose: the exact value is what masks it


def test_a_long_line_is_cut_between_words_and_no_secret_is_split() -> None:
    line = " ".join(["word"] * 30 + [AWS_KEY, GH_TOKEN, ENV_PASSWORD] * 5 + ["end"] * 30)
    data = (line + "\n" + line).encode()
    for size in (1, 5, 50, len(data)):
        masker = LineMasker(SECRETS, max_line=64)
        out: list[bytes] = []
        for i in range(0, len(data), size):
            out.append(masker.feed(data[i : i + size]))
            assert len(masker._pending) <= 64  # bounded while the line goes on
        masked = (b"".join(out) + masker.flush()).decode()
        assert_no_secret(masked, f"a long line in pieces of {size}")
        assert masked == redact_text(line + "\n" + line, SECRETS)


def test_a_line_without_whitespace_is_cut_hard_and_passes_through() -> None:
    blob = bytes(range(48, 58)) * 100  # digits, no whitespace, no secret
    masker = LineMasker(max_line=64)
    assert feed_in_pieces(masker, blob, 33) == blob


def test_a_private_key_body_arriving_over_many_writes_is_masked() -> None:
    body = "MIIEowIBAAKCAQEAx7Qm2ZkP9sLw3Rt" * 2
    text = f"key:\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body}\n-----END RSA PRIVATE KEY-----\n"
    after = f"{body}\n"  # after the END line: not a key body any more
    for size in (1, 9, 40, 1000):
        masked = feed_in_pieces(LineMasker(), (text + after).encode(), size).decode()
        assert masked.count(body) == 1 and masked.endswith(after), size
        assert "-----END RSA PRIVATE KEY-----" in masked


def test_bytes_that_are_not_utf8_pass_through_and_masking_twice_changes_nothing() -> None:
    data = b"\xff\xfe raw \x00 bytes " + AWS_KEY.encode() + b" \xc3\n\xe2\x82"
    masked = feed_in_pieces(LineMasker(), data, 2)
    assert masked.startswith(b"\xff\xfe raw \x00 bytes AKIA") and masked.endswith(
        b" \xc3\n\xe2\x82"
    )
    assert AWS_KEY.encode() not in masked
    assert feed_in_pieces(LineMasker(SECRETS), masked, 3) == masked  # the second time


FRAGMENTS = [
    AWS_KEY, GH_TOKEN, ENV_PASSWORD, "AKIA", "ghp_", "xoxb-", "github_pat_", " ", "\n", "=",
    ": ", '"', "'", "PASSWORD", "Api_Key", "paſſword", "toKen", "secret", "Zx9Qw8Er7Ty6Ui5Op4As",
    "vault.get(x)", "é", "-----BEGIN RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEAx7Qm2ZkP9sLw3Rt",
    "AIza", "SG.", "https://", "u:", "@db", "db_pass", "apiKey", "AccountKey=", "sk-ant-", "eyJ",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30))
@example(["paſſword", "=", "Zx9Qw8Er7Ty6Ui5Op4As"])  # re.I folds ſ to s; lower() does not
def test_the_quick_checks_skip_only_texts_the_rules_cannot_match(parts: list[str]) -> None:
    """redact_text's cheap pre-checks (a token's literal start, a secret word in the name)
    give exactly what the full scans give."""
    text = "".join(parts)
    fast = redact_text(text, SECRETS[:1])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(secret_rules, "_holds_any", lambda text, literals: True)
        patch.setattr(secret_keywords, "_may_hold", lambda text, kind: True)
        assert fast == redact_text(text, SECRETS[:1])


# ---------------------------------------------------------------------------------------------
# worker.log: masked, with its head and tail cap


def test_worker_log_is_masked_and_keeps_head_and_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output, "LOG_HEAD", 300)
    monkeypatch.setattr(output, "LOG_TAIL", 200)
    events: list[dict[str, object]] = []
    out = output.Output(tmp_path / "worker.log", output.Activity(), events.append, SECRETS)
    read_end, write_end = os.pipe()
    out.start({"stdout": read_end})
    data = (SAID + "\n" + "filler line\n" * 100 + SAID).encode()
    for start in range(0, len(data), 7):
        os.write(write_end, data[start : start + 7])
    os.close(write_end)
    out.finish(10.0)
    os.close(read_end)
    log = (tmp_path / "worker.log").read_bytes().decode()
    assert_no_secret(log, "worker.log")
    assert log.startswith("checking config.py: AWS key AKIA")
    assert "worker.log holds the first 300 bytes" in log and "bytes of output dropped" in log
    assert log.endswith(f"last line without its newline: {mask(ENV_PASSWORD)}")
    assert_no_secret(json.dumps(events), "agent:output events")
    assert out.text("stdout") == data.decode()  # the adapter still reads the raw output


# ---------------------------------------------------------------------------------------------
# A supervised run: worker.log, events.jsonl, status.json, the console


def supervised(tmp_path: Path, secrets: tuple[str, ...]) -> tuple[Path, str, list[str]]:
    """A fake agent that prints SAID in pieces; (run folder, console text, event types)."""
    report, said = tmp_path / "report-in.md", tmp_path / "said.txt"
    report.write_text(leaky_report())
    said.write_text(SAID)
    agent_dir, run_dir = tmp_path / "agents" / "reviewer", tmp_path / "runs" / "r1"
    agent_dir.mkdir(parents=True)
    console, memory = io.StringIO(), MemoryChannel()
    channels = [
        memory,
        JsonlChannel(run_dir / "events.jsonl"),
        ConsoleChannel(console, is_tty=False, progress_every=0),
    ]
    hub = EventHub(channels, run_id="r1")
    argv = (sys.executable, str(FAKES / "fake_report_reviewer"), str(report), "--say", str(said))
    spec = LaunchSpec(argv=argv, env=dict(os.environ), cwd=tmp_path)
    outcome = supervise(
        Launch(spec),
        ReportFiles.named(agent_dir, "report.md", ".complete.md", ".failed.md"),
        Limits(stuck_timeout=20, timeout=60),
        hub=hub,
        run_dir=run_dir,
        cancel=threading.Event(),
        secrets=secrets,
    )
    hub.close()
    assert outcome.status == "succeeded", outcome.reason
    return run_dir, console.getvalue(), memory.types()


def test_a_supervised_run_masks_what_the_agent_prints_everywhere(tmp_path: Path) -> None:
    run_dir, console, types = supervised(tmp_path, SECRETS)
    assert "agent:output" in types
    for path in run_dir.iterdir():
        assert_no_secret(path.read_text(errors="replace"), str(path))
    assert_no_secret(console, "the console")
    log = (run_dir / "worker.log").read_text()
    assert log.count(mask(ENV_PASSWORD)) == 4 and log.count(mask(AWS_KEY)) == 2  # both streams
    assert mask(ENV_PASSWORD) in console  # the live lines quote the masked output


def test_an_agent_killed_mid_line_leaves_that_line_masked(tmp_path: Path) -> None:
    """Killed at the worst moment (a secret written, its line not ended): the held-back line is
    still written, masked, when the run ends."""
    agent_dir, run_dir = tmp_path / "agents" / "a", tmp_path / "runs" / "r2"
    agent_dir.mkdir(parents=True)
    script = f"import os, time; os.write(1, b'the password {ENV_PASSWORD}'); time.sleep(60)"
    spec = LaunchSpec(argv=(sys.executable, "-c", script), env=dict(os.environ), cwd=tmp_path)
    hub = EventHub([JsonlChannel(run_dir / "events.jsonl")], run_id="r2")
    cancel = threading.Event()
    hub.subscribe("agent:output", lambda event: cancel.set())  # killed once it has written
    outcome = supervise(
        Launch(spec),
        ReportFiles.named(agent_dir, "report.md", ".complete.md", ".failed.md"),
        Limits(stuck_timeout=60, timeout=120, kill_grace=0.2),
        hub=hub,
        run_dir=run_dir,
        cancel=cancel,
        secrets=SECRETS,
    )
    hub.close()
    assert outcome.status == "canceled"
    assert (run_dir / "worker.log").read_text() == f"the password {mask(ENV_PASSWORD)}"
    for path in run_dir.iterdir():
        assert_no_secret(path.read_text(errors="replace"), str(path))


# ---------------------------------------------------------------------------------------------
# git agent-review: the diff's values reach the masker


def test_git_agent_review_masks_the_agents_output_on_every_run(
    repo: Path, tmp_path: Path, run: Cli
) -> None:
    report, said = tmp_path / "leaky-report.md", tmp_path / "said.txt"
    report.write_text(leaky_report())
    said.write_text(SAID)
    config = reviewer_config(report).replace(
        json.dumps(str(report)) + "]", json.dumps(str(report)) + f', "--say", "{said}"]'
    )
    assert "--say" in config
    commit_files(repo, {".flow/base.yaml": config}, "reviewer")
    commit_files(repo, CHANGE, "leak")
    for attempt in (1, 2):  # the second review of the same change: the same masking
        result = run.review("HEAD", "--agent", "leaky", "--format", "json", cwd=repo)
        assert result.returncode == 1, result.stdout + result.stderr
        assert_no_secret(result.stdout + result.stderr, f"review {attempt}: terminal")
        assert_no_secret_in_records(repo)
    logs = sorted((repo / "flows").glob("*/runs/*/worker.log"))
    assert len(logs) == 2
    for log in logs:
        assert log.read_text().count(mask(ENV_PASSWORD)) == 4


# ---------------------------------------------------------------------------------------------
# A chain step: reviewers and the fixer print what the step's diff adds


def test_a_chain_step_masks_the_step_diffs_secrets_in_every_record(repo: Path) -> None:
    configure(repo, implementer="leak", reviewer="leak", fixer="leak")
    first = run_chain(repo, "--step", "1", "--max-iterations", "1")
    assert first.returncode == 1, first.stderr + first.stdout  # the reviewer asks for a fix
    assert_no_secret_in_flows(repo, first.stdout + first.stderr)
    # the second time: the implementer and the first review are reused, the fixer runs
    again = run_chain(repo, "--step", "1", "--max-iterations", "2")
    assert again.returncode == 0, again.stderr + again.stdout
    assert_no_secret_in_flows(repo, again.stdout + again.stderr)
    chain = results(repo)[-1]["chain"]
    assert [(a["kind"], a["reused"]) for a in chain["agents"]] == [
        ("implement", True),
        ("review", True),
        ("fix", False),
        ("review", False),
    ]
    shown = git(repo, "show", "main:.env") + git(repo, "show", "main:deploy.sh")
    assert ENV_PASSWORD in shown and GH_TOKEN in shown  # the values are the step's diff's
    logs = [p.read_text() for p in (repo / "flows").glob("feature/runs/*/worker.log")]
    assert sum(log.count(mask(ENV_PASSWORD)) for log in logs) >= 4  # reviewer and fixer
    first_review = results(repo)[0]["chain"]["rounds"][0]["reviewers"][0]
    assert mask(ENV_PASSWORD) in first_review["findings"][0]["message"]


def assert_no_secret_in_flows(repo: Path, terminal: str) -> None:
    """Every file the tool wrote under flows/ (run folders, history, prompts, meta files);
    only the agents' own report files are theirs (docs/security.md)."""
    assert_no_secret(terminal, "the terminal")
    checked = 0
    for path in (repo / "flows").rglob("*"):
        if not path.is_file() or path.name.startswith("report.") or "previous" in path.parts:
            continue
        assert_no_secret(path.read_bytes().decode("utf-8", "replace"), str(path))
        checked += 1
    assert checked > 5


# ---------------------------------------------------------------------------------------------
# status and history mask what they show from run records (an agent can write into them)


def test_status_and_history_mask_what_a_run_record_holds(repo: Path, run: Cli) -> None:
    config = 'flow_dir: flows\ncompletion_workflow:\n  template: "Rename {report_file}."\n'
    commit_files(repo, {".flow/base.yaml": config}, "config")
    run_dir = repo / "flows" / "f" / "runs" / "0190c1e2-0000-7000-8000-000000000001"
    run_dir.mkdir(parents=True)
    leak = f"{AWS_KEY} {GH_TOKEN}"
    (run_dir / "status.json").write_text(
        json.dumps({"state": "failed", "agent": "a", "reason": f"said {leak}", "flow": "f"})
    )
    record = {
        "status": "failed",
        "run": {"agentId": leak, "kind": "implement", "reply": {"questions": [leak]}},
    }
    (run_dir / "result.json").write_text(json.dumps(record))
    for args in (("status",), ("status", "--json"), ("history",), ("history", "--json")):
        shown = run.main(*args, cwd=repo)
        assert shown.returncode == 0, shown.stderr
        assert AWS_KEY not in shown.stdout and GH_TOKEN not in shown.stdout, args
        assert mask(AWS_KEY) in shown.stdout, args
