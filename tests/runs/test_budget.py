"""Budget accounting (``runs/budget.py``): when a scope is spent, the message with its numbers,
what a running agent's streamed usage adds, and what a CLI's own budget flag gets."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable

import pytest

from gitflow_agents.agents.base import AgentOutput
from gitflow_agents.agents.claude import ClaudeAdapter
from gitflow_agents.agents.prices import shipped_prices
from gitflow_agents.base.errors import BudgetError, ExitCode
from gitflow_agents.config.budget import Budgets, Cap, Scope
from gitflow_agents.runs import budget
from gitflow_agents.runs.budget import Ledger, Watch, message, reached
from gitflow_agents.runs.spend import Spend

PRICES = shipped_prices()
MODEL = "claude-sonnet-4-5-20250929"  # $3 in, $15 out per million tokens


def assistant(
    call: int, tokens_in: int = 1000, tokens_out: int = 200, *, model: str | None = MODEL
) -> bytes:
    """An assistant line of call ``call`` (its message naming ``model``, None: no model)."""
    usage = {"input_tokens": tokens_in, "output_tokens": tokens_out}
    named = {"model": model} if model is not None else {}
    message = {"id": f"m{call}", **named, "usage": usage}  # the model before the usage
    return json.dumps({"type": "assistant", "message": message}).encode() + b"\n"


def test_a_limit_is_reached_by_a_known_value_at_it_never_by_an_unknown_one() -> None:
    cap = Cap(usd=0.05, tokens=10_000)
    assert not reached(cap, Spend())
    assert not reached(cap, Spend(cost_usd=0.049, input_tokens=9_000, output_tokens=999))
    assert reached(cap, Spend(cost_usd=0.05))
    assert reached(cap, Spend(input_tokens=9_000, output_tokens=1_000))
    assert reached(Cap(usd=0), Spend()) and reached(Cap(tokens=0), Spend())
    assert not reached(Cap(), Spend(cost_usd=100.0))


def test_a_sum_of_costs_at_the_limit_is_not_over_it_by_its_rounding() -> None:
    """$0.1 + $0.2 spent against $0.3 is the limit reached, not gone over (the float sum is
    0.30000000000000004): an agent that completed at it is within it; a cent more is over."""
    cap, spent = Cap(usd=0.3), Spend(cost_usd=0.1 + 0.2)
    assert spent.cost_usd is not None and spent.cost_usd > 0.3  # the rounding itself
    assert reached(cap, spent) and not reached(cap, spent, over=True)
    assert reached(cap, Spend(cost_usd=0.29999999999999993))  # below by rounding: reached
    assert reached(cap, Spend(cost_usd=0.31), over=True)
    assert reached(Cap(usd=0.018), Spend(cost_usd=0.018000000000000002)) and not reached(
        Cap(usd=0.018), Spend(cost_usd=0.018000000000000002), over=True
    )
    assert message("step", spent, cap) == "budget: step spent $0.300 of $0.3 (tokens unknown)"


def test_the_message_names_the_scope_and_the_numbers() -> None:
    spend = Spend(input_tokens=40_000, output_tokens=1_200, cost_usd=0.062)
    assert message("step", spend, Cap(usd=0.05)) == (
        "budget: step spent $0.062 of $0.05 (tokens 41,200)"
    )
    assert message("plan", spend, Cap(tokens=40_000)) == (
        "budget: plan spent 41,200 tokens of 40,000 (cost $0.062)"
    )
    estimated = Spend(input_tokens=10, cost_usd=0.1, cost_estimated=True)
    assert message("agent", estimated, Cap(usd=0.1)).endswith("$0.100 est. of $0.1 (tokens 10)")
    assert message("review", Spend(), Cap(usd=0)) == "budget: review is $0 (nothing may be spent)"
    # a cost under a cent as every view shows it (four decimals), and one over the limit never
    # reads as the limit itself once rounded
    close = Spend(input_tokens=480, output_tokens=120, cost_usd=0.00324)
    assert message("agent", close, Cap(usd=0.003)) == (
        "budget: agent spent $0.0032 of $0.003 (tokens 600)"
    )
    closer = Spend(input_tokens=480, output_tokens=120, cost_usd=0.003004)
    assert message("agent", closer, Cap(usd=0.003)) == (
        "budget: agent spent $0.003004 of $0.003 (tokens 600)"
    )


def test_scopes_count_the_runs_that_ended_while_they_were_open() -> None:
    ledger = Ledger(Budgets(step=Cap(usd=0.05), plan=Cap(usd=0.08)), PRICES)
    with ledger.scope("plan"):
        with ledger.scope("step"):
            ledger.add(Spend(cost_usd=0.03, input_tokens=1, output_tokens=1))
            assert ledger.over() is None
            assert ledger.usd_left() == pytest.approx(0.02)
            ledger.add(Spend(cost_usd=0.03))
            assert ledger.over() == "budget: step spent $0.060 of $0.05 (tokens 2)"
        with ledger.scope("step"):  # the next step starts with its own budget
            assert ledger.over() is None
            assert ledger.usd_left() == pytest.approx(0.02)  # the plan has less left
            ledger.add(Spend(cost_usd=0.02))
            assert ledger.over() is not None and ledger.over().startswith("budget: plan spent")
    assert ledger.spent == {}


def test_refuse_raises_the_budget_exit_code_and_starts_nothing() -> None:
    ledger = Ledger(Budgets(agent=Cap(tokens=0)), PRICES)
    with pytest.raises(BudgetError) as caught:
        ledger.refuse()
    assert caught.value.exit_code == ExitCode.BUDGET == 5
    assert str(caught.value) == "budget: agent is 0 tokens (nothing may be used); no agent started"
    Ledger(Budgets(agent=Cap(usd=1.0)), PRICES).refuse()  # budget left: no error


def test_a_scope_about_to_open_holds_back_only_at_a_limit_of_0() -> None:
    """``holds_back(opening=...)``: a scope not open yet (the step of ``run --pr``, asked before
    its claim) counts as having spent nothing, so only its limit of 0 holds the agents back; a
    scope that is open keeps what it spent."""
    ledger = Ledger(Budgets(step=Cap(usd=0)), PRICES)
    assert ledger.holds_back("command") is None  # the step is not open: not asked
    assert ledger.holds_back("command", opening=("step",)) == (
        "budget: step is $0 (nothing may be spent)"
    )
    assert ledger.holds_back("builtin", opening=("step",)) is None  # an offline agent
    assert "step" not in ledger.spent
    spent = Ledger(Budgets(step=Cap(usd=0.05)), PRICES)
    assert spent.holds_back("command", opening=("step",)) is None
    with spent.scope("step", Spend(cost_usd=0.06)):
        assert spent.holds_back("command", opening=("step",)) is not None


def test_the_agent_scope_is_the_running_agent_alone() -> None:
    ledger = Ledger(Budgets(agent=Cap(usd=0.05), step=Cap(usd=1.0)), PRICES)
    with ledger.scope("step", Spend(cost_usd=0.9)):
        assert ledger.over(Spend(cost_usd=0.04)) is None
        assert ledger.over(Spend(cost_usd=0.05)) == (
            "budget: agent spent $0.050 of $0.05 (tokens unknown)"
        )
        assert ledger.over(Spend(cost_usd=0.049 + 0.06)) is not None


def test_the_watch_reads_usage_lines_split_across_chunks_and_skips_the_rest() -> None:
    ledger = Ledger(Budgets(agent=Cap(usd=0.05)), PRICES)
    watch = ledger.watch("claude", None)
    assert isinstance(watch, Watch)
    stream = b"".join(assistant(call) for call in range(8)) + b'not json usage\n{"usage": [\n'
    for start in range(0, len(stream), 7):  # chunks that cut lines anywhere
        watch.feed(stream[start : start + 7])
    spent = watch.spend()
    assert (spent.input_tokens, spent.output_tokens) == (8_000, 1_600)
    assert spent.cost_usd == pytest.approx(0.048) and spent.cost_estimated
    assert watch.exceeded() is None
    watch.feed(assistant(8))
    assert watch.exceeded() == "budget: agent spent $0.054 est. of $0.05 (tokens 10,800)"


def test_a_codex_watch_reads_its_turns_split_across_chunks() -> None:
    ledger = Ledger(Budgets(agent=Cap(tokens=300)), PRICES)
    watch = ledger.watch("codex", "gpt-5-codex")
    assert isinstance(watch, Watch)
    turn = {"type": "turn.completed", "usage": {"input_tokens": 100, "output_tokens": 10}}
    item = {"type": "item.completed", "item": {"type": "agent_message", "text": "usage"}}
    stream = b"".join(json.dumps(event).encode() + b"\n" for event in (item, turn, item, turn))
    for start in range(0, len(stream), 5):
        watch.feed(stream[start : start + 5])
    assert (watch.spend().input_tokens, watch.spend().output_tokens) == (200, 20)
    assert watch.exceeded() is None
    watch.feed(json.dumps(turn).encode() + b"\n")
    assert watch.exceeded() == "budget: agent spent 330 tokens of 300 (cost $0.0007 est.)"


def test_the_watch_fills_in_the_usage_a_stopped_agent_never_totalled() -> None:
    ledger = Ledger(Budgets(agent=Cap(tokens=5)), PRICES)
    watch = ledger.watch("command", "claude-sonnet-4-5")
    assert watch is not None
    watch.feed(assistant(0, 3, 4))
    filled = watch.fill(AgentOutput(error="no Claude result JSON in the output"))
    assert (filled.input_tokens, filled.output_tokens, filled.model) == (3, 4, MODEL)
    said = AgentOutput(input_tokens=9, output_tokens=9, cost_usd=1.0, model="m")
    assert watch.fill(said) == said  # what the CLI said at the end wins


def test_an_agent_stopped_in_a_turn_after_a_result_is_recorded_at_the_watchs_reading() -> None:
    """Claude Code stopped in the turn a message started after its first result: the parser
    reads that result (the first turn), the watch read on. The record takes the watch's
    figures, the cost left to the price table as the watch counted it: what the budget stopped
    it at, or a lower bound when something else stopped it."""
    ledger = Ledger(Budgets(agent=Cap(tokens=3000)), PRICES)
    watch = ledger.watch("claude", "claude-sonnet-4-5")
    assert watch is not None
    turn = {"input_tokens": 2000, "output_tokens": 400}
    result = {"type": "result", "usage": turn, "total_cost_usd": 0.012, "session_id": "s"}
    stream = assistant(0) + assistant(1) + json.dumps(result).encode() + b"\n" + assistant(2)
    watch.feed(stream)
    parsed = ClaudeAdapter().parse_output(stream.decode(), "")
    assert (parsed.input_tokens, parsed.cost_usd) == (2000, 0.012)  # the first turn's
    filled = watch.fill(parsed, at_limit=True)
    assert (filled.input_tokens, filled.output_tokens, filled.cost_usd) == (3000, 600, None)
    assert filled.session_id == "s" and not filled.usage_partial
    assert watch.fill(parsed).usage_partial  # canceled, say: it may have spent on
    watch.feed(json.dumps({**result, "usage": {"input_tokens": 1000}}).encode() + b"\n")
    ended = AgentOutput(input_tokens=3000, output_tokens=600, cost_usd=0.018, model=MODEL)
    assert watch.fill(ended) == ended  # the turn's result came: what the CLI said wins


def test_a_claude_stop_at_its_own_budget_flag_is_recorded_with_the_call_its_result_left_out() -> (
    None
):
    """Claude Code stopped by its own ``--max-budget-usd`` (2.1.330): its result's ``usage``
    leaves out the last call, which its ``total_cost_usd`` counts. The record takes the tokens
    the watch read (every call streamed) and the CLI's cost, not a lower bound when the budget
    stopped it."""
    ledger = Ledger(Budgets(agent=Cap(usd=0.005)), PRICES)
    watch = ledger.watch("claude", "claude-sonnet-4-5")
    assert watch is not None
    stream = b"".join(assistant(n, 120, 30) for n in range(7))
    result = {
        "type": "result", "subtype": "error_max_budget_usd", "is_error": True, "session_id": "s",
        "usage": {"input_tokens": 720, "output_tokens": 180}, "total_cost_usd": 0.00567,
    }  # fmt: skip
    stream += json.dumps(result).encode() + b"\n"
    watch.feed(stream)
    parsed = ClaudeAdapter().parse_output(stream.decode(), "")
    assert (parsed.input_tokens, parsed.output_tokens) == (720, 180)  # the result's
    filled = watch.fill(parsed, at_limit=True)
    assert (filled.input_tokens, filled.output_tokens, filled.cost_usd) == (840, 210, 0.00567)
    assert not filled.usage_partial and filled.session_id == "s"


def test_no_watch_without_a_limit_and_a_warning_once_for_a_cli_that_streams_no_usage(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(budget, "_warned", set())  # once per process: another test may have
    assert Ledger(Budgets(), PRICES).watch("claude", None) is None
    ledger = Ledger(Budgets(agent=Cap(usd=1.0)), PRICES)
    assert ledger.watch("gemini", None) is None
    assert ledger.watch("gemini", None) is None
    err = capsys.readouterr().err
    assert err.count("the gemini adapter's CLI reports its usage only when it ends") == 1


def test_parallel_agents_add_to_the_same_scope() -> None:
    ledger = Ledger(Budgets(review=Cap(usd=10.0)), PRICES)
    with ledger.scope("review"):
        threads = [
            threading.Thread(target=lambda: [ledger.add(Spend(cost_usd=0.01)) for _ in range(100)])
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert ledger.spent["review"].cost_usd == pytest.approx(4.0)


def test_a_fork_has_its_own_step_scope_and_counts_in_the_plan() -> None:
    """Steps that run at once (run --all --jobs N) each get a fork: a step's spend never leaks
    into a sibling's step scope, and all of it counts against the plan."""
    plan = Ledger(Budgets(step=Cap(tokens=100), plan=Cap(tokens=150)), {})
    with plan.scope("plan"):
        one, two = plan.fork(), plan.fork()
        with one.scope("step"), two.scope("step"):
            one.add(Spend(input_tokens=60, output_tokens=0))
            assert one.over() is None and two.over() is None
            two.add(Spend(input_tokens=60, output_tokens=0))
            assert two.over() is None  # 60 of the step's 100; the plan at 120 of 150
            one.add(Spend(input_tokens=50, output_tokens=0))
            assert (one.over() or "").startswith("budget: step ")  # 110 of its 100
            assert (two.over() or "").startswith("budget: plan ")  # 170 of 150
        assert plan.over() is not None


