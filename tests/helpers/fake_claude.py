"""What a fake ``claude`` script needs since a run with a control channel gives Claude Code its
task on stdin (``--input-format stream-json``, agents/claude.py) instead of after ``-p``."""

from __future__ import annotations

# Put right after ``argv = sys.argv[1:]`` in a fake (it needs ``json`` and ``sys``): the task
# read from the first stdin line goes back after ``-p``, so the fake reads and logs argv as it
# would without a channel.
STDIN_TASK = """if "--input-format" in argv:
    argv.insert(argv.index("-p") + 1, json.loads(sys.stdin.readline())["message"]["content"])
"""
