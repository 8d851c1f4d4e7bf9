"""Where a prompt's files go: the segments a run records for ``serve``'s inspector."""

from __future__ import annotations

import json
from pathlib import Path

from gitflow_agents.prompt import Segment
from gitflow_agents.prompt.paths import PROMPT_SEGMENTS_FILE, write_prompt_segments


def test_the_segments_are_written_as_prompt_segments_json_prints_them(tmp_path: Path) -> None:
    segments = (
        Segment("protocol", "Multi-Agent Flow Protocol", "built-in", "line 1\nline 2\n"),
        Segment("assignment", "Your Assignment", "cli:--task", "do it"),
    )
    path = write_prompt_segments(tmp_path, segments)
    assert path == tmp_path / PROMPT_SEGMENTS_FILE
    data = json.loads(path.read_text())
    assert data == {
        "segments": [
            {
                "scope": "protocol",
                "label": "Multi-Agent Flow Protocol",
                "source": "built-in",
                "lines": 2,
                "content": "line 1\nline 2\n",
            },
            {
                "scope": "assignment",
                "label": "Your Assignment",
                "source": "cli:--task",
                "lines": 1,
                "content": "do it",
            },
        ]
    }
    write_prompt_segments(tmp_path, segments[:1])  # a second write replaces the first
    assert len(json.loads(path.read_text())["segments"]) == 1
    assert [p.name for p in tmp_path.iterdir()] == [PROMPT_SEGMENTS_FILE]  # no temp file left
