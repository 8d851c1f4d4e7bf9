"""Command-line wiring only: build the parser, import the chosen command's module, run it.

Start-up stays fast because nothing heavy (PyGithub, Jinja2, markdown-it, PyYAML) is imported
here: a command's module is imported only when that command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from gitflow_agents import __version__
from gitflow_agents.base.errors import ExitCode
from gitflow_agents.commands.dispatch import describe_os_error as describe_os_error
from gitflow_agents.commands.dispatch import dispatch, escape_unencodable

if TYPE_CHECKING:
    SubParsers = argparse._SubParsersAction["Parser"]


ECHOED = 20
"""How much of one command-line value an argparse error repeats; the rest becomes ``…``."""
# a quoted value longer than ECHOED (argparse's repr), or an unquoted word much longer
_ECHO = re.compile(
    rf"""'[^'\n]{{{ECHOED + 1},}}'|"[^"\n]{{{ECHOED + 1},}}"|[^\s'"]{{{3 * ECHOED},}}"""
)


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors repeat at most :data:`ECHOED` characters of a value
    (``must be a whole number at least 0, got '99999999999999999999…'``): a 5,000-digit ``--step`` filled the
    terminal. Sub-command parsers are of this class too (``add_subparsers`` uses the parent's)."""

    def error(self, message: str) -> NoReturn:
        super().error(_ECHO.sub(_shorten, message))

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        """``--opt=--`` gives the option the value ``--``: argparse (before 3.12.7/3.13.1)
        takes that ``--`` for its end-of-options marker and drops it, leaving an empty list,
        which reached the commands as the option's value (``--budget-usd=--`` ended in an
        internal error, ``--kill-grace=--`` ran with ``[]``); now it is converted and checked
        as any value (``must be a finite number …, got '--'``, exit 2)."""
        if action.nargs is None and arg_strings == ["--"] and action.option_strings:
            value = self._get_value(action, "--")
            self._check_value(action, value)  # a choice: as argparse checks one
            return value
        return super()._get_values(action, arg_strings)


def _shorten(match: re.Match[str]) -> str:
    value = match[0]
    quote = value[0] if value[0] in "'\"" else ""
    body = value[1:-1] if quote else value
    return f"{quote}{body[:ECHOED]}…{quote}"


class _NotThisCommand(Exception):
    """Raised by ``_command`` to skip the rest of an ``_add_<name>`` that will not run."""


class Registry:
    """The subcommand table being built, and which command (if any) the arguments name.

    Every command registers its name and help (so ``--help`` lists them all), but only the
    command that will run gets its arguments: the gate hook and ``--help`` stay fast.
    """

    def __init__(self, subparsers: SubParsers, wanted: str | None) -> None:
        self.subparsers = subparsers
        self.wanted = wanted


def _command(sub: Registry, name: str, module: str, *, help: str) -> argparse.ArgumentParser:
    parser = sub.subparsers.add_parser(name, help=help, description=help)
    parser.set_defaults(module=module)
    if sub.wanted is not None and sub.wanted != name:
        raise _NotThisCommand
    return parser


def _add_init(sub: Registry) -> None:
    p = _command(sub, "init", "init", help="scaffold .flow/ (never overwrites existing files)")
    p.add_argument("--force", action="store_true", help="overwrite files that already exist")
    p.add_argument(
        "--example",
        action="store_true",
        help="the offline example: a plan whose steps carry diffs and agents that need no CLI "
        "(patch, builtin), so `run specs/example-plan.md --all` lands it in seconds",
    )


def _add_plan(sub: Registry) -> None:
    p = _command(sub, "plan", "plan", help="inspect and validate spec plans")
    from gitflow_agents.commands.plan_args import add_plan_subcommands

    add_plan_subcommands(p)


def _prompt_input_arguments(p: argparse.ArgumentParser, *, flow_dest: str) -> None:
    """What the system prompt is built from: shared by ``prompt`` and ``spawn``."""
    p.add_argument("--agent-name", help="unique agent id (default: step-NN-<agent>)")
    p.add_argument("--flow", dest=flow_dest, help="flow name: flows/<flow>/ (default: the plan's)")
    from gitflow_agents.commands.options import add_layer_arguments, non_negative_int

    add_layer_arguments(p)
    p.add_argument("--plan", help="spec plan (markdown)")
    p.add_argument("--step", type=non_negative_int, help="step number in the plan")
    p.add_argument("--task", help="raw task text (instead of, or in addition to, a plan)")
    p.add_argument("--after", help="previous agent id(s) whose reports it reads, comma separated")
    p.add_argument("--preamble", help="assignment preamble text")


def _add_prompt(sub: Registry) -> None:
    p = _command(sub, "prompt", "prompt", help="print the full system prompt an agent would get")
    p.add_argument(
        "--agent",
        required=True,
        help="agent type (.flow/) or agentId (.agents-flow/)",
    )
    _prompt_input_arguments(p, flow_dest="flow_name")
    p.add_argument(
        "--segments", action="store_true", help="show which layer/file each part is from"
    )
    p.add_argument("--json", action="store_true", help="with --segments: print JSON")


def _add_review(sub: Registry) -> None:
    p = _command(
        sub, "review", "review", help="review a range or the staged changes (= git agent-review)"
    )
    from gitflow_agents.git_agent_review import add_review_arguments

    add_review_arguments(p)


def _add_hook(sub: Registry) -> None:
    p = _command(sub, "hook", "hook", help="entry points for the pre-commit hooks")
    hook_sub = p.add_subparsers(dest="hook_command", metavar="{gate}", required=True)
    gate = hook_sub.add_parser("gate", help="refuse unless the commit has a recorded approval")
    gate.add_argument(
        "rev",
        nargs="?",
        help="commit to check (default: the pushed commit pre-commit names, PRE_COMMIT_TO_REF or "
        "PRE_COMMIT_LOCAL_BRANCH; HEAD outside a push)",
    )
    gate.add_argument(
        "--pre-push",
        nargs=2,
        metavar=("REMOTE", "URL"),
        help='run as git\'s own pre-push hook (`exec gitflow-agents hook gate --pre-push "$@"`): '
        "gate every pushed ref git lists on stdin (pre-commit names only one)",
    )


def _add_action(sub: Registry) -> None:
    p = _command(
        sub, "action", "action", help="run as the GitHub Action (reads GITHUB_* from the runner)"
    )
    p.add_argument("--agent", default="builtin", help="reviewer: builtin (default) or an agent")
    p.add_argument(
        "--severity-threshold",
        choices=("error", "warn", "info"),
        default="error",
        help="findings at or above this severity block approval (default: error)",
    )
    p.add_argument(
        "--fail-on",
        choices=("revise", "never", "error", "warn", "info"),
        default="revise",
        help="when the job fails (default: revise); the commit status is the merge gate",
    )
    from gitflow_agents.commands.options import FILE_SIZE, non_negative_int

    p.add_argument(
        "--max-inline", type=non_negative_int, default=50, help="inline comments per head commit"
    )
    p.add_argument("--max-file-size", type=FILE_SIZE, default=1024 * 1024, metavar="BYTES")
    p.add_argument("--review-drafts", action="store_true", help="also review draft PRs")
    p.add_argument("--allow-bots", action="store_true", help="also act on events sent by bots")
    p.add_argument(
        "--comment-author",
        metavar="LOGIN",
        help="login our comments appear under (default: learned from GitHub's answers)",
    )
    p.add_argument(
        "--check-run",
        action="store_true",
        help="also create a check run with the findings as annotations (when the token may)",
    )
    p.add_argument(
        "--post-findings",
        metavar="FILE",
        help="do not review: post FILE, the findings-file of an earlier (read-only) review job",
    )
    p.add_argument(
        "--fixer",
        default="fixer",
        metavar="AGENT",
        help="agent /agent fix runs, from the base commit's .flow/ (default: fixer)",
    )


def _add_spawn(sub: Registry) -> None:
    p = _command(sub, "spawn", "spawn", help="run one agent on a plan step, supervised")
    p.add_argument("agent", help="agent from the config (.flow/) or .agents-flow/ agentId")
    _prompt_input_arguments(p, flow_dest="flow")
    p.add_argument(
        "--kind",
        choices=("implement", "review", "research"),
        help="result.json shape (default: review for reviewer agents, else implement)",
    )
    p.add_argument("--card", help="card (markdown) whose frontmatter and history the run updates")
    p.add_argument(
        "--branch", help="branch named in the card history (default: the checked-out branch)"
    )
    p.add_argument("--rerun", action="store_true", help="move an earlier report to previous/")
    from gitflow_agents.commands.budget import add_budget_arguments
    from gitflow_agents.commands.options import add_agent_run_arguments

    add_budget_arguments(p, "by this agent run")
    add_agent_run_arguments(p, "print result.json on stdout")


def _add_status(sub: Registry) -> None:
    p = _command(sub, "status", "status", help="agents and runs: state and last activity")
    p.add_argument("--flow", help="only this flow")
    p.add_argument("--json", action="store_true", help="print JSON")


def _add_heartbeat(sub: Registry) -> None:
    p = _command(sub, "heartbeat", "heartbeat", help="run by an agent: I am alive (resets stuck)")
    p.add_argument("message", nargs="?", help="optional note stored with the heartbeat")


def _cancel_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "run_id",
        metavar="RUN_ID",
        help="an agent run's id, or a running step run's (or a unique prefix of 8+ chars)",
    )
    from gitflow_agents.commands.options import CANCEL_WAIT, SECONDS, SECONDS_FROM_0

    p.add_argument(
        "--wait",
        type=SECONDS,
        default=CANCEL_WAIT,
        help=f"seconds to let its supervisor act (default {CANCEL_WAIT:g}), {SECONDS_FROM_0}",
    )


