"""Where the builtin reviewer's acceptance comes from (docs/review.md, "Accepting a finding"):
the ``review:`` section of ``.flow/base.yaml`` and the baseline file, read from the work tree
for ``git agent-review`` and the pre-commit hook, and from the *base* commit in the Action, so
a pull request cannot switch off its own review (docs/github.md, "Configuration comes from the
base branch"). The markers are on the reviewed lines themselves (``findings/accept.py``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gitflow_agents.base.errors import InputError
from gitflow_agents.findings import Accepted, Overall, Severity
from gitflow_agents.findings.accept import LineText, accept
from gitflow_agents.findings.model import DEFAULT_BASELINE, fill_fingerprints
from gitflow_agents.findings.settings import ReviewSettings, path_threshold, pathspecs
from gitflow_agents.git import queries as git
from gitflow_agents.reviewer.builtin import BuiltinResult

if TYPE_CHECKING:
    from gitflow_agents.config.yaml_nodes import Node

LAYER = ".flow/base.yaml"


class Acceptance(NamedTuple):
    """What the builtin reviewer's findings are checked against; ``baseline_name`` names the
    baseline file in messages ("" when there is none)."""

    settings: ReviewSettings = ReviewSettings()
    baseline: frozenset[str] = frozenset()
    baseline_name: str = ""


def _settings(text: str | None, name: str) -> ReviewSettings:
    if text is None:
        return ReviewSettings()
    # config/ only when there is a layer to read: a review without one is the hook's common
    # case, and those imports cost more than a small review
    from gitflow_agents.config.review import parse_text_layer  # noqa: PLC0415 — see above

    return _checked(parse_text_layer(text, name))


def _layer_settings(layer: Path) -> ReviewSettings:
    from gitflow_agents.config.review import read_file_layer  # noqa: PLC0415 — see _settings

    return _checked(read_file_layer(layer, LAYER))


def _checked(layer: Node) -> ReviewSettings:
    """The review settings of a parsed layer, checked as every command checks it."""
    from gitflow_agents.config.review import review_layer_settings, review_only  # noqa: PLC0415 — see _settings

    if review_only(layer):
        return review_layer_settings(layer)
    # more than review: in it: the whole shape, which loads plan/ and the adapters
    from gitflow_agents.config.review_whole import whole_layer_settings  # noqa: PLC0415 — see above

    return whole_layer_settings(layer)


class Scope(NamedTuple):
    """What of a change an agent reviewer is given (``review.exclude``): the changed paths it
    reviews, those excluded, and the git pathspecs that leave them out of its diff."""

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


def local_settings(root: Path) -> ReviewSettings:
    """The ``review:`` settings of the ``.flow/base.yaml`` under ``root`` (the defaults when
    there is none): what an agent reviewer's scope and thresholds come from."""
    layer = root / LAYER
    return _layer_settings(layer) if layer.exists() else ReviewSettings()


def settings_at(root: Path, sha: str) -> ReviewSettings:
    """The ``review:`` settings of the commit ``sha``'s ``.flow/base.yaml``."""
    return _settings(git.show_file(root, sha, LAYER), f"{sha[:12]}:{LAYER}")


def local_acceptance(root: Path, baseline_file: str | None) -> Acceptance:
    """From the work tree of ``root``: ``.flow/base.yaml`` and the baseline (``baseline_file``
    relative to the current directory, which must exist; else the default file when it
    exists)."""
    settings = local_settings(root)
    if baseline_file is not None:
        path, name = Path(baseline_file), baseline_file
        if not path.exists():
            raise InputError("no such baseline file (write one with --write-baseline)", path=name)
    else:
        path, name = root / DEFAULT_BASELINE, DEFAULT_BASELINE
    if not path.exists():
        return Acceptance(settings)
    from gitflow_agents.findings import baseline as baselines  # noqa: PLC0415 — JSON only with a baseline

    entries = baselines.read(path, name)
    return Acceptance(settings, baselines.fingerprints(entries), name)


def acceptance_at(root: Path, sha: str) -> Acceptance:
    """From the commit ``sha`` (the base of a pull request or merge group): its committed
    ``.flow/base.yaml`` and default baseline file, never the reviewed commits' own."""
    settings = _settings(git.show_file(root, sha, LAYER), f"{sha[:12]}:{LAYER}")
    name = f"{sha[:12]}:{DEFAULT_BASELINE}"
    text = git.show_file(root, sha, DEFAULT_BASELINE)
    if text is None:
        return Acceptance(settings)
    from gitflow_agents.findings import baseline as baselines  # noqa: PLC0415 — JSON only with a baseline

    if len(text.encode("utf-8", "surrogatepass")) > baselines.MAX_BASELINE_BYTES:
        raise InputError(f"over the {baselines.MAX_BASELINE_BYTES:,}-byte limit", path=name)
    return Acceptance(settings, baselines.fingerprints(baselines.parse(text, name)), name)


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
