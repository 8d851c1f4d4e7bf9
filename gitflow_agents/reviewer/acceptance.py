"""What the builtin reviewer accepts (docs/review.md, "Accepting a finding") and how it is
applied: the ``review:`` section of ``.flow/base.yaml`` and the baseline file, read by
``flow_settings.py`` (from the work tree for ``git agent-review`` and the pre-commit hook, from
the *base* commit in the Action, so a pull request cannot switch off its own review:
docs/github.md, "Configuration comes from the base branch"). The markers are on the reviewed
lines themselves (``findings/accept.py``). This module reads no file: a small review without
``.flow/`` or a baseline imports neither YAML nor JSON (issue 20)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from gitflow_agents.base.errors import InputError
from gitflow_agents.base.lazy import path as as_path
from gitflow_agents.base.records import TYPE_CHECKING, NamedTuple
from gitflow_agents.findings import Accepted, Overall, Severity
from gitflow_agents.findings.accept import LineText, accept
from gitflow_agents.findings.model import DEFAULT_BASELINE, fill_fingerprints
from gitflow_agents.findings.settings import ReviewSettings, path_threshold, pathspecs
from gitflow_agents.reviewer.builtin import BuiltinResult

if TYPE_CHECKING:
    from pathlib import Path

    from _typeshed import StrPath

LAYER = ".flow/base.yaml"


class Acceptance(NamedTuple):
    """What the builtin reviewer's findings are checked against; ``baseline_name`` names the
    baseline file in messages ("" when there is none)."""

    settings: ReviewSettings = ReviewSettings()
    baseline: frozenset[str] = frozenset()
    baseline_name: str = ""


class Scope(NamedTuple):
    """What of a change an agent reviewer is given (``review.exclude``): the changed paths it
    reviews, those excluded, and the git pathspecs of its diff (those that leave the excluded
    out, after those of the only files it reviews, when the target names them)."""

    reviewed: tuple[str, ...]
    excluded: tuple[str, ...]
    pathspecs: tuple[str, ...]


def scope_of(settings: ReviewSettings, changed: Iterable[str]) -> Scope:
    """The scope of a change touching ``changed``: the pathspecs are those of the globs that
    matched one of its paths (none when nothing is excluded, so the diff stays plain)."""
    reviewed: list[str] = []
    excluded: list[str] = []
    globs: dict[str, None] = {}
    for path in changed:
        glob = settings.excluded(path)
        if glob is None:
            reviewed.append(path)
        else:
            excluded.append(path)
            globs[glob.glob] = None
    specs = tuple(spec for glob in globs for spec in pathspecs(glob))
    return Scope(tuple(reviewed), tuple(excluded), specs)


def baseline_at(root: StrPath, baseline_file: str | None) -> tuple[Path, str] | None:
    """The baseline of a review in the work tree of ``root``: (path, name in messages) of
    ``baseline_file`` (relative to the current directory; InputError when it does not exist),
    else of the default file at the top when it exists; None when there is none."""
    if baseline_file is not None:
        found, name = baseline_file, baseline_file
        if not os.path.exists(found):  # noqa: PTH110
            raise InputError("no such baseline file (write one with --write-baseline)", path=name)
    else:
        found, name = os.path.join(root, DEFAULT_BASELINE), DEFAULT_BASELINE  # noqa: PTH118
        if not os.path.exists(found):  # noqa: PTH110
            return None
    return as_path(found), name  # a Path only for a baseline there is (issue 20)


def apply(
    result: BuiltinResult, acceptance: Acceptance, line_text: LineText, threshold: Severity
) -> tuple[BuiltinResult, tuple[Accepted, ...]]:
    """``result`` without its accepted findings (its verdict decided again from those that
    stay), and the accepted ones."""
    # The fingerprints the outputs show and --write-baseline records are computed from the
    # reported finding (file, rule, the line's text); a check may have computed its own from
    # a line the report does not carry (a secret only an earlier commit adds), so the baseline
    # compares the reported one.
    reported = fill_fingerprints((f._replace(fingerprint="") for f in result.findings), line_text)
    outcome = accept(
        reported,
        settings=acceptance.settings,
        line_text=line_text,
        baseline=acceptance.baseline,
        baseline_name=acceptance.baseline_name,
    )
    paths = acceptance.settings.paths
    blocking = any(
        f.severity.rank >= path_threshold(paths, f, threshold).rank for f in outcome.findings
    )
    overall = Overall.REVISE if blocking else Overall.APPROVE
    return result._replace(findings=outcome.findings, overall=overall), outcome.accepted
