"""Hostile files: FIFOs where a file is expected, symlinks leading out of the repository, cards
with CRLF / lone-CR line endings or bytes that are not UTF-8 (docs/security.md, "Writes" and
"Bounds"). Each is one clear line and exit 2, and no file outside the repository changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitflow_agents.base.errors import ExitCode, InputError, UnsafeWriteError
from gitflow_agents.base.fsutil import (
    ReadRefused,
    read_agent_text,
    read_limited,
    safe_target,
    write_text_atomic,
)
from gitflow_agents.plan import set_step_status
from gitflow_agents.runs import cards, create_run
from gitflow_agents.runs.lock import hold
from tests.conftest import FAKES, Cli, git, init_repo
from tests.helpers.spawn import setup_project

PLAN = "# P\n\n## Implementation Steps\n\n### Status:  | Step 1: A\n\nx\n"
CARD = "---\ntitle: T\n---\n# T\n\n## Acceptance Criteria\n\n- [ ] one\n- [ ] two\n"


PRECIOUS = b'{"kept": true}\r\n\x00 byte for byte'


def assert_only_precious(folder: Path) -> None:
    """Nothing was written into ``folder`` (outside the repository) and its file is unchanged."""
    assert [p.name for p in folder.rglob("*")] == ["precious.json"]
    assert (folder / "precious.json").read_bytes() == PRECIOUS


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside every repository, with content that must never change."""
    target = tmp_path / "outside" / "precious.md"
    target.parent.mkdir()
    target.write_text(CARD)
    return target


# --- FIFOs and other non-regular files ---------------------------------------------------


def test_read_limited_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ReadRefused, match=r"is a FIFO \(named pipe\), not a regular file"):
        read_limited(fifo, 100)  # returns at once: a blocking open would hang the test
    with pytest.raises(ReadRefused, match="is a directory, not a file"):
        read_limited(tmp_path, 100)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(ReadRefused, match="is 101 bytes, over the 100 bytes limit"):
        read_limited(big, 100)
    big.write_bytes(b"x" * (1024 * 1024 + 10))  # both round to 1.0 MiB: the message says bytes
    with pytest.raises(
        ReadRefused, match=r"is 1,048,586 bytes, over the 1,048,576 bytes \(1.0 MiB\)"
    ):
        read_limited(big, 1024 * 1024)
    big.write_bytes(b"x" * (3 * 1024 * 1024))
    with pytest.raises(ReadRefused, match=r"is 3.0 MiB, over the 1.0 MiB limit"):
        read_limited(big, 1024 * 1024)
    assert read_agent_text(fifo, 10) == ""


def test_fifo_plan_exits_2_through_the_cli(repo: Path, cli: Cli) -> None:
    os.mkfifo(repo / "plan.md")
    for args in (("plan", "show", "plan.md"), ("plan", "lint", "plan.md")):
        result = cli.main(*args, cwd=repo)
        assert result.returncode == ExitCode.USAGE
        assert (
            "plan.md: is a FIFO (named pipe), not a regular file" in result.stdout + result.stderr
        )


def test_fifo_config_layer_card_and_agent_file_are_refused(repo: Path, cli: Cli) -> None:
    (repo / ".flow").mkdir()
    os.mkfifo(repo / ".flow" / "base.yaml")
    result = cli.main("status", cwd=repo)
    assert result.returncode == ExitCode.USAGE
    assert result.stderr.strip().endswith(
        ".flow/base.yaml: is a FIFO (named pipe), not a regular file"
    )
    os.mkfifo(repo / "card.md")
    with pytest.raises(InputError, match="is a FIFO"):
        cards.read_card(repo / "card.md")
    from gitflow_agents.assets import load_manifest

    (repo / ".agents-flow" / "agents").mkdir(parents=True)
    os.mkfifo(repo / ".agents-flow" / "agents" / "x.agent.md")
    manifest = load_manifest(repo)
    assert [e.code for e in manifest.errors] == ["file_read_error"]
    assert "is a FIFO" in manifest.errors[0].message


def test_a_fifo_planted_as_a_lock_is_taken_over(tmp_path: Path) -> None:
    lock = tmp_path / ".card.md.lock"
    os.mkfifo(lock)
    with hold(lock, "run-1") as info:
        assert info.run_id == "run-1"
        assert lock.is_file()
    assert not lock.exists()


