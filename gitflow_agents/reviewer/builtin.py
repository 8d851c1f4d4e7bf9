"""``builtin``: the offline reviewer. Runs the checks in ``checks.py`` over a git diff and writes
a report in the same shape an LLM reviewer writes (summary, fenced JSON findings, the exact
``REVIEW_RESULT:`` line), so both go through one parse → gate → render path."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from gitflow_agents.base.records import TYPE_CHECKING, NamedTuple
from gitflow_agents.base.secret_rules import KEY_BODY
from gitflow_agents.findings import Finding, Overall, Review, Severity
from gitflow_agents.findings.settings import excluded_note
from gitflow_agents.git import queries as git
from gitflow_agents.git.blobs import BINARY_PROBE, looks_binary
from gitflow_agents.git.diffparse import CommitPatch, FileChange
from gitflow_agents.reviewer import checks, syntax
from gitflow_agents.reviewer.checks import CheckOptions
from gitflow_agents.reviewer.history_secrets import check_history_secrets

if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

SYMLINK, GITLINK = "120000", "160000"  # git's modes of a symbolic link and a submodule


class BuiltinResult(NamedTuple):
    overall: Overall
    findings: tuple[Finding, ...]
    unreviewed_files: tuple[str, ...]
    notes: tuple[str, ...]  # why files were not reviewed, and similar remarks for the summary
    files_reviewed: int
    secrets: frozenset[str] = frozenset()
    """The exact secret values the range adds (for masking wherever a reviewer quotes them)."""
    excluded: tuple[str, ...] = ()
    """The changed paths ``review.exclude`` left out: never read, counted in the summary."""


WHOLE_RANGE = ("full", "full: the builtin reviewer always reviews the whole range")
"""The kind of every builtin review and why (``Review.kind``, docs/review.md, "Incremental
review"): it builds on no earlier review."""


def review_diff(
    root: StrPath,
    spec: git.DiffSpec,
    *,
    threshold: Severity = Severity.ERROR,
    options: CheckOptions | None = None,
    blobs: git.BlobReader | None = None,
    excluded: Callable[[str], object] | None = None,
    diff: Callable[[], tuple[FileChange, ...]] | None = None,
) -> BuiltinResult:
    """Check every file changed between ``spec.base`` and ``spec.head`` (None: the index)
    but those ``excluded`` says are out of the review (``review.exclude``: not read at all, in
    the net diff or any commit of the range).

    Sizes and contents come from ``blobs`` (one ``git cat-file`` for the whole review; a
    reader of its own, closed at the end, when not given); the changed files from ``diff``
    (``git.AskedDiff.changes``: the diff of ``spec``, started earlier) or ``git.diff``."""
    options = options or CheckOptions()
    with contextlib.ExitStack() as stack:
        reader = blobs if blobs is not None else stack.enter_context(git.BlobReader(root))
        every = diff() if diff is not None else git.diff(root, spec)
        out = tuple(c.path for c in every if excluded is not None and excluded(c.path))
        changes = [c for c in every if c.status != "D" and c.path not in out]
        names = [_new_object(spec, c) for c in changes]
        sizes = dict(zip(names, reader.sizes(names), strict=True))
        _old_sizes(reader, spec, changes, sizes, options)
        large = {c.path for c in changes if _added_large(spec, c, sizes, options)}
        changes = _text_files(root, spec, reader, changes)
        secrets = _change_secrets(changes, options)
        found: list[Finding] = []
        unreviewed: list[str] = []
        notes: list[str] = []
        to_parse = _screen(changes, spec, sizes, options, found, unreviewed, notes)
        found.extend(_content_findings(reader, spec, to_parse))
        # every file whose content may be read (not binary, not added over the size limit)
        readable = [c for c in changes if not c.binary and c.path not in large]
        bodies = [c for c in readable if checks.may_hold_key_body(c)]
        found.extend(_rotated_keys(reader, spec, bodies, secrets))
        if spec.head is not None:
            patches = _without(_range_patches(root, spec, reader), excluded)
            scanned = [c for c in changes if c.new_mode != SYMLINK]  # by the secret rules
            found.extend(_history_secrets(root, spec.head, patches, scanned, options))
            secrets |= _patch_secrets(patches, options)
    found.sort(key=lambda f: (f.file or "", f.line or 0, -f.severity.rank))
    blocking = any(f.severity.rank >= threshold.rank for f in found)
    return BuiltinResult(
        Overall.REVISE if blocking else Overall.APPROVE,
        tuple(found),
        tuple(unreviewed),
        tuple(notes),
        len(changes),
        frozenset(secrets),
        out,
    )


def _without(
    patches: tuple[CommitPatch, ...], excluded: Callable[[str], object] | None
) -> tuple[CommitPatch, ...]:
    """``patches`` without the paths ``excluded`` leaves out of the review."""
    if excluded is None:
        return patches
    return tuple(
        p._replace(added={k: v for k, v in p.added.items() if not excluded(k)}) for p in patches
    )


def _new_object(spec: git.DiffSpec, change: FileChange) -> str:
    """How to name the new content of ``change`` to git: its blob id (from the diff; no path
    lookup in a tree), else ``REV:PATH``."""
    if change.new_oid.strip("0"):
        return change.new_oid
    return git.object_name(spec.head, change.path)


def _old_object(spec: git.DiffSpec, change: FileChange) -> str:
    if change.old_oid:  # all zeros: no old side (an added file), which git reports missing
        return change.old_oid
    return git.object_name(spec.base, change.old_path or change.path)


_NEW_FILE = frozenset({"A", "C"})  # a diff status whose file is new: added, or a copy


def _old_sizes(
    reader: git.BlobReader,
    spec: git.DiffSpec,
    changes: list[FileChange],
    sizes: dict[str, int | None],
    options: CheckOptions,
) -> None:
    """Add to ``sizes`` the size before the change of each file now over the size limit (one
    more request, only when there is such a file)."""
    large = [
        c
        for c in changes
        if c.status not in _NEW_FILE
        and (sizes.get(_new_object(spec, c)) or 0) > options.max_file_bytes
    ]
    names = [_old_object(spec, c) for c in large]
    sizes.update(zip(names, reader.sizes(names), strict=True))


def _added_large(
    spec: git.DiffSpec, change: FileChange, sizes: dict[str, int | None], options: CheckOptions
) -> bool:
    """Whether the change adds a file over the size limit, or brings one over it (``large-file``:
    its content is not reviewed)."""
    size = sizes.get(_new_object(spec, change)) or 0
    return size > options.max_file_bytes and not _was_large(spec, change, sizes, options)


def _text_files(
    root: StrPath,
    spec: git.DiffSpec,
    reader: git.BlobReader,
    changes: list[FileChange],
) -> list[FileChange]:
    """``changes``, where git calls a file binary whose new content is text (no NUL byte in its
    first 8,000 bytes, git's own test: ``blobs.looks_binary``), as that file's diff as text.

    git calls a file binary when an attribute says so (``-diff``, ``binary``, a ``diff=``
    driver the configuration makes ``binary``: a ``.gitattributes`` in the change itself could
    hide every file from the review), or when its old side was: binary or text is decided here
    by the content, which is what is reviewed. Only the files git calls binary are read (their
    first 8,000 bytes), and only those found to be text are diffed again (``git.TEXT``, those
    paths alone), so a real binary is never read as text. A file added over the size limit
    too: the secret rules read its added lines."""
    maybe = [c for c in changes if c.binary and c.new_mode not in (SYMLINK, GITLINK)]
    if not maybe:
        return changes
    heads = reader.contents([_new_object(spec, c) for c in maybe], BINARY_PROBE)
    text = {
        c.path: c.old_path
        for c, head in zip(maybe, heads, strict=True)
        if head is not None and not looks_binary(head)
    }
    if not text:
        return changes
    paths = tuple(sorted({p for pair in text.items() for p in pair if p}))
    again = {c.path: c for c in git.diff(root, spec._replace(paths=paths), text=True)}
    return [again.get(c.path, c) if c.path in text else c for c in changes]


def _text_history(
    root: StrPath, spec: git.DiffSpec, reader: git.BlobReader, patches: tuple[CommitPatch, ...]
) -> tuple[CommitPatch, ...]:
    """``patches`` with the added lines of the files a commit shows as binary whose content
    there is text (``_text_files``' test and reasons), from one more ``git log -p`` of those
    paths as text."""
    shown = [(p.sha, new, old) for p in patches for new, old in p.binary]
    if not shown:
        return patches
    names = [git.object_name(sha, new) for sha, new, _ in shown]
    heads = reader.contents(names, BINARY_PROBE)
    text = {
        (sha, new): old
        for (sha, new, old), head in zip(shown, heads, strict=True)
        if head is not None and not looks_binary(head)
    }
    if not text:
        return patches
    paths = sorted({p for (_, new), old in text.items() for p in (new, old) if p})
    assert spec.head is not None
    again = git.commit_patches(root, spec.base, spec.head, text=True, paths=paths)
    lines = {p.sha: p.added for p in again}
    result = []
    for patch in patches:
        found = lines.get(patch.sha, {})
        more = {new: found[new] for sha, new in text if sha == patch.sha and new in found}
        result.append(patch._replace(added={**patch.added, **more}) if more else patch)
    return tuple(result)


def _was_large(
    spec: git.DiffSpec, change: FileChange, sizes: dict[str, int | None], options: CheckOptions
) -> bool:
    """Whether ``change``'s file was over the size limit before the change too: then the
    change does not add a large file (pre-commit-hooks' ``check-added-large-files`` looks at
    added files only), and its added lines, which the diff holds, are reviewed as any file's."""
    if change.status in _NEW_FILE:
        return False
    return (sizes.get(_old_object(spec, change)) or 0) > options.max_file_bytes


def _screen(
    changes: list[FileChange],
    spec: git.DiffSpec,
    sizes: dict[str, int | None],
    options: CheckOptions,
    found: list[Finding],
    unreviewed: list[str],
    notes: list[str],
) -> list[FileChange]:
    """The checks that need no file content (size, added lines), into ``found``; files left out
    go to ``unreviewed`` with a line in ``notes``. The changes whose full content must be read
    (to parse it; Python files also for the debugger rule). A symlink's content is its target
    path and a submodule's is a commit id: no content rules apply to them."""
    to_parse: list[FileChange] = []
    for change in changes:
        if change.new_mode in (SYMLINK, GITLINK):
            continue
        size = sizes.get(_new_object(spec, change)) or 0
        # the size first: a binary file is what check-added-large-files exists for
        added_large = _added_large(spec, change, sizes, options)
        if change.binary and not added_large:
            unreviewed.append(change.path)
            notes.append(f"{change.path}: binary file, not reviewed")
            continue
        if size > options.max_file_bytes and not added_large:
            found.extend(checks.check_line_rules(change, options))
            if checks.is_python(change.path):  # no AST of a file not read: line by line
                found.extend(checks.check_python_debugger(change, None))
            note = f"{change.path}: over the size limit already, only its added lines reviewed"
            if syntax.syntax_rule(change.path) is not None and (
                change.added_lines or change.deleted
            ):
                # a change that breaks it must not pass unseen: named as not reviewed
                unreviewed.append(change.path)
                note += " (its syntax is not checked)"
            notes.append(note)
            continue
        if added_large:
            # the secret rules are line checks: a key in a large file still lands in the remote
            found.extend(checks.check_secrets(change, options))
            found.append(
                checks.finding(
                    "large-file",
                    f"file is {size:,} bytes, over the {options.max_file_bytes:,}-byte limit; "
                    "consider Git LFS or leaving it out of the repository",
                    change,
                    None,
                )
            )
            unreviewed.append(change.path)
            notes.append(
                f"{change.path}: over the size limit, content not reviewed "
                "(its added lines only for secrets)"
            )
            continue
        found.extend(checks.check_line_rules(change, options))
        rule = syntax.syntax_rule(change.path)
        if rule is None or not (change.added_lines or change.deleted):
            continue  # a pure rename or mode change: content as before
        if rule[0] == "toml-syntax" and syntax.toml_parser() is None:  # imported when needed
            unreviewed.append(change.path)
            notes.append(f"{change.path}: TOML syntax not checked (needs Python 3.11+ or tomli)")
            continue
        to_parse.append(change)
    return to_parse


def _content_findings(
    reader: git.BlobReader, spec: git.DiffSpec, to_parse: list[FileChange]
) -> list[Finding]:
    """Parse the new content of every change in ``to_parse`` (its bytes, read in one batch,
    parsed as they arrive; Python files also get the debugger rule from them); a syntax error
    off the added lines counts only when the old version parsed (read in a second batch, for
    those files alone)."""
    names = [_new_object(spec, c) for c in to_parse]
    found: list[Finding] = []
    doubtful: list[tuple[FileChange, Finding]] = []
    for change, data in zip(to_parse, reader.contents(names), strict=True):
        if checks.is_python(change.path):
            found.extend(checks.check_python_debugger(change, data))
        problem = syntax.syntax_finding(change, data) if data is not None else None
        if problem is None:
            continue
        if problem[1]:
            doubtful.append((change, problem[0]))
        else:
            found.append(problem[0])
    old_names = [_old_object(spec, c) for c, _ in doubtful]
    for (change, finding), old in zip(doubtful, reader.contents(old_names), strict=True):
        if old is None or syntax.parses(change.path, old):
            found.append(finding)
    return found


def _rotated_keys(
    reader: git.BlobReader, spec: git.DiffSpec, changes: list[FileChange], secrets: set[str]
) -> list[Finding]:
    """Private keys whose body lines the changes add without their BEGIN line (a rotated key):
    the new content of each file says which block the lines are in. Their values go into
    ``secrets``."""
    found: list[Finding] = []
    names = [_new_object(spec, c) for c in changes]
    for change, text in zip(changes, reader.texts(names), strict=True):
        if text is None:
            continue
        key = list(checks.check_key_body(change, text))
        if key:
            found.extend(key)
            for added in checks.key_body_lines(change, text):
                secrets.update(KEY_BODY.findall(added.text))
    return found


def _range_patches(
    root: StrPath, spec: git.DiffSpec, reader: git.BlobReader
) -> tuple[CommitPatch, ...]:
    """The commits of ``base..head`` (``git log -p``; the files git shows as binary whose
    content is text: ``_text_history``), or none when the range is one commit on ``base``: its
    patch is the net diff, already checked."""
    assert spec.head is not None
    if spec.one_commit or git.is_one_commit(root, spec.base, spec.head):
        return ()
    return _text_history(root, spec, reader, git.commit_patches(root, spec.base, spec.head))


def diff_secrets(
    root: StrPath, spec: git.DiffSpec, options: CheckOptions | None = None
) -> frozenset[str]:
    """The exact values of the secrets ``spec`` adds, in its net diff or in any of its commits
    (what the secret rules report), without running the other checks: an agent reviewer's
    report is masked with them."""
    options = options or CheckOptions()
    with git.BlobReader(root) as reader:  # its git starts at the first read, if any
        every = [c for c in git.diff(root, spec) if c.status != "D"]
        changes = _text_files(root, spec, reader, every)
        values = _change_secrets(changes, options)
        bodies = [c for c in changes if not c.binary and checks.may_hold_key_body(c)]
        # a rotated key's body lines: the files' new content says they are a key's
        _rotated_keys(reader, spec, bodies, values)
        if spec.head is not None:
            values |= _patch_secrets(_range_patches(root, spec, reader), options)
    return frozenset(values)


def _change_secrets(changes: Sequence[FileChange], options: CheckOptions) -> set[str]:
    values: set[str] = set()
    for change in changes:
        if not change.binary:
            values |= checks.secret_values(change, options)
    return values


def _patch_secrets(patches: Sequence[CommitPatch], options: CheckOptions) -> set[str]:
    values: set[str] = set()
    for patch in patches:
        for path, (lines, _) in patch.added.items():
            values |= checks.secret_values(FileChange(path, "M", added_lines=lines), options)
    return values


def _history_secrets(
    root: StrPath,
    head: str,
    patches: Sequence[CommitPatch],
    changes: list[FileChange],
    options: CheckOptions,
) -> list[Finding]:
    """Secrets that commits of the range (``patches``, one ``git log -p``) add and later ones
    remove. ``changes``: the net diff's files whose added lines the secret rules read; a line
    one of them adds is left to the net diff's finding, any other line is checked here."""
    if len(patches) < 2:
        return []  # one commit: its diff is the net diff
    found = list(check_history_secrets(patches, changes, options))
    if not found:
        return []
    # a file that no longer exists is no location to point at: the message names it
    files = sorted({f.file for f in found if f.file})
    sizes = git.object_sizes(root, [git.object_name(head, path) for path in files])
    present = {path for path, size in zip(files, sizes, strict=True) if size is not None}
    return [f if f.file in present else f._replace(file=None) for f in found]


def _summary(result: BuiltinResult, threshold: Severity) -> str:
    counts = {s: sum(1 for f in result.findings if f.severity is s) for s in Severity}
    excluded = f" ({excluded_note(len(result.excluded))})" if result.excluded else ""
    return (
        f"builtin reviewer: {result.files_reviewed} file(s) checked{excluded}, "
        f"{counts[Severity.ERROR]} error(s), {counts[Severity.WARN]} warning(s), "
        f"{counts[Severity.INFO]} note(s); threshold {threshold.value}"
    )


def review_data(
    result: BuiltinResult,
    *,
    reviewed_sha: str | None,
    base_sha: str | None,
    threshold: Severity = Severity.ERROR,
) -> dict[str, Any]:
    """The findings block of the report (docs/protocol.md, Findings)."""
    return {
        "overall": result.overall.value,
        "summary": _summary(result, threshold),
        "findings": [f.to_dict() for f in result.findings],
        "reviewed_sha": reviewed_sha,
        "base_sha": base_sha,
        "unreviewed_files": list(result.unreviewed_files),
    }


def report_head(result: BuiltinResult, data: dict[str, Any]) -> list[str]:
    """The report's lines before its JSON block."""
    lines = ["# Review (builtin)", "", data["summary"], ""]
    lines += [f"- {note}" for note in result.notes]
    if result.notes:
        lines.append("")
    return lines


def _json_lines(value: object) -> int:
    """How many lines ``json.dumps(value, indent=2)`` takes: a value or an empty list or
    object is one line; another list or object opens and closes on lines of its own, and each
    of its items starts a line (a key and the first line of its value share one)."""
    if isinstance(value, (dict, list)) and value:
        items = value.values() if isinstance(value, dict) else value
        return 2 + sum(_json_lines(item) for item in items)
    return 1


def as_review(
    result: BuiltinResult,
    *,
    reviewed_sha: str | None,
    base_sha: str | None,
    threshold: Severity = Severity.ERROR,
) -> Review:
    """The Review that ``findings.parse_review`` reads from ``report(result, ...)``, built from
    the result's own values: no report text is parsed, no finding goes through a dict (the
    markdown parser costs more than the whole review of a small commit;
    tests/reviewer/test_builtin_content.py holds the two equal). Fingerprints are left unset, as
    ``parse_review`` leaves those of a findings block before filling them."""
    data = review_data(result, reviewed_sha=reviewed_sha, base_sha=base_sha, threshold=threshold)
    # the verdict is the report's last line, after the JSON block and its fences (counted
    # without writing it: json is imported only when a report is written, builtin_report.py,
    # issue 20)
    marker_line = len(report_head(result, data)) + 1 + _json_lines(data) + 3
    return Review(
        overall=result.overall,
        summary=data["summary"],
        findings=tuple(f._replace(fingerprint="") for f in result.findings),
        reviewed_sha=reviewed_sha,
        base_sha=base_sha,
        unreviewed_files=tuple(result.unreviewed_files),
        reason=f"{verdict_line(result)} on line {marker_line}",
        excluded_files=len(result.excluded),
    )


def verdict_line(result: BuiltinResult) -> str:
    return f"REVIEW_RESULT: {_verdict(result)}"


def _verdict(result: BuiltinResult) -> str:
    return "APPROVED" if result.overall is Overall.APPROVE else "REVISE"
