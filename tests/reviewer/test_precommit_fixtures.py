"""The builtin reviewer on pre-commit-hooks' own test fixtures (tests/data/pre-commit-hooks/):
each fixture's outcome is what cases.json says, and every difference from the hook is noted."""

from __future__ import annotations

import pytest

from tests import precommit_fixtures
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[precommit_fixtures.Case]:
    import subprocess

    repo = tmp_path_factory.mktemp("fixtures") / "repo"
    repo.mkdir()
    for args in (
        ["init", "-q", "-b", "main"],
        [
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "base",
        ],
    ):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return precommit_fixtures.review(repo)


def test_every_fixture_has_the_outcome_cases_json_gives(
    outcomes: list[precommit_fixtures.Case],
) -> None:
    wrong = [
        (c.path, f"expected {c.expected}, reported {c.reported}")
        for c in outcomes
        if c.expected is not None and c.reported != c.expected
    ]
    assert wrong == []


def test_every_difference_from_the_hook_is_explained(
    outcomes: list[precommit_fixtures.Case],
) -> None:
    unexplained = [c.path for c in outcomes if not c.agrees and not c.note]
    assert unexplained == []
    assert len(outcomes) >= 60 and len({c.hook for c in outcomes}) == 9


def test_by_design_differences_are_listed_in_the_docs(
    outcomes: list[precommit_fixtures.Case],
) -> None:
    doc = (ROOT / "docs" / "review.md").read_text()
    section = doc.split("### Compared with pre-commit-hooks", 1)[1]
    for case in outcomes:
        if case.note.startswith("by design"):
            assert f"`{case.hook}`" in section, case.path