def _add_cancel(sub: Registry) -> None:
    _cancel_arguments(
        _command(sub, "cancel", "cancel", help="stop one agent's process tree; run = canceled")
    )


def _add_abort(sub: Registry) -> None:
    _cancel_arguments(
        _command(sub, "abort", "cancel", help="= cancel: stop one agent's tree; run = canceled")
    )


def _session_command(name: str, event: str) -> Callable[[Registry], None]:
    """`send` emits session:message, its alias `reply` session:reply (docs/protocol.md, Sessions)."""

    def add(sub: Registry) -> None:
        p = _command(
            sub,
            name,
            "send",
            help="a message to a running agent (now, or queued), or continue a finished "
            "agent's session (new run), or --close it",
        )
        p.set_defaults(session_event=event)
        p.add_argument("run_id", metavar="RUN_ID", help="run id (or a unique prefix of 8+ chars)")
        p.add_argument("message", nargs="?", metavar="MESSAGE", help="the next user turn")
        p.add_argument("--close", action="store_true", help="end the session: no further sends")
        from gitflow_agents.commands.options import (
            add_agent_run_arguments,
            add_layer_arguments,
            positive_int,
        )

        p.add_argument(
            "--max-turns", type=positive_int, help="turns the session may have (spawn = 1)"
        )
        from gitflow_agents.commands.options import SECONDS, SECONDS_FROM_0, SEND_WAIT

        p.add_argument(
            "--wait",
            type=SECONDS,
            default=SEND_WAIT,
            help="a running agent: seconds its orchestrator has to confirm "
            f"(default {SEND_WAIT:g}), {SECONDS_FROM_0}",
        )

        add_layer_arguments(p)
        add_agent_run_arguments(p, "print result.json on stdout")

    return add


