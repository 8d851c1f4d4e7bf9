"""``adapter: patch``: an offline implementer that applies the unified diff a step carries.

A step whose text holds one or more fenced ``diff`` (or ``patch``) blocks is implemented by
applying them, in order, to the work tree with ``git apply --recount``: no model, no network, a
few milliseconds. Useful on its own (a change a human already wrote, reviewed by agents before it
lands) and as the implementer of ``gitflow-agents init --example`` (docs/agents.md, "The patch
agent").

The agent reads its step from the assembled system prompt, the same text any agent gets: the
assignment is a fenced block whose ``## Current Step: Step N`` part is the step's own text
(plan/model.py); only fences after that heading count. It completes by exit (no report file to
rename): exit 0 with a structured reply saying ``completed``; exit 1 with ``failed`` and the
reason (no diff in the step, a diff git cannot apply, with git's own words). A diff that is
already applied (a re-run after a kill, or the agent run as the fixer) is left as it is.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gitflow_agents.agents import base
from gitflow_agents.agents.base import AgentOutput, Cli, Invocation, LaunchSpec
from gitflow_agents.base.markdown import block_tokens
from gitflow_agents.base.proc import run as run_process
from gitflow_agents.git.cmd import git_env

DIFF_FENCES = ("diff", "patch")
CURRENT_STEP = "Current Step:"  # the heading plan/model.py writes before the step's own text


class PatchAdapter:
    # ships with gitflow-agents: runs as ``python -m gitflow_agents.agents.patch``
    cli = Cli("patch", install="", resumes=False, program_name="")

    def launch(self, invocation: Invocation) -> LaunchSpec:
        base.check_invocation(invocation, self.cli)
        argv = (
            sys.executable,
            "-m",
            "gitflow_agents.agents.patch",
            "--prompt-file",
            str(invocation.system_prompt_path),
        )
        return LaunchSpec(
            argv=argv,
            env=base.allowed_env(invocation),
            cwd=invocation.workdir,
            completes_by_exit=True,
        )

    def parse_output(self, stdout: str, stderr: str) -> AgentOutput:
        """It calls no model: zero tokens and no cost are known facts, not unknowns."""
        return AgentOutput(
            reply=stdout.strip() or None,
            input_tokens=0,
            output_tokens=0,
            cached_tokens=0,
            cost_usd=0.0,
            model="patch",
        )


def step_diffs(prompt: str) -> tuple[str | None, list[str]]:
    """The current step's heading line and the diffs fenced in its text, in order.

    The assignment is one fence in the prompt; the step's text is what follows its
    ``## Current Step`` heading. (None, []) when the prompt has no current step."""
    for token in block_tokens(prompt):
        if token.type == "fence" and CURRENT_STEP in token.content:
            return _diffs_after_current_step(token.content)
    return None, []


def _diffs_after_current_step(assignment: str) -> tuple[str | None, list[str]]:
    heading: str | None = None
    diffs: list[str] = []
    step_header: str | None = None
    for token in block_tokens(assignment):
        if heading is None:
            if token.type == "inline" and token.content.startswith(CURRENT_STEP):
                heading = token.content
            continue
        if token.type == "inline" and step_header is None:
            step_header = token.content
        if token.type == "fence" and token.info.strip().split(" ")[0] in DIFF_FENCES:
            diffs.append(token.content)
    return step_header or heading, diffs


def _git_apply(workdir: Path, diff: str, *args: str) -> tuple[bool, str]:
    result = run_process(
        ("git", "apply", "--recount", "--whitespace=nowarn", *args),
        cwd=workdir,
        env=git_env(),
        input=diff,
        check=False,
    )
    return result.returncode == 0, result.stderr.strip()


def apply_step(prompt: str, workdir: Path) -> tuple[bool, str]:
    """Apply the step's diffs in ``workdir``: (True, what was done) or (False, why not)."""
    step, diffs = step_diffs(prompt)
    if step is None:
        return False, "the system prompt has no current step (is this agent run for a plan step?)"
    if not diffs:
        return False, f"{step}: its text has no ```diff block for the patch agent to apply"
    done: list[str] = []
    for number, diff in enumerate(diffs, 1):
        applies, why = _git_apply(workdir, diff, "--check")
        if applies:
            ok, why = _git_apply(workdir, diff)
            if ok:
                done.append(f"diff {number}: applied")
                continue
        if _git_apply(workdir, diff, "--reverse", "--check")[0]:
            done.append(f"diff {number}: already applied")
            continue
        return False, f"{step}: diff {number} of {len(diffs)} does not apply: {why}"
    return True, f"{step}: " + "; ".join(done)


def reply(ok: bool, message: str) -> str:
    status = "completed" if ok else "failed"
    return f"<SUMMARY>\n{message}\n</SUMMARY>\n\n<STATUS>\n{status}\n</STATUS>\n"


def _write_utf8() -> None:
    """Print in UTF-8, which the supervisor decodes the agent's output as, whatever the locale:
    under ``LC_ALL=en_US.ISO-8859-1`` a step title holding ``✅`` or ``日本`` (in the reply's
    summary) raised UnicodeEncodeError and the step failed."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    _write_utf8()
    parser = argparse.ArgumentParser(prog="python -m gitflow_agents.agents.patch")
    parser.add_argument("--prompt-file", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        prompt = args.prompt_file.read_text(encoding="utf-8")
    except OSError as exc:
        ok, message = False, f"cannot read the system prompt {args.prompt_file}: {exc.strerror}"
    else:
        ok, message = apply_step(prompt, Path.cwd())
    print(reply(ok, message))
    if not ok:
        print(f"patch agent: {message}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
