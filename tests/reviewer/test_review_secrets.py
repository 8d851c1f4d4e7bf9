"""Secrets never leave in the open: an agent reviewer that quotes them gets them masked.

The reviewed change adds an AWS key, a GitHub token and a ``.env`` password. A configured agent
reviewer (a fake executable, ``command`` adapter) hands in a report that quotes all three in
every field a report has. None of the three values may appear in any ``--format`` output, in
any file written (``--output``, ``findings.json``, SARIF), in the job summary and outputs of the
action, or in any request body GitHub (the stand-in) receives.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gitflow_agents.base.redact import mask, redact_text
from gitflow_agents.findings import Finding, Review, Severity
from gitflow_agents.findings.redact import redact_review
from gitflow_agents.git import queries as g
from gitflow_agents.render import FORMATS, render
from gitflow_agents.reviewer import builtin
from tests.conftest import Cli, git
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.action_runner import Runner, add_pull, pr_event, runner
from tests.helpers.files import commit_files
from tests.helpers.review import run
from tests.helpers.secrets import (
    AWS_KEY,
    CHANGE,
    ENV_PASSWORD,
    GH_TOKEN,
    assert_no_secret,
    assert_no_secret_in_records,
    leaky_report,
    reviewer_config,
)

__all__ = ["gh", "run", "runner"]


# ---------------------------------------------------------------------------------------------
# The masking itself


def test_redact_text_masks_each_kind_and_is_idempotent() -> None:
    text = (
        f"key {AWS_KEY}, token {GH_TOKEN}, api_key = 'Zx9Qw8Er7Ty6Ui5Op4As' and "
        "AKIAIOSFODNN7EXAMPLE (the AWS docs' example) and token=get_token_from_env"
    )
    masked = redact_text(text)
    for secret in (AWS_KEY, GH_TOKEN, "Zx9Qw8Er7Ty6Ui5Op4As"):
        assert secret not in masked
        assert mask(secret) in masked
    assert "AKIAIOSFODNN7EXAMPLE" in masked and "token=get_token_from_env" in masked
    code = "password = vault.read_secret_value(name)"  # code in a suggestion stays as it is
    assert redact_text(code) == code
    assert redact_text(masked) == masked
    # An exact value from the diff is masked wherever it stands, even inside a word.
    bare = redact_text(f"see x{ENV_PASSWORD}y", [ENV_PASSWORD])
    assert ENV_PASSWORD not in bare and mask(ENV_PASSWORD) in bare
    assert redact_text("short value abc", ["abc"]) == "short value abc"  # too short to mask


def test_a_quoted_private_key_body_is_masked() -> None:
    body = "MIIEowIBAAKCAQEAx7Qm2ZkP9sLw3Rt" * 2
    text = f"found:\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\nok"
    masked = redact_text(text)
    assert body not in masked and "BEGIN RSA PRIVATE KEY" in masked and masked.endswith("ok")
    escaped = redact_text(json.dumps(text))  # quoted as a JSON string: "\n" escapes
    assert body[1:] not in escaped


def test_redact_handles_long_runs() -> None:
    # the time it takes is measured in benchmarks/hostile_sizes.py, not asserted here
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    masked = redact_text("a" * 500_000 + f" {token} " + "b" * 500_000)
    assert token not in masked and masked.startswith("a" * 500_000 + " ghp_")
    assert masked.endswith(" " + "b" * 500_000)
    assert redact_text("token" * 100_000) == "token" * 100_000


def test_redact_review_covers_every_field() -> None:
    review = Review(
        None,
        summary=AWS_KEY,
        findings=(Finding(Severity.ERROR, AWS_KEY, file="a.py", suggestion=AWS_KEY, rule=AWS_KEY),),
        reviewed_sha=AWS_KEY,
        base_sha=AWS_KEY,
        unreviewed_files=("b.bin",),
        run={AWS_KEY: [{"q": AWS_KEY}], "n": 1},
        reason=f"found `{AWS_KEY}`",
    )
    cleaned = redact_review(review)
    assert_no_secret(json.dumps(cleaned.to_dict()), "the review")
    assert cleaned.run[mask(AWS_KEY)] == [{"q": mask(AWS_KEY)}] and cleaned.run["n"] == 1


def test_diff_secrets_are_the_values_the_builtin_rules_find(repo: Path) -> None:
    base = g.head_sha(repo)
    commit_files(repo, CHANGE, "leak")
    commit_files(repo, {"old.py": 'secret_token = "Hq8Wm3Zt6Lp1Xv9Rk4Nc"\n'}, "another")
    git(repo, "rm", "-q", "old.py")
    git(repo, "commit", "-q", "-m", "gone again")  # still in the history of the range
    found = builtin.diff_secrets(repo, g.DiffSpec(base, g.head_sha(repo)))
    assert found == {AWS_KEY, GH_TOKEN, ENV_PASSWORD, "Hq8Wm3Zt6Lp1Xv9Rk4Nc"}


def test_diff_secrets_hold_a_rotated_key_body(repo: Path) -> None:
    """An agent reviewer that quotes the body lines of a rotated key (the BEGIN line unchanged,
    not in the diff) gets them masked: the values come from the key rule's file read."""
    line = "MIIEowIBAAKCAQEAx7Qm2ZkP9sLw3Rt" + "Hq8vN4cY1uJ6bW0eT5gK2dF9sA7lZ3x"
    begin, end = "-----BEGIN " + "RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"
    commit_files(repo, {"key.pem": f"{begin}\n{line}\n{end}\n"}, "key")
    base = g.head_sha(repo)
    commit_files(repo, {"key.pem": f"{begin}\n{line[::-1]}\n{end}\n"}, "rotate")
    found = builtin.diff_secrets(repo, g.DiffSpec(base, g.head_sha(repo)))
    assert line[::-1] in found