@pytest.mark.parametrize(
    ("model", "said"),
    [
        (None, "the command agent's output names no model (set the agent's `model:`)"),
        ("house-model-7", "the command agent's model house-model-7 has no price"),
    ],
)
def test_a_usd_limit_that_cannot_price_the_running_agent_says_so_once(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    model: str | None,
    said: str,
) -> None:
    """Tokens without a model (or with a model the price table lacks) have no cost while the
    agent runs: a USD budget cannot stop it, and the first reading says so, once; a token
    budget still stops it."""
    monkeypatch.setattr(budget, "_warned", set())  # once per process: this test's own
    ledger = Ledger(Budgets(agent=Cap(usd=0.01, tokens=5_000)), PRICES)
    watch = ledger.watch("command", model)
    assert watch is not None
    for call in range(4):
        watch.feed(assistant(call, model=None))
        assert watch.exceeded() is None  # $0.01 is spent by now at any listed price
    err = capsys.readouterr().err
    assert err.count(said) == 1 and "a USD budget cannot stop it mid-run" in err
    watch.feed(assistant(4, model=None))
    assert watch.exceeded() == "budget: agent spent 6,000 tokens of 5,000 (cost unknown)"


def test_a_priced_agent_under_a_usd_limit_and_any_agent_without_one_warn_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for budgets, model in (
        (Budgets(agent=Cap(usd=1.0)), MODEL),
        (Budgets(agent=Cap(tokens=9)), None),
    ):
        watch = Ledger(budgets, PRICES).watch("command", model)
        assert watch is not None
        watch.feed(assistant(0, model=None))
        watch.exceeded()
    assert "warning" not in capsys.readouterr().err


