"""Binary or text is decided by a file's content, never by what ``.gitattributes`` or the
repository's configuration says: ``* -diff`` (or ``binary``, or a ``diff=`` driver with
``binary = true``) added in the same change must not turn the builtin review off."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.findings import Overall
from gitflow_agents.git import queries as g
from gitflow_agents.reviewer import builtin
from tests.conftest import git
from tests.helpers.builtin import locations, review
from tests.helpers.files import commit_files

# Built at run time so this file itself never holds a literal secret-shaped string.
GITHUB_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
PRIVATE_KEY = "-----BEGIN " + "RSA PRIVATE KEY-----"
KEY_BODY = "MIIEowIBAAKCAQEAx7Qm2ZkP9sLw3Rt" + "Hq8vN4cY1uJ6bW0eT5gK2dF9sA7lZ3x"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4  # NUL bytes: binary

LEAKS: dict[str, str | bytes] = {
    "app.py": f'T = "{GITHUB_TOKEN}"\n',
    "id_rsa": f"{PRIVATE_KEY}\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----\n",
    "bad.py": "def f(:\n",
    "logo.png": PNG,
}
FOUND = [
    ("python-syntax", "bad.py", 1),
    ("private-key", "id_rsa", 1),
    ("github-token", "app.py", 1),
]


def _sorted(found: list[tuple[str | None, str | None, int | None]]) -> list[object]:
    return sorted(found, key=lambda f: (f[1] or "", f[0] or ""))


def test_a_diff_attribute_added_in_the_change_does_not_hide_text_files(repo: Path) -> None:
    """The tester's case: ``* -diff`` in the same change made every file "binary", so a token,
    a private key and a syntax error were approved. A real binary stays binary."""
    result = review(repo, {".gitattributes": "* -diff\n", **LEAKS})
    assert _sorted(locations(result)) == _sorted(FOUND)
    assert result.overall is Overall.REVISE
    assert result.unreviewed_files == ("logo.png",)
    assert any("logo.png: binary" in note for note in result.notes)
    assert GITHUB_TOKEN in result.secrets


def test_the_binary_macro_and_a_binary_driver_in_the_configuration_change_nothing(
    repo: Path,
) -> None:
    """``binary`` (``-diff -merge -text``) on some paths, a ``diff=`` driver the repository's
    configuration calls binary (and gives a textconv and an external diff that would show
    nothing) on the others: the review reads the files' own content."""
    git(repo, "config", "diff.hidden.binary", "true")
    git(repo, "config", "diff.hidden.textconv", "true")  # prints nothing
    git(repo, "config", "diff.external", "true")
    commit_files(repo, {".gitattributes": "*.py binary\nid_rsa diff=hidden\n*.png -diff\n"})
    result = review(repo, LEAKS)
    assert _sorted(locations(result)) == _sorted(FOUND)
    assert result.unreviewed_files == ("logo.png",)


def test_a_text_file_that_was_binary_before_is_reviewed(repo: Path) -> None:
    """git calls a change binary when either side is: the new side is what is reviewed."""
    result = review(repo, {"app.py": f'T = "{GITHUB_TOKEN}"\n'}, base_files={"app.py": PNG})
    assert locations(result) == [("github-token", "app.py", 1)]
    assert result.unreviewed_files == ()


def test_a_renamed_text_file_marked_binary_keeps_its_rename(repo: Path) -> None:
    """Only the lines the rename adds are reviewed, as for any renamed text file."""
    lines = "".join(f"line {i}\n" for i in range(30))
    commit_files(repo, {".gitattributes": "*.txt -diff\n", "old.txt": lines})
    base = g.head_sha(repo)
    git(repo, "mv", "old.txt", "new.txt")
    (repo / "new.txt").write_text(lines + "TODO: more\n")
    head = commit_files(repo, {})
    result = builtin.review_diff(repo, g.DiffSpec(base, head))
    assert locations(result) == [("todo", "new.txt", 31)]


def test_a_secret_in_a_commit_of_the_range_is_found_behind_a_diff_attribute(repo: Path) -> None:
    """``git log -p`` honours the attributes too: a secret added and removed again within the
    range, in a file ``.gitattributes`` marks ``-diff``, is still in the history."""
    base = g.head_sha(repo)
    leaked = commit_files(repo, {".gitattributes": "*.cfg -diff\n", "t.cfg": f"{GITHUB_TOKEN}\n"})
    commit_files(repo, {"t.cfg": "nothing here\n", "logo.png": PNG})
    head = commit_files(repo, {"logo.png": PNG + b"more"})
    result = builtin.review_diff(repo, g.DiffSpec(base, head))
    assert locations(result) == [("github-token", "t.cfg", None)]
    assert result.findings[0].message.startswith(f"t.cfg:1 in commit {leaked[:12]}")
    assert builtin.diff_secrets(repo, g.DiffSpec(base, head)) == {GITHUB_TOKEN}


def test_an_agent_reviewers_masking_sees_through_a_diff_attribute(repo: Path) -> None:
    base = g.head_sha(repo)
    commit_files(repo, {".gitattributes": "* -diff\n", **LEAKS})
    found = builtin.diff_secrets(repo, g.DiffSpec(base, g.head_sha(repo)))
    assert GITHUB_TOKEN in found and KEY_BODY in found


def test_the_staged_review_sees_through_a_diff_attribute(repo: Path) -> None:
    (repo / ".gitattributes").write_text("* -diff\n")
    (repo / "app.py").write_text(f'T = "{GITHUB_TOKEN}"\n')
    git(repo, "add", "-A")
    result = builtin.review_diff(repo, g.DiffSpec(g.head_sha(repo), None))
    assert locations(result) == [("github-token", "app.py", 1)]
