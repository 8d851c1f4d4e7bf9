"""A nested git repository an agent leaves in a step's work tree (a cloned dependency, a
``git init`` scratch folder): ``git add -A`` would commit it as a gitlink with no ``.gitmodules``
entry, which no reviewer sees (the reviewed diff leaves gitlinks out) and which clones get with
no URL. The chain leaves it out of the commit instead: it stays in the step's work tree, the
step's output says so in one line and the agent's record lists it (``leftOut``); an agent whose
only work it was changed nothing (``empty``). A step that lands keeps its work tree while it
holds one. A real submodule (``git submodule add``) is committed as before. Real git, the fake agents of tests/fakes/fake_flow_agent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import git
from tests.helpers.chain import call, configure, main_sha, note, results, run, step_status

LINE = (
    "step-01-builder: left out of the commit: nested repository vendor-lib (not a submodule; "
    "add it with git submodule add to commit it)"
)


def step_tree_or_none(repo: Path) -> Path | None:
    """The work tree of step 1's branch (the tool's, under $XDG_CACHE_HOME), if there is one."""
    path = None
    for line in git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
        elif line == "branch refs/heads/agents/feature/step-1" and path is not None:
            return path
    return None


def step_tree(repo: Path) -> Path:
    path = step_tree_or_none(repo)
    assert path is not None, git(repo, "worktree", "list")
    return path


def gitlinks(repo: Path, ref: str) -> list[str]:
    """The paths ``ref``'s tree records as gitlinks (mode 160000)."""
    out = git(repo, "ls-tree", "-r", ref)
    return [line.split("\t", 1)[1] for line in out.splitlines() if line.startswith("160000 ")]


def kept(repo: Path, name: str) -> str:
    """The note of a landed step whose work tree is kept for the nested repository ``name``."""
    return (
        f"  note: the step's work tree {step_tree(repo)} is kept: it holds nested repository "
        f"{name}, left out of the commit (`gitflow-agents gc --force` removes it)"
    )


def builder_record(repo: Path) -> dict[str, Any]:
    """The implementer's own result.json (its agent run's record)."""
    [result] = results(repo)[-1:]
    run_id = result["chain"]["agents"][0]["runID"]
    data: dict[str, Any] = json.loads(
        (repo / "flows" / "feature" / "runs" / run_id / "result.json").read_text()
    )
    return data


def test_an_implementer_whose_only_work_is_a_nested_repository_changed_nothing(
    repo: Path,
) -> None:
    """Nothing to review: ``empty`` (exit 1), no reviewer, no note, nothing merged, no gitlink
    on the step branch; the repository is still in the step's work tree, and the output, the
    step's record and the agent's record name it."""
    configure(repo, implementer="nested")
    before = main_sha(repo)
    out = run(repo, "--step", "1")
    assert out.returncode == 1, out.stderr + out.stdout
    assert f"  note: {LINE}" in out.stdout.splitlines()
    [result] = results(repo)
    chain = result["chain"]
    assert chain["outcome"] == "empty", chain["reason"]
    assert "except nested repository vendor-lib, left out of the commit" in chain["reason"]
    assert "nothing to review" in chain["reason"]
    assert [a["kind"] for a in chain["agents"]] == ["implement"] and chain["rounds"] == []
    assert chain["agents"][0]["leftOut"] == ["vendor-lib"]
    assert chain["notices"] == [LINE]
    assert builder_record(repo)["run"]["leftOut"] == ["vendor-lib"]
    assert main_sha(repo) == before and note(repo, before) is None
    assert git(repo, "rev-parse", "agents/feature/step-1").strip() == before
    assert gitlinks(repo, "agents/feature/step-1") == []
    tree = step_tree(repo)
    assert (tree / "vendor-lib" / ".git").is_dir() and (tree / "vendor-lib" / "lib.py").is_file()
    assert step_status(repo, 1) == "❌"


def test_running_the_step_again_after_that_is_empty_again_also_once_the_folder_is_gone(
    repo: Path,
) -> None:
    """A re-run asks the implementer again (as any implementer that changed nothing: it is not
    reused) and ends ``empty`` again, naming what was left out; with the folder removed from
    the work tree, the same; never an approval, a gitlink or a traceback."""
    configure(repo, implementer="nested")
    before = main_sha(repo)
    assert run(repo, "--step", "1").returncode == 1
    for gone in (False, True):
        if gone:
            shutil.rmtree(step_tree(repo) / "vendor-lib")
        out = run(repo, "--step", "1")
        assert out.returncode == 1, out.stderr + out.stdout
        assert "Traceback" not in out.stderr + out.stdout
        chain = results(repo)[-1]["chain"]
        assert chain["outcome"] == "empty" and chain["rounds"] == []
        agent = chain["agents"][0]
        assert not agent["reused"] and agent["leftOut"] == ["vendor-lib"]
        assert "vendor-lib, left out of the commit" in chain["reason"]
        assert main_sha(repo) == before and gitlinks(repo, "agents/feature/step-1") == []
    assert len(results(repo)) == 3


