"""The page of ``gitflow-agents serve`` in a real browser (headless Chromium, Selenium): a chain
of fake agents runs while it is open; hostile text stays inert; a plan's graph and a prompt's
segments render. Skips, saying what to install, without Chromium (``.ci/run`` installs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.runs import liveness
from gitflow_agents.runs.lost import kill_recorded_tree
from gitflow_agents.serve import server
from tests.conftest import ROOT, git, isolate_home, running_agent, wait_until
from tests.helpers import chain
from tests.helpers import control as live
from tests.helpers.browser import chromium, png_colours, wait_for
from tests.helpers.serve import event, serving, write_run

pytestmark = pytest.mark.slow

HOSTILE = (
    '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
    '<a id=injected href="javascript:window.pwned=3">x</a>'
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium for the module (its start is most of a short test's time), with a
    $HOME of its own: it starts before any test's ``isolated_home``."""
    with pytest.MonkeyPatch.context() as patch:
        isolate_home(tmp_path_factory.mktemp("browser-home"), patch)
        with chromium() as driver:
            yield driver


@pytest.fixture
def driver(browser: Any) -> Iterator[Any]:
    """The module's browser on a blank page: what an earlier test left (its pages, their
    streams and scripts, the tabs it opened) is gone before the test starts and after it ends."""
    _blank(browser)
    yield browser
    _blank(browser)


@pytest.fixture(autouse=True)
def quick_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """The live stream looks for news every 50 ms instead of 200: each step a test waits for
    reaches the page sooner; what reaches it, and in what order, is the same."""
    monkeypatch.setattr(server, "POLL_SECONDS", 0.05)


def _blank(driver: Any) -> None:
    """Close every tab but the first; that one on a blank page."""
    first, *others = driver.window_handles
    for handle in others:
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(first)
    driver.get("about:blank")


def _start_chain(repo: Path, *args: str) -> subprocess.Popen[str]:
    """``gitflow-agents run specs/feature.md`` as a process of its own (the page watches it)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", *chain.RUN_ARGS, *args],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _row_states(driver: Any) -> dict[str, str]:
    """Agent → state of each row of the runs table, as the page shows them now."""
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('#runs tbody tr')).map("
        "r => [r.querySelector('td.agent').textContent, r.querySelector('td.state').textContent])"
    )
    return {agent: state for agent, state in rows if agent}


def _not_injected(driver: Any) -> None:
    assert driver.execute_script("return window.pwned === undefined")
    assert driver.find_elements("css selector", "#injected, img[src='x'], main script") == []


def test_the_page_shows_each_agent_start_and_end_of_a_running_chain(
    repo: Path, driver: Any
) -> None:
    hold = repo.parent / "hold"  # each agent runs until the page has shown it running
    chain.configure(repo, hold=hold)
    seen: dict[str, list[str]] = {}
    with serving(repo) as served:
        driver.get(served.url("/"))
        wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
        run = _start_chain(repo, "--step", "1")
        try:

            def record() -> bool:
                for agent, state in _row_states(driver).items():
                    if not seen.get(agent) or seen[agent][-1] != state:
                        seen.setdefault(agent, []).append(state)
                    if state == "running":
                        chain.release(hold, "implementer" if "builder" in agent else "reviewer")
                return any("reviewer" in a and s[-1] == "succeeded" for a, s in seen.items())

            wait_for(driver, lambda d: record(), timeout=60)
        finally:
            _, err = run.communicate(timeout=60)
        assert run.returncode == 0, err
    builder = next(states for agent, states in seen.items() if "builder" in agent)
    reviewer = next(states for agent, states in seen.items() if "reviewer" in agent)
    for states in (builder, reviewer):  # each agent seen running, then ended
        assert "running" in states and states[-1] == "succeeded", seen
        assert states.index("running") < states.index("succeeded")


def test_cancel_on_the_page_stops_the_running_agent_and_shows_the_outcome(
    repo: Path, driver: Any
) -> None:
    """The run's page cancels its agent; the runs page, open all along in another tab, shows
    the agent canceled and the step's outcome as they are recorded."""
    chain.configure(repo, sleep=60.0)
    with serving(repo) as served:
        driver.get(served.url("/"))
        runs_tab = driver.current_window_handle
        wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
        run = _start_chain(repo, "--step", "1")
        try:
            wait_until(lambda: running_agent(repo), 60)
            status = running_agent(repo)
            assert status is not None
            driver.switch_to.new_window("tab")
            driver.get(served.url(f"/run/{status['runId']}"))
            wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
            driver.find_element("id", "cancel").click()
            wait_for(driver, lambda d: d.find_element("id", "state").text == "canceled")
            notices = driver.find_element("id", "notices")
            wait_for(driver, lambda d: "cancel: canceled run" in notices.text)
        finally:
            run.communicate(timeout=60)
        assert run.returncode != 0
        driver.switch_to.window(runs_tab)
        wait_for(
            driver,
            lambda d: any("builder" in a and s == "canceled" for a, s in _row_states(d).items()),
        )
        wait_for(driver, lambda d: _step_state(d) in ("canceled", "failed"))


