"""``git agent-review`` / ``gitflow-agents review``: review a range, gate it, render it, record it.

One path for every reviewer: an agent reviewer's report is parsed into a Review (the builtin
reviewer gives its Review directly), the gate decides (all in ``reviewer/target.py``, which the
Action shares),
the renderers print, and the verdict is recorded as a git note on the reviewed commit (not for
``--staged``: there is no commit yet).
"""

from __future__ import annotations

import contextlib
import os
import sys

from gitflow_agents.base.errors import (
    AgentError,
    BudgetError,
    ExitCode,
    GitflowError,
    RateLimitedError,
    UsageError,
)
from gitflow_agents.base.lazy import path as as_path  # what only some reviews do needs a Path
from gitflow_agents.base.records import TYPE_CHECKING
from gitflow_agents.git import queries as git
from gitflow_agents.reviewer.locate import (
    Target,
    ask_location,
    hook_range,
    missing_history,
    nothing_to_review,
    resolve_target,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from _typeshed import StrPath

    from gitflow_agents.commands.dispatch import Args
    from gitflow_agents.findings import GateResult, Review, Severity
    from gitflow_agents.findings.settings import ReviewSettings
    from gitflow_agents.git.diffparse import FileChange
    from gitflow_agents.reviewer.acceptance import Acceptance
    from gitflow_agents.reviewer.incremental import Earlier


def _output_format(path: str, explicit: str | None) -> str:
    if explicit:
        return explicit
    suffix = os.path.splitext(path)[1].lower()  # noqa: PTH122 - no pathlib (issue 20)
    return {".sarif": "sarif", ".md": "markdown", ".rdjsonl": "rdjsonl", ".jsonl": "rdjsonl"}.get(
        suffix, "json"
    )


def run(args: Args) -> int:
    # A GIT_DIR / GIT_WORK_TREE the user gave (``git --git-dir=X --work-tree=Y agent-review``)
    # is honoured; as a hook (--hook, pre-commit, a commit hook) inherited ones never are, only
    # the index the commit is made of (``git commit -a``: GIT_INDEX_FILE names index.lock)
    with git.explicit_repository(os.environ, hook=args.hook):
        return _run(args)


def _print_review(args: Args, review: Review, result: GateResult) -> None:
    """The review in ``args.format`` on stdout, ending in a newline (coloured on a terminal
    that takes colour), flushed."""
    from gitflow_agents import render
    from gitflow_agents.base.color import use_color

    color = args.format == "terminal" and use_color(sys.stdout)
    text = render.render(review, result, args.format, color=color)
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    sys.stdout.flush()


def _write_output(args: Args, review: Review, result: GateResult) -> None:
    """``--output FILE`` in its format (``--output-format``, else from the extension), where
    ``> FILE`` would put it: a regular (or new) file replaced atomically, a FIFO, a device or
    this command's own stdout written in place (``atomic.write_output``); nothing without
    ``--output``."""
    if not args.output:
        return
    from gitflow_agents import render
    from gitflow_agents.base.atomic import write_output

    fmt = _output_format(args.output, args.output_format)
    write_output(args.output, render.render(review, result, fmt).encode("utf-8"))


def _run(args: Args) -> int:
    files = list(getattr(args, "files", None) or ())
    handed: tuple[str, ...] | None = None  # the files pre-commit hands the hook, outside a push
    if args.hook:
        if args.staged:
            raise UsageError("--hook takes its range from pre-commit; give no --staged")
        rev_range, staged, pushed = hook_range(os.environ)
        if staged:  # on pre-push they are the pushed range's files: the range is reviewed
            handed = (*([args.range] if args.range else []), *files)
            if not handed and not os.environ.get("PRE_COMMIT"):
                handed = None  # not run by pre-commit (a git hook of one's own): the staged change
    elif files:
        raise UsageError(
            f"give one RANGE at most (got {args.range!r} and {files[0]!r}); "
            "FILE arguments are --hook's, from pre-commit"
        )
    else:
        rev_range, staged, pushed = args.range, args.staged, None
    if args.output is not None:  # a folder, "" are refused before the review, not after it
        from gitflow_agents.base.atomic import refuse_folder

        refuse_folder(args.output)
    # a commit or the index: one git process, which answers while the review's modules load;
    # so does the git cat-file every content is read through, started with it
    located = ask_location(rev_range, staged=staged)
    here = os.getcwd()  # noqa: PTH109 - no pathlib on a small review's path (issue 20)
    with git.BlobReader(here) as blobs, contextlib.ExitStack() as early:
        blobs.start()
        return _review(args, rev_range, staged, pushed, handed, located, blobs, early)


def _review(
    args: Args,
    rev_range: str | None,
    staged: bool,
    pushed: str | None,
    handed: tuple[str, ...] | None,
    located: Callable[[], tuple[StrPath, Target | None]],
    blobs: git.BlobReader,
    early: contextlib.ExitStack,
) -> int:
    from gitflow_agents.findings import Severity

    root, known = located()
    if args.agent != "builtin":
        from gitflow_agents.reviewer.agent_target import runs_builtin

        if runs_builtin(as_path(root), args.agent):  # a configured agent that is the builtin
            args.agent = "builtin"
        else:
            _refuse_inside_agent(args)
    # the builtin reviewer's diff of that commit or the index starts now, and runs while the
    # reviewer's modules load (and .flow/ is read); ``early`` ends it if it is not read
    diff = None
    if known is not None and args.agent == "builtin":
        diff = early.enter_context(git.AskedDiff(root, known.spec)).changes
    untracked: list[str] = []
    if handed == ():  # pre-commit left out every staged file: nothing of the change is its
        return _nothing_handed(args, root, known, _NOTHING_HANDED)
    if handed:
        files_target, diff, untracked = _handed_files(root, known, handed, diff)
        if files_target is None and untracked:  # none of them is tracked: nothing to review
            _say_untracked(untracked)
            return ExitCode.REVISE
        if files_target is None:  # only submodules, whose commits are not reviewed
            return _nothing_handed(args, root, known, _ONLY_SUBMODULES)
        known = files_target
    from gitflow_agents.reviewer.target import exit_code, review_builtin_target

    acceptance = _acceptance(root, args)
    remarks: list[str] = []
    target = known or resolve_target(root, rev_range, staged=staged, say=remarks, pushed=pushed)
    for remark in remarks:
        print(f"git agent-review: {remark}", file=sys.stderr)
    threshold = Severity.parse(args.severity_threshold)

    empty = nothing_to_review(root, target)
    if empty is not None:
        return _report_nothing(args, target, empty, threshold)
    missing = missing_history(root, target)
    if missing is not None:  # never an approval of commits that are not here
        raise UsageError(missing)

    def review_with(accepting: Acceptance | None) -> tuple[Review, GateResult]:
        try:
            return reviewed(accepting)
        except (GitflowError, KeyboardInterrupt) as exc:  # no verdict: said, then as before
            _report_unfinished(args, target, exc, threshold)
            raise

    def reviewed(accepting: Acceptance | None) -> tuple[Review, GateResult]:
        if args.agent == "builtin":  # the hook's case: none of the agent reviewer's modules
            return review_builtin_target(
                root,
                target,
                threshold=threshold,
                max_file_size=args.max_file_size,
                acceptance=accepting,
                blobs=blobs,
                changes=diff,
            )
        from gitflow_agents.reviewer.agent_target import review_target

        return review_target(
            as_path(root),
            target,
            agent=args.agent,
            threshold=threshold,
            max_file_size=args.max_file_size,
            acceptance=accepting,
            budget=(args.budget_usd, args.budget_tokens),
            earlier=earlier,
            blobs=blobs,
            changes=diff,
        )

    earlier = _earlier(root, target, args)
    review, result = review_with(acceptance)
    if earlier is not None:
        print(f"git agent-review: {review.kind_reason}", file=sys.stderr)
    if args.write_baseline is not None:  # review again: the findings now read as accepted
        from gitflow_agents.reviewer.flow_settings import local_acceptance

        _write_baseline(root, args.write_baseline, review)
        review, result = review_with(local_acceptance(as_path(root), args.write_baseline or None))

    # the code the command exits with, --fail-on applied, is the one every output gives
    # (JSON's gate.exitCode); the verdict (approved) stays the gate's
    code = exit_code(review, result.approved, result.exit_code, args.fail_on)
    result = result._replace(exit_code=code)
    _write_output(args, review, result)
    _print_review(args, review, result)

    # a note is an approval of a commit: never from the hook's part of a commit (target.paths:
    # the files pre-commit handed over, one batch of them), only from a whole reviewed range
    recordable = not target.paths and not args.no_note and args.write_baseline is None
    if target.head is not None and recordable:
        from gitflow_agents.reviewer import record_review  # the JSON modules: only for a note

        record_review(
            root,
            reviewed_sha=target.head,
            base_sha=target.base,
            approved=result.approved,
            agent=args.agent,
            threshold=threshold.value,
            open_findings=None if earlier is None else [f.to_dict() for f in review.findings],
            scope_digest=review.scope_digest,
        )
    if untracked:  # handed over but not reviewed: never a pass
        _say_untracked(untracked)
        return code or ExitCode.REVISE
    return code


def _refuse_inside_agent(args: Args) -> None:
    """A hook's review inside an agent's run (the supervisor sets ``GITFLOW_AGENTS_RUN_ID`` for
    every agent it starts, and only for one) starts no agent reviewer: UsageError (exit 2), so
    the agent's commit or push fails and it sees why. That agent's own commit ran the hook; a
    reviewer started here that commits would run it again, each level another paid agent run,
    without end (docs/review.md, "pre-commit hooks")."""
    from gitflow_agents.runs import RUN_ID_ENV

    run_id = os.environ.get(RUN_ID_ENV)
    if run_id and (args.hook or git.in_hook(os.environ)):
        raise UsageError(
            f"not starting the agent reviewer {args.agent!r}: this hook runs inside the agent "
            f"run {run_id} ({RUN_ID_ENV} is set), whose own commit or push started it, and a "
            "reviewer started here could commit and start another, without end; leave the "
            "change uncommitted for the review of that agent's work, or commit it outside the "
            "agent"
        )


_NOTHING_HANDED = (
    "nothing to review: pre-commit handed the hook none of the staged files (the hook's "
    "`files`/`exclude` leave them all out, or the change only deletes files), so no review is made"
)


_ONLY_SUBMODULES = (
    "nothing to review: the files pre-commit handed the hook are submodules, whose new commits "
    "are not reviewed here (review them in their own repository)"
)


def _handed_files(
    root: StrPath,
    staged: Target | None,
    names: tuple[str, ...],
    changes: Callable[[], tuple[FileChange, ...]] | None,
) -> tuple[Target | None, Callable[[], tuple[FileChange, ...]] | None, list[str]]:
    """What the hook reviews of the files pre-commit hands over outside a push, the builtin
    reviewer's changes of it (``changes`` as given, filtered, or None: git's diff of the target),
    and those of the files git does not track (not reviewed).

    A commit hands over the staged files its ``files``/``exclude`` keep, in batches when they do
    not fit on one command line: when every file is in the staged change, that change restricted
    to them (``staged`` itself when it is all of them): each file's change as the whole change
    has it, a rename with its old path (a move, not an added file); a deletion only when named
    (pre-commit hands over no deleted file); a submodule's new commit is in the change but not
    reviewed (None, and no untracked file, when only submodules are handed over). Otherwise (``pre-commit run --all-files`` or
    ``--files``) the whole content of the files, as staged (the index against the empty tree),
    as pre-commit's hooks check the files they are given; None when git tracks none of them.
    A name that is no file is a usage error."""
    paths = tuple(dict.fromkeys(_from_top(root, name) for name in names))
    if staged is None:
        staged = resolve_target(root, None, staged=True)
    found = changes() if changes else None
    every = found if found is not None else git.changed_files(root, staged.spec)
    wanted = set(paths)
    missing = wanted - {c.path for c in every}
    if missing:  # a submodule's new commit is staged and handed over, and never reviewed
        missing -= git.changed_gitlinks(root, staged.spec, missing)
    if not missing:
        kept = [c for c in every if c.path in wanted]
        if not kept:  # submodules only: nothing to review
            return None, None, []
        if len(kept) == len(every):
            return staged, changes, []
        moved = (c.old_path for c in kept if c.status == "R" and c.old_path)
        restricted = tuple(dict.fromkeys((*(c.path for c in kept), *moved)))
        target = Target(
            staged.base, None, f"staged changes of {len(kept)} file(s)", paths=restricted
        )
        if found is None:  # the agent reviewer: git's diff of the target, its pathspecs
            return target, None, []
        filtered = tuple(c for c in found if c.path in wanted)
        return target, lambda: filtered, []
    tracked = git.tracked(root, paths)
    reviewed = tuple(path for path in paths if path in tracked)
    untracked = [path for path in paths if path not in tracked]
    for path in untracked:
        if not os.path.lexists(os.path.join(root, path)):  # noqa: PTH118 - issue 20
            raise UsageError(
                f"--hook: {path}: no such file (the hook's arguments are the files pre-commit "
                "hands over; its range comes from pre-commit)"
            )
    if not reviewed:
        return None, None, untracked
    print(
        f"git agent-review: reviewing the whole content of {len(reviewed)} file(s) as staged: "
        "pre-commit handed over files that are not all in the staged changes "
        "(pre-commit run --all-files or --files)",
        file=sys.stderr,
    )
    changed = git.unstaged(root, reviewed)
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if changed[5:] else "")
        print(
            f"git agent-review: the unstaged changes of {shown} are not reviewed "
            "(`git add` them to have them reviewed)",
            file=sys.stderr,
        )
    label = f"{len(reviewed)} file(s) as staged"
    return Target(git.empty_tree(root), None, label, paths=reviewed), None, untracked


