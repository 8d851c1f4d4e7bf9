"""GitHub requests of a plan's steps from claim to merge: ``run --pr``, ``plan tend``, the plan comment.

Usage: python benchmarks/tend_requests.py [--pulls 1,5,20] [--steps 100] [--runners 20]

For each N: a bare ``origin`` the stand-in from tests/ serves, a plan of N independent steps
(``Depends on: none``), ``run PLAN --all --pr --plan-issue 900`` opening N approved pull requests
(an implementer writing one file per step, the builtin reviewer; claim, chain, push, publish,
then the plan comment created), then tends with ``--plan-issue 900``, each from a fresh clone as
a workflow job would run it: all pull requests green and up to date; after an unrelated commit
on the target, all behind (each merged, reviewed, pushed and published); again, nothing to do;
and after another commit on a target that now requires up-to-date branches, all behind again:
one tended, the rest waiting for its merge. Counts the REST and GraphQL requests of each command
(a GraphQL query is a read, a mutation a write), and of those the plan comment's (from its list
of the open pull requests with their heads' statuses to the end: the issue's comments, the
create or edit). A ``git push`` or ``ls-remote`` is no API request and is not counted; merging
is GitHub's (auto-merge), no request of ours.

Then the budget: what a plan of ``--steps`` steps in waves of ``--runners`` spends, from the
figures of the largest N: every step one ``run --pr`` (and its plan comment update with the
wave's pull requests open), every merge a push to the target that starts one ``plan tend``
(its own reads, whatever the number of pull requests) with its plan comment update; at best
each pull request merges before the next sibling lands (the tend finds the rest green), at
worst every merge leaves the wave's remaining pull requests behind (a target that requires
up-to-date branches, the wave merging one by one), and each merge's tend brings one of them up
to date. Set against the documented primary rate limits (benchmarks/README.md): 1,000 requests
an hour per repository for the Actions ``GITHUB_TOKEN``, 5,000 an hour for a user's token
(GraphQL has its own budget of the same size: counting it here overstates the spend). A
measurement to watch, printed as tables.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import cli_main, git, init_repo  # noqa: E402
from tests.github_standin import GitHubStandIn, Recorded  # noqa: E402
from tests.helpers.pipeline import IMPLEMENTER  # noqa: E402
from tests.helpers.step_pr import flow_config  # noqa: E402
from tests.standin_rules import strict_rule  # noqa: E402

PLAN = "specs/feature.md"
STRICT = "tend: all behind, up-to-date rule: one tended, the rest wait"


def plan_text(steps: int) -> str:
    body = "".join(
        f"### Status: ❌ | Step {n}: Part {n}\n\nDepends on: none\n\nWrite part {n}.\n\n"
        for n in range(1, steps + 1)
    )
    return f"# Plan: Feature\n\n## Implementation Steps\n\n{body}"


def seed(box: Path, gh: GitHubStandIn, steps: int) -> Path:
    script = box / "implement.py"
    script.write_text(IMPLEMENTER)
    implementer = [sys.executable, str(script), str(box / "implementer.log")]
    work = init_repo(box / "seed")
    (work / ".flow").mkdir()
    (work / ".flow" / "base.yaml").write_text(
        flow_config(reviewer="builtin", implementer=implementer)
    )
    (work / "specs").mkdir()
    (work / PLAN).write_text(plan_text(steps))
    (work / ".gitignore").write_text("/flows/\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "plan and agents")
    origin = box / "origin.git"
    git(box, "clone", "-q", "--bare", str(work), str(origin))
    gh.state.origin = origin
    return origin


def call(cwd: Path, *args: str) -> int:
    """``gitflow-agents ARGS`` in this process (the stand-in counts its requests here)."""
    return cli_main(*args, "--quiet", cwd=cwd).returncode


Count = tuple[int, int, int, int, int]
"""exit code, reads, writes, and of them the plan comment's reads and writes"""

ISSUE = 900  # a plain issue: pull requests take the low numbers


def _graphql(r: Recorded) -> str:
    """The GraphQL document of a ``POST /graphql`` ("" for any other request)."""
    if not r.path.endswith("/graphql") or not isinstance(r.body, dict):
        return ""
    return str(r.body.get("query") or "")


def _split(made: list[Recorded]) -> tuple[int, int]:
    """(reads, writes): a GraphQL query is a read, a GraphQL mutation a write."""
    writes = sum(
        r.method in ("POST", "PATCH", "PUT", "DELETE")
        and not _graphql(r).lstrip().startswith("query")
        for r in made
    )
    return len(made) - writes, writes


def _glance_starts(r: Recorded) -> bool:
    """The plan comment's first request: its list of the open pull requests into the target
    (the GraphQL ``OpenPullRequests`` query, or REST's ``GET /pulls`` without ``head``)."""
    if r.method == "GET" and r.path.endswith("/pulls") and "head" not in r.query:
        return True
    return "query OpenPullRequests" in _graphql(r)


def counted_call(gh: GitHubStandIn, cwd: Path, *args: str) -> Count:
    """One command: its exit code, its reads and writes, and the plan comment's share (from
    the plan comment's list of open pull requests, ``_glance_starts``: its last one)."""
    start = len(gh.log)
    code = call(cwd, *args, "--plan-issue", str(ISSUE))
    made = gh.log[start:]
    starts = [n for n, r in enumerate(made) if _glance_starts(r)]
    glance = starts[-1] if starts else len(made)
    reads, writes = _split(made)
    comment_reads, comment_writes = _split(made[glance:])
    return code, reads, writes, comment_reads, comment_writes