def _step_state(driver: Any) -> str | None:
    """The state the runs page shows for the run of step 1."""
    states = driver.execute_script(
        "return Array.from(document.querySelectorAll('#runs tbody tr'))"
        ".filter(r => r.querySelector('td.what').textContent === 'step 1')"
        ".map(r => r.querySelector('td.state').textContent)"
    )
    return states[0] if states else None


def test_hostile_title_finding_and_output_are_inert_in_the_browser(repo: Path, driver: Any) -> None:
    plan = repo / "specs" / "hostile.md"
    plan.parent.mkdir()
    plan.write_text(
        "# Plan: hostile\n\n## Implementation Steps\n\n"
        f"### Status: ❌ | Step 1: {HOSTILE}\n\nBody.\n"
    )
    run_id = "01900000-0000-7000-8000-000000000001"
    run_dir = write_run(
        repo,
        run_id,
        status={"state": "running", "agent": HOSTILE, "kind": "review"},
        result=None,
        events=[event("agent:start", run_id, agent=HOSTILE, pid=1)],
    )
    with serving(repo) as served:
        driver.get(served.url("/"))
        wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
        with (run_dir / "events.jsonl").open("a") as handle:  # arrives through the stream
            handle.write(json.dumps(event("agent:output", run_id, agent=HOSTILE, tail=HOSTILE)))
            handle.write("\n")
        wait_for(
            driver, lambda d: "window.pwned=1" in d.find_element("css selector", "td.last").text
        )
        _not_injected(driver)
        (run_dir / "result.json").write_text(
            json.dumps(
                {
                    "status": "failed",
                    "findings": [{"severity": "error", "file": HOSTILE, "message": HOSTILE}],
                    "overall": "revise",
                    "summary": HOSTILE,
                    "run": {"agentId": HOSTILE, "kind": "review"},
                }
            )
        )
        driver.get(served.url(f"/run/{run_id}"))
        wait_for(driver, lambda d: d.find_elements("css selector", "tr.finding"))
        assert "window.pwned=2" in driver.find_element("css selector", "tr.finding").text
        _not_injected(driver)
        driver.get(served.url("/plan", path="specs/hostile.md"))
        title = wait_for(
            driver, lambda d: d.find_element("css selector", "#plan-graph .step-title")
        )
        assert title.text.startswith("Step 1: <script>")
        _not_injected(driver)