def _from_top(root: StrPath, name: str) -> str:
    """``name`` (relative to the current directory: pre-commit runs hooks at the top of the
    work tree) as a path from the top of the work tree ``root``."""
    # os.path, not pathlib, on a small review's path (issue 20)
    relative = os.path.relpath(os.path.abspath(name), root)  # noqa: PTH100
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        raise UsageError(f"--hook: {name} is outside the work tree {root}")
    return relative.replace(os.sep, "/")


def _say_untracked(paths: list[str]) -> None:
    for path in paths:
        print(
            f"git agent-review: {path}: not tracked by git, so not reviewed (the hook reviews "
            "files as git has them staged): `git add` it, or leave it out",
            file=sys.stderr,
        )


def _earlier(root: StrPath, target: Target, args: Args) -> Earlier | None:
    """What an agent reviewer's review builds on: the range's last reviewed head, from the
    approval notes of its earlier commits (docs/review.md, "Incremental review"); None for the
    builtin reviewer and the staged changes (always whole)."""
    if args.agent == "builtin" or target.head is None:
        return None
    from gitflow_agents.reviewer.flow_settings import local_settings
    from gitflow_agents.reviewer.incremental import Earlier, prior_from_notes

    if getattr(args, "full", False):
        return Earlier(forced="--full was given")
    if not local_settings(as_path(root)).incremental:
        return Earlier(enabled=False)
    if target.one_commit:  # nothing of the range comes before its head
        return Earlier(unknown="the range is one commit")
    unknown = f"no commit of the range before its head has a review note by {args.agent}"
    return Earlier(prior_from_notes(as_path(root), target.base, target.head, args.agent), unknown)


