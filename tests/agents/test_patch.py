"""The patch agent (``adapter: patch``): applies the diffs fenced in the current step's text,
from the assembled system prompt, with git; fails clearly; a diff already applied is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gitflow_agents.agents import get_adapter
from gitflow_agents.agents.base import Invocation
from gitflow_agents.agents.patch import apply_step, step_diffs
from gitflow_agents.plan import parse_plan
from gitflow_agents.prompt.text import fence
from tests.conftest import git

ADD_HELLO = """diff --git a/hello.txt b/hello.txt
new file mode 100644
--- /dev/null
+++ b/hello.txt
@@ -0,0 +1 @@
+hello
"""
EDIT_README = """--- a/README.md
+++ b/README.md
@@ -1 +1,2 @@
 # demo
+More.
"""


def _plan(tmp_path: Path, step_two: str) -> Path:
    plan = tmp_path / "plan.md"
    plan.write_text(
        "# Plan\n\nAn overview with a diff that is NOT a step's:\n\n```diff\n-x\n+y\n```\n\n"
        "## Implementation Steps\n\n### Status: | Step 1: First\n\n```diff\n"
        + ADD_HELLO
        + "```\n\n### Status: | Step 2: Second\n\n"
        + step_two,
        encoding="utf-8",
    )
    return plan


def _prompt(plan: Path, step: int) -> str:
    """What the system prompt carries: the assignment, fenced (prompt/assemble.py)."""
    assignment = parse_plan(plan).assignment_context(step)
    return "# Multi-Agent Flow Protocol\n\n## Your Assignment\n\n" + fence(assignment, "md")


def test_only_the_current_steps_fences_count(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "Text.\n\n````diff\n" + EDIT_README + "````\n\n```patch\n-a\n+b\n```\n")
    header, diffs = step_diffs(_prompt(plan, 1))
    assert header == "Status: | Step 1: First"
    assert diffs == [ADD_HELLO]
    assert step_diffs(_prompt(plan, 2))[1] == [EDIT_README, "-a\n+b\n"]


def test_applies_the_step_then_a_second_run_keeps_it(repo: Path, tmp_path: Path) -> None:
    prompt = _prompt(_plan(tmp_path, "```diff\n" + EDIT_README + "```\n"), 2)
    ok, message = apply_step(prompt, repo)
    assert ok, message
    assert (repo / "README.md").read_text() == "# demo\nMore.\n"
    again, message = apply_step(prompt, repo)  # a re-run after a kill, or as the fixer
    assert again and "already applied" in message
    assert (repo / "README.md").read_text() == "# demo\nMore.\n"


def test_a_diff_that_does_not_apply_fails_naming_the_step(repo: Path, tmp_path: Path) -> None:
    wrong = EDIT_README.replace(" # demo", " # another title")
    ok, message = apply_step(_prompt(_plan(tmp_path, "```diff\n" + wrong + "```\n"), 2), repo)
    assert not ok
    assert message.startswith("Status: | Step 2: Second: diff 1 of 1 does not apply: ")
    assert git(repo, "status", "--porcelain") == ""  # nothing half-applied


def test_a_step_without_a_diff_and_a_prompt_without_a_step_fail(repo: Path, tmp_path: Path) -> None:
    ok, message = apply_step(_prompt(_plan(tmp_path, "Only prose.\n"), 2), repo)
    assert not ok and "has no ```diff block" in message
    ok, message = apply_step("# A flow without a plan step\n", repo)
    assert not ok and "no current step" in message


def test_the_program_completes_by_exit_with_a_structured_reply(repo: Path, tmp_path: Path) -> None:
    plan = _plan(tmp_path, "Only prose.\n")
    prompt_file = tmp_path / "system_prompt.md"
    adapter = get_adapter("patch")
    for step, code, status in ((1, 0, "completed"), (2, 1, "failed")):
        prompt_file.write_text(_prompt(plan, step), encoding="utf-8")
        spec = adapter.launch(
            Invocation(
                agent_id="a",
                agent_dir=tmp_path,
                workdir=repo,
                system_prompt_path=prompt_file,
                system_prompt="",
                task="",
                model=None,
                options={},
                config_dir=tmp_path,
                env={"PATH": "/usr/bin:/bin"},
            )
        )
        assert spec.completes_by_exit and spec.argv[0] == sys.executable
        done = subprocess.run(spec.argv, cwd=spec.cwd, capture_output=True, text=True, check=False)
        assert done.returncode == code, done.stderr
        assert f"<STATUS>\n{status}\n</STATUS>" in done.stdout
        output = adapter.parse_output(done.stdout, done.stderr)
        assert (output.input_tokens, output.output_tokens, output.cost_usd) == (0, 0, 0.0)
    assert (repo / "hello.txt").read_text() == "hello\n"


def test_the_reply_is_utf8_whatever_the_locale(repo: Path, tmp_path: Path) -> None:
    """The supervisor reads the agent's output as UTF-8: under a locale that is not UTF-8 a
    step title holding ``✅`` raised UnicodeEncodeError (the step failed with a traceback)."""
    plan = _plan(tmp_path, "Only prose.\n")
    plan.write_text(plan.read_text(encoding="utf-8").replace("Second", "Second ✅"), "utf-8")
    prompt_file = tmp_path / "system_prompt.md"
    prompt_file.write_text(_prompt(plan, 2), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "gitflow_agents.agents.patch", "--prompt-file", str(prompt_file)],
        cwd=repo,
        env={**os.environ, "PYTHONIOENCODING": "latin-1"},
        capture_output=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "Step 2: Second ✅: its text has no" in done.stdout.decode("utf-8")
