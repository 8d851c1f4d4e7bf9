"""``git-agent-review``: the console script behind ``git agent-review``.

git runs ``git-<name>`` from PATH for ``git <name>``, so installing this script is all it takes.
(``git agent-review --help`` makes git open the man page git-agent-review(1), shipped from
docs/man/ and linked where man finds it by ``manpage.ensure_reachable``; ``-h`` always works, see
docs/review.md.) Kept light: the everyday forms import neither argparse nor ``cli`` (issue 20),
the work is in commands/review.py.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from types import SimpleNamespace

from gitflow_agents import __version__
from gitflow_agents.base.records import TYPE_CHECKING
from gitflow_agents.commands.dispatch import dispatch, escape_unencodable

if TYPE_CHECKING:
    import argparse

FORMATS = ("terminal", "json", "sarif", "rdjsonl", "annotations", "markdown")
SEVERITIES = ("error", "warn", "info")

DESCRIPTION = """\
Review a range of commits (or the staged changes) with the built-in offline reviewer or a
configured agent, print the findings, and record an approval note on the reviewed commit.

RANGE is A..B, A...B (from their merge-base), or a single commit (its parent..it); A..B
with A the empty tree's id (4b825dc642cb6eb9a060e54bf8d69288fbee4904) is every commit of B.
Default: merge-base with the default branch (origin/HEAD, else main/master) ..HEAD.
"""

EPILOG = """\
exit codes: 0 approved, 1 revise / findings at the threshold / no valid verdict, 2 usage or
configuration error, 3 agent failed, stuck, timed out or canceled, 5 a budget ran out, 6 rate
limited past the wait, 70 internal error (a bug: see the crash log named), 130 interrupted.
"""


def add_review_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``git agent-review`` (shared with ``gitflow-agents review``)."""
    import argparse

    from gitflow_agents.commands.budget import BUDGET_USD
    from gitflow_agents.commands.options import FILE_SIZE, non_negative_int

    parser.add_argument("range", nargs="?", metavar="RANGE", help="A..B, A...B or a commit")
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="with --hook: the files pre-commit hands over (reviewed whole, as staged, when they "
        "are not all staged: --all-files, --files)",
    )
    parser.add_argument("--staged", action="store_true", help="review the index against HEAD")
    parser.add_argument(
        "--agent", default="builtin", help="reviewer: builtin (default) or a configured agent"
    )
    parser.add_argument(
        "--severity-threshold",
        choices=SEVERITIES,
        default="error",
        help="findings at or above this severity mean revise (default: error)",
    )
    parser.add_argument(
        "--fail-on",
        choices=("revise", "never", *SEVERITIES),
        default="revise",
        help="exit 1 when: revise (not approved, default), never (always 0 when the review ran), "
        "or a severity (also when any finding is at or above it)",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="terminal", help="what to print (default: terminal)"
    )
    parser.add_argument(
        "--output",
        metavar="FILE",
        help="also write the result to FILE (also when the reviewer gives no verdict: "
        "it then says the review did not complete, and why)",
    )
    parser.add_argument(
        "--output-format",
        choices=FORMATS,
        help="format for --output (default: from the extension: .sarif, .md, .rdjsonl or "
        ".jsonl; else json)",
    )
    parser.add_argument(
        "--max-file-size",
        type=FILE_SIZE,
        default=1024 * 1024,
        metavar="BYTES",
        help="builtin: files above this size get a large-file finding (default: 1 MiB)",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="an agent reviewer reviews the whole range, even when an earlier commit of it "
        "was reviewed (default: only the commits since; review.incremental)",
    )
    parser.add_argument(
        "--no-note",
        action="store_true",
        help="do not record the review as a git note on the reviewed commit",
    )
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="builtin: accept the findings recorded in FILE (default: "
        ".agent-review-baseline.json at the top of the work tree, when it exists)",
    )
    parser.add_argument(
        "--write-baseline",
        nargs="?",
        const="",
        metavar="FILE",
        help="builtin: record today's findings in FILE (default: .agent-review-baseline.json); "
        "later reviews report only new ones. No note is recorded",
    )
    parser.add_argument(
        "--budget-usd",
        type=BUDGET_USD,
        metavar="X",
        help="an agent reviewer: stop it at X USD spent by this review (overrides .flow/ "
        "budget.review; not approved, exit 5); checked before it starts, stopped mid-run only "
        "where its CLI prints usage as it runs (claude, codex, opencode)",
    )
    parser.add_argument(
        "--budget-tokens",
        type=non_negative_int,
        metavar="N",
        help="an agent reviewer: stop it at N tokens (input plus output) used by this review",
    )
    parser.add_argument(
        "--hook",
        action="store_true",
        help="run as a pre-commit hook: the pushed range on pre-push (PRE_COMMIT_FROM_REF.."
        "PRE_COMMIT_TO_REF, or PRE_COMMIT_LOCAL_BRANCH from the empty tree when its whole "
        "history is new to the remote), else the staged changes, or the FILEs pre-commit hands over when they are "
        "not all staged",
    )
    from gitflow_agents.cli import COLOR_CHOICES, COLOR_HELP

    # gitflow-agents has --color before the command too: here it only overrides that one
    parser.add_argument(
        "--color", choices=COLOR_CHOICES, default=argparse.SUPPRESS, help=COLOR_HELP
    )
    parser.set_defaults(module="review")


