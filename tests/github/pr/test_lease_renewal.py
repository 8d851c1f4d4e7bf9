"""A lease renewal that fails while ``run --pr`` works (issue 22): said once on stderr and in
the run's record, the run goes on; one that finds the lease taken by another holder stops the
run as a claim that moved on does: exit 4, nothing pushed, the branch and lease left to the
taker."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gitflow_agents.git import lease as git_lease
from gitflow_agents.github.pr import lease as leases
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.chain import FAKE
from tests.helpers.step_pr import BRANCH, env, lease_on_origin, origin_sha, run_pr, setup_repo

__all__ = ["env", "gh"]

TAKE_OVER = """\
import os, subprocess, sys, time
origin, ref = sys.argv[1], sys.argv[2]
def g(*args):
    return subprocess.run(["git", "-C", origin, *args], check=True, capture_output=True,
                          text=True, env={**os.environ, "GIT_AUTHOR_NAME": "t",
                          "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                          "GIT_COMMITTER_EMAIL": "t@t"}).stdout.strip()
tree = g("hash-object", "-t", "tree", "-w", "/dev/null")
made = g("commit-tree", tree, "-m", '{"host": "there", "pid": 2, "at": %f}' % time.time())
g("update-ref", ref, made)
time.sleep(float(sys.argv[3]))
os.execv(sys.executable, [sys.executable, sys.argv[4], "implementer", "edit"])
"""

REFUSE = """\
#!/bin/sh
while read old new ref; do
  case "$ref" in refs/gitflow-agents/*)
    [ -e "$0.refuse" ] && echo refused >> "$0.refused" && echo "lease refused" && exit 1;;
  esac
done
exit 0
"""

# the implementer: origin refuses lease pushes until two renewals were refused, then it works
FLAKY = """\
import os, sys, time
flag = sys.argv[1]
open(flag, "w").close()
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    if os.path.exists(sys.argv[3]) and len(open(sys.argv[3]).readlines()) >= 2:
        break
    time.sleep(0.05)
os.unlink(flag)
os.execv(sys.executable, [sys.executable, sys.argv[2], "implementer", "edit"])
"""


def test_a_lease_taken_over_while_the_chain_runs_stops_the_run_with_nothing_pushed(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "take_over.py"
    script.write_text(TAKE_OVER)
    origin = tmp_path / "origin.git"
    argv = [sys.executable, str(script), str(origin), git_lease.lease_ref(BRANCH), "20", str(FAKE)]
    repo = setup_repo(tmp_path, gh, implementer=argv)
    monkeypatch.setenv(leases.TTL_ENV, "0.6")  # renewed every 0.2 s
    main = origin_sha(gh, "refs/heads/main")
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 4, out.stdout + out.stderr
    assert "taken over by there pid 2" in out.stderr
    # nothing pushed over the taker's claim: its branch and its lease stay as they were
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == main
    assert lease_on_origin(gh)["host"] == "there" and gh.state.pulls == {}
    [claim] = (repo / "flows" / "feature" / "runs").glob("*/claim.json")
    record = json.loads(claim.read_text())
    assert record["state"] == "taken-over" and record["takenBy"]["host"] == "there"
    result = json.loads((claim.parent / "result.json").read_text())
    assert any("taken over" in n for n in result["chain"]["notices"]), result
    assert result["chain"]["outcome"] != "approved"  # the chain was stopped, not run to its end


def test_a_renewal_that_fails_is_said_once_and_the_run_goes_on(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    origin = tmp_path / "origin.git"
    script = tmp_path / "flaky.py"
    script.write_text(FLAKY)
    hook = origin / "hooks" / "pre-receive"
    repo = setup_repo(
        tmp_path,
        gh,
        implementer=[sys.executable, str(script), f"{hook}.refuse", str(FAKE), f"{hook}.refused"],
    )
    hook.write_text(REFUSE)
    hook.chmod(0o755)
    monkeypatch.setenv(leases.TTL_ENV, "0.6")
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr.count("could not be renewed") == 1, out.stderr
    [pull] = gh.state.pulls.values()
    assert pull.head_sha == origin_sha(gh, f"refs/heads/{BRANCH}")
    assert lease_on_origin(gh)["pull"] == pull.number  # renewals worked again after
    [claim] = (repo / "flows" / "feature" / "runs").glob("*/claim.json")
    assert json.loads(claim.read_text())["leaseRenewalsFailed"] >= 2
