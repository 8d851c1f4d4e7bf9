"""The ``budget:`` section (``config/budget.py``): validated like every section, built into
per-scope limits, and a command's options laid over one scope."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.config import flow_config_schema, load_flow_config
from gitflow_agents.config.budget import Budgets, Cap
from tests.config.test_config import MINIMAL, load_error, write


def test_each_scope_takes_usd_and_tokens(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".flow/base.yaml",
        MINIMAL + "budget:\n  agent: {usd: 0.5}\n  step: {usd: 2, tokens: 100000}\n  plan: {}\n",
    )
    budget = load_flow_config(tmp_path).budget
    assert budget == Budgets(agent=Cap(usd=0.5), step=Cap(usd=2.0, tokens=100_000))
    assert budget.plan == Cap() and not budget.plan.set


def test_no_section_no_limits(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL)
    assert load_flow_config(tmp_path).budget == Budgets()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("budget:\n  step: {usd: 1, tokns: 5}\n", "budget.step.tokns: unknown key"),
        ("budget:\n  wave: {usd: 1}\n", "budget.wave: unknown key"),
        ("budget:\n  step: {usd: -1}\n", "budget.step.usd: must be at least 0, got -1"),
        ("budget:\n  step: {usd: lots}\n", "budget.step.usd: expected a number"),
        (
            "budget:\n  plan: {tokens: 1.5}\n",
            "budget.plan.tokens: expected a whole number of tokens, got 1.5",
        ),
        (  # not "got a number", which reads as no mistake at all
            "defaults:\n  max_wait_secs: 2.0\n",
            "defaults.max_wait_secs: expected a whole number of seconds, got 2.0",
        ),
        ("budget:\n  review: 3\n", "budget.review: expected a mapping"),
        (  # YAML 1.1 reads an exponent without a dot as text: said so, with what to write
            "budget:\n  plan: {usd: 1e3}\n",
            "budget.plan.usd: expected a number, got a string '1e3' (YAML reads it as text: "
            "write it as a plain number, e.g. 1000 or 1.0e+3)",
        ),
        (
            "budget:\n  plan: {tokens: .nan}\n",
            "budget.plan.tokens: expected a whole number of tokens, got nan",
        ),
        (
            "budget:\n  plan: {tokens: 1e6}\n",
            "budget.plan.tokens: expected a whole number of tokens, got a string '1e6' (YAML "
            "reads it as text: write it as a whole number, e.g. 1000)",
        ),
    ],
)
def test_a_mistake_names_the_file_line_and_key(tmp_path: Path, text: str, expected: str) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL + text)
    error = load_error(tmp_path)
    line = len(MINIMAL.splitlines()) + 2
    assert error.startswith(f".flow/base.yaml:{line}: {expected}"), error


def test_an_option_replaces_the_kind_of_limit_it_gives_in_its_scope() -> None:
    budgets = Budgets(step=Cap(usd=1.0, tokens=500))
    assert budgets.with_option("step", 0.25, None).step == Cap(usd=0.25, tokens=500)
    assert budgets.with_option("step", None, 9).step == Cap(usd=1.0, tokens=9)
    assert budgets.with_option("agent", 3.0, None).agent == Cap(usd=3.0)
    assert budgets.with_option("agent", None, None) == budgets


def test_the_editor_schema_has_the_section() -> None:
    budget = flow_config_schema()["properties"]["budget"]
    assert set(budget["properties"]) == {"agent", "step", "plan", "review"}
    step = budget["properties"]["step"]["properties"]
    assert step["usd"] == {
        "type": "number",
        "minimum": 0,
        "maximum": 10**9,
        "description": step["usd"]["description"],
    }
    assert step["tokens"]["type"] == "integer" and step["tokens"]["minimum"] == 0
    assert step["tokens"]["maximum"] == 10**15


@pytest.mark.parametrize(("value", "shown"), [(".nan", "nan"), (".inf", "inf"), ("-.inf", "-inf")])
def test_a_number_that_is_not_finite_is_named_as_such(
    tmp_path: Path, value: str, shown: str
) -> None:
    """YAML's ``.nan`` and ``.inf`` are floats: the message must not read "expected a number,
    got a number"."""
    write(tmp_path, ".flow/base.yaml", MINIMAL + f"budget:\n  step: {{usd: {value}}}\n")
    error = load_error(tmp_path)
    line = len(MINIMAL.splitlines()) + 2
    expected = f"budget.step.usd: expected a finite number, got {shown}"
    assert error.startswith(f".flow/base.yaml:{line}: {expected}"), error
