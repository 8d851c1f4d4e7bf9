"""benchmarks/github_requests.py meets its own targets: <= 3 posting writes per run whatever the
number of findings, 0 new comments and reviews on a re-run (single job and two-job split), and
lists read 100 per page."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.conftest import ROOT


def load() -> ModuleType:
    path = ROOT / "benchmarks" / "github_requests.py"
    spec = importlib.util.spec_from_file_location("github_requests_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_writes_per_run_do_not_grow_with_findings() -> None:
    bench = load()
    rows = [bench.one(n) for n in (1, 60)]
    for row in rows:
        assert row["ok"] is True, row
        assert row["first_posting_writes"] == 3 and row["first_writes"] == 4  # + pending
        assert row["post_writes"] == 3  # the posting job sets no pending status
        assert row["rerun_new_comments"] == row["rerun_new_reviews"] == 0
        assert row["repost_new_comments"] == row["repost_new_reviews"] == 0
    assert rows[1]["inline_comments"] == 60  # 60 findings, still one review
    # 60 earlier review comments are one page at per_page=100 (three at GitHub's default 30):
    # the PR's head, its files, its review comments, its issue comments; the first run reads
    # the issue comments again after it created the summary comment (another run may have
    # created one at the same moment: the oldest stays).
    assert (rows[1]["first_reads"], rows[1]["rerun_reads"]) == (5, 4)
