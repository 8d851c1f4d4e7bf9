"""The everyday argv forms of ``git agent-review`` / ``gitflow-agents review`` are read without
building the parser (issue 20: start-up of a small review); they must mean what the parser
says they mean, and everything else must still reach the parser."""

from __future__ import annotations

import pytest

from gitflow_agents import cli
from gitflow_agents.git_agent_review import build_parser, plain_args

PLAIN = [
    [],
    ["HEAD"],
    ["HEAD", "--no-note"],
    ["--no-note", "main..HEAD"],
    ["--staged"],
    ["--hook"],
    ["--hook", "--hook"],
    ["a=b"],
    ["HEAD~3...HEAD", "--format", "json", "--no-note"],
    ["--format=sarif", "HEAD"],
    ["--format", "json", "--format", "rdjsonl"],
    ["--severity-threshold", "warn", "--fail-on", "never", "HEAD"],
    ["--fail-on=info", "--severity-threshold=info", "--staged"],
    [""],
    ["HEAD", "HEAD~1"],  # a FILE: the review then says one RANGE at most
    ["--hook", "--no-note", "a.py", "b.py"],  # the hook's files, after its options
]
TO_THE_PARSER = [
    ["-h"],
    ["--help"],
    ["-V"],
    ["--"],
    ["-"],
    ["HEAD", "--no-note", "HEAD~1"],  # a name after an option after names
    ["--no-not"],
    ["--no-n"],  # an abbreviation: argparse decides what it means
    ["--format"],
    ["--format="],
    ["--format", "xml"],
    ["--format", "--no-note"],
    ["--staged=1"],
    ["--agent", "builtin"],
    ["--output", "out.json"],
    ["--color", "never"],
    ["--max-file-size", "10"],
    ["--baseline", "b.json"],
    ["--write-baseline"],
]


@pytest.mark.parametrize("argv", PLAIN, ids=repr)
def test_a_plain_form_reads_as_the_parser_reads_it(argv: list[str]) -> None:
    quick = plain_args(argv)
    assert quick is not None
    assert vars(quick) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize("argv", PLAIN, ids=repr)
def test_gitflow_agents_review_reads_a_plain_form_as_its_parser_does(argv: list[str]) -> None:
    full = ["review", *argv]
    quick = plain_args(argv, command="review")
    assert quick is not None
    assert vars(quick) == vars(cli.build_parser(full).parse_args(full))


@pytest.mark.parametrize("argv", TO_THE_PARSER, ids=repr)
def test_anything_else_goes_to_the_parser(argv: list[str]) -> None:
    assert plain_args(argv) is None
