"""What every agent of a chain run shares: the settings, the project, the plan, the events.

``ChainSettings`` are the options of ``run`` / ``flow`` (docs/chains.md); ``Context`` carries
them with the project root, its config, the plan, the event hub and the cancel flag through
every workspace, agent and review round of one run.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitflow_agents.assets import PromptAssetManifest, load_manifest
from gitflow_agents.base.errors import interrupted_by
from gitflow_agents.config import ChainConfig, FlowConfig
from gitflow_agents.findings import Severity
from gitflow_agents.git import queries as git
from gitflow_agents.plan import Plan
from gitflow_agents.runs import RunPaths, new_run_id, runs_root
from gitflow_agents.runs.budget import Ledger
from gitflow_agents.runs.events import EventHub
from gitflow_agents.runs.tree import KILL_GRACE

if TYPE_CHECKING:
    from gitflow_agents.assets import PromptAssetManifest


_DEFAULTS = ChainConfig()  # the ``chain:`` section's defaults: one source for both
_THRESHOLD = Severity(_DEFAULTS.severity_threshold)


class Cancel(threading.Event):
    """A run's cancel flag (every supervisor of the run watches it) that says why it was set:
    ``interrupted (SIGTERM)`` when the command was interrupted while agents ran in other
    threads (``run --all --jobs N``), so their records say what one run's would
    (``supervisor/run``: an agent stopped by it is canceled for ``reason``)."""

    def __init__(self) -> None:
        super().__init__()
        self.reason = "canceled by request"

    def set_for(self, exc: BaseException) -> None:
        """Set it for the interrupt ``exc`` (Ctrl-C or SIGTERM)."""
        self.reason = f"interrupted ({interrupted_by(exc)})"
        self.set()


@dataclass(frozen=True)
class ChainSettings:
    """One run's chain options: the command line over the config's ``chain:`` section
    (``commands/run.py``); unset, the section's own defaults (``ChainConfig``)."""

    implementer: str = _DEFAULTS.implementer
    reviewers: tuple[str, ...] = _DEFAULTS.reviewers
    fixer: str = _DEFAULTS.fixer
    max_iterations: int = _DEFAULTS.max_iterations
    target: str | None = _DEFAULTS.target  # None: config.default_branch
    branch_pattern: str = _DEFAULTS.branch_pattern  # {plan_name}, {plan}, {step}, {step2}
    merge: str = _DEFAULTS.merge  # "ff" (fast-forward only) or "merge" (always a merge commit)
    threshold: Severity = _THRESHOLD
    stuck_timeout: float | None = None  # default: config defaults.stuck_timeout_secs
    timeout: float | None = None  # default: config defaults.max_wait_secs
    kill_grace: float = KILL_GRACE
    force: bool = False  # run a step that is already done (docs/chains.md, The state model)


@dataclass
class Context:
    """What every agent of a run shares: project, config, plan, settings, events, cancel."""

    root: Path  # the user's work tree (run artifacts live under root/flow_dir)
    config: FlowConfig
    plan: Plan | None
    flow: str  # flow name: the plan's name, else given
    settings: ChainSettings
    hub: EventHub
    cancel: Cancel = field(default_factory=Cancel)
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    commit_identity: dict[str, str] = field(default_factory=dict)  # GIT_AUTHOR_*/COMMITTER_*
    chain_run: str | None = None  # the step run agents belong to (None: a single flow)
    notices: list[str] = field(default_factory=list)  # what the run did on its own, to tell
    target_remote: str | None = None  # "origin": the target is read from the remote (--pr)
    # exact secret values the step's diff adds, gathered by every review round: masked in the
    # runs that follow (their worker.log, events, records) and in the step's own record
    secrets: set[str] = field(default_factory=set)
    # files chain.copy_ignored copied into the work trees: never committed (``exclude``)
    protected: set[str] = field(default_factory=set)
    # held from "nothing moved since the review" to the merge: the steps of one run --all
    # --jobs N (copies of one Context share it) land one at a time, each on a reviewed tree
    landing: threading.Lock = field(default_factory=threading.Lock)
    budget: Ledger | None = None  # the run's budgets and what its scopes spent (runs/budget.py)
    # the options a "run the step again" command the run prints repeats (commands/run.py,
    # chain/state.run_again): without them it would run other agents, on another branch
    again: tuple[str, ...] = ()
    _manifest: Any = field(default=None, init=False, repr=False)
    _common_dir: Path | None = field(default=None, init=False, repr=False)
    _flow_dir_excluded: bool = field(default=False, init=False, repr=False)

    @property
    def target(self) -> str:
        return self.settings.target or self.config.default_branch

    @property
    def target_rev(self) -> str:
        """The ref the target's commit is read from: the local branch, or with
        ``target_remote`` its remote-tracking ref (refreshed by ``chain.state.target_tip``)."""
        if self.target_remote is not None:
            return f"refs/remotes/{self.target_remote}/{self.target}"
        return f"refs/heads/{self.target}"

    @property
    def adapters(self) -> tuple[str, ...]:
        """The adapters of the chain's agents (implementer, reviewers, fixer): what a spent
        budget is asked about before a step starts (``Ledger.holds_back``)."""
        settings = self.settings
        names = (settings.implementer, *settings.reviewers, settings.fixer)
        return tuple(self.config.agent(name).adapter for name in names)

    @property
    def exclude(self) -> tuple[str, ...]:
        """What no agent commit takes: the flow dir, then the copied ignored files."""
        return (self.config.flow_dir.strip("/"), *sorted(self.protected))

    def manifest(self) -> PromptAssetManifest:
        """The `.agents-flow/` manifest of ``root``, read once per run (every agent's prompt
        resolves its agent through it)."""
        if self._manifest is None:
            self._manifest = load_manifest(self.root)
        manifest: PromptAssetManifest = self._manifest
        return manifest

    def common_dir(self) -> Path:
        """``git.git_common_dir`` of ``root``, asked of git once per run (every step's work tree
        path, ``info/exclude`` and removal need it)."""
        if self._common_dir is None:
            self._common_dir = git.git_common_dir(self.root)
        return self._common_dir

    def tool_root(self) -> Path:
        """``git.tool_worktree_root`` of ``root`` (no git call after the first)."""
        return git.tool_worktree_root(self.root, common=self.common_dir())

    def exclude_flow_dir(self) -> None:
        """Put the flow dir into ``info/exclude`` (both spellings: a step work tree holds it as
        a symlink, which is no directory to git), once per run: before anything is written
        under it, so a run refused early (its record, its lock) leaves nothing for ``git
        status`` or ``git add -A`` to see."""
        if not self._flow_dir_excluded:
            flow_dir = self.config.flow_dir.strip("/")
            patterns = (f"/{flow_dir}/", f"/{flow_dir}")
            git.ensure_info_exclude(self.root, patterns, common=self.common_dir())
            self._flow_dir_excluded = True

    def new_run(self) -> RunPaths:
        """A fresh ``<flow_dir>/<flow>/runs/<runID>/`` for one agent invocation.

        No git call per agent: the flow dir is already in ``info/exclude``, put there when the
        step began (``exclude_flow_dir``, ``run_step``) or the workspace was made
        (``step_workspace``, ``branch_workspace``, ``scratch_workspace``; a caller that builds a
        Workspace itself excludes it with ``git.ensure_info_exclude``)."""
        paths = RunPaths(runs_root(self.root, self.config.flow_dir, self.flow) / new_run_id())
        paths.run_dir.mkdir(parents=True)
        return paths