# The options of the everyday forms (the hook, a commit, a range, CI's --format): argv made of
# only these is read without building the parser (``plain_args``), which was a tenth of a small
# review's start-up (issue 20). Anything else, a typo, an abbreviation, ``-h``, goes to argparse.
_FLAGS = {"--staged": "staged", "--no-note": "no_note", "--hook": "hook", "--full": "full"}
_CHOICES = {
    "--format": ("format", FORMATS),
    "--severity-threshold": ("severity_threshold", SEVERITIES),
    "--fail-on": ("fail_on", ("revise", "never", *SEVERITIES)),
}


def plain_args(argv: Sequence[str], **more: object) -> SimpleNamespace | None:
    """The values ``build_parser().parse_args(argv)`` gives, when ``argv`` holds only an optional
    RANGE and FILEs (one run of words: the hook's files follow its options), ``--staged``,
    ``--no-note``, ``--hook`` and ``--format`` / ``--severity-threshold`` / ``--fail-on`` with
    a valid choice; else None (then the parser reads it, and says what is wrong). ``more``:
    what the caller's parser adds (``gitflow-agents review``: the command). A test holds the
    two equal."""
    values: dict[str, object] = {}
    names: list[str] = []
    after_names = False  # an option came after the run of names: another name is the parser's
    words = iter(argv)
    for word in words:
        name, eq, value = word.partition("=")
        if word in _FLAGS:
            values[_FLAGS[word]] = True
        elif name in _CHOICES:
            dest, choices = _CHOICES[name]
            value = value if eq else next(words, "")
            if value not in choices:
                return None
            values[dest] = value
        elif word.startswith("-") or after_names:
            return None
        else:
            names.append(word)
            continue
        after_names = bool(names)
    return SimpleNamespace(
        range=names[0] if names else None,
        files=names[1:],
        staged=values.get("staged", False),
        agent="builtin",
        severity_threshold=values.get("severity_threshold", "error"),
        fail_on=values.get("fail_on", "revise"),
        format=values.get("format", "terminal"),
        output=None,
        output_format=None,
        max_file_size=1024 * 1024,
        full=values.get("full", False),
        no_note=values.get("no_note", False),
        baseline=None,
        write_baseline=None,
        hook=values.get("hook", False),
        budget_usd=None,
        budget_tokens=None,
        color="auto",
        module="review",
        chdir=None,
        **more,
    )


def build_parser() -> argparse.ArgumentParser:
    import argparse

    from gitflow_agents.cli import Parser

    parser = Parser(
        prog="git agent-review",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"%(prog)s {__version__}")
    add_review_arguments(parser)
    parser.set_defaults(chdir=None, color="auto")
    return parser


def fewer_collections() -> None:
    """A review's process is short and what it allocates at start-up (its modules' classes,
    functions and tables) lives to the end: Python's cyclic collector, run every 700
    allocations by default, ran about twenty times while a small review started, ~3 ms of its
    CPU (issue 20). Every 50,000 allocations instead, as mypy raises it for the same reason;
    reference counting still frees everything that is not a cycle at once."""
    gc.set_threshold(50_000, 20, 20)


def options_naming_files(words: Sequence[str]) -> list[str]:
    """Under ``--hook``, the words that read as options and also name a file here. pre-commit
    puts the files it hands over after the hook's options, so a file named ``--fail-on=never``
    would be read as that option: one committed file would switch the review's verdict off in
    ``pre-commit run --all-files``. The hook refuses such an argv (exit 2) instead."""
    if "--hook" not in words:
        return []
    import os.path

    return [word for word in words if word.startswith("-") and os.path.lexists(word)]


def refuse_options_naming_files(words: Sequence[str], prog: str) -> bool:
    """Say so and return True when ``options_naming_files(words)`` finds any."""
    found = options_naming_files(words)
    for word in found:
        print(
            f"{prog}: error: {word!r} is an option and also a file here; pre-commit hands a "
            "hook its files after its options, so the file would be read as that option: "
            "rename it (the review is refused)",
            file=sys.stderr,
        )
    return bool(found)


def main(argv: Sequence[str] | None = None) -> int:
    escape_unencodable()
    fewer_collections()
    if argv is not None and any("\0" in word for word in argv):  # in-process only
        print("git agent-review: error: an argument contains a NUL character", file=sys.stderr)
        return 2
    if refuse_options_naming_files(sys.argv[1:] if argv is None else argv, "git agent-review"):
        return 2
    from gitflow_agents.commands.manpage import ensure_reachable

    ensure_reachable()  # so that `git agent-review --help` finds the page next time
    try:
        args = plain_args(sys.argv[1:] if argv is None else argv) or build_parser().parse_args(argv)
    except Exception as exc:  # a bug in building the parser: exit 70, like one in the review
        from gitflow_agents.base import crash

        return crash.report(exc, "git agent-review")
    return dispatch(args, prog="git agent-review")


def gitflow_agents_main(argv: Sequence[str] | None = None) -> int:
    """The ``gitflow-agents`` console script. The pre-commit hook's form (``gitflow-agents
    review`` with an everyday argv, on every commit) is read by ``plain_args`` and runs without
    importing ``cli`` or argparse (issue 20); anything else is ``cli.main``."""
    escape_unencodable()
    words = sys.argv[1:] if argv is None else list(argv)
    if words[:1] == ["review"] and refuse_options_naming_files(words[1:], "gitflow-agents"):
        return 2
    quick = None
    if words[:1] == ["review"] and not any("\0" in word for word in words):
        quick = plain_args(words[1:], command="review")
    if quick is None:
        from gitflow_agents.cli import main as cli_main

        return cli_main(words)
    fewer_collections()
    from gitflow_agents.commands.manpage import ensure_reachable

    ensure_reachable()  # `git agent-review --help` finds its page (uv tool installs: manpage.py)
    return dispatch(quick)


if __name__ == "__main__":
    raise SystemExit(main())
