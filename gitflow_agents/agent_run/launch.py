"""Starting one agent: where it reports, the adapter's launch for its process.

Every place that runs an agent goes through here, by way of ``agent_run.run.AgentRunner``
(``spawn``, ``send``, the configured reviewer of ``git agent-review``, the chain's agents):
:func:`report_files` names its report files (once per run), :func:`prepare` turns a configured
agent and its written system prompt into a :class:`Prepared` launch (the adapter and what the
supervisor starts). How a run is supervised is ``supervisor``'s job; how it is recorded
(``result.json``, cards) is ``agent_run.run``'s and ``agent_run.record``'s.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NamedTuple

from gitflow_agents.agents import get_adapter
from gitflow_agents.agents.base import Adapter, AgentOutput, Invocation
from gitflow_agents.agents.meter import METERS, streamed_usage
from gitflow_agents.agents.prices import Price, usage_of
from gitflow_agents.base.errors import Terminated
from gitflow_agents.base.fsutil import refuse_symlinks, safe_target
from gitflow_agents.runs.budget import Ledger
from gitflow_agents.runs.events import Channel, ConsoleChannel, EventHub, JsonlChannel
from gitflow_agents.supervisor import Launch, ReportFiles

if TYPE_CHECKING:
    from gitflow_agents.config import FlowConfig

#: The user message an agent gets unless the caller has its own.
TASK = (
    "Follow the instructions in your system prompt ({prompt}). Write your progress to {report}; "
    "when you are done rename it to {success}, or to {failed} if you could not complete the task."
)


class Prepared(NamedTuple):
    """One agent ready to start: its adapter, and what the supervisor starts."""

    adapter: Adapter
    launch: Launch


def report_files(config: FlowConfig, agent: str, agent_dir: Path) -> ReportFiles:
    """The report files of ``agent`` (named by its completion workflow) in ``agent_dir``."""
    workflow = config.completion_workflow_for(agent)
    return ReportFiles.named(
        agent_dir, workflow.report_filename, workflow.success_suffix, workflow.failure_suffix
    )


def refuse_planted(files: ReportFiles) -> None:
    """Paths the tool makes for an agent (its report, the adapter's config folder) must not be
    symlinks planted before the run, nor lead out of the repository: UnsafeWriteError otherwise."""
    safe_target(files.folder)
    refuse_symlinks(*files, files.folder / "config")


def prepare(
    config: FlowConfig,
    agent: str,
    files: ReportFiles,
    *,
    agent_id: str,
    workdir: Path,
    prompt_path: Path,
    prompt_text: str,
    task: str | None = None,
    env: Mapping[str, str] | None = None,
    resume_session_id: str | None = None,
    budget: Ledger | None = None,
    live_input: bool = False,
) -> Prepared:
    """The configured ``agent`` as its adapter's launch: cwd ``workdir`` (watched for activity,
    but for the run artefacts in its flow folder), reporting in ``files``, the system prompt
    already written to ``prompt_path``, ``task`` as the user message (default :data:`TASK`),
    ``env`` (default ``os.environ``) for the adapter to draw its allow-list from; ``budget``:
    the ledger whose limits the run is held to (its watch, and the CLI's own budget flag);
    ``live_input``: the run has a control channel (a CLI that can is launched to take messages
    on stdin while it runs)."""
    agent_cfg = config.agent(agent)
    adapter = get_adapter(agent_cfg.adapter)
    agent_dir = files.folder
    refuse_planted(files)
    watch = budget.watch(agent_cfg.adapter, agent_cfg.model) if budget is not None else None
    invocation = Invocation(
        agent_id=agent_id,
        agent_dir=agent_dir,
        workdir=workdir,
        system_prompt_path=prompt_path,
        system_prompt=prompt_text,
        task=task
        or TASK.format(
            prompt=prompt_path,
            report=files.report,
            success=files.success.name,
            failed=files.failure.name,
        ),
        model=agent_cfg.model,
        options=agent_cfg.options,
        config_dir=agent_dir / "config",
        env=dict(os.environ) if env is None else env,
        command=agent_cfg.command,
        resume_session_id=resume_session_id,
        budget_usd=budget.usd_left() if budget is not None else None,
        stream_usage=watch is not None,
        live_input=live_input,
    )
    launch = Launch(
        spec=adapter.launch(invocation),
        parse_output=adapter.parse_output
        if watch is not None or agent_cfg.adapter not in METERS
        else streamed_usage(adapter.parse_output, agent_cfg.adapter),
        watch=(workdir,),
        ignore=(workdir / config.flow_dir.strip("/"),),
        budget=watch,
        adapter=agent_cfg.adapter,
        price=functools.partial(_priced, model=agent_cfg.model, prices=config.prices),
    )
    return Prepared(adapter, launch)


def _priced(
    output: AgentOutput, *, model: str | None, prices: Mapping[str, Price]
) -> tuple[float | None, bool]:
    """The cost of ``output`` as the run's record prices it (``usage_of``), and whether the
    price table estimated it."""
    usage = usage_of(output, model, prices)
    return usage.cost_usd, usage.cost_estimated


def event_hub(
    events: Path | None, run_id: str | None = None, *, quiet: bool, tty: bool | None = None
) -> EventHub:
    """A hub writing ``events`` (a run's events.jsonl; None: no file) and, unless ``quiet``, the
    live console lines on stderr (``tty`` None: redrawn in place on a terminal outside CI)."""
    channels: list[Channel] = [JsonlChannel(events)] if events is not None else []
    if not quiet:
        if tty is None:
            tty = sys.stderr.isatty() and not os.environ.get("CI")
        channels.append(ConsoleChannel(sys.stderr, is_tty=tty))
    return EventHub(channels, run_id=run_id)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (CI cancelling the job) takes the Ctrl-C path: agents' trees die first."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