def test_the_console_masks_what_an_agent_prints() -> None:
    """Progress and end lines quote the agent's output and reasons (a CI job's log is public)."""
    from gitflow_agents.runs.events import ConsoleChannel, EventHub

    out = io.StringIO()
    hub = EventHub([ConsoleChannel(out, is_tty=False, progress_every=0)], run_id="r")
    hub.emit("agent:start", {"agent": "reviewer", "pid": 42})
    hub.emit("agent:output", {"agent": "reviewer", "tail": f"found {AWS_KEY} in config.py"})
    hub.emit("agent:output", {"agent": "reviewer", "tail": "x" * 120 + f" and {GH_TOKEN}"})
    hub.emit("agent:failed", {"agent": "reviewer", "status": "failed", "reason": GH_TOKEN})
    hub.close()
    text = out.getvalue()
    assert_no_secret(text, "the console")
    assert mask(AWS_KEY) in text and mask(GH_TOKEN) in text


# ---------------------------------------------------------------------------------------------
# git agent-review: every format, every file


@pytest.fixture
def leaky_repo(repo: Path, tmp_path: Path) -> Path:
    report = tmp_path / "leaky-report.md"
    report.write_text(leaky_report())
    commit_files(repo, {".flow/base.yaml": reviewer_config(report)}, "reviewer")
    commit_files(repo, CHANGE, "leak")
    return repo


def test_no_output_format_and_no_file_shows_a_quoted_secret(leaky_repo: Path, run: Cli) -> None:
    for fmt in FORMATS:
        out = leaky_repo.parent / f"out.{fmt}"
        result = run.review(
            "HEAD",
            "--agent",
            "leaky",
            "--format",
            fmt,
            "--output",
            str(out),
            "--output-format",
            "sarif" if fmt == "json" else "json",
            cwd=leaky_repo,
        )
        assert result.returncode == 1, result.stdout + result.stderr
        assert_no_secret(result.stdout + result.stderr, f"--format {fmt}")
        assert_no_secret(out.read_text(), f"--output with --format {fmt}")
        assert mask(AWS_KEY) in result.stdout, fmt  # masked, still recognisable
    assert_no_secret_in_records(leaky_repo)
    data = json.loads(
        run.review("HEAD", "--agent", "leaky", "--format", "json", cwd=leaky_repo).stdout
    )
    assert data["findings"][0]["message"].startswith("hard-coded credentials: AKIA")
    assert data["findings"][0]["fingerprint"]


# ---------------------------------------------------------------------------------------------
# The GitHub action: job summary, outputs, files, and every request body


