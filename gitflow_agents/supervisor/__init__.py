"""Run one agent CLI as a supervised process tree and turn whatever it does into an Outcome.

The agent starts in its own session (so its process group is ours to kill) with stdin closed
(Codex and opencode wait on an open stdin; a CLI that takes messages mid-run, in a run with a
control channel, gets a pipe: ``stdin.py``), in the directory its LaunchSpec names. While it
runs it is the event hub's running agent: ``send`` and ``cancel`` reach it through the hub. stdout and
stderr stream to ``worker.log`` as they arrive.

Completion is the rename of ``report.md`` to ``report.complete.md`` / ``report.failed.md``
(docs/protocol.md, "Completion signal"), seen through Linux inotify (woken by the rename itself,
no fixed poll) or, where inotify is not available, a 20 ms stat poll; process exit triggers one
more check. Exit codes are not trusted as success: an agent that exits without renaming its
report has failed, whatever its code.

Activity (any one resets the stuck timer): output on stdout/stderr, any write in the agent dir,
any file event under the watched work tree, the run's heartbeat file, or CPU burnt by the tools
the agent CLI runs (compilers and test runners can be silent for minutes, and must not be killed
as "stuck"), not by the CLI itself unless LaunchSpec.cpu_activity is "tree" (a CLI can spin
while it waits on a stalled model: opencode 1.18 does). Stuck = alive and no activity for
``stuck_timeout``. On stuck, hard timeout, cancel or Ctrl-C the whole tree dies: SIGTERM to
the group and to every descendant (including grandchildren that left the group with setsid, found
by walking the tree, by the run id in their environment, and by the pids seen while they ran), a
grace period, then SIGKILL, then a check that none is left. The tree is also swept after a
normal finish, so no stale child outlives its run.

The modules, one job each (docs/supervisor.md, "Module layout"):

- ``run.py``: ``supervise(launch, files, limits, hub=, run_dir=, cancel=, secrets=)``: start the
  agent (``Launch``), wait for its rename, its exit or a reason to stop it (``Limits``), and end
  every run through one ``finish`` (sweep the tree, judge, record);
- ``outcome.py``: ``Outcome``, ``Status``, the completion signal files (``ReportFiles``), the
  verdict rules and ``status.json`` updates;
- ``watch.py``: inotify and stat-poll watchers of the agent dir, run dir and work tree;
- ``stdin.py``: the agent's stdin and ``AgentSession``, what the hub's ``send``/``abort`` reach;
- ``output.py``: stdout/stderr capture into ``worker.log`` (masked line by line,
  ``redact_stream.py``) and the exit notifier;
- ``tree.py``: finding, killing and CPU-sampling the agent's process tree.
"""

from gitflow_agents.runs.tree import TREE_ENV, kill_tree
from gitflow_agents.supervisor.outcome import (
    Outcome,
    ParsedOutput,
    ReportFiles,
    Status,
    SupervisorInterrupted,
)
from gitflow_agents.supervisor.run import TICK, Launch, Limits, supervise
from gitflow_agents.supervisor.watch import POLL_INTERVAL, WATCH_ENV, _libc, open_watcher

__all__ = [
    "POLL_INTERVAL",
    "TICK",
    "TREE_ENV",
    "WATCH_ENV",
    "Launch",
    "Limits",
    "Outcome",
    "ParsedOutput",
    "ReportFiles",
    "Status",
    "SupervisorInterrupted",
    "_libc",  # chain.py looks libc up once before parallel agents start
    "kill_tree",
    "open_watcher",
    "supervise",
]
