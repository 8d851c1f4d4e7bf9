"""Incremental review with ``git agent-review`` (issue 25, item 1): after an agent reviewed an
earlier commit of the range (its approval note), the agent reads only the commits since, with
the range's files and the findings still open; open findings carry over, the verdict stays the
whole range's and exactly the head's. Force-push, ``--full`` and ``review.incremental: false``
give a full review, and the JSON says which kind ran and why."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.findings import Finding, Severity
from gitflow_agents.reviewer import read_review_note
from gitflow_agents.reviewer.incremental import follow
from tests.conftest import Cli, git
from tests.helpers.incremental import AGENT, Scenario, finding, line_of, reviewer_config


@pytest.fixture
def scene(repo: Path, tmp_path: Path) -> Scenario:
    return Scenario(repo, tmp_path)


def review(cli: Cli, scene: Scenario, *args: str) -> dict[str, Any]:
    result = cli.review(
        f"{scene.base}..HEAD", "--agent", AGENT, "--format", "json", *args, cwd=scene.repo
    )
    assert result.returncode in (0, 1), result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def three_pushes(cli: Cli, scene: Scenario) -> list[dict[str, Any]]:
    """Push 1 adds calc.py (two findings), push 2 fixes scale_0, push 3 fixes scale_1."""
    scene.push(0, "push 1: the calculator")
    scene.say([finding(0), finding(599, "warn", "scale_599 is large")])
    first = review(cli, scene)
    scene.push(1, "push 2: fix scale_0")
    scene.say([])
    second = review(cli, scene)
    scene.push(2, "push 3: fix scale_1")
    third = review(cli, scene)
    return [first, second, third]


def test_pushes_2_and_3_read_under_30_percent_of_a_full_review(cli: Cli, scene: Scenario) -> None:
    outputs = three_pushes(cli, scene)
    assert [o["kind"] for o in outputs] == ["full", "incremental", "incremental"]
    full, *incremental = scene.reads()
    for read in incremental:
        assert read["input"] <= 0.3 * full["input"], (read["input"], full["input"])
        assert read["diff"] < 500  # one changed line and its context
        assert "calc.py" in read["text"]  # the change's files, as context
    assert "since the last reviewed head" in outputs[1]["kindReason"]


def test_open_findings_carry_over_and_a_touched_one_is_fixed(cli: Cli, scene: Scenario) -> None:
    first, second, third = three_pushes(cli, scene)
    assert [f["line"] for f in first["findings"]] == [line_of(0), line_of(599)]
    # push 2 changed scale_0's line and the reviewer no longer reports it: fixed; the warning
    # on a line it did not touch carries over, where that line is now
    for later in (second, third):
        assert [(f["rule"], f["line"]) for f in later["findings"]] == [("scale-599", line_of(599))]
        assert later["findings"][0]["fingerprint"] == first["findings"][1]["fingerprint"]
    assert "1 open finding(s) carried over, 1 fixed" in second["kindReason"]
    # the prompt listed the open findings it builds on
    reads = scene.reads()
    assert f"calc.py:{line_of(599)}" in reads[1]["text"] and "scale-0" in reads[1]["text"]
    # a warning does not block: the whole range approved, exactly for the head
    head = git(scene.repo, "rev-parse", "HEAD").strip()
    assert third["gate"]["approved"] and third["reviewedSha"] == head
    note = read_review_note(scene.repo, head)
    assert note is not None and note.verdict == "approved" and note.base_sha == scene.base


def test_a_carried_error_keeps_the_range_from_approval(cli: Cli, scene: Scenario) -> None:
    scene.push(0, "push 1")
    scene.say([finding(300)])
    assert review(cli, scene)["gate"]["approved"] is False
    scene.push(1, "push 2: fixes scale_0, not scale_300")
    scene.say([])  # the agent sees nothing wrong in the new commit
    second = review(cli, scene)
    assert second["kind"] == "incremental"
    assert [f["rule"] for f in second["findings"]] == ["scale-300"]
    assert second["gate"]["approved"] is False


def test_a_force_push_gets_a_full_review(cli: Cli, scene: Scenario) -> None:
    scene.push(0, "push 1")
    review(cli, scene)
    git(scene.repo, "reset", "-q", "--hard", scene.base)
    scene.push(1, "push 1, rewritten")
    again = review(cli, scene)
    assert again["kind"] == "full"  # the reviewed commit is no longer in the range
    assert "no commit of the range before its head has a review note" in again["kindReason"]
    assert scene.reads()[-1]["diff"] > 10_000


def test_a_changed_base_gets_a_full_review(cli: Cli, scene: Scenario) -> None:
    scene.push(0, "push 1")
    review(cli, scene)
    git(scene.repo, "checkout", "-q", "main")
    git(scene.repo, "commit", "-q", "--allow-empty", "-m", "main moves on")
    git(scene.repo, "checkout", "-q", "feature")
    git(scene.repo, "merge", "-q", "--no-edit", "main")
    scene.push(1, "push 2")
    result = cli.review("main...HEAD", "--agent", AGENT, "--format", "json", cwd=scene.repo)
    again = json.loads(result.stdout)
    assert again["kind"] == "full" and "the base changed" in again["kindReason"]


def test_full_option_and_the_setting_turn_it_off(cli: Cli, scene: Scenario) -> None:
    scene.push(0, "push 1")
    review(cli, scene)
    scene.push(1, "push 2")
    forced = review(cli, scene, "--full")
    assert (forced["kind"], forced["kindReason"]) == ("full", "full: --full was given")
    config = scene.repo / ".flow" / "base.yaml"
    config.write_text(config.read_text() + "review:\n  incremental: false\n")
    scene.push(2, "push 3")
    off = review(cli, scene)
    assert (off["kind"], off["kindReason"]) == ("full", "full: review.incremental is false")
    assert all(read["diff"] > 10_000 for read in scene.reads())


def test_a_re_run_on_the_same_head_is_the_same_review(cli: Cli, scene: Scenario) -> None:
    scene.push(0, "push 1")
    scene.say([finding(5, "warn")])
    review(cli, scene)
    scene.push(1, "push 2")
    scene.say([])
    once = review(cli, scene)
    twice = review(cli, scene)  # the head's own note is not a last reviewed head
    assert once == twice
    first_read, second_read = scene.reads()[-2:]
    assert first_read == second_read


def test_the_builtin_reviewer_reviews_the_whole_range(cli: Cli, scene: Scenario) -> None:
    scene.push(0, "push 1")
    result = cli.review(f"{scene.base}..HEAD", "--format", "json", cwd=scene.repo)
    data = json.loads(result.stdout)
    assert data["kind"] == "full" and "builtin" in data["kindReason"]


def test_follow_moves_untouched_findings_and_splits_off_touched_ones() -> None:
    def at(line: int, end: int | None = None) -> Finding:
        return Finding(Severity.WARN, "m", "a.py", line, end, fingerprint=f"f{line}")

    hunks = {"a.py": ((3, 0, 4, 2), (10, 2, 12, 1))}  # 2 lines in after 3; 10-11 became 1 line
    carried, touched = follow([at(2), at(5), at(10), at(3, 4), at(20)], hunks)
    assert [(f.line, f.end_line) for f in carried] == [(2, None), (7, None), (21, None)]
    assert [f.line for f in touched] == [10, 3]
    no_line = Finding(Severity.INFO, "m", "a.py")
    other = Finding(Severity.INFO, "m", "b.py")
    assert follow([no_line, other], hunks) == ((other,), (no_line,))


def test_a_finding_in_a_renamed_file_follows_the_file(cli: Cli, scene: Scenario) -> None:
    """Push 2 renames calc.py (and changes another line of it): the open finding on a line
    it did not touch carries over at its new path, not counted fixed."""
    scene.push(0, "push 1: the calculator")
    scene.say([finding(599, "warn", "scale_599 is large")])
    first = review(cli, scene)
    git(scene.repo, "mv", "calc.py", "calculator.py")
    text = (scene.repo / "calculator.py").read_text().replace("x * 0\n", "x * 0 + 0\n", 1)
    (scene.repo / "calculator.py").write_text(text)
    git(scene.repo, "commit", "-q", "-am", "push 2: rename the module")
    scene.say([])
    second = review(cli, scene)
    assert second["kind"] == "incremental"
    [carried] = second["findings"]
    assert (carried["file"], carried["line"]) == ("calculator.py", line_of(599))
    assert carried["fingerprint"] == first["findings"][0]["fingerprint"]
    assert "1 open finding(s) carried over, 0 fixed" in second["kindReason"]


def test_follow_takes_a_renamed_file_s_findings_to_its_new_path() -> None:
    moved = Finding(Severity.WARN, "m", "old.py", 9, fingerprint="f9")
    changed = Finding(Severity.WARN, "m", "old.py", 2, fingerprint="f2")
    carried, touched = follow([moved, changed], {"old.py": ((2, 1, 2, 1),)}, {"old.py": "new.py"})
    assert [(f.file, f.line) for f in carried] == [("new.py", 9)]
    assert [(f.file, f.line) for f in touched] == [("old.py", 2)]


def test_a_submodule_added_since_the_last_review_is_in_the_incremental_diff(
    repo: Path, tmp_path: Path
) -> None:
    """A fix that adds a submodule (``git submodule add``: ``.gitmodules`` and a gitlink) or
    moves one to another commit: the incremental review's files and its diff command name the
    gitlink too, so the reviewer sees its ``Subproject commit`` line, not ``.gitmodules`` alone
    (the file lists left gitlinks out)."""
    from gitflow_agents.reviewer.agent import incremental_intro
    from gitflow_agents.reviewer.incremental import Earlier, Prior, decide

    def commit(message: str) -> str:
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", message)
        return git(repo, "rev-parse", "HEAD").strip()

    source = tmp_path / "lib-source"
    git(tmp_path, "init", "-q", str(source))
    (source / "lib.py").write_text("one\n")
    git(source, "add", "lib.py")
    git(source, "commit", "-q", "-m", "one")
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "app.py").write_text("app = 1\n")
    reviewed = commit("the step")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "lib")
    head = commit("the fix adds a submodule")
    earlier = Earlier(Prior(reviewed, base, AGENT))
    scope = decide(repo, base, head, AGENT, earlier)
    assert scope.kind == "incremental"
    assert set(scope.new_files) == {".gitmodules", "lib"}
    assert set(scope.files) == {".gitmodules", "app.py", "lib"}
    intro = incremental_intro(scope, base, head)
    command = next(line for line in intro.splitlines() if f"git diff {reviewed}" in line)
    assert "':(literal)lib'" in command
    shown = git(repo, "diff", reviewed, head, "--", ":(literal).gitmodules", ":(literal)lib")
    assert "+Subproject commit " in shown
    (repo / "lib" / "lib.py").write_text("two\n")
    git(repo / "lib", "commit", "-q", "-am", "two")
    moved = commit("the next fix moves it")
    scope = decide(repo, base, moved, AGENT, Earlier(Prior(head, base, AGENT)))
    assert scope.new_files == ("lib",)


def exclude(scene: Scenario, globs: str) -> None:
    """``review.exclude: GLOBS`` in the work tree's ``.flow/base.yaml`` (what the review reads)."""
    config = scene.repo / ".flow" / "base.yaml"
    config.write_text(reviewer_config(scene.findings, scene.log) + f"review:\n  exclude: {globs}\n")


