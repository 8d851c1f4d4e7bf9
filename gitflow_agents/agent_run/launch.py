"""Starting one agent: its prompt file, where it reports, the adapter's launch spec, the run.

Every place that runs an agent goes through here, by way of ``agent_run`` (``spawn``, ``send``,
the configured reviewer of ``git agent-review``, the chain's agents). :func:`prepare`
turns a configured agent and its written system prompt into a :class:`Prepared` launch (the
adapter and its LaunchSpec); :func:`supervise_agent` runs it to the supervisor's Outcome. How a run
is recorded (``result.json``, cards) is ``agent_run``'s and ``run_record``'s job.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from gitflow_agents.agents.base import Adapter, LaunchSpec
    from gitflow_agents.config import CompletionWorkflow, FlowConfig
    from gitflow_agents.runs.events import EventHub
    from gitflow_agents.supervisor import Outcome

#: The user message an agent gets unless the caller has its own.
TASK = (
    "Follow the instructions in your system prompt ({prompt}). Write your progress to {report}; "
    "when you are done rename it to {success}, or to {failed} if you could not complete the task."
)


class SignalFiles(NamedTuple):
    """``report.md`` (progress), ``report.complete.md`` (success), ``report.failed.md``."""

    report: Path
    success: Path
    failure: Path


@dataclass(frozen=True)
class Prepared:
    """One agent ready to start: the adapter's launch spec, and where the agent reports."""

    agent_id: str
    agent_dir: Path
    workdir: Path  # the process's cwd, watched for activity
    adapter: Adapter
    spec: LaunchSpec
    workflow: CompletionWorkflow
    files: SignalFiles
    ignore: tuple[Path, ...]  # run artifacts inside workdir: not the agent's activity


def signal_files(config: FlowConfig, agent: str, agent_dir: Path) -> SignalFiles:
    """The report files of ``agent`` (named by its completion workflow) in ``agent_dir``."""
    from gitflow_agents.supervisor import signal_paths

    workflow = config.completion_workflow_for(agent)
    return SignalFiles(
        *signal_paths(
            agent_dir, workflow.report_filename, workflow.success_suffix, workflow.failure_suffix
        )
    )


def prepare(
    config: FlowConfig,
    agent: str,
    *,
    agent_id: str,
    agent_dir: Path,
    workdir: Path,
    prompt_path: Path,
    prompt_text: str,
    task: str | None = None,
    env: Mapping[str, str] | None = None,
    resume_session_id: str | None = None,
) -> Prepared:
    """The configured ``agent`` as its adapter's launch spec: cwd ``workdir``, the system prompt
    already written to ``prompt_path``, ``task`` as the user message (default :data:`TASK`),
    ``env`` (default ``os.environ``) for the adapter to draw its allow-list from."""
    from gitflow_agents.agents import get_adapter
    from gitflow_agents.agents.base import Invocation
    from gitflow_agents.base.fsutil import refuse_symlinks, safe_target

    agent_cfg = config.agent(agent)
    adapter = get_adapter(agent_cfg.adapter)
    files = signal_files(config, agent, agent_dir)
    # Paths the tool makes for the agent (its report, the adapter's config folder) must not
    # be symlinks planted before the run, nor lead out of the repository.
    safe_target(agent_dir)
    refuse_symlinks(*files, agent_dir / "config")
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
    )
    return Prepared(
        agent_id=agent_id,
        agent_dir=agent_dir,
        workdir=workdir,
        adapter=adapter,
        spec=adapter.launch(invocation),
        workflow=config.completion_workflow_for(agent),
        files=files,
        ignore=(workdir / config.flow_dir.strip("/"),),
    )


def supervise_agent(
    prepared: Prepared,
    *,
    run_dir: Path,
    hub: EventHub,
    run_id: str,
    stuck_timeout: float,
    timeout: float | None,
    cancel: threading.Event | None = None,
    kill_grace: float = 3.0,
    exit_grace: float = 10.0,
    stuck_grace: float = 0.0,
    secrets: Iterable[str] = (),
) -> Outcome:
    """Run ``prepared`` under the supervisor to its Outcome (see ``supervisor.supervise``);
    ``secrets``: exact values masked in its ``worker.log``, events and reason."""
    from gitflow_agents.supervisor import supervise

    workflow = prepared.workflow
    return supervise(
        prepared.spec,
        agent_dir=prepared.agent_dir,
        run_dir=run_dir,
        report_name=workflow.report_filename,
        success_suffix=workflow.success_suffix,
        failure_suffix=workflow.failure_suffix,
        stuck_timeout=stuck_timeout,
        timeout=timeout,
        watch_paths=[prepared.workdir],
        ignore_paths=prepared.ignore,
        hub=hub,
        run_id=run_id,
        cancel=cancel,
        parse_output=prepared.adapter.parse_output,
        kill_grace=kill_grace,
        exit_grace=exit_grace,
        stuck_grace=stuck_grace,
        secrets=secrets,
    )


def event_hub(
    events: Path | None, run_id: str | None = None, *, quiet: bool, tty: bool | None = None
) -> EventHub:
    """A hub writing ``events`` (a run's events.jsonl; None: no file) and, unless ``quiet``, the
    live console lines on stderr (``tty`` None: redrawn in place on a terminal outside CI)."""
    from gitflow_agents.runs.events import Channel, ConsoleChannel, EventHub, JsonlChannel

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
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