def test_adapters_that_run_no_model_have_no_watch_and_no_warning(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The patch implementer and the offline reviewer spend nothing: under a budget they get
    no watch, and neither the "reports its usage only when it ends" warning nor, after a run
    that said no usage, the "could not count it" one."""
    monkeypatch.setattr(budget, "_warned", set())
    ledger = Ledger(Budgets(agent=Cap(usd=1.0)), PRICES)
    for adapter in ("patch", "builtin"):
        assert ledger.watch(adapter, None) is None
        budget.warn_uncounted(adapter, Spend())
    assert capsys.readouterr().err == ""


def test_a_run_that_said_no_usage_under_a_budget_warns_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(budget, "_warned", set())
    budget.warn_uncounted("command", Spend(input_tokens=5))  # something is known: counted
    assert capsys.readouterr().err == ""
    for _ in range(2):
        budget.warn_uncounted("command", Spend())
    err = capsys.readouterr().err
    assert err.count("a run of the command adapter reported no usage") == 1


def test_codex_is_watched_and_warned_of_once_its_usage_comes_at_turn_ends(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(budget, "_warned", set())
    ledger = Ledger(Budgets(agent=Cap(tokens=1000)), PRICES)
    assert ledger.watch("codex", None) is not None and ledger.watch("codex", None) is not None
    err = capsys.readouterr().err
    assert err.count("the codex adapter's CLI reports its usage when a turn ends") == 1
    assert ledger.watch("opencode", None) is not None  # a step at a time: no warning
    assert capsys.readouterr().err == ""


def test_a_codex_turn_is_judged_on_its_own_usage_not_its_sessions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Codex's `turn.completed` in a resumed session counts the turns before it: a watch told
    what the session used before (8,000) reads 11,000 as 3,000, under a 10,000 limit."""
    monkeypatch.setattr(budget, "_warned", set())
    watch = Ledger(Budgets(agent=Cap(tokens=10_000)), PRICES).watch("codex", None)
    assert watch is not None
    watch.before = AgentOutput(input_tokens=8000, output_tokens=0)
    usage = {"input_tokens": 10_000, "cached_input_tokens": 0, "output_tokens": 1000}
    watch.feed(json.dumps({"type": "turn.completed", "usage": usage}).encode() + b"\n")
    spend = watch.spend()
    assert (spend.input_tokens, spend.output_tokens) == (2000, 1000)
    assert watch.exceeded() is None
    # a rate limit's next attempt, continuing the session, counts what it used so far again
    again = watch.next_attempt([], AgentOutput(input_tokens=10_000, output_tokens=1000))
    assert again.before == AgentOutput(input_tokens=10_000, output_tokens=1000)


def test_a_next_attempt_reads_what_the_earlier_ones_spent_their_lower_bounds_kept() -> None:
    """The watch of a rate limit's next attempt, made before the wait: its reading (what
    `status` shows) is what the attempts so far spent as their record has them, a lower bound
    where one stopped before its totals, exact where none did, however little it read yet."""
    watch = Ledger(Budgets(agent=Cap(tokens=10_000)), PRICES).watch("claude", MODEL)
    assert watch is not None
    cut = AgentOutput(input_tokens=2000, output_tokens=200, cached_tokens=50, usage_partial=True)
    waiting = watch.next_attempt([cut], None).spent()
    assert (waiting["inputTokens"], waiting["outputTokens"], waiting["cachedTokens"]) == (
        2000,
        200,
        50,
    )
    assert waiting["tokensPartial"] is True and waiting["costPartial"] is True
    # 1,950 in at $3 a million, 50 cached at $0.30, 200 out at $15
    assert waiting["costUsd"] == pytest.approx(0.00585 + 0.000015 + 0.003)
    assert waiting["costEstimated"] is True
    again = watch.next_attempt([cut], None)
    _calls(again, 1)
    running = again.spent()
    assert (running["inputTokens"], running["tokensPartial"]) == (2100, True)
    whole = AgentOutput(input_tokens=2000, output_tokens=200)
    exact = watch.next_attempt([whole], None).spent()  # nothing read yet: not "≥" for that
    assert (exact["inputTokens"], exact["tokensPartial"], exact["costPartial"]) == (
        2000,
        False,
        False,
    )


def _calls(watch: Watch, count: int, first: int = 0) -> None:
    """``count`` Claude-style API calls of 100 input tokens each, as the agent streams them."""
    for n in range(first, first + count):
        line = {"type": "assistant", "message": {"id": f"m{n}", "usage": {"input_tokens": 100}}}
        watch.feed(json.dumps(line).encode() + b"\n")


def test_agents_running_at_once_count_in_the_scopes_they_share_while_they_run() -> None:
    """Two steps at once (forks) under a plan of 1,000 tokens, their agents at 600 and 500:
    neither alone reaches the plan's limit, together they do, and each is told so while it
    runs; once a run ends and adds what it spent, that counts once, not as well in flight."""
    plan = Ledger(Budgets(plan=Cap(tokens=1000)), PRICES)
    with plan.scope("plan"):
        one, two = plan.fork(), plan.fork()
        with one.scope("step"), two.scope("step"):
            first, second = one.watch("claude", None), two.watch("claude", None)
            assert first is not None and second is not None
            _calls(first, 4)
            assert first.exceeded() is None and second.exceeded() is None  # 400 of 1,000
            _calls(second, 5)
            assert first.exceeded() is None  # 900: 1,000 is reached only with its next call
            _calls(first, 2, first=4)
            said = first.exceeded()
            assert said is not None and said.startswith("budget: plan spent 1,100 tokens")
            assert (second.exceeded() or "").startswith("budget: plan spent 1,100 tokens")
            one.add(first.spend(), first)  # its run ended: counted once
            assert (plan.over() or "").startswith("budget: plan spent 1,100 tokens")
            two.add(second.spend(), second)
            assert (plan.over() or "").startswith("budget: plan spent 1,100 tokens")


def test_parallel_reviewers_see_each_others_spend_in_the_rounds_scope() -> None:
    """The reviewers of one round share its ledger: each one's check counts the other's
    reading, so a round's budget stops them at the limit together, not each at it alone."""
    ledger = Ledger(Budgets(review=Cap(tokens=500)), PRICES)
    with ledger.scope("review"):
        first, second = ledger.watch("claude", None), ledger.watch("claude", None)
        assert first is not None and second is not None
        _calls(first, 3)
        _calls(second, 2, first=10)
        assert (first.exceeded() or "").startswith("budget: review spent 500 tokens")
        # a rate limit's next attempt takes the first's place in flight, its 300 with it
        nxt = first.next_attempt([first.meter.reading()], None)
        assert (second.exceeded() or "").startswith("budget: review spent 500 tokens")
        _calls(nxt, 1, first=20)
        assert (second.exceeded() or "").startswith("budget: review spent 600 tokens")


class _EndsWhileAsked(Budgets):
    """Budgets whose ``at``-th look at the plan's limit once armed (:meth:`arm`) first ends a
    run (``end``): a run that ends while a check is under way, at a point of the check no
    clock decides."""

    def __init__(self, end: Callable[[], None]) -> None:
        super().__init__(plan=Cap(tokens=1000))
        object.__setattr__(self, "_end", end)
        object.__setattr__(self, "asked", [0])

    def arm(self, at: int) -> None:
        self.asked[0] = at

    def cap(self, scope: Scope) -> Cap:
        if scope == "plan" and self.asked[0] > 0:
            self.asked[0] -= 1
            if self.asked[0] == 0:
                self._end()
        return super().cap(scope)


@pytest.mark.parametrize("fork", [False, True], ids=["own", "fork"])
def test_a_run_that_ends_while_a_check_reads_the_ledger_is_counted(fork: bool) -> None:
    """An agent about to start (a step queued for a `max_parallel` slot, released) is asked
    while another step's agent, which has used the plan's 1,000 tokens, ends and adds what it
    spent. The check reads the scopes' spend and the agents in flight in one step, and the end
    moves the run from one to the other in one step: it counts once, so the plan is spent and
    the agent is not started. (The check read the spend, then the agents in flight: a run that
    ended between the two reads was in neither, and a second step started on a spent plan.)"""
    ended: list[Watch] = []
    budgets = _EndsWhileAsked(lambda: runner.add(ended[0].spend(), ended[0]))
    plan = Ledger(budgets, PRICES)
    with plan.scope("plan"):
        runner, asking = (plan.fork(), plan.fork()) if fork else (plan, plan)
        with contextlib.ExitStack() as stack:
            if fork:  # each step its own scope, as run --all --jobs N opens them
                stack.enter_context(runner.scope("step"))
                stack.enter_context(asking.scope("step"))
            watch = runner.watch("claude", None)
            assert watch is not None
            _calls(watch, 10)  # 1,000 tokens, while it runs
            ended.append(watch)
            # the run ends at the check's look at the plan's limit (a fork's: its parent's)
            budgets.arm(2 if fork else 1)
            said = asking.holds_back("claude")
            assert budgets.asked[0] == 0  # it ended while the check was under way
            assert said is not None and said.startswith("budget: plan spent 1,000 tokens"), said
            assert (asking.over() or "").startswith("budget: plan spent 1,000 tokens")  # once
