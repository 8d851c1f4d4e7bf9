"""Regenerate the golden prompt files: ``python -m tests.golden.regen`` (from the checkout root).

Review the diff (``git diff tests/golden``) before committing: every change there is a change in
what agents are told.
"""

from __future__ import annotations

from tests.golden.cases import CASES, golden_files


def main() -> int:
    changed = 0
    for case in CASES:
        for path, text in golden_files(case).items():
            old = path.read_text(encoding="utf-8") if path.exists() else None
            if old != text:
                path.write_text(text, encoding="utf-8", newline="\n")
                changed += 1
                print(f"wrote {path.name}")
    print(f"{changed} golden file(s) changed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
