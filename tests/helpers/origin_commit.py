"""A human's commit written straight into a bare origin: what a clone, an edit, a commit and a
push would leave there, in one ``git fast-import`` process instead of five (the clone and the
push each start a pack transfer)."""

from __future__ import annotations

import subprocess
import tempfile
from datetime import datetime
from pathlib import Path

from tests.conftest import GIT_ENV


def _ident(who: str) -> str:
    """``Name <email> epoch +zone`` of ``GIT_ENV`` (what the test's git commits with)."""
    when = datetime.fromisoformat(GIT_ENV[f"GIT_{who}_DATE"])
    name, email = GIT_ENV[f"GIT_{who}_NAME"], GIT_ENV[f"GIT_{who}_EMAIL"]
    return f"{name} <{email}> {int(when.timestamp())} {when.strftime('%z')}"


def commit_on_origin(origin: Path, branch: str, path: str, text: str, message: str) -> str:
    """Commit ``text`` as ``path`` on top of origin's ``branch`` (which must exist) and move the
    branch to it, as a fast-forward push would; the new commit's sha (the same commit a clone,
    ``git commit`` under ``GIT_ENV`` and a push give)."""
    return commit_files(origin, branch, [({path: text}, message)], parent=f"refs/heads/{branch}^0")


def commit_files(
    origin: Path, branch: str, commits: list[tuple[dict[str, str], str]], *, parent: str | None
) -> str:
    """``commits`` (each its files, path: text, and its message), one on top of the other, the
    first on top of ``parent`` (a root commit without one), made ``branch`` in ``origin``; the
    last one's sha."""
    stream: list[bytes] = []
    for mark, (files, message) in enumerate(commits, start=1):
        note = (message + "\n").encode()
        stream += [
            f"commit refs/heads/{branch}\nmark :{mark}\n".encode(),
            f"author {_ident('AUTHOR')}\ncommitter {_ident('COMMITTER')}\n".encode(),
            f"data {len(note)}\n".encode(),
            note,
        ]
        if parent is not None:
            stream.append(f"from {parent}\n".encode())
        for path, text in files.items():
            data = text.encode()
            stream += [f"M 100644 inline {path}\ndata {len(data)}\n".encode(), data, b"\n"]
        parent = f":{mark}"
    with tempfile.TemporaryDirectory() as box:
        marks = Path(box) / "marks"
        subprocess.run(
            ["git", "-C", str(origin), "fast-import", "--quiet", f"--export-marks={marks}"],
            input=b"".join(stream),
            check=True,
            capture_output=True,
        )
        return dict(line.split() for line in marks.read_text().splitlines())[f":{len(commits)}"]


def seeded_origin(origin: Path, files: dict[str, str]) -> Path:
    """A bare ``origin`` whose ``main`` is what a seed checkout pushed: ``init_repo``'s commit
    (``README.md``), then ``files`` as "plan and agents" (the same commits, the same shas)."""
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    initial = ({"README.md": "# demo\n"}, "initial")
    commit_files(origin, "main", [initial, (files, "plan and agents")], parent=None)
    return origin
