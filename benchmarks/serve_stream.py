"""What ``gitflow-agents serve`` spends to keep one page live: one poll of the stream
(``serve/stream.py``: every run folder looked at, new events read) and one draw of the runs page
(``serve/views.py``: each run's records and the end of its events), by number of runs.

Usage: python benchmarks/serve_stream.py [--runs 10,100,1000] [--repeat N]

Prints a table: runs, median ms of an idle poll (nothing new), of a poll that reads one new
event, and of reading the runs page's rows (the newest 200). The stream polls every 0.2 s per open page, so an idle
poll well under 20 ms keeps one page under 10 % of a core.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitflow_agents.runs import new_run_id
from gitflow_agents.serve.stream import Follower
from gitflow_agents.serve.views import run_rows


def make_runs(root: Path, count: int) -> Path:
    """``count`` finished agent runs of 40 events each, and one live run; its events file."""
    runs = root / "flows" / "bench" / "runs"
    event = {
        "type": "agent:output",
        "timestamp": "2026-01-01T00:00:00Z",
        "data": {"tail": "x" * 80},
    }
    lines = "".join(json.dumps(event) + "\n" for _ in range(40))
    for _ in range(count):
        run_dir = runs / new_run_id()
        run_dir.mkdir(parents=True)
        (run_dir / "events.jsonl").write_text(lines)
        (run_dir / "status.json").write_text(json.dumps({"state": "succeeded", "agent": "a"}))
        (run_dir / "result.json").write_text(json.dumps({"status": "succeeded", "run": {}}))
    live = runs / new_run_id()
    live.mkdir()
    (live / "status.json").write_text(json.dumps({"state": "running", "agent": "a"}))
    (live / "events.jsonl").write_text("")
    return live / "events.jsonl"


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def measure(count: int, repeat: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        events = make_runs(root, count)
        follower = Follower(root, "flows")
        follower.start()
        idle, busy, page = [], [], []
        for _ in range(repeat):
            start = time.perf_counter()
            follower.poll()
            idle.append(time.perf_counter() - start)
            with events.open("a") as handle:
                handle.write(json.dumps({"type": "agent:start", "data": {"pid": 1}}) + "\n")
            start = time.perf_counter()
            assert len(follower.poll()) == 1
            busy.append(time.perf_counter() - start)
            start = time.perf_counter()
            run_rows(root, "flows")  # the newest MAX_ROWS, as the page draws them
            page.append(time.perf_counter() - start)
        return median_ms(idle), median_ms(busy), median_ms(page)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="10,100,1000", help="numbers of runs, comma-separated")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'runs':>6}  {'idle poll ms':>12}  {'poll, 1 event ms':>16}  {'runs page ms':>12}")
    for count in (int(n) for n in args.runs.split(",")):
        idle, busy, page = measure(count, args.repeat)
        print(f"{count:>6}  {idle:>12.1f}  {busy:>16.1f}  {page:>12.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
