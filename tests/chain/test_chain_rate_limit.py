"""A step whose agent stays rate limited past ``defaults.rate_limit_wait_secs`` fails with exit
code 6 (issue 23), its record saying why; a step whose agent's limit passes goes on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.helpers.chain import configure, results, run
from tests.helpers.files import write_executable

LIMITED = """#!{python}
import os, pathlib, sys
count = pathlib.Path({count!r})
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
if n <= {refusals}:
    sys.stderr.write("Error: 429 Too Many Requests (retry-after: 0.1)\\n")
    sys.exit(1)
os.execv(sys.executable, [sys.executable, *{then!r}])
"""


def _limited_builder(repo: Path, tmp_path: Path, refusals: int, wait: int) -> None:
    """The builder answers 429 ``refusals`` times, then is the fake implementer."""
    config = repo / ".flow" / "base.yaml"
    text = config.read_text()
    builder = text.split("  builder:\n")[1].split("  fixer:\n")[0]
    then = json.loads(builder.split("command: ", 1)[1])
    script = LIMITED.format(
        python=sys.executable, count=str(tmp_path / "calls"), refusals=refusals, then=then[1:]
    )
    agent = write_executable(tmp_path / "limited", script)
    text = text.replace(builder, f"    adapter: command\n    command: [{json.dumps(str(agent))}]\n")
    text = text.replace(
        "  max_wait_secs: 30\n", f"  max_wait_secs: 30\n  rate_limit_wait_secs: {wait}\n"
    )
    config.write_text(text)


def test_a_step_rate_limited_past_the_wait_fails_with_exit_6(repo: Path, tmp_path: Path) -> None:
    configure(repo)
    _limited_builder(repo, tmp_path, refusals=99, wait=0)
    ended = run(repo, "--step", "1")
    assert ended.returncode == 6, ended.stdout + ended.stderr
    [step] = results(repo)
    assert step["chain"]["outcome"] == "failed" and step["chain"]["exitCode"] == 6
    assert "rate_limited" in step["chain"]["reason"]


def test_a_step_whose_limit_passes_goes_on(repo: Path, tmp_path: Path) -> None:
    configure(repo)
    _limited_builder(repo, tmp_path, refusals=1, wait=5)
    done = run(repo, "--step", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "calls").read_text() == "2"
    [step] = results(repo)
    assert step["chain"]["outcome"] == "approved"