def _acceptance(root: StrPath, args: Args) -> Acceptance | None:
    """What the builtin reviewer accepts, from the work tree (None for an agent reviewer);
    UsageError for the baseline options with an agent, or a FILE that is not ``.json``."""
    from gitflow_agents.reviewer.acceptance import Acceptance, baseline_at

    if args.agent != "builtin":
        if args.baseline is not None or args.write_baseline is not None:
            raise UsageError("--baseline and --write-baseline work with the builtin reviewer")
        return None
    wanted = args.write_baseline or args.baseline
    if wanted is not None and not wanted.endswith(".json"):
        raise UsageError(
            f"the baseline is a .json file, got {wanted!r} (a RANGE goes before the option: "
            "git agent-review main..HEAD --write-baseline)"
        )
    settings = _review_settings(root)
    found = baseline_at(root, args.baseline)
    if found is None:
        return Acceptance(settings)
    from gitflow_agents.reviewer.flow_settings import with_baseline  # JSON only with a baseline

    return with_baseline(settings, *found)


def _review_settings(root: StrPath) -> ReviewSettings:
    """``flow_settings.local_settings``, importing only what this layer needs: nothing without
    ``.flow/base.yaml``; its bytes and the cache when the cache holds them (most commits);
    PyYAML and the review section's checks when not; the whole shape (``plan/``, the adapters)
    only for a layer with more than ``review:`` in it (issue 20)."""
    from gitflow_agents.findings.settings import ReviewSettings
    from gitflow_agents.reviewer.acceptance import LAYER

    layer = os.path.join(root, LAYER)  # noqa: PTH118 - no pathlib on a small review's path
    if not os.path.lexists(layer):  # a dangling link is reported, not taken for "no file"
        return ReviewSettings()
    from gitflow_agents.config.layer_bytes import read_project_layer
    from gitflow_agents.reviewer import settings_cache

    data = read_project_layer(root, LAYER)  # as load_flow_config reads it: inside the project
    cached = settings_cache.load(root, data, LAYER)
    if cached is not None:
        return cached
    from gitflow_agents.config.review import layer_node, review_layer_settings, review_only

    node = layer_node(data, LAYER)
    if review_only(node):
        settings = review_layer_settings(node)
    else:
        from gitflow_agents.config.review_whole import whole_layer_settings

        settings = whole_layer_settings(node)
    settings_cache.store(root, data, LAYER, settings)
    return settings


