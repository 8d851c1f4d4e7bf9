"""How often the builtin reviewer agrees with pre-commit-hooks on pre-commit-hooks' own test
fixtures (tests/data/pre-commit-hooks/, trimmed with its licence).

Usage: python benchmarks/precommit_agreement.py

Each fixture is committed in a temporary repository (one commit for all) and reviewed once with
the builtin reviewer; a fixture agrees when our rule equivalent to its hook reports it exactly
when the hook fails on it (the hook's own test says which). Prints a table per hook, the overall
agreement, and the agreement where by-design differences (docs/review.md, "Compared with
pre-commit-hooks") count as intended. Target (issue 20): >= 95 %. Not an assertion.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import precommit_fixtures  # noqa: E402  (the checkout first on sys.path)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="gitflow-agents-fixtures-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        identity = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]
        for args in (["init", "-q"], [*identity, "commit", "-q", "--allow-empty", "-m", "base"]):
            subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
        cases = precommit_fixtures.review(repo)

    by_hook: dict[str, list[precommit_fixtures.Case]] = defaultdict(list)
    for case in cases:
        by_hook[case.hook].append(case)
    print(
        f"{'hook':<24} {'our rule(s)':<30} {'cases':>5} {'agree':>5} {'by design':>9} {'other':>5}"
    )
    for hook, group in by_hook.items():
        rules = ", ".join(sorted(precommit_fixtures.EQUIVALENT[hook]))
        agree = sum(c.agrees for c in group)
        design = sum(not c.agrees and c.note.startswith("by design") for c in group)
        other = len(group) - agree - design
        print(f"{hook:<24} {rules:<30} {len(group):>5} {agree:>5} {design:>9} {other:>5}")
    agree = sum(c.agrees for c in cases)
    design = sum(not c.agrees and c.note.startswith("by design") for c in cases)
    print(f"\nagreement: {agree}/{len(cases)} = {agree / len(cases):.1%}")
    print(
        f"agreement, by-design differences counted as intended: {agree + design}/{len(cases)} "
        f"= {(agree + design) / len(cases):.1%}"
    )
    for case in cases:
        if not case.agrees:
            print(f"  {case.path}: hook {'fails' if case.hook_fails else 'passes'}; {case.note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
