"""A repository whose agent is a fake Claude CLI that can resume, for the session (`send`) tests (`setup`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import FAKES, git
from tests.helpers.fake_claude import STDIN_TASK


def setup(repo: Path, tmp_path: Path) -> tuple[dict[str, str], Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "claude-argv.jsonl"
    fake = bin_dir / "claude"
    fake.write_text(
        FAKE_CLAUDE.format(python=os.environ.get("PYTHON", "/usr/bin/env python3"), log=str(log))
    )
    fake.chmod(0o755)
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        "completion_workflow:\n"
        '  template: "Rename {report_file} to {success_file}."\n'
        "defaults:\n  stuck_timeout_secs: 30\n  max_wait_secs: 60\n"
        "agents:\n"
        "  painter:\n    adapter: claude\n"
        "  scripted:\n"
        f"    adapter: command\n    command: [{json.dumps(str(FAKES / 'fake_agent'))}, succeed]\n"
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "flow")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return env, log


FAKE_CLAUDE = (
    """#!{python}
import json, os, pathlib, sys
argv = sys.argv[1:]
"""
    + STDIN_TASK
    + """log = pathlib.Path({log!r})
with log.open("a") as f:
    f.write(json.dumps(argv) + "\\n")
task = argv[argv.index("-p") + 1]
resume = argv[argv.index("--resume") + 1] if "--resume" in argv else None
d = pathlib.Path(os.environ["GITFLOW_AGENTS_AGENT_DIR"])
if resume is None:  # first turn: the assignment is in the system prompt
    prompt = pathlib.Path(argv[argv.index("--append-system-prompt-file") + 1]).read_text()
    task = prompt.split("## Your Assignment")[1].strip()
asks = "ASK" in task
(d / "report.md").write_text("## Summary\\n\\nTurn done.\\n")
os.rename(d / "report.md", d / ("report.failed.md" if asks else "report.complete.md"))
if asks:
    reply = ("<SUMMARY>Need a colour.</SUMMARY><QUESTIONS>\\n- Which colour?\\n- Dark mode too?\\n"
             "</QUESTIONS><STATUS>needs_input</STATUS>")
else:
    reply = "<SUMMARY>Painted it: " + task.splitlines()[0] + "</SUMMARY><STATUS>completed</STATUS>"
# each turn costs $0.25; after --resume Claude Code states the session's total so far (its
# usage is the process's own): a running total beside the log
spent = pathlib.Path({log!r} + ".cost")
cost = (float(spent.read_text()) if resume and spent.exists() else 0.0) + 0.25
spent.write_text(str(cost))
out = {{"type": "result", "subtype": "success", "is_error": False, "result": reply,
       "usage": {{"input_tokens": 10, "output_tokens": 5}}, "total_cost_usd": cost}}
if "NOSESSION" not in task:
    out["session_id"] = resume or "sess-1"
print(json.dumps(out))
"""
)