GENERATED = {"severity": "error", "file": "gen/out.txt", "line": 3, "message": "generated"}


@pytest.mark.parametrize("since", [True, False], ids=["excluded-since", "excluded-throughout"])
def test_an_open_finding_in_an_excluded_file_does_not_carry_over(
    cli: Cli, scene: Scenario, since: bool
) -> None:
    """``review.exclude`` means never reviewed: a finding the last review left open in a file
    the settings now exclude (excluded since, or a reviewer that reported on one all the same)
    is not carried over, so the incremental review agrees with a full one (the tester's
    repro-2: the finding kept the range from approval)."""
    if not since:
        exclude(scene, "[gen/]")
    (scene.repo / "gen").mkdir()
    (scene.repo / "gen" / "out.txt").write_text("".join(f"{i}\n" for i in range(10)))
    git(scene.repo, "add", "gen")
    scene.push(0, "push 1: the calculator and a generated file")
    scene.say([{**GENERATED, "rule": "g1"}])
    assert review(cli, scene)["gate"]["approved"] is False
    if since:
        exclude(scene, "[gen/]")
    scene.push(1, "push 2")
    scene.say([])
    second = review(cli, scene)
    assert (second["findings"], second["gate"]["approved"]) == ([], True), second["kindReason"]
    assert "gen/out.txt" not in scene.reads()[-1]["text"]  # nor listed as open to the reviewer
    whole = review(cli, scene, "--full")
    assert (whole["findings"], whole["gate"]["approved"]) == ([], True)
    if not since:  # the same settings: still incremental
        assert second["kind"] == "incremental"