# --- cards keep their bytes ----------------------------------------------------------------


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_card_edits_keep_line_endings_byte_for_byte(tmp_path: Path, newline: str) -> None:
    card = tmp_path / "card.md"
    card.write_bytes(CARD.replace("\n", newline).encode())
    cards.set_card_status(card, "implement", "running")
    cards.append_history(card, "2026-01-02: Run x started (implement).")
    assert cards.apply_checked_criteria(card, [1]) == [1]
    text = card.read_bytes().decode()
    assert text == (
        "---\ntitle: T\nagent_flow: implement\nagent_status: running\n---\n# T\n\n"
        "## Acceptance Criteria\n\n- [ ] one\n- [x] two\n\n## History\n\n"
        "- 2026-01-02: Run x started (implement).\n"
    ).replace("\n", newline)
    assert cards.card_status(card) == ("implement", "running")


def test_card_not_utf8_is_one_line_with_its_line(tmp_path: Path) -> None:
    card = tmp_path / "card.md"
    card.write_bytes(b"---\r\ntitle: caf\xe9\r\n---\r\n")
    with pytest.raises(InputError) as info:
        cards.set_card_status(card, "implement", "running")
    assert str(info.value) == (
        f"{card}:2: not valid UTF-8 (byte 0xe9 at offset 15); cards must be UTF-8"
    )


# --- writes stay inside the repository -----------------------------------------------------


def test_card_symlinked_outside_the_repository_is_refused(
    repo: Path, outside: Path, cli: Cli
) -> None:
    (repo / "card.md").symlink_to(outside)
    with pytest.raises(UnsafeWriteError, match="refusing to write: a symlink leads it out"):
        cards.set_card_status(repo / "card.md", "implement", "running")
    with pytest.raises(UnsafeWriteError):
        cards.append_history(repo / "card.md", "line")
    setup_project(repo, {"builder": [str(FAKES / "fake_agent"), "succeed"]})
    result = cli.main("spawn", "builder", "--task", "t", "--card", "card.md", "--quiet", cwd=repo)
    assert result.returncode == ExitCode.USAGE
    assert "card.md: refusing to write" in result.stderr
    assert outside.read_bytes() == CARD.encode()


def test_plan_symlinked_outside_the_repository_keeps_its_target(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "outside-plan.md"
    target.write_text(PLAN)
    (repo / "plan.md").symlink_to(target)
    with pytest.raises(UnsafeWriteError, match=r"plan\.md: refusing to write"):
        set_step_status(repo / "plan.md", 1, "✅")
    assert target.read_bytes() == PLAN.encode()


def test_symlinks_inside_the_repository_still_work(repo: Path) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "plan.md").write_text(PLAN)
    (repo / "plan.md").symlink_to(Path("docs") / "plan.md")
    set_step_status(repo / "plan.md", 1, "✅")
    assert (repo / "plan.md").is_symlink()
    assert "Status: ✅ | Step 1" in (repo / "docs" / "plan.md").read_text()


def test_committed_flows_symlink_puts_no_run_record_outside(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.json").write_bytes(PRECIOUS)
    (repo / "flows").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UnsafeWriteError, match="out of the repository"):
        create_run(repo, "flows", "f")
    setup_project(repo, {"builder": [str(FAKES / "fake_agent"), "succeed"]})
    result = cli.main("spawn", "builder", "--flow", "f", "--task", "t", "--quiet", cwd=repo)
    assert result.returncode == ExitCode.USAGE
    assert "refusing to write" in result.stderr
    assert_only_precious(elsewhere)