def test_a_running_agents_tokens_and_cost_follow_its_budgets_watch(repo: Path, driver: Any) -> None:
    """The runs page's row and the run's page show what the agent has spent so far, as the
    supervisor rewrites status.json, without a reload (the run's page keeps its events)."""
    run_id = "01900000-0000-7000-8000-000000000001"
    # this test supervises it: a running run, not a lost one (whose figures are a lower bound,
    # shown with `≥` on a page drawn while its status says nothing of a live supervisor)
    running = {"state": "running", "agent": "builder", "kind": "spawn"}
    running["supervisor_pid"] = os.getpid()
    run_dir = write_run(
        repo,
        run_id,
        status=running,
        events=[event("agent:start", run_id, agent="builder", pid=1)],
    )

    def spent(input_tokens: int) -> None:
        figures = {"inputTokens": input_tokens, "outputTokens": 200, "costUsd": 0.006}
        status = {**running, "spent": figures}
        (run_dir / "status.json").write_text(json.dumps(status))

    with serving(repo) as served:
        driver.get(served.url("/"))
        wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
        spent(1000)
        cell = driver.find_element("css selector", "td.tokens")
        wait_for(driver, lambda d: cell.text == "1,000/200 $0.0060")
        spent(2000)
        wait_for(driver, lambda d: cell.text == "2,000/200 $0.0060")
        driver.get(served.url(f"/run/{run_id}"))
        wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
        assert driver.find_element("id", "tokens").text == "2,000/200 $0.0060"
        spent(3000)
        wait_for(driver, lambda d: d.find_element("id", "tokens").text == "3,000/200 $0.0060")


def test_a_run_waiting_out_a_rate_limit_goes_on_counting_from_its_first_start(
    repo: Path, driver: Any
) -> None:
    """The attempt's end and the next attempt's start move neither end of the run's time."""
    run_id = "01900000-0000-7000-8000-000000000001"
    started = time.time() - 600
    status = {"state": "running", "agent": "a", "started": started}
    status["supervisor_pid"] = os.getpid()  # this test supervises it: not lost
    run_dir = write_run(repo, run_id, status=status)

    def now(kind: str, **data: Any) -> str:
        stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        return json.dumps({**event(kind, run_id, agent="a", **data), "timestamp": stamp}) + "\n"

    def elapsed(d: Any, where: str) -> tuple[int, str | None, str | None]:
        cell = d.find_element("css selector", where)
        shown = cell.text.split(":")
        minutes = int(shown[0]) if len(shown) == 2 else -1  # mm:ss (h:mm:ss: a day off)
        return minutes, cell.get_attribute("data-started"), cell.get_attribute("data-ended")

    def through_a_wait(served: Any, page: str, state: str, where: str) -> None:
        driver.get(served.url(page))
        wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
        with (run_dir / "events.jsonl").open("a") as handle:
            handle.write(now("agent:failed", status="rate_limited"))
            handle.write(now("agent:waiting", reason="usage limit; waiting"))
        wait_for(driver, lambda d: d.find_element("css selector", state).text == "waiting")
        minutes, first, ended = elapsed(driver, where)
        assert minutes >= 10 and ended is None  # no end while it waits
        with (run_dir / "events.jsonl").open("a") as handle:
            handle.write(now("agent:start", pid=2))
        wait_for(driver, lambda d: d.find_element("css selector", state).text == "running")
        minutes, again, ended = elapsed(driver, where)
        assert minutes >= 10 and (again, ended) == (first, None)  # from the first start

    with serving(repo) as served:
        through_a_wait(served, "/", "td.state", "td.elapsed")
        through_a_wait(served, f"/run/{run_id}", "#state", "#elapsed")


def test_an_open_page_learns_that_a_runs_supervisor_died(repo: Path, driver: Any) -> None:
    """A supervisor killed (``kill -9``) writes nothing more: the open runs page and run page
    showed the run running, its time counting, until a reload; they now show it lost, its
    time ended at its last sign of life, and the run page says why."""
    run_id = "01900000-0000-7000-8000-000000000001"
    started = time.time() - 600
    supervisor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    status = {
        "state": "running",
        "agent": "a",
        "started": started,
        "supervisor_pid": supervisor.pid,
    }
    status |= {"supervisor_create_time": liveness.start_time(supervisor.pid)}
    status["last_activity"] = started + 65
    write_run(repo, run_id, status=status, events=[event("agent:start", run_id, agent="a", pid=1)])
    try:
        with serving(repo) as served:
            driver.get(served.url("/"))
            wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
            driver.execute_script("window.open(arguments[0]);", served.url(f"/run/{run_id}"))
            pages = driver.window_handles
            driver.switch_to.window(pages[-1])
            wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
            assert driver.find_element("id", "state").text == "running"
            supervisor.kill()
            supervisor.wait()
            wait_for(driver, lambda d: d.find_element("id", "state").text == "lost")
            wait_for(driver, lambda d: d.find_element("id", "elapsed").text == "01:05")
            assert "neither supervisor nor agent alive" in driver.find_element("id", "reason").text
            driver.switch_to.window(pages[0])
            wait_for(driver, lambda d: d.find_element("css selector", "td.state").text == "lost")
            wait_for(driver, lambda d: d.find_element("css selector", "td.elapsed").text == "01:05")
    finally:
        supervisor.kill()
        supervisor.wait()