def _add_run(sub: Registry) -> None:
    p = _command(
        sub, "run", "run", help="run plan steps: implement -> review -> (fix -> review)* -> merge"
    )
    from gitflow_agents.commands.options import PLAN_ISSUE_HELP, non_negative_int, positive_int

    p.add_argument("plan", help="path to the spec plan (markdown)")
    p.add_argument("--step", type=non_negative_int, help="the step to run")
    p.add_argument(
        "--all",
        action="store_true",
        help="every step not yet done on the target, each after the steps its Depends on: line "
        "names (with --pr: the steps ready now, as plan matrix --ready lists them)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="run a step even when the target has it done; with --pr, also continue a step "
        "whose branch exists on origin, or start one whose dependencies are not done there",
    )
    p.add_argument(
        "--pr",
        action="store_true",
        help="push the step branch to origin and open or update its pull request instead of "
        "merging (GitHub from GITHUB_TOKEN/GH_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL)",
    )
    p.add_argument(
        "--auto-merge",
        choices=("squash", "merge", "rebase"),
        help="with --pr: enable GitHub auto-merge of an approved step's pull request",
    )
    p.add_argument("--draft", action="store_true", help="with --pr: open pull requests as drafts")
    cap = "at most N steps in flight (started ones count), run one after another"
    p.add_argument("--max-parallel", type=positive_int, metavar="N", help=f"--all --pr: {cap}")
    p.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        help="--all: up to N steps at once, each in its own work tree, as soon as their "
        "dependencies land; landing stays one at a time (default: chain.jobs, 1)",
    )
    p.add_argument(
        "--plan-issue", type=positive_int, metavar="N", help=f"with --pr: {PLAN_ISSUE_HELP}"
    )
    from gitflow_agents.commands.run import add_chain_arguments

    add_chain_arguments(p)
    from gitflow_agents.commands.budget import add_budget_arguments

    add_budget_arguments(
        p, "per step run (--all: each step; the plan's limit is .flow/ budget.plan)"
    )


def _add_flow(sub: Registry) -> None:
    p = _command(sub, "flow", "flow", help="run one flow: implement, review, fix or research")
    from gitflow_agents.commands.flow import add_arguments

    kinds = p.add_subparsers(
        dest="flow_kind", metavar="{implement,review,fix,research}", required=True
    )
    for kind, text in (
        ("implement", "implement a step (or task) on its branch; commit; git statistics"),
        ("review", "review a branch or commit range; the gate decides the exit code"),
        ("fix", "act on review report(s) given with --after; commit"),
        ("research", "read-only research; result.json lists the sources"),
    ):
        add_arguments(kinds.add_parser(kind, help=text, description=text))


