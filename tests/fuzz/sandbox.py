"""Where fuzzed inputs run: a throw-away repository with fake agents, a home of its own, and an
``outside`` folder that no input may change (symlinks in the repository point at it).

``Sandbox.run`` calls one target in-process with a time limit and classifies what happened: an
exit code or a ``GitflowError`` is fine; the internal-error code 70 or any other exception is a
traceback; more than ``timeout`` seconds of CPU time (this process's, where every target runs) is
a hang, and so is waiting :data:`WAIT_FACTOR` times as long in wall-clock time (a deadlock burns
no CPU; the targets' child processes, git and fake agents, end within the tool's own timeouts);
a changed ``outside`` is a write outside. CPU time, not wall-clock time: on a loaded machine a
run may take many times its CPU time, and that is not a hang.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import signal
import subprocess
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from gitflow_agents.base.errors import GitflowError

FAKES = Path(__file__).resolve().parent.parent / "fakes"
ROOT = Path(__file__).resolve().parent.parent.parent
ALLOWED_EXITS = {0, 1, 2, 3, 4, 130}
OUTSIDE_FILES = {
    "card.md": "---\ntitle: outside\n---\n- [ ] one\n",
    "plan.md": "# P\n\n## Implementation Steps\n\n### Status:  | Step 1: A\n",
    "report.md": "REVIEW_RESULT: APPROVED\n",
    "base.yaml": "flow_dir: flows\n",
}
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Fuzz",
    "GIT_AUTHOR_EMAIL": "fuzz@example.com",
    "GIT_COMMITTER_NAME": "Fuzz",
    "GIT_COMMITTER_EMAIL": "fuzz@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


WAIT_FACTOR = 10
"""A run that has neither finished nor used ``timeout`` CPU seconds after this many times
``timeout`` wall-clock seconds is a hang too (it waits for something that does not come)."""


class Hang(BaseException):
    """Raised by the timers: not an Exception, so no handler of the tool swallows it."""


@dataclass
class Tally:
    inputs: int = 0  # generated inputs
    runs: int = 0  # targets run on them (each input drives several commands or functions)
    tracebacks: int = 0
    hangs: int = 0
    outside: int = 0
    examples: list[str] = field(default_factory=list)  # one line per distinct problem
    outcomes: Counter[str] = field(default_factory=Counter)  # "exit 0", "InputError"…: reach

    def note(self, kind: str, detail: str) -> None:
        line = f"{kind}: {detail}"
        if line not in self.examples:
            self.examples.append(line)


def fake_config(stuck: int = 5, wait: int = 20) -> str:
    fake = FAKES / "fake_agent"
    reviewer = FAKES / "fake_reviewer"
    return (
        "completion_workflow:\n"
        '  template: "Rename {report_file} to {success_file}."\n'
        f"defaults:\n  stuck_timeout_secs: {stuck}\n  max_wait_secs: {wait}\n"
        "agents:\n"
        f"  builder:\n    adapter: command\n    command: [{str(fake)!r}, succeed]\n"
        "    allow_env: [PYTHONPATH]\n"
        f"  reviewer:\n    type: reviewer\n    adapter: command\n"
        f"    command: [{str(reviewer)!r}, approve]\n    allow_env: [PYTHONPATH]\n"
        f"  fixer:\n    adapter: command\n    command: [{str(fake)!r}, succeed]\n"
        "    allow_env: [PYTHONPATH]\n"
    )


class Sandbox:
    def __init__(self, base: Path, timeout: float = 20.0) -> None:
        self.base, self.timeout = base, timeout
        self.home, self.repo = base / "home", base / "repo"
        self.outside, self.runner = base / "outside", base / "runner"
        for folder in (self.home, self.outside, self.runner):
            folder.mkdir(parents=True, exist_ok=True)
        self.env = {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(ROOT),
            **GIT_ENV,
        }
        (self.home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
        with self.environment():
            self._make_repo()
        self.reset_outside()

    def _git(self, *args: str) -> None:
        subprocess.run(["git", *args], cwd=self.repo, check=True, capture_output=True)

    def _make_repo(self) -> None:
        self.repo.mkdir()
        self._git("init", "-q", "-b", "main")
        (self.repo / ".flow").mkdir()
        (self.repo / ".flow" / "base.yaml").write_text(fake_config())
        (self.repo / "specs").mkdir()
        (self.repo / "specs" / "feature.md").write_text(OUTSIDE_FILES["plan.md"])
        (self.repo / "card.md").write_text(OUTSIDE_FILES["card.md"])
        (self.repo / "sub").mkdir()
        (self.repo / "sub" / "a.txt").write_text("a\n")
        self._git("add", ".")
        self._git("commit", "-q", "-m", "fuzz project")
        for name in OUTSIDE_FILES:  # every file kind, also as a link leading outside
            (self.repo / f"out-{name}").symlink_to(self.outside / name)
        (self.repo / "out-dir").symlink_to(self.outside, target_is_directory=True)

    def reset_outside(self) -> None:
        shutil.rmtree(self.outside, ignore_errors=True)
        self.outside.mkdir()
        for name, text in OUTSIDE_FILES.items():
            (self.outside / name).write_text(text)
        self._outside_state = self._state()

    def _state(self) -> tuple[tuple[str, str], ...]:
        found = []
        for path in sorted(self.outside.rglob("*")):
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
            found.append((str(path.relative_to(self.outside)), digest))
        extra = sorted(
            p.name
            for p in self.base.iterdir()
            if p.name not in {"home", "repo", "outside", "runner"}
        )
        return (*found, *(("base/" + name, "new") for name in extra))

    def restore_config(self) -> None:
        (self.repo / ".flow" / "base.yaml").write_text(fake_config())

    @contextlib.contextmanager
    def environment(self) -> Iterator[None]:
        saved, cwd = dict(os.environ), Path.cwd()
        os.environ.clear()
        os.environ.update(self.env)
        try:
            os.chdir(self.repo if self.repo.exists() else self.base)
            yield
        finally:
            os.chdir(cwd)
            os.environ.clear()
            os.environ.update(saved)

    def run(self, tally: Tally, target: Callable[[], object], label: str) -> None:
        """Run ``target`` once and count what happened (``label`` names the input kind)."""
        tally.runs += 1
        crash_log = self.home / ".cache" / "gitflow-agents" / "crash.log"
        crash_log.unlink(missing_ok=True)

        def alarm(signum: int, frame: FrameType | None) -> None:
            raise Hang("CPU" if signum == signal.SIGPROF else "waited")

        previous = {sig: signal.signal(sig, alarm) for sig in (signal.SIGPROF, signal.SIGALRM)}
        signal.setitimer(signal.ITIMER_PROF, self.timeout)  # this process's CPU time
        signal.setitimer(signal.ITIMER_REAL, self.timeout * WAIT_FACTOR)
        out, err = io.StringIO(), io.StringIO()
        code: int | None = None
        try:
            with (
                self.environment(),
                contextlib.redirect_stdout(out),
                contextlib.redirect_stderr(err),
            ):
                returned = target()
            if isinstance(returned, int) and not isinstance(returned, bool):
                code = returned
            else:
                tally.outcomes["returned"] += 1
        except Hang as hang:
            tally.hangs += 1
            tally.note(f"hang ({hang})", label)
        except GitflowError as exc:
            tally.outcomes[type(exc).__name__] += 1
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
        except Exception as exc:  # the function itself raised: a traceback
            tally.tracebacks += 1
            tally.note("traceback", f"{label}: {_signature(exc)}")
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if code is not None:
            tally.outcomes[f"exit {code}"] += 1
            if code not in ALLOWED_EXITS:
                tally.tracebacks += 1
                log = crash_log.read_text().strip().splitlines() if crash_log.exists() else [""]
                tally.note("traceback", f"{label}: exit {code} {log[-1]}")
        if self._state() != self._outside_state:
            tally.outside += 1
            tally.note("outside", label)
            for path in self.base.iterdir():
                if path.name not in {"home", "repo", "outside", "runner"}:
                    shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink()
            self.reset_outside()


def _signature(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "gitflow_agents" in f.filename] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    return f"{type(exc).__name__} at {where}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
