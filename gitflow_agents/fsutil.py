"""Atomic file writes: a temp file in the same folder, then ``os.replace``. Never half-written."""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any


@cache
def _default_mode() -> int:
    """``0o666`` less the umask: the mode a plain ``open(..., "w")`` would give a new file.

    Read once: reading the umask means setting it, which is process-wide.
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically.

    Follows a symlink to its target (the link stays a link), creates missing parent folders,
    keeps an existing file's mode (a new file gets the umask's usual mode, not mkstemp's 0600),
    and with ``durable`` fsyncs the data before the rename. On any failure the original file is
    untouched and no temp file is left behind.
    """
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = _default_mode()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, target)  # noqa: PTH105 - the one atomic step; tests patch os.replace
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """UTF-8, newlines written exactly as given (no translation)."""
    write_bytes_atomic(path, text.encode("utf-8"), durable=durable)


def write_json_atomic(path: Path, data: Any, *, durable: bool = True) -> None:
    """Pretty JSON (UTF-8, not ASCII-escaped) with a final newline."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    write_text_atomic(path, text, durable=durable)