def test_the_action_publishes_no_quoted_secret(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    report = tmp_path / "leaky-report.md"
    report.write_text(leaky_report())
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(reviewer_config(report))
    git(repo, "add", ".flow")
    git(repo, "commit", "-q", "-m", "configure the reviewer")
    pull = add_pull(gh, repo, CHANGE)

    result = runner.run(
        "pull_request", pr_event(gh, pull), "tok-actions", "--agent", "leaky", "--check-run"
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert_no_secret(result.stdout + result.stderr, "the action's stdout and stderr")
    assert_no_secret(runner.summary.read_text(), "the job summary")
    assert_no_secret(runner.output.read_text(), "the step outputs")
    outputs = runner.outputs()
    for name in ("findings-file", "sarif-file"):
        assert_no_secret(Path(outputs[name]).read_text(), name)
    bodies = [(f"{r.method} {r.path}", json.dumps(r.body)) for r in gh.requests() if r.body]
    assert any(mask(AWS_KEY) in body for _, body in bodies)  # posted, masked
    for request, body in bodies:
        assert_no_secret(body, request)
    assert len(gh.state.reviews) == 1 and gh.comments_on(7)
    assert_no_secret_in_records(repo)


def test_masking_masks_values_never_file_locations() -> None:
    """A location is kept exactly, in the fields and where a text names it, even when a flagged
    value is the path, a directory of it, or a token inside a file name; the values in the
    texts are masked (issue 20, What 4)."""
    path = "conf/app/settings-production.yaml"
    leaky = f"notes/{GH_TOKEN}-{ENV_PASSWORD}.txt"
    review = Review(
        None,
        summary=f"see {leaky}; the password {ENV_PASSWORD}",
        findings=(
            Finding(Severity.WARN, "m", file=path, line=3, rule="todo"),
            Finding(Severity.WARN, "m", file="conf/app/other.yaml", line=1, rule="todo"),
            Finding(Severity.WARN, f"{leaky} quotes {AWS_KEY}", file=leaky, line=1, rule="todo"),
        ),
        unreviewed_files=(path, leaky),
        run={"log": f"{leaky}:1: {GH_TOKEN}"},
    )
    cleaned = redact_review(review, [path, "conf/app", ENV_PASSWORD])
    assert [f.file for f in cleaned.findings] == [path, "conf/app/other.yaml", leaky]
    assert cleaned.unreviewed_files == (path, leaky)
    assert cleaned.findings[2].message == f"{leaky} quotes {mask(AWS_KEY)}"
    assert cleaned.summary == f"see {leaky}; the password {mask(ENV_PASSWORD)}"
    assert cleaned.run == {"log": f"{leaky}:1: {mask(GH_TOKEN)}"}
    sarif = json.loads(render(cleaned, None, "sarif"))
    uris = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in sarif["runs"][0]["results"]
    ]
    assert uris == [path, "conf/app/other.yaml", leaky]


def test_a_token_in_a_path_is_shown_in_every_format_and_the_secret_in_it_is_not(
    repo: Path, run: Cli
) -> None:
    """The builtin reviewer on a file whose path holds a token-shaped component: each output
    names the file exactly, and none shows the secret the file adds."""
    path = f"fixtures/{GH_TOKEN}/config.py"
    commit_files(repo, {path: f'AWS_ACCESS_KEY_ID = "{AWS_KEY}"\n'}, "leak")
    for fmt in FORMATS:
        result = run.review("HEAD", "--no-note", "--format", fmt, cwd=repo)
        assert result.returncode == 1, result.stdout + result.stderr
        assert path in result.stdout, fmt
        assert AWS_KEY not in result.stdout + result.stderr, fmt
        assert mask(AWS_KEY) in result.stdout, fmt
    for line in run.review(
        "HEAD", "--no-note", "--format", "rdjsonl", cwd=repo
    ).stdout.splitlines():
        if line.startswith("{"):
            assert json.loads(line)["location"]["path"] == path


def test_a_location_an_agent_prints_is_kept_in_its_log() -> None:
    """worker.log and the output events: ``path:line`` stays as printed, the values are masked."""
    from gitflow_agents.base.redact_stream import LineMasker

    path = f"fixtures/{GH_TOKEN}/config.py"
    masker = LineMasker([ENV_PASSWORD])
    out = masker.feed(f"{path}:1: found {AWS_KEY} and {ENV_PASSWORD}\n".encode())
    assert out.decode() == f"{path}:1: found {mask(AWS_KEY)} and {mask(ENV_PASSWORD)}\n"
    assert redact_text(f"x={path}:1") == f"x=fixtures/{mask(GH_TOKEN)}/config.py:1"
