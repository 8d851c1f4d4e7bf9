"""Recall and false alarms of the builtin reviewer's secret rules on the peers' public test cases
(issue 20, "Measured, not asserted"): gitleaks' ``tps``/``fps`` for every token rule we claim,
and detect-secrets' keyword-plugin cases. The data is in ``tests/data/secrets/`` (trimmed
copies, with the peers' licences); ``tests/secret_cases.py`` runs each case through the
reviewer's secret check, and ``tests/base/test_redact_rules.py`` asserts every case's outcome.

Usage: python benchmarks/secret_rules.py

Prints one row per rule: positives found, negatives flagged (by any rule), and how many of the
differences are by design (docs/review.md, "Where the secret rules differ from the peers, by
design") and how many are not (each one a defect: tests/base/test_redact_rules.py fails on it).
A gitleaks negative that is the positive of a sibling rule we claim under the same id (gitleaks
tests each rule alone: an Anthropic admin key is a negative of its API-key rule) is no negative
here: counted apart (``tests/secret_cases.GITLEAKS_SIBLING_POSITIVES``), with the figure it
would give as a negative printed below the table.
Targets: gitleaks recall >= 95 % and negatives flagged <= 5 %; detect-secrets keyword recall
>= 80 % with false alarms no more than detect-secrets' own on its negatives (0).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _percent(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f} %)" if whole else "-"


def main() -> int:
    from tests.secret_cases import (
        GITLEAKS_BY_DESIGN,
        GITLEAKS_SIBLING_POSITIVES,
        gitleaks_outcomes,
        keyword_outcomes,
        load,
    )

    started = time.perf_counter()
    header = (
        "source",
        "rule",
        "positives found",
        "negatives flagged",
        "by design",
        "not by design",
    )
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    all_found = all_tps = all_flagged = all_fps = 0
    for rule in sorted(load("gitleaks_rules.json")["rules"]):
        missed, flagged, tps, fps = gitleaks_outcomes(rule)
        by_design = sum(1 for text in flagged if text in GITLEAKS_BY_DESIGN.get(rule, {}))
        all_found, all_tps = all_found + tps - len(missed), all_tps + tps
        all_flagged, all_fps = all_flagged + len(flagged), all_fps + fps
        row = ("gitleaks", rule, _percent(tps - len(missed), tps), _percent(len(flagged), fps))
        print(" | ".join((*row, str(by_design), str(len(missed) + len(flagged) - by_design))))
    by_design_all = sum(len(v) for v in GITLEAKS_BY_DESIGN.values())
    total = ("gitleaks", "**all claimed rules**", _percent(all_found, all_tps))
    rest = all_tps - all_found + all_flagged - by_design_all
    print(" | ".join((*total, _percent(all_flagged, all_fps), str(by_design_all), str(rest))))
    siblings = sum(len(cases) for cases in GITLEAKS_SIBLING_POSITIVES.values())
    missed_kw, alarms, positives, negatives = keyword_outcomes()
    designed = sum(1 for case in missed_kw + alarms if case["by_design"])
    row = (
        "detect-secrets",
        "keyword plugin → high-entropy-secret",
        _percent(positives - len(missed_kw), positives),
        _percent(len(alarms), negatives),
        str(designed),
        str(len(missed_kw) + len(alarms) - designed),
    )
    print(" | ".join(row))
    print(
        f"\ngitleaks negatives that are a sibling rule's positives, left out above: {siblings} "
        f"({', '.join(sorted(GITLEAKS_SIBLING_POSITIVES))}; every one reported, by that rule); "
        f"counted as negatives: {_percent(all_flagged + siblings, all_fps + siblings)} flagged"
    )
    print(f"{time.perf_counter() - started:.1f} s for all cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