def test_a_file_review_exclude_no_longer_excludes_gets_a_full_review(
    cli: Cli, scene: Scenario
) -> None:
    """A file ``review.exclude`` left out of the last review, and no longer excludes, was never
    reviewed: the next review is a full one, its diff shows the file (the tester's repro-1: an
    incremental review of the new commit alone approved the range). A review with the same
    settings stays incremental."""
    exclude(scene, "[gen/]")
    (scene.repo / "gen").mkdir()
    (scene.repo / "gen" / "settings.py").write_text('PASSWORD = "hunter2"\n')
    git(scene.repo, "add", "gen")
    scene.push(0, "push 1: gen/ excluded")
    assert review(cli, scene)["kind"] == "full"
    assert "gen/settings.py" not in scene.reads()[-1]["diffText"]
    scene.push(1, "push 2: the same settings")
    assert review(cli, scene)["kind"] == "incremental"
    exclude(scene, "[]")
    scene.push(2, "push 3: gen/ reviewed now")
    third = review(cli, scene)
    assert third["kind"] == "full", third["kindReason"]
    assert "review.exclude changed since the last review" in third["kindReason"]
    assert "gen/settings.py" in scene.reads()[-1]["diffText"]


def test_a_note_without_the_scope_digest_gets_a_full_review(cli: Cli, scene: Scenario) -> None:
    """A note that does not record what chose its files (an older version's) may have left any
    file out: the next review is a full one (fail closed), and records the digest."""
    first = scene.push(0, "push 1")
    review(cli, scene)
    note = json.loads(git(scene.repo, "notes", "--ref=gitflow-agents", "show", first))
    assert note.pop("scopeDigest").startswith("sha256:")
    git(scene.repo, "notes", "--ref=gitflow-agents", "add", "-f", "-m", json.dumps(note), first)
    scene.push(1, "push 2")
    second = review(cli, scene)
    assert second["kind"] == "full" and "does not record its review.exclude" in second["kindReason"]
    scene.push(2, "push 3")
    assert review(cli, scene)["kind"] == "incremental"


def test_a_file_whose_name_is_not_utf8_is_in_the_incremental_diff(
    cli: Cli, scene: Scenario
) -> None:
    """A file the new commits change whose name is not UTF-8 (Latin-1 ``clé.py``) reads back
    from git with U+FFFD in it: no ``:(literal)`` pathspec names it, so the diff command leaves
    out the per-file pathspecs and shows every file the new commits changed (the tester's
    repro-3: it showed an empty diff, and the file was never reviewed)."""
    scene.push(0, "push 1")
    review(cli, scene)
    name = os.fsdecode(b"cl\xe9.py")
    (scene.repo / name).write_text('TOKEN = "not-utf8-name"\n')
    git(scene.repo, "add", "-A")
    scene.push(1, "push 2: clé.py in Latin-1")
    second = review(cli, scene)
    assert second["kind"] == "incremental", second["kindReason"]
    read = scene.reads()[-1]
    assert 'TOKEN = "not-utf8-name"' in read["diffText"], read["command"]
    assert "scale_0(x):\n-    return x * 0" in read["diffText"]  # the other file too
