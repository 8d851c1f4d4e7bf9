"""GitHub requests per review run, by number of findings, first run and re-run.

Usage: python benchmarks/github_requests.py [--findings 1,10,100] [--per-page 100]

Drives ``review_and_publish`` (what ``gitflow-agents action`` does for a pull_request event)
against the stand-in from tests/ with a real git repository whose PR adds one file with N
findings on changed lines (one TODO-style finding per added line, from the builtin reviewer),
then ``post_findings`` (the posting job of the two-job split) with the findings file the review
wrote, against a fresh stand-in. Counts reads and writes per run. Lists are read
``--per-page`` at a time (the client's ``PER_PAGE``, 100: GitHub's maximum; 30 is GitHub's and
PyGithub's default, for comparison). The token is an installation token like ``GITHUB_TOKEN``
(``ghs_``, writes as ``github-actions[bot]``, no ``comment-author`` set): the run learns who it is
from GitHub's answers, as in a real workflow.

Targets (issue 6): posting writes (inline review, summary comment, final status) <= 3 whatever
the number of findings; 0 new comments and 0 new reviews on a re-run with nothing changed.
The ``pending`` commit status a single-job review sets at its start is run state, not posting,
and is counted apart (``writes`` = posting writes + 1 pending); the posting job of the two-job
split sets no pending status, so there ``writes`` = posting writes <= 3. ``ok`` says whether a
row meets the targets. A measurement to watch, printed as a table; exit 1 when a row misses.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitflow_agents.findings import Severity  # noqa: E402
from gitflow_agents.github.action.run import post_findings, review_and_publish  # noqa: E402
from gitflow_agents.github.action.runner import PREFIX, Options, read_runner_env  # noqa: E402
from gitflow_agents.github.api import client as github_client  # noqa: E402
from gitflow_agents.github.api.client import Client, Settings  # noqa: E402
from tests.github_events import pull_request_event, write_event  # noqa: E402
from tests.github_standin import GitHubStandIn, Pull, Token  # noqa: E402

ACTIONS_TOKEN = "ghs_benchmark_actions_token"

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


def measure(server: GitHubStandIn, label: str, run: Callable[[], object]) -> dict[str, object]:
    """Run ``run`` once; the requests it made, by kind."""
    before = len(server.log)
    comments = len(server.comments_on(1))
    reviews = len(server.state.reviews)
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        run()
    elapsed = time.perf_counter() - started
    made = server.log[before:]
    writes = [r for r in made if r.method != "GET"]
    pending = sum(
        "/statuses/" in r.path and isinstance(r.body, dict) and r.body.get("state") == "pending"
        for r in writes
    )
    return {
        f"{label}_reads": sum(r.method == "GET" for r in made),
        f"{label}_writes": len(writes),
        f"{label}_posting_writes": len(writes) - pending,
        f"{label}_new_comments": len(server.comments_on(1)) - comments,
        f"{label}_new_reviews": len(server.state.reviews) - reviews,
        f"{label}_seconds": round(elapsed, 2),
    }


def fresh(settings: Settings, run: Callable[..., object], env: object, *args: object) -> object:
    """``run(env, client, *args)`` with a new client: each run is a new job, knowing nothing."""
    return run(env, Client(settings), *args)


def one(findings: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo, base, head, patch = make_repo(root, findings)
        event = root / "event.json"
        write_event(event, "pull_request", pull_request_event("octo/demo", 1, head, base))
        env = read_runner_env(
            {
                "GITHUB_EVENT_NAME": "pull_request",
                "GITHUB_EVENT_PATH": str(event),
                "GITHUB_REPOSITORY": "octo/demo",
                "GITHUB_WORKSPACE": str(repo),
                "RUNNER_TEMP": str(root),
            }
        )
        options = Options(threshold=Severity.ERROR, max_inline=10_000)
        row: dict[str, object] = {"findings": findings}
        for mode in ("review", "post"):
            server = GitHubStandIn().start()
            try:
                server.add_pull(Pull(1, head, base, [{"filename": "work.py", "patch": patch}]))
                server.add_token(
                    ACTIONS_TOKEN,
                    Token("github-actions[bot]", user_endpoint=False, app="github-actions"),
                )
                settings = Settings(
                    token=ACTIONS_TOKEN, api_url=server.base_url, seconds_between_writes=None
                )
                pr = Client(settings).pulls.get(server.full_name, 1)  # the event's pull request
                if mode == "review":
                    for label in ("first", "rerun"):
                        row.update(
                            measure(
                                server,
                                label,
                                functools.partial(
                                    fresh, settings, review_and_publish, env, pr, options, label
                                ),
                            )
                        )
                    row["inline_comments"] = len(server.state.review_comments)
                else:
                    post = replace(options, post_findings=root / PREFIX / "first" / "findings.json")
                    for label in ("post", "repost"):
                        row.update(
                            measure(
                                server,
                                label,
                                functools.partial(
                                    fresh, settings, post_findings, env, pr, post, "post"
                                ),
                            )
                        )
            finally:
                server.stop()
        row["ok"] = all(
            (
                int(str(row["first_posting_writes"])) <= 3,
                int(str(row["post_writes"])) <= 3,
                row["rerun_new_comments"] == 0 and row["rerun_new_reviews"] == 0,
                row["repost_new_comments"] == 0 and row["repost_new_reviews"] == 0,
            )
        )
        return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--findings", default="1,10,100")
    parser.add_argument("--per-page", type=int, default=github_client.PER_PAGE)
    args = parser.parse_args()
    github_client.PER_PAGE = args.per_page
    print(f"lists read {args.per_page} per page")
    rows = [one(int(n)) for n in args.findings.split(",")]
    keys = list(rows[0])
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(str(row[k]) for k in keys))
    sys.exit(0 if all(row["ok"] for row in rows) else 1)


if __name__ == "__main__":
    main()
