"""The peers' public test cases for secret rules, kept as data in tests/data/secrets/ (with their
licences), and how the builtin reviewer's secret rules do on each: read by
tests/base/test_redact_rules.py (every case's outcome) and benchmarks/secret_rules.py (the table).

- ``gitleaks_rules.json``: for every token rule we claim, gitleaks' ``tps`` (must be found by
  that rule) and ``fps`` (must not be flagged by any rule);
- ``detect_secrets_keyword.json``: detect-secrets' keyword-plugin cases (a line, the file it is
  read as, and the secret expected, or none).

Where we differ by design, ``by_design`` says why (docs/review.md lists the same).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from gitflow_agents.findings import Finding
from gitflow_agents.git.diffparse import AddedLine, FileChange
from gitflow_agents.reviewer.checks import CheckOptions, check_secrets

DATA = Path(__file__).resolve().parent / "data" / "secrets"


@cache
def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / name).read_text(encoding="utf-8"))
    return data


def scan(path: str, text: str) -> list[Finding]:
    """The secret findings for ``text`` as the added lines of a new file ``path``."""
    lines = tuple(AddedLine(number, line) for number, line in enumerate(text.split("\n"), 1))
    return list(check_secrets(FileChange(path, "A", added_lines=lines), CheckOptions()))


# --- detect-secrets' keyword plugin ----------------------------------------------------------

_WORDS_SECRET = "value with quotes and spaces"


def keyword_by_design(case: dict[str, Any]) -> str | None:
    """Why our outcome differs from detect-secrets' on ``case`` (None: it must not)."""
    if case["secret"] == _WORDS_SECRET:
        return "words with spaces are prose, not a secret"
    if (
        case["file"].endswith(".go")
        and case["secret"]
        and f'"{case["secret"]}' not in (case["line"].replace("`", '"').replace("'", '"'))
    ):
        return "an unquoted value in source code is code (Go: a name or an expression)"
    return None


def keyword_outcomes() -> tuple[list[dict[str, Any]], list[dict[str, Any]], int, int]:
    """(positives we miss, negatives we flag, positives, negatives), by-design cases left out
    of neither: each case carries ``by_design`` (or None) and ``found``."""
    missed: list[dict[str, Any]] = []
    alarms: list[dict[str, Any]] = []
    positives = negatives = 0
    for case in load("detect_secrets_keyword.json")["cases"]:
        found = bool(scan(case["file"], case["line"]))
        outcome = {**case, "found": found, "by_design": keyword_by_design(case)}
        if case["secret"]:
            positives += 1
            if not found:
                missed.append(outcome)
        else:
            negatives += 1
            if found:
                alarms.append(outcome)
    return missed, alarms, positives, negatives


# --- gitleaks' rule cases --------------------------------------------------------------------

# gitleaks tests each of its rules alone (``utils.Validate(rule, tps, fps)``), so a rule's fps
# may hold a positive of a sibling rule: AnthropicApiKey's "Wrong prefix (admin key, not API
# key)" is an admin key that AnthropicAdminApiKey reports, and the other way round. Where one of
# our rules claims both siblings, such a case is no negative of the pair: gitleaks itself
# reports it. Each one is listed with the sibling's pattern (gitleaks' own, without its
# boundary groups), which a test holds it to; it is counted apart, neither found nor flagged.
GITLEAKS_SIBLING_POSITIVES: dict[str, dict[str, str]] = {
    # rule -> {case text: the pattern of the gitleaks rule whose positive it is}
    "anthropic-api-key": {
        "sk-ant-admin01-abc123xyz-456def789ghij-klmnopqrstuvwx-3456yza789bcde-"
        "1234fghijklmnopby56aaaogaopaaaabc123xyzAA": r"sk-ant-admin01-[a-zA-Z0-9_\-]{93}AA",
        "sk-ant-api03-abc123xyz-456def789ghij-klmnopqrstuvwx-3456yza789bcde-"
        "1234fghijklmnopby56aaaogaopaaaabc123xyzAA": r"sk-ant-api03-[a-zA-Z0-9_\-]{93}AA",
    },
}

GITLEAKS_BY_DESIGN: dict[str, dict[str, str]] = {
    # rule -> {case text: why}
    "stripe-api-key": {
        'nonMatchingToken := "task_test_x6b3284225uwtdgvaf46wi82ljihb5"': "not a Stripe key, "
        "but a token-named variable given a random literal: high-entropy-secret warns",
    },
}


def gitleaks_outcomes(rule: str) -> tuple[list[str], list[str], int, int]:
    """(tps the rule misses, fps any rule flags, tps, fps) for one of our rule ids; the fps
    that are a sibling rule's positives (``GITLEAKS_SIBLING_POSITIVES``) are left out of both."""
    entry = load("gitleaks_rules.json")["rules"][rule]
    missed = [t for t in entry["tps"] if not any(f.rule == rule for f in scan("sample.txt", t))]
    negatives = [t for t in entry["fps"] if t not in GITLEAKS_SIBLING_POSITIVES.get(rule, {})]
    flagged = [t for t in negatives if scan("sample.txt", t)]
    return missed, flagged, len(entry["tps"]), len(negatives)
