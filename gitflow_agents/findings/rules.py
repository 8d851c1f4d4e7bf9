"""The builtin reviewer's rules as data: every rule id a finding of ``reviewer/`` carries, its
severity and what it finds. ``review.rules.<rule-id>`` in ``.flow/base.yaml`` may name only
these (``config/review.py``); docs/review.md lists them.
"""

from __future__ import annotations

from gitflow_agents.base.secret_rules import TOKEN_RULES
from gitflow_agents.findings.model import Severity

# rule id -> (severity, one-line description); the table docs/review.md shows.
RULES: dict[str, tuple[Severity, str]] = {
    "python-syntax": (Severity.ERROR, "Python file does not compile"),
    "json-syntax": (Severity.ERROR, "JSON file does not parse"),
    "yaml-syntax": (Severity.ERROR, "YAML file does not parse (every document)"),
    "toml-syntax": (Severity.ERROR, "TOML file does not parse"),
    "merge-conflict-marker": (Severity.ERROR, "leftover merge-conflict marker"),
    "bidi-control": (Severity.ERROR, "Unicode control that reorders code on screen"),
    "private-key": (Severity.ERROR, "private key block"),
    # the token formats (gitflow_agents/base/secret_rules.py)
    **{rule.id: (Severity(rule.severity), rule.label) for rule in TOKEN_RULES},
    "high-entropy-secret": (Severity.WARN, "a secret-named literal that looks like a secret"),
    "large-file": (Severity.WARN, "file larger than the size limit"),
    "debugger": (Severity.WARN, "debugger or debug-print leftover"),
    "todo": (Severity.INFO, "new TODO / FIXME"),
    "no-final-newline": (Severity.INFO, "file does not end with a newline"),
}