def test_a_nested_repository_beside_real_work_is_left_out_and_the_work_lands(repo: Path) -> None:
    """The rest of the work is committed, reviewed and merged; the nested repository is not
    in any commit, does not count as a reviewer's change, and the landed step's work tree is
    kept for it (``gc`` keeps it too, unless forced)."""
    configure(repo, implementer="nested-edit")
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    assert f"  note: {LINE}" in out.stdout.splitlines()
    [result] = results(repo)
    chain = result["chain"]
    assert chain["outcome"] == "approved" and chain["iterations"] == 1, chain["reason"]
    assert chain["agents"][0]["leftOut"] == ["vendor-lib"] and "leftOut" not in chain["agents"][1]
    assert gitlinks(repo, "main") == [] and "vendor-lib" not in result["gitStats"]["newFiles"]
    assert "src/new_module.py" in result["gitStats"]["newFiles"]
    assert (step_tree(repo) / "vendor-lib" / ".git").is_dir()
    assert kept(repo, "vendor-lib") in out.stdout.splitlines()
    gc = call(repo, "gc", "--json")
    assert gc.returncode == 0, gc.stderr
    assert (step_tree(repo) / "vendor-lib" / ".git").is_dir()
    assert call(repo, "gc", "--force").returncode == 0
    assert step_tree_or_none(repo) is None


def test_a_scratch_repository_without_a_commit_does_not_stop_the_commit(repo: Path) -> None:
    """``git init scratch`` (no commit): ``git add -A`` refuses the whole staging ('does not
    have a commit checked out'), which failed the step; it is left out like any other."""
    configure(repo, implementer="scratch")
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    line = LINE.replace("vendor-lib", "scratch")
    assert f"  note: {line}" in out.stdout.splitlines()
    chain = results(repo)[0]["chain"]
    assert chain["outcome"] == "approved" and chain["agents"][0]["leftOut"] == ["scratch"]
    assert "src/new_module.py" in git(repo, "ls-tree", "-r", "--name-only", "main").split()
    assert (step_tree(repo) / "scratch" / ".git").is_dir()
    assert kept(repo, "scratch") in out.stdout.splitlines()


def test_a_nested_repository_the_agent_committed_itself_is_taken_out_again(repo: Path) -> None:
    """An agent that commits its own work (``git add -A``, a gitlink) beside real work: the
    chain's commit takes the gitlink out again, so what lands has none; the line and record
    say so."""
    configure(repo, implementer="nested-edit-commit")
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    assert f"  note: {LINE}" in out.stdout.splitlines()
    [result] = results(repo)
    chain = result["chain"]
    assert chain["outcome"] == "approved" and chain["agents"][0]["leftOut"] == ["vendor-lib"]
    assert gitlinks(repo, "main") == [] and gitlinks(repo, chain["headSha"]) == []
    assert "agent's own" in git(repo, "log", "--format=%s", "main")
    assert "vendor-lib" not in result["gitStats"]["newFiles"]
    assert (step_tree(repo) / "vendor-lib" / ".git").is_dir()


def test_an_agent_whose_own_commit_only_held_a_nested_repository_changed_nothing(
    repo: Path,
) -> None:
    """Its own commit taken out leaves nothing: ``empty``, the step branch back where the
    agent started, nothing reviewed."""
    configure(repo, implementer="nested-commit")
    before = main_sha(repo)
    out = run(repo, "--step", "1")
    assert out.returncode == 1, out.stderr + out.stdout
    assert f"  note: {LINE}" in out.stdout.splitlines()
    chain = results(repo)[0]["chain"]
    assert chain["outcome"] == "empty" and chain["rounds"] == []
    assert chain["agents"][0]["leftOut"] == ["vendor-lib"]
    assert chain["agents"][0]["endSha"] == chain["agents"][0]["startSha"] == before
    assert git(repo, "rev-parse", "agents/feature/step-1").strip() == before
    assert main_sha(repo) == before and (step_tree(repo) / "vendor-lib" / ".git").is_dir()


def test_a_real_submodule_is_committed_with_its_gitmodules_entry(repo: Path) -> None:
    """``git submodule add``: registered in ``.gitmodules``, so committed as a gitlink (with
    ``.gitmodules``) and reviewed; nothing is left out, no line."""
    configure(repo, implementer="submodule")
    out = run(repo, "--step", "1")
    assert out.returncode == 0, out.stderr + out.stdout
    assert "left out" not in out.stdout
    [result] = results(repo)
    chain = result["chain"]
    assert chain["outcome"] == "approved" and "leftOut" not in chain["agents"][0]
    assert gitlinks(repo, "main") == ["vendor-lib"]
    assert "vendor-lib" in git(repo, "show", "main:.gitmodules")
    assert {".gitmodules", "vendor-lib"} <= set(result["gitStats"]["newFiles"])
