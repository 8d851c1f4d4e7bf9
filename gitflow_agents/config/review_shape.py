"""The shape of the ``review:`` section of a `.flow/` layer (the builtin reviewer's settings;
docs/configuration.md, "review"): part of ``shape.TOP``, and all that ``review.py`` checks of
a layer that holds nothing else (issue 20).
"""

from __future__ import annotations

from gitflow_agents.config.spec import Bool, MapOf, Obj, Str, StrList
from gitflow_agents.findings.settings import DEFAULT_EXCLUDE, RULE_SEVERITIES

_GLOBS = (
    " Globs read like .gitignore lines: * and ? within one folder, ** across folders; a glob"
    " without '/' matches at any depth, one with '/' from the repository root; a folder"
    " matches everything under it."
)
REVIEW = Obj(
    doc="What is reviewed and what the builtin reviewer accepts (git agent-review, the pre-commit "
    "hook, the Action: read from the base commit there; a chain's builtin reviewer: from the "
    "work tree, with run --pr from the target's commit). Accepted findings are counted, never "
    "gate. See docs/review.md, 'Accepting a finding' and 'Scope by path'.",
    fields={
        "exclude": StrList(
            what="a path glob",
            default=DEFAULT_EXCLUDE,
            doc="Paths never reviewed: no builtin finding, left out of an agent reviewer's diff, "
            "counted in the summary. Replaces the default list (vendored, minified and lock "
            "files); [] reviews every path." + _GLOBS,
        ),
        "paths": MapOf(
            doc="Per-path settings, by path glob; where several globs match a path, the last "
            "one written wins." + _GLOBS,
            key_pattern=r"[^\s].*",
            key_what="a path glob, not empty",
            item=Obj(
                doc="The settings of findings under one glob.",
                fields={
                    "severity_threshold": Str(
                        choices=RULE_SEVERITIES,
                        doc="The lowest severity that gates a finding under the glob, instead "
                        "of --severity-threshold.",
                    ),
                },
            ),
        ),
        "incremental": Bool(
            default=True,
            doc="An agent reviewer reviews only the commits new since the last reviewed head "
            "(a pull request's synchronize, git agent-review with an approval note on an "
            "earlier commit of the range), with the pull request's files and the findings "
            "still open as context; false: every review is a full one. "
            "See docs/review.md, 'Incremental review'.",
        ),
        "rules": MapOf(
            doc="Settings per builtin rule id (python-syntax, github-token, todo, ...).",
            item=Obj(
                doc="One builtin rule.",
                fields={
                    "enabled": Bool(
                        default=True,
                        doc="false: every finding of the rule is accepted (counted, not gating).",
                    ),
                    "severity": Str(
                        choices=RULE_SEVERITIES,
                        hint="to switch a rule off, write enabled: false (YAML reads an "
                        "unquoted off as false)",
                        doc="The severity its findings get instead of the rule's own.",
                    ),
                    "exclude": StrList(
                        what="a path glob",
                        doc="Paths where this rule's findings are accepted." + _GLOBS,
                    ),
                },
            ),
        ),
    },
)