def _write_baseline(root: StrPath, file: str, review: Review) -> None:
    """Record ``review``'s findings (and those the baseline already accepted) in ``file``
    (default: the default baseline at the top of the work tree). Re-running adds nothing
    twice."""
    from gitflow_agents.findings import baseline

    path = as_path(file) if file else as_path(root) / baseline.DEFAULT_BASELINE
    name = file or baseline.DEFAULT_BASELINE
    known = [a.finding for a in review.accepted if a.by == "baseline"]
    total, added = baseline.write(path, name, [*review.findings, *known])
    print(f"git agent-review: {name}: {added} finding(s) added, {total} recorded", file=sys.stderr)


_OUTCOMES = ((BudgetError, "budget"), (RateLimitedError, "rate_limited"), (AgentError, "failed"))
"""An error's outcome when it carries none (a budget that started no agent, a CLI not installed)."""


def _outcome(exc: GitflowError | KeyboardInterrupt) -> tuple[str, str, int]:
    """How a review that ended in ``exc`` ended: its reviewer's agent run's outcome (``budget``,
    ``failed``, ``stuck``, ``timeout``, ``canceled``, ``rate_limited``…; ``error`` when no
    agent's outcome is known), why, and the exit code the command ends with."""
    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, SIGTERM: the run records it canceled
        return "canceled", "interrupted", ExitCode.INTERRUPTED
    known = next((word for kind, word in _OUTCOMES if isinstance(exc, kind)), "error")
    return exc.outcome or known, str(exc), int(exc.exit_code)