def _add_history(sub: Registry) -> None:
    p = _command(sub, "history", "history", help="past runs: outcome, iterations, git stats")
    p.add_argument("--json", action="store_true", help="print JSON (as --format json)")
    p.add_argument(
        "--format",
        choices=("table", "json", "mermaid"),
        help="table (default), json, or mermaid: a flowchart per run in markdown",
    )
    p.add_argument("--flow", dest="flow_name", help="only this flow")
    p.add_argument("--agents", action="store_true", help="also the agent runs inside step runs")


def _add_worktrees(sub: Registry) -> None:
    p = _command(
        sub,
        "worktrees",
        "worktrees",
        help="the work trees gitflow-agents made: step, branch, state, size, age, live run",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def _add_gc(sub: Registry) -> None:
    p = _command(
        sub,
        "gc",
        "gc",
        help="remove work trees (and step branches) gitflow-agents made that nobody needs",
    )
    p.add_argument(
        "--older-than",
        metavar="DURATION",
        help="only those unused for longer: 7d, 36h, 90m (default: any age)",
    )
    p.add_argument("--dry-run", action="store_true", help="list what would go; remove nothing")
    p.add_argument(
        "--force",
        action="store_true",
        help="also those whose branch has commits on neither the target nor a remote, or "
        "that hold uncommitted changes (never one a live run owns)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def _add_serve(sub: Registry) -> None:
    p = _command(sub, "serve", "serve", help="watch runs and plans in a browser (127.0.0.1)")
    from gitflow_agents.commands.options import bounded

    p.add_argument(
        "--port",
        type=bounded(0, 65535, whole=True),
        default=0,
        help="the port (default: a free one)",
    )
    p.add_argument("--no-open", action="store_true", help="print the address; open no browser")


# Each entry adds one subcommand. Adding a command: write commands/<name>.py with
# ``run(args) -> int`` and one ``_add_<name>`` function here.
COMMANDS: list[Callable[[Registry], None]] = [
    _add_init,
    _add_plan,
    _add_prompt,
    _add_review,
    _add_hook,
    _add_action,
    _add_spawn,
    _add_status,
    _add_heartbeat,
    _add_cancel,
    _session_command("send", "session:message"),
    _session_command("reply", "session:reply"),
    _add_abort,
    _add_run,
    _add_flow,
    _add_history,
    _add_worktrees,
    _add_gc,
    _add_serve,
]


COLOR_CHOICES = ("auto", "always", "never")  # gitflow_agents.base.color.CHOICES, without its import
COLOR_HELP = (
    "colour: auto (default; NO_COLOR turns it off, FORCE_COLOR on, else a terminal has it), "
    "always or never"
)


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (or -C's or
    --color's value)."""
    words = iter(argv)
    for word in words:
        if word in ("-C", "--color"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given ``argv``, only the subcommand it names gets its arguments built."""
    parser = Parser(
        prog="gitflow-agents",
        description="Run coding agents on git branches: spec plans, review chains, a merge gate.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "-C", dest="chdir", metavar="DIR", help="run as if started in DIR (like git -C)"
    )
    parser.add_argument("--color", choices=COLOR_CHOICES, default="auto", help=COLOR_HELP)
    # argv None: build every command (introspection, tests); argv naming no command ("--help"):
    # build names only ("" matches none)
    registry = Registry(
        parser.add_subparsers(dest="command", metavar="COMMAND"),
        None if argv is None else (_command_named(argv) or ""),
    )
    for add in COMMANDS:
        with contextlib.suppress(_NotThisCommand):
            add(registry)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    escape_unencodable()
    if argv is None:
        argv = sys.argv[1:]
    if any("\0" in word for word in argv):  # only possible in-process: no OS passes one
        print("gitflow-agents: error: an argument contains a NUL character", file=sys.stderr)
        return ExitCode.USAGE
    from gitflow_agents.commands.manpage import ensure_reachable

    ensure_reachable()  # `git agent-review --help` finds its page (uv tool installs: manpage.py)
    try:
        parser = build_parser(argv)
        args = parser.parse_args(argv)
    except Exception as exc:  # a bug in building the parser: exit 70, like one in a command
        from gitflow_agents.base import crash

        return crash.report(exc, "gitflow-agents")
    if args.command is None:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    return dispatch(args)


if __name__ == "__main__":
    raise SystemExit(main())
