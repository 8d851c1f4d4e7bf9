"""The ``.flow/base.yaml`` most tests need: ``command`` agents (fake agents given by argv) under the
rename-the-report completion workflow, with the stuck and wait limits a test can name."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.conftest import git


def command_agents(
    agents: Mapping[str, Sequence[str]],
    *,
    stuck: int = 30,
    max_wait: int = 60,
    allow_env: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The YAML text: one ``command`` agent per name running its argv; ``allow_env`` names the
    environment variables an agent may see beyond the default allow-list."""
    lines = [
        "completion_workflow:",
        '  template: "Rename {report_file} to {success_file}."',
        "defaults:",
        f"  stuck_timeout_secs: {stuck}",
        f"  max_wait_secs: {max_wait}",
        "agents:",
    ]
    for name, argv in agents.items():
        lines += [f"  {name}:", "    adapter: command", f"    command: {json.dumps(list(argv))}"]
        if allow_env and allow_env.get(name):
            lines.append(f"    allow_env: [{', '.join(allow_env[name])}]")
    return "\n".join(lines) + "\n"


# An agent that streams Claude-style usage, 1,000 input tokens every 50 ms, and never ends: a
# budget stops it (tests of what a stopped agent spent).
SPENDER = [
    sys.executable,
    "-c",
    "import json, time\n"
    "for n in range(10_000):\n"
    "    usage = {'input_tokens': 1000, 'output_tokens': 0}\n"
    "    line = {'type': 'assistant', 'message': {'id': f'm{n}', 'usage': usage}}\n"
    "    print(json.dumps(line), flush=True)\n"
    "    time.sleep(0.05)\n",
]


def budgeted_gate(repo: Path, budget: str) -> None:
    """The base commit's ``.flow/``: the agent reviewer ``gate`` (``SPENDER``) and ``budget``
    (a ``budget:`` section)."""
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(command_agents({"gate": SPENDER}) + budget)
    git(repo, "add", ".flow")
    git(repo, "commit", "-q", "-m", "configure the reviewer")