def counted(gh: GitHubStandIn, box: Path, name: str) -> Count:
    """One tend from a fresh clone."""
    clone = box / name
    git(box, "clone", "-q", str(box / "origin.git"), str(clone))
    return counted_call(gh, clone, "plan", "tend", PLAN, "--auto-merge", "squash")


def land_on_main(box: Path, name: str = "human") -> None:
    human = box / name
    git(box, "clone", "-q", str(box / "origin.git"), str(human))
    (human / f"{name}.md").write_text("landed meanwhile\n")
    git(human, "add", f"{name}.md")
    git(human, "commit", "-q", "-m", "a teammate's commit")
    git(human, "push", "-q", "origin", "main")


def measure(steps: int) -> list[tuple[str, int, Count]]:
    gh = GitHubStandIn().start()
    gh.state.issues.add(ISSUE)
    env = {
        "GITHUB_TOKEN": "tok-write",
        "GITHUB_REPOSITORY": gh.full_name,
        "GITHUB_API_URL": gh.base_url,
        "GITFLOW_AGENTS_GITHUB_BACKOFF": "0",
        "GITFLOW_AGENTS_GITHUB_WRITE_DELAY": "0",
    }
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        with tempfile.TemporaryDirectory(prefix="tend-bench-") as scratch:
            box = Path(scratch)
            seed(box, gh, steps)
            runner = box / "runner"
            git(box, "clone", "-q", str(box / "origin.git"), str(runner))
            run = counted_call(gh, runner, "run", PLAN, "--all", "--pr")
            assert run[0] == 0 and len(gh.state.pulls) == steps
            rows = [("run --all --pr: claim to published", run)]
            rows.append(("tend: all green, up to date", counted(gh, box, "tend-1")))
            land_on_main(box)
            rows.append(("tend: all behind: merged, reviewed", counted(gh, box, "tend-2")))
            rows.append(("tend again: nothing to do", counted(gh, box, "tend-3")))
            land_on_main(box, "other")
            gh.state.branch_rules["main"] = [strict_rule(strict=True)]
            rows.append((STRICT, counted(gh, box, "tend-4")))
            assert len(gh.comments_on(ISSUE)) == 1
            return [(what, steps, count) for what, count in rows]
    finally:
        gh.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


GITHUB_TOKEN_HOURLY = 1000
USER_TOKEN_HOURLY = 5000


def budget(rows: list[tuple[str, int, Count]], steps: int, runners: int) -> None:
    """The budget table (module doc), from the figures of ``rows`` (one N)."""
    by = {what: count for what, _, count in rows}
    pulls = rows[0][1]

    def spent(what: str) -> int:
        return by[what][1] + by[what][2]

    def comment_share(what: str) -> int:
        return by[what][3] + by[what][4]

    run = (spent("run --all --pr: claim to published") - comment_share(rows[0][0])) / pulls
    # a tend's own reads whatever the number of pull requests (one GraphQL page per 100, the
    # target's guard), and what one behind pull request adds (merged, reviewed, published)
    green = "tend: all green, up to date"
    tend_fixed = spent(green) - comment_share(green)
    moved = "tend: all behind: merged, reviewed"
    behind = (spent(moved) - comment_share(moved) - tend_fixed) / pulls
    # the plan comment, measured where the target moved (its footer names the target's commit:
    # every merge edits it); one request more per 100 open pull requests past the first 100
    comment_fixed = comment_share(moved)
    waves = -(-steps // runners)
    sizes = [min(runners, steps - w * runners) for w in range(waves)]

    def comment(open_pulls: int) -> float:
        return comment_fixed + max(0, -(-open_pulls // 100) - 1)

    runs = sum(size * run for size in sizes)
    # one tend per merge; before the k-th merge of a wave, size - k + 1 pull requests are open
    merges = [open_ for size in sizes for open_ in range(size, 0, -1)]
    comments = sum(size * comment(size) for size in sizes) + sum(comment(n - 1) for n in merges)
    best = runs + comments + tend_fixed * len(merges)
    worst = best + sum(behind for n in merges if n > 1)
    print()
    print(
        f"Budget: {steps} steps on {runners} runners ({waves} waves); per step: run {run:.1f}; "
        f"per tend {tend_fixed} and {behind:.1f} per pull request it brings up to date; plan "
        f"comment {comment_fixed} (one more per 100 open pull requests past the first 100)"
    )
    print()
    print(
        "| case | requests | of them plan comment | per step | per wave "
        "| hours of GITHUB_TOKEN (1,000/h) | of a user token (5,000/h) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case, total in (
        ("best: each merges before the next sibling lands", best),
        ("worst: each merge leaves the rest behind (one tended per merge)", worst),
    ):
        print(
            f"| {case} | {total:,.0f} | {comments:,.0f} | {total / steps:.1f} | "
            f"{total / waves:,.0f} | {total / GITHUB_TOKEN_HOURLY:.2f} | "
            f"{total / USER_TOKEN_HOURLY:.2f} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pulls", default="1,5", help="numbers of open step pull requests")
    parser.add_argument("--steps", type=int, default=100, help="steps of the budgeted plan")
    parser.add_argument("--runners", type=int, default=20, help="its runners (a wave's size)")
    args = parser.parse_args()
    print(
        "| command | PRs | exit | reads | writes | of them plan comment r+w "
        "| reads per PR | writes per PR |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    rows: list[tuple[str, int, Count]] = []
    for steps in (int(n) for n in args.pulls.split(",")):
        rows = measure(steps)
        for what, pulls, (code, reads, writes, c_reads, c_writes) in rows:
            print(
                f"| {what} | {pulls} | {code} | {reads} | {writes} | {c_reads}+{c_writes} | "
                f"{reads / pulls:.1f} | {writes / pulls:.1f} |",
                flush=True,
            )
    budget(rows, args.steps, args.runners)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
