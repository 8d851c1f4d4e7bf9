"""docs/decisions.md stays navigable: each section numbers its items 1, 2, 3… once, and every
"item N of "Section"" reference inside it names an item that exists."""

from __future__ import annotations

import re
from pathlib import Path

DECISIONS = Path(__file__).resolve().parent.parent / "docs" / "decisions.md"
_REFERENCE = re.compile(r'\b(?:item|decision) (\d+) of "([^"]+)"')


def sections() -> dict[str, list[int]]:
    """Each ``## `` heading and the numbers of its items, in the order written."""
    found: dict[str, list[int]] = {}
    current: list[int] = []
    for line in DECISIONS.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = found.setdefault(line[3:].strip(), [])
        elif match := re.match(r"(\d+)\. ", line):
            current.append(int(match[1]))
    return found


def test_every_section_numbers_its_items_in_order() -> None:
    wrong = {
        name: numbers
        for name, numbers in sections().items()
        if numbers != list(range(1, len(numbers) + 1))
    }
    assert wrong == {}


def test_every_cross_reference_names_an_existing_item() -> None:
    known = sections()
    missing = []
    for number, name in _REFERENCE.findall(DECISIONS.read_text(encoding="utf-8")):
        heading = next((h for h in known if h == name or h.startswith(f"{name} (")), None)
        if heading is None or int(number) > len(known[heading]):
            missing.append(f'item {number} of "{name}"')
    assert missing == []
