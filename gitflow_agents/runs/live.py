"""The live agent table a terminal gets from ``events.ConsoleChannel``: one rich table redrawn
in place. Imported only on a terminal, so CI logs and pipes (plain lines) never load rich.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from gitflow_agents.base.color import rich_settings, use_color

COLUMNS = ("agent", "state", "elapsed", "last activity", "tokens/cost", "detail")


class LiveTable:
    """A table of one row per agent (``COLUMNS``) on ``stream``, redrawn by :meth:`show`."""

    def __init__(self, stream: IO[str]) -> None:
        console = Console(file=stream, force_terminal=True, **rich_settings(use_color(stream)))
        self._live = Live(console=console, refresh_per_second=4, transient=False)
        self._live.start()

    def show(self, rows: Iterable[tuple[str, ...]]) -> None:
        table = Table(box=None, show_header=True, pad_edge=False)
        for column in COLUMNS:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
        self._live.update(table)

    def stop(self) -> None:
        self._live.stop()