def test_committed_flows_symlink_stops_a_chain_run_before_it_writes(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.json").write_bytes(PRECIOUS)
    fake = str(FAKES / "fake_agent")
    setup_project(
        repo, {"builder": [fake, "succeed"], "reviewer": [fake, "succeed"], "fixer": [fake]}
    )
    (repo / "flows").symlink_to(elsewhere, target_is_directory=True)
    result = cli.main(
        "run", "specs/feature.md", "--step", "1", "--reviewers", "reviewer", "--quiet", cwd=repo
    )
    assert result.returncode == ExitCode.USAGE
    assert "refusing to write: a symlink leads it out of the repository" in result.stderr
    assert_only_precious(elsewhere)


def test_flows_symlink_into_another_repository_is_refused_too(repo: Path, tmp_path: Path) -> None:
    other = init_repo(tmp_path / "other")
    (other / "f").mkdir()
    git(other, "init", "-q", str(other / "f"))  # a repository where the run folder would be
    (repo / "flows").symlink_to(other, target_is_directory=True)
    with pytest.raises(UnsafeWriteError):
        create_run(repo, "flows", "f")


def test_preplaced_report_symlink_is_refused_and_its_target_unchanged(
    repo: Path, outside: Path, cli: Cli
) -> None:
    setup_project(repo, {"builder": [str(FAKES / "fake_agent"), "succeed"]})
    agent_dir = repo / "flows" / "f" / "agents" / "builder"
    agent_dir.mkdir(parents=True)
    (agent_dir / "report.md").symlink_to(outside)
    result = cli.main("spawn", "builder", "--flow", "f", "--task", "t", "--quiet", cwd=repo)
    assert result.returncode == ExitCode.USAGE
    assert "report.md: is a symlink" in result.stderr
    assert outside.read_bytes() == CARD.encode()


def test_agent_report_left_as_a_symlink_is_not_read_and_fails_the_run(
    repo: Path, outside: Path, cli: Cli
) -> None:
    script = repo.parent / "linker"
    script.write_text(
        "#!/usr/bin/env python3\nimport os, pathlib, sys\n"
        "d = pathlib.Path(os.environ['GITFLOW_AGENTS_AGENT_DIR'])\n"
        f"(d / 'report.complete.md').symlink_to({str(outside)!r})\n"
    )
    script.chmod(0o755)
    setup_project(repo, {"builder": [str(script)]})
    result = cli.main("spawn", "builder", "--flow", "f", "--task", "t", "--quiet", cwd=repo)
    assert result.returncode == ExitCode.AGENT_FAILED
    assert "report.complete.md is a symlink: the report is not read" in result.stdout
    assert outside.read_bytes() == CARD.encode()


def test_write_through_a_linked_work_tree_into_its_main_repository_is_allowed(
    repo: Path, tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    git(repo, "worktree", "add", "-q", "--detach", str(tree))
    (repo / "flows").mkdir()
    (tree / "flows").symlink_to(repo / "flows", target_is_directory=True)
    write_text_atomic(tree / "flows" / "x.txt", "ok")
    assert (repo / "flows" / "x.txt").read_text() == "ok"
    assert safe_target(tree / "flows" / "x.txt") == (repo / "flows" / "x.txt").resolve()


def test_outside_any_repository_writes_follow_links_as_before(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    (tmp_path / "link.txt").symlink_to(real)
    write_text_atomic(tmp_path / "link.txt", "x")
    assert real.read_text() == "x"


# --- worker.log keeps its head and tail ----------------------------------------------------


def test_worker_log_keeps_head_and_tail_and_says_what_it_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitflow_agents.supervisor import output

    monkeypatch.setattr(output, "LOG_HEAD", 10)
    monkeypatch.setattr(output, "LOG_TAIL", 8)
    log = output.Log(tmp_path / "worker.log")
    for chunk in (b"0123456", b"789abcdef", b"ghijklmnop", b"qrstuvwxyz"):
        log.write(chunk)
    assert (tmp_path / "worker.log").read_bytes().startswith(b"0123456789\n[gitflow-agents:")
    log.close()
    text = (tmp_path / "worker.log").read_bytes()
    head, marker, dropped, tail = text.split(b"\n", 3)
    assert head == b"0123456789"
    assert marker.startswith(b"[gitflow-agents: worker.log holds the first 10 bytes")
    assert dropped == b"[gitflow-agents: 18 bytes of output dropped here]"
    assert tail == b"stuvwxyz"


def test_worker_log_under_the_cap_is_the_output_as_it_came(tmp_path: Path) -> None:
    from gitflow_agents.supervisor import output

    log = output.Log(tmp_path / "worker.log")
    log.write(b"a" * 1000)
    log.write(b"\xff\x00 raw bytes")
    log.close()
    assert (tmp_path / "worker.log").read_bytes() == b"a" * 1000 + b"\xff\x00 raw bytes"


def test_tail_keeps_the_last_bytes_without_moving_them() -> None:
    from gitflow_agents.supervisor.output import Tail

    tail = Tail(5)
    for chunk in (b"abc", b"defg", b"h", b"ijklmnop"):
        tail.append(chunk)
    assert tail.value() == b"lmnop"
    assert tail.cut() == 11


def test_a_10_mb_agent_report_is_refused_quickly_and_fails_closed(repo: Path, cli: Cli) -> None:
    script = repo.parent / "verbose-reviewer"
    script.write_text(
        "#!/usr/bin/env python3\nimport os, pathlib\n"
        "d = pathlib.Path(os.environ['GITFLOW_AGENTS_AGENT_DIR'])\n"
        "(d / 'report.md').write_text('REVIEW_RESULT: APPROVED\\n' + 'para\\n\\n    code\\n\\n' * 700000)\n"
        "os.rename(d / 'report.md', d / 'report.complete.md')\n"
    )
    script.chmod(0o755)
    setup_project(repo, {"reviewer": [str(script)]})
    (repo / "x.py").write_text("x = 1\n")
    git(repo, "add", "x.py")
    git(repo, "commit", "-q", "-m", "x")
    result = cli.main("review", "HEAD", "--agent", "reviewer", "--format", "json", cwd=repo)
    assert result.returncode == ExitCode.REVISE
    assert "over the 1,048,576 limit: it is not read, so there is no verdict" in result.stdout


def test_a_10_mb_report_in_a_chain_step_fails_closed_with_one_line(repo: Path) -> None:
    """The chain reads its reviewers' and implementer's reports through the same bounded reader
    as ``git agent-review``: a 10 MB report is not read whole (the timing is measured in
    benchmarks/hostile_sizes.py), gives no verdict, and the step is not approved."""
    from tests.helpers.chain import configure, main_sha, results, run

    configure(repo, reviewer="huge")
    before = main_sha(repo)
    out = run(repo, "--step", "1", "--max-iterations", "1")
    assert out.returncode == ExitCode.REVISE, out.stderr + out.stdout
    assert main_sha(repo) == before
    [result] = results(repo)
    [reason] = result["chain"]["rounds"][0]["reasons"]
    assert reason == (
        "step-01-reviewer-1 is 4,194,308 characters or more, over the 1,048,576 "
        "limit: it is not read, so there is no verdict"
    )
    [line] = [line for line in out.stdout.splitlines() if reason in line]
    assert line.startswith("❌ step 1: rejected - not approved after 1 review(s): ")


def test_preplaced_report_symlink_in_a_chain_step_is_set_aside_unfollowed(
    repo: Path, outside: Path
) -> None:
    """A chain step treats whatever sits at its agent's report paths as an earlier attempt's
    files: moved to previous/ (renamed: a symlink stays a symlink, never followed), so the
    agent writes a fresh regular file and the link's target never changes."""
    from tests.helpers.chain import configure, main_sha, run

    configure(repo)
    before = main_sha(repo)
    agent_dir = repo / "flows" / "feature" / "agents" / "step-01-builder"
    agent_dir.mkdir(parents=True)
    (agent_dir / "report.md").symlink_to(outside)
    out = run(repo, "--step", "1")
    assert out.returncode == ExitCode.OK, out.stdout + out.stderr
    assert outside.read_bytes() == CARD.encode()
    [aside] = (agent_dir / "previous").iterdir()
    assert aside.name.endswith("-report.md") and aside.readlink() == outside
    report = agent_dir / "report.complete.md"
    assert report.is_file() and not report.is_symlink()
    assert main_sha(repo) != before


def test_preplaced_report_symlink_of_a_review_is_removed_unfollowed(
    repo: Path, outside: Path, cli: Cli
) -> None:
    """``git agent-review --agent NAME`` deletes its previous review's report files before the
    agent runs (docs/security.md, "Writes"): a symlink there is removed, never followed, and the
    agent's fresh report is read; on the re-run too."""
    from tests.helpers.chain import configure

    configure(repo)
    agent_dir = repo / "flows" / "review" / "agents" / "review-reviewer"
    agent_dir.mkdir(parents=True)
    for attempt in range(2):
        for name in ("report.md", "report.complete.md"):
            (agent_dir / name).unlink(missing_ok=True)
            (agent_dir / name).symlink_to(outside)
        result = cli.main("review", "HEAD", "--agent", "reviewer", "--no-note", cwd=repo)
        assert result.returncode == ExitCode.OK, (attempt, result.stdout + result.stderr)
        assert outside.read_bytes() == CARD.encode()
        report = agent_dir / "report.complete.md"
        assert report.is_file() and not report.is_symlink()


def test_dash_c_into_a_linked_folder_works_there_like_cd(
    repo: Path, tmp_path: Path, cli: Cli
) -> None:
    """``-C DIR`` is the user's choice of where to work (docs/security.md, "Writes"): a link
    leading out of the repository is followed like ``cd`` would, and the repository is then
    DIR's own or none (what the fuzz suite's argv surface leaves out)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / "out").symlink_to(elsewhere, target_is_directory=True)
    result = cli.main("-C", "out", "init", cwd=repo)
    assert result.returncode == ExitCode.OK, result.stderr
    assert (elsewhere / ".flow" / "base.yaml").is_file()
    assert not (repo / ".flow").exists()