def test_screenshot_of_a_plan_graph_and_a_prompt_by_segment(
    repo: Path, tmp_path: Path, driver: Any
) -> None:
    chain.configure(repo)
    result = chain.run(repo, "--step", "1")
    assert result.returncode == 0, result.stderr
    builder = next(
        p.parent.name
        for p in sorted((repo / "flows" / "feature" / "runs").glob("*/prompt_segments.json"))
    )
    with serving(repo) as served:
        driver.get(served.url("/plan", path="specs/feature.md"))
        graph = wait_for(driver, lambda d: d.find_element("id", "plan-graph"))
        steps = driver.find_elements("css selector", "#plan-graph g.step")
        assert [s.get_attribute("data-step") for s in steps] == ["1", "2"]
        assert "step-done" in steps[0].get_attribute("class")  # step 1 landed
        shot = tmp_path / "plan.png"
        assert graph.screenshot(str(shot))
        assert png_colours(shot.read_bytes()) > 3
        driver.get(served.url(f"/run/{builder}"))
        rows = wait_for(driver, lambda d: d.find_elements("css selector", "#segments tr.segment"))
        sources = [r.find_elements("css selector", "td")[3].text for r in rows]
        assert len(rows) >= 3 and "specs/feature.md" in sources, sources  # the step's plan
        shot = tmp_path / "prompt.png"
        assert driver.find_element("id", "prompt").screenshot(str(shot))
        assert png_colours(shot.read_bytes()) > 3


def test_a_message_typed_in_the_page_goes_to_send_and_its_outcome_shows(
    repo: Path, driver: Any
) -> None:
    """The box runs the product's ``send`` on the run (docs/serve.md, "Send and cancel") and
    the page shows what it said, live."""
    chain.configure(repo)
    assert chain.run(repo, "--step", "1").returncode == 0
    builder = next(
        p.parent.name
        for p in sorted((repo / "flows" / "feature" / "runs").glob("*/prompt_segments.json"))
    )
    with serving(repo) as served:
        driver.get(served.url(f"/run/{builder}"))
        wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
        driver.find_element("css selector", "#send-form textarea").send_keys("<b>hello</b> there")
        driver.find_element("id", "send").click()
        wait_for(
            driver,
            lambda d: "send: started: <b>hello</b> there" in d.find_element("id", "notices").text,
        )
        wait_for(driver, lambda d: len(d.find_elements("css selector", "#notices li")) == 2)
        assert driver.find_elements("css selector", "#notices b") == []


def test_the_plan_graph_follows_a_step_from_red_to_running_to_done(repo: Path, driver: Any) -> None:
    hold = repo.parent / "hold"  # the implementer runs until the graph has shown the step running
    chain.configure(repo, hold=hold)
    with serving(repo) as served:
        driver.get(served.url("/plan", path="specs/feature.md"))

        def state(d: Any) -> str:
            classes = d.find_element("css selector", '#plan-graph g[data-step="1"]')
            return str(classes.get_attribute("class"))

        wait_for(driver, lambda d: "step-red" in state(d))  # its status is ❌ until it lands
        wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
        run = _start_chain(repo, "--step", "1")
        try:
            wait_for(driver, lambda d: "step-running" in state(d), timeout=60)
            chain.release(hold, "implementer")
            chain.release(hold, "reviewer")
            wait_for(driver, lambda d: "step-done" in state(d), timeout=60)
        finally:
            _, err = run.communicate(timeout=60)
        assert run.returncode == 0, err


