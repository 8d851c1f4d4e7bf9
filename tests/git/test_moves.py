"""``git/moves.py``: where a file went, and the names it had, on real repositories."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.git import moves
from tests.conftest import git


def _commit(repo: Path, message: str) -> str:
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def test_former_paths_follow_every_rename_newest_first(repo: Path) -> None:
    """A plan moved by a step (`git mv specs/feat.md docs/feature.md`), then renamed again with
    a line changed (a similar rename): both earlier paths, newest first; none for a file that
    never moved, or one the commit does not have."""
    (repo / "specs").mkdir()
    text = "".join(f"### Status: | Step {n}: Part {n}\n\nDo part {n}.\n\n" for n in range(1, 6))
    (repo / "specs" / "feat.md").write_text(text)
    git(repo, "add", "specs")
    first = _commit(repo, "plan")
    (repo / "docs").mkdir()
    git(repo, "mv", "specs/feat.md", "docs/feature.md")
    _commit(repo, "move the plan")
    git(repo, "mv", "docs/feature.md", "docs/plan.md")
    (repo / "docs" / "plan.md").write_text(text.replace("Do part 5.", "Do part five."))
    git(repo, "add", "docs")
    tip = _commit(repo, "rename it, edited")
    assert moves.former_paths(repo, tip, "docs/plan.md") == ("docs/feature.md", "specs/feat.md")
    assert moves.former_paths(repo, first, "specs/feat.md") == ()
    assert moves.former_paths(repo, tip, "specs/feat.md") == ()  # gone from the tip
