"""Regenerate the golden prompt files and flowcharts: ``python -m tests.golden.regen`` (from the
checkout root).

Review the diff (``git diff tests/golden``) before committing: every change there is a change in
what agents are told (or in the run pictures users see, tests/golden/mermaid/).
"""

from __future__ import annotations

from pathlib import Path

from tests.golden.cases import CASES, golden_files
from tests.golden.mermaid_cases import mermaid_files


def main() -> int:
    changed = 0
    files: dict[Path, str] = {}
    for case in CASES:
        files.update(golden_files(case))
    files.update(mermaid_files())
    for path, text in files.items():
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != text:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
            changed += 1
            print(f"wrote {path.name}")
    print(f"{changed} golden file(s) changed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