def test_a_message_typed_in_the_page_reaches_the_running_agent_and_its_reply_shows(
    repo: Path, driver: Any
) -> None:
    """Issue 26: the box reaches an agent while it runs (the fake takes stream-json messages on
    stdin through the real claude adapter, as Claude Code does) and the agent's answer shows in
    the page's output, live; the last message ends the run and the page shows it succeeded."""
    live.write_project(repo)
    with live.spawned() as procs, serving(repo) as served:
        procs.append(live.start_spawn(repo, "talker"))
        run = live.listening_run(repo, procs[0])
        driver.get(served.url(f"/run/{run.name}"))
        wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
        # the agent's answer to each: "heard: ..." (the last one ends its turn: "done: ...")
        for message, answer in (("<i>blue</i>, not red", "heard: "), ("now finish", "")):
            box = driver.find_element("css selector", "#send-form textarea")
            box.clear()
            box.send_keys(message)
            driver.find_element("id", "send").click()
            wait_for(
                driver,
                lambda d, m=answer + message: m in d.find_element("id", "output").text,
            )
        assert "delivered to run" in driver.find_element("id", "notices").text
        wait_for(driver, lambda d: d.find_element("id", "state").text == "succeeded")
        assert driver.find_elements("css selector", "#output i, #notices i") == []
        out, err = procs[0].communicate(timeout=60)
        assert procs[0].returncode == 0, out + err


def test_the_plan_page_catches_up_on_what_its_stream_missed(repo: Path, driver: Any) -> None:
    """The plan page's stream starts from its end, so a step that ends while the page has no
    stream (drawn, not yet connected; a server restarted) sent its event to nobody: on each
    (re)connection the page asks for itself again and redraws when a step's state differs."""
    chain.configure(repo)
    node = '#plan-graph g[data-step="1"]'

    def state(d: Any) -> str:
        return str(d.find_element("css selector", node).get_attribute("class"))

    with serving(repo) as first:
        driver.get(first.url("/plan", path="specs/feature.md"))
        wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
        assert "step-red" in state(driver)
    # the server is gone; meanwhile step 1 lands with no event at all
    plan = repo / "specs" / "feature.md"
    done = plan.read_text().replace("### Status: ❌ | Step 1", "### Status: ✅ | Step 1")
    plan.write_text(done)
    git(repo, "commit", "-q", "-am", "step 1 done elsewhere")
    with serving(repo, port=first.port, token=first.token):  # back: the page reconnects
        wait_for(driver, lambda d: "step-done" in state(d))


def test_the_plan_page_learns_that_its_steps_run_died(repo: Path, driver: Any) -> None:
    """A step's `run` killed with `kill -9` ends nothing and writes nothing more: the plan page
    reloaded on an agent's start or a run's end only, so the step stayed running (yellow) until
    a reload. On the stream's run:lost of its agent it asks for itself again and redraws the
    step as it is now (red: its status in the plan), and a page drawn after that, whose stream
    says run:lost again, stays as it is (no reload loop)."""
    hold = repo.parent / "hold"  # the implementer runs until released: never, here
    chain.configure(repo, hold=hold)
    node = '#plan-graph g[data-step="1"]'

    def state(d: Any) -> str:
        return str(d.find_element("css selector", node).get_attribute("class"))

    run = _start_chain(repo, "--step", "1")
    agent: dict[str, object] | None = None
    try:
        wait_until(lambda: running_agent(repo) is not None, 60)
        agent = running_agent(repo)
        with serving(repo) as served:
            driver.get(served.url("/plan", path="specs/feature.md"))
            wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
            assert "step-running" in state(driver)
            run.kill()  # kill -9: no record, no event
            run.communicate(timeout=30)
            wait_for(driver, lambda d: "step-red" in state(d))
            # the redrawn page: its stream says run:lost again at once; it stays drawn
            driver.execute_script("window.stays = true;")
            wait_for(driver, lambda d: d.find_element("id", "live").text == "live")
            fetched = (
                "return performance.getEntriesByType('resource').filter("
                "e => e.initiatorType === 'fetch' && e.responseEnd > 0).length"
            )
            wait_for(driver, lambda d: d.execute_script(fetched) >= 2)  # (re)connect + lost
            assert driver.execute_script("return window.stays === true")
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate(timeout=30)
        if agent is not None:  # the fake implementer, left by its killed supervisor
            kill_recorded_tree(agent)