def _report_unfinished(
    args: Args, target: Target, exc: GitflowError | KeyboardInterrupt, threshold: Severity
) -> None:
    """A review that ended in ``exc`` before its verdict (a budget stopped its reviewer or
    started none; it failed, got stuck, timed out or was canceled; a rate limit outlasted the
    wait; Ctrl-C): ``--output`` FILE is written all the same, atomically, replacing an earlier
    run's, with a document in its format that says the review did not complete, why and what
    the reviewer spent (``Review.outcome``; SARIF: an unsuccessful invocation, no result), and a
    machine ``--format`` prints it, as for a completed review; the terminal has the error line
    the caller's re-raise prints (docs/review.md, "A review that did not complete"). No note, and
    the exit code stays the error's."""
    from gitflow_agents.findings import GateResult, Review

    outcome, why, code = _outcome(exc)
    spent = getattr(exc, "spent", None) or {}
    review = Review(
        overall=None,
        reviewed_sha=target.head,
        base_sha=target.base,
        run=dict(spent),
        reason=why,
        outcome=outcome,
    )
    result = GateResult(approved=False, exit_code=code, reasons=(why,), threshold=threshold)
    if args.output:
        from gitflow_agents.commands.dispatch import describe_os_error

        try:
            _write_output(args, review, result)
        except OSError as error:  # the review's own error is the one to end with
            print(f"git agent-review: error: {describe_os_error(error)}", file=sys.stderr)
        except GitflowError as error:
            print(f"git agent-review: error: {error}", file=sys.stderr)
    if args.format != "terminal":
        _print_review(args, review, result)


def _nothing_handed(args: Args, root: StrPath, known: Target | None, why: str) -> int:
    """``_report_nothing`` of the staged change (``known``, else resolved) for a hook run that
    pre-commit handed nothing to review."""
    from gitflow_agents.findings import Severity

    staged = known or resolve_target(root, None, staged=True)
    return _report_nothing(args, staged, why, Severity.parse(args.severity_threshold))


def _report_nothing(args: Args, target: Target, why: str, threshold: Severity) -> int:
    """An empty range: exit 0, no reviewer run, no note. The terminal gets the one line; machine
    formats get a valid document that is *not approved* (nothing was), with the line as reason."""
    from gitflow_agents.findings import GateResult, Review

    review = Review(overall=None, reviewed_sha=target.head, base_sha=target.base, reason=why)
    result = GateResult(approved=False, exit_code=ExitCode.OK, reasons=(why,), threshold=threshold)
    _write_output(args, review, result)
    if args.format == "terminal":
        print(why)
    else:
        print(f"git agent-review: {why}", file=sys.stderr)
        _print_review(args, review, result)
    sys.stdout.flush()
    return ExitCode.OK
