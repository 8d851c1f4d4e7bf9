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
    data, note = text.encode(), (message + "\n").encode()
    stream = b"".join(
        (
            f"commit refs/heads/{branch}\nmark :1\n".encode(),
            f"author {_ident('AUTHOR')}\ncommitter {_ident('COMMITTER')}\n".encode(),
            f"data {len(note)}\n".encode(),
            note,
            f"from refs/heads/{branch}^0\n".encode(),
            f"M 100644 inline {path}\ndata {len(data)}\n".encode(),
            data,
            b"\n",
        )
    )
    with tempfile.TemporaryDirectory() as box:
        marks = Path(box) / "marks"
        subprocess.run(
            ["git", "-C", str(origin), "fast-import", "--quiet", f"--export-marks={marks}"],
            input=stream,
            check=True,
            capture_output=True,
        )
        return marks.read_text().split()[1]
