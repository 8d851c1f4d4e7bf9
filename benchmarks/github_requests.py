"""GitHub requests per review run, by number of findings, first run and re-run.

Usage: python benchmarks/github_requests.py [--findings 1,10,100]

Drives ``review_and_publish`` (what ``gitflow-agents action`` does for a pull_request event)
against the stand-in from tests/ with a real git repository whose PR adds one file with N
findings on changed lines (one TODO-style finding per added line, from the builtin reviewer).
Counts reads and writes per run. Targets (issue 6): posting writes (inline review, summary
comment, final status) <= 3 whatever the number of findings, plus the one ``pending`` status at
the start; 0 new comments and 0 new reviews on a re-run with nothing changed. Not an assertion:
a measurement to watch.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitflow_agents.findings import Severity  # noqa: E402
from gitflow_agents.github.action import Options, read_runner_env, review_and_publish  # noqa: E402
from gitflow_agents.github.client import Client, Settings  # noqa: E402
from tests.github_standin import GitHubStandIn, Pull  # noqa: E402

GIT_ENV = {
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@example.com",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": tempfile.mkdtemp(),
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    ).stdout


def make_repo(root: Path, findings: int) -> tuple[Path, str, str, str]:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# bench\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    base = git(repo, "rev-parse", "HEAD").strip()
    lines = "".join(f"x{i} = {i}  # TODO: handle case {i}\n" for i in range(findings))
    (repo / "work.py").write_text(lines)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "work")
    head = git(repo, "rev-parse", "HEAD").strip()
    diff = git(repo, "diff", base, head, "--", "work.py")
    return repo, base, head, diff[diff.index("@@") :].rstrip("\n")


def one(findings: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo, base, head, patch = make_repo(root, findings)
        server = GitHubStandIn().start()
        try:
            pull = server.add_pull(Pull(1, head, base, [{"filename": "work.py", "patch": patch}]))
            event = root / "event.json"
            event.write_text(json.dumps({"action": "opened"}))
            env = read_runner_env(
                {
                    "GITHUB_EVENT_NAME": "pull_request",
                    "GITHUB_EVENT_PATH": str(event),
                    "GITHUB_REPOSITORY": server.full_name,
                    "GITHUB_WORKSPACE": str(repo),
                    "RUNNER_TEMP": str(root),
                }
            )
            client = Client(
                Settings(token="tok-actions", api_url=server.base_url, seconds_between_writes=None)
            )
            pr = client.pull(server.full_name, 1)
            options = Options(threshold=Severity.ERROR, max_inline=10_000)
            row: dict[str, object] = {"findings": findings}
            for label in ("first", "rerun"):
                before = len(server.log)
                comments = len(server.comments_on(1))
                reviews = len(server.state.reviews)
                started = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    review_and_publish(env, client, pr, options, label)
                elapsed = time.perf_counter() - started
                made = server.log[before:]
                writes = [r for r in made if r.method != "GET"]
                row[f"{label}_reads"] = sum(r.method == "GET" for r in made)
                row[f"{label}_writes"] = len(writes)
                row[f"{label}_posting_writes"] = sum(
                    not (r.path.endswith(pull.head_sha) and r.body.get("state") == "pending")
                    for r in writes
                )
                row[f"{label}_new_comments"] = len(server.comments_on(1)) - comments
                row[f"{label}_new_reviews"] = len(server.state.reviews) - reviews
                row[f"{label}_seconds"] = round(elapsed, 2)
            row["inline_comments"] = len(server.state.review_comments)
            return row
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--findings", default="1,10,100")
    args = parser.parse_args()
    rows = [one(int(n)) for n in args.findings.split(",")]
    keys = list(rows[0])
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(str(row[k]) for k in keys))


if __name__ == "__main__":
    main()
