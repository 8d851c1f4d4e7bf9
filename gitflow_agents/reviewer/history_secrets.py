"""The builtin reviewer's history scan: the secret rules over the lines every commit of a range
adds, for the secrets the net diff no longer shows (docs/review.md, "Secrets in the history,
not only in the result")."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gitflow_agents.base.secret_keywords import char_quote_file, file_kind
from gitflow_agents.findings import Finding
from gitflow_agents.git.diffparse import CommitPatch, FileChange
from gitflow_agents.reviewer.checks import CheckOptions, secret_hits, secret_values


def check_history_secrets(
    patches: Sequence[CommitPatch],
    net: Sequence[FileChange],
    options: CheckOptions,
) -> Iterator[Finding]:
    """The secret rules over the lines every commit of the range adds, for what the net diff
    does not show: a secret committed and removed again before the push still goes into the
    remote's history. A secret the net diff still adds, in whichever line or file (the line
    edited by a later commit: a marker added, reformatted; the file renamed or the line moved),
    is left to the net diff, where its finding is reported and accepted: its values are
    compared with the net diff's secret values (what the rules read there, so a value they read
    differently there is still reported here); a line the net diff adds as it is (``_reading``)
    is never read again. Each line is reported once, for the first commit that adds it. The
    finding is about the whole file (its line numbers are the commit's, not head's); the
    message names the commit and line."""
    seen = {(_reading(c.path), a.text) for c in net for a in c.added_lines}
    still_added: set[str] | None = None  # the net diff's secret values, read when first needed
    for patch in patches:
        for path, (lines, _) in patch.added.items():
            reading = _reading(path)
            fresh = {a.number: a.text for a in lines if (reading, a.text) not in seen}
            if not fresh:
                continue
            seen.update((reading, text) for text in fresh.values())
            # every added line is read (a key's body may be a line seen before), fresh ones reported
            change = FileChange(path, "M", added_lines=lines)
            for found, values in secret_hits(change, options):
                if found.line not in fresh:
                    continue
                if values:
                    if still_added is None:
                        still_added = set().union(*(secret_values(c, options) for c in net))
                    if values <= still_added:
                        continue
                message = (
                    f"{path}:{found.line} in commit {patch.sha[:12]} ({patch.subject}): "
                    f"{found.message}; the final change no longer adds it, but the commit "
                    "keeps it in the history: rewrite the commits before pushing, or revoke it"
                )
                yield Finding(
                    found.severity,
                    message,
                    file=path,
                    rule=found.rule,
                    occurrence=found.occurrence,
                ).with_fingerprint(fresh[found.line])


def _reading(path: str) -> tuple[str, bool]:
    """What the secret rules read of a line besides its text: the kind of its file (an
    unquoted value is a literal in configuration, code in source) and whether ``'…'`` is a
    character there."""
    return file_kind(path), char_quote_file(path)
