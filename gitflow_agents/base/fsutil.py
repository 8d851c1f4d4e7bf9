"""Files on disk, by name: atomic writes that stay inside the repository (``atomic.py``), bounded
reads (``bounded.py``) and JSON written atomically. Reads of user and agent files go through
:func:`read_limited`, which refuses what is not a regular file (a FIFO would block forever) and
what is larger than its cap. The halves live apart so that a small review reads ``.flow/`` and
writes its cache of the review settings without importing json (issue 20).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gitflow_agents.base.atomic import make_dirs as make_dirs
from gitflow_agents.base.atomic import real_path as real_path
from gitflow_agents.base.atomic import refuse_symlinks as refuse_symlinks
from gitflow_agents.base.atomic import safe_target as safe_target
from gitflow_agents.base.atomic import write_bounds as write_bounds
from gitflow_agents.base.atomic import write_bytes_atomic as write_bytes_atomic
from gitflow_agents.base.atomic import write_output as write_output
from gitflow_agents.base.atomic import write_text_atomic as write_text_atomic
from gitflow_agents.base.bounded import MAX_REPORT_CHARS as MAX_REPORT_CHARS
from gitflow_agents.base.bounded import MiB as MiB
from gitflow_agents.base.bounded import ReadRefused as ReadRefused
from gitflow_agents.base.bounded import decode_text as decode_text
from gitflow_agents.base.bounded import inside_root as inside_root
from gitflow_agents.base.bounded import irregular as irregular
from gitflow_agents.base.bounded import not_regular as not_regular
from gitflow_agents.base.bounded import outside_root as outside_root
from gitflow_agents.base.bounded import over_limit as over_limit
from gitflow_agents.base.bounded import read_agent_text as read_agent_text
from gitflow_agents.base.bounded import read_limited as read_limited
from gitflow_agents.base.bounded import read_text_limited as read_text_limited
from gitflow_agents.base.bounded import size_text as size_text

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
SAFE_NAME_RULE = "use ASCII letters, digits, '.', '_' or '-', starting with a letter or digit"
"""What a name the tool makes one folder of (a flow name, an agent id) may be: no path
traversal, no option-like leading '-', the same bytes on every file system and in a branch."""


def safe_name(value: str) -> bool:
    """Whether ``value`` follows :data:`SAFE_NAME_RULE`."""
    return SAFE_NAME.match(value) is not None


def write_json_atomic(path: Path, data: Any, *, durable: bool = True) -> None:
    """Pretty JSON (UTF-8, not ASCII-escaped) with a final newline."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    write_text_atomic(path, text, durable=durable)
