"""Which installed packages moved away from the pins of a constraints file.

    python .ci/dependency_drift.py [--check] [CONSTRAINTS]      (default: .ci/constraints.txt)

Compares every distribution installed in this Python with the pins of CONSTRAINTS that apply to
it (their markers evaluated here) and prints a table of the differences: a pinned package
installed at another version (newer or older), or an installed package without a pin. Pins of
packages not installed here are not differences: the file pins what every CI job installs, and
not every job installs everything. The project itself is left out, and so is setuptools when it
has no pin (the venv's own bootstrap brings it on Python 3.10 and 3.11).

Exit status: 0, also with differences unless --check; 1 with --check when anything differs;
2 when CONSTRAINTS cannot be read or a line is not ``name==version`` with an optional marker
(the message names the file and line). Needs ``packaging`` (the test extra has it).
"""

from __future__ import annotations

import argparse
import platform
import sys
from importlib.metadata import distributions
from pathlib import Path
from typing import NamedTuple

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version
except ImportError:  # a runtime-only install: the test extra brings packaging
    print("dependency_drift: needs the packaging package (the test extra has it)", file=sys.stderr)
    sys.exit(2)

PROJECT = "gitflow-agents"
BOOTSTRAP = {"setuptools"}


class BadConstraints(Exception):
    """A constraints file that cannot be read, or a line of it that is not a pin."""


class Change(NamedTuple):
    name: str
    pinned: str  # "" when the package has no pin
    installed: str

    @property
    def kind(self) -> str:
        if not self.pinned:
            return "not pinned"
        return "newer" if Version(self.installed) > Version(self.pinned) else "older"


def read_pins(path: Path) -> dict[str, str]:
    """Package name -> pinned version, for the lines whose marker holds in this Python."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadConstraints(f"{path}: cannot read it: {exc}") from None
    pins: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        text = line.split(" #", 1)[0].strip()
        if not text or text.startswith("#"):
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement as exc:
            raise BadConstraints(f"{path}:{number}: not a requirement: {exc}") from None
        specifiers = list(requirement.specifier)
        if len(specifiers) != 1 or specifiers[0].operator != "==" or requirement.extras:
            raise BadConstraints(f"{path}:{number}: not a pin (name==version): {text}")
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        name = canonicalize_name(requirement.name)
        if name in pins:
            raise BadConstraints(f"{path}:{number}: a second pin of {name} for this Python")
        pins[name] = specifiers[0].version
    return pins


def installed() -> dict[str, str]:
    found: dict[str, str] = {}
    for dist in distributions():
        name = dist.metadata["Name"]
        if name:
            found[canonicalize_name(name)] = dist.version
    found.pop(PROJECT, None)
    return found


def changes(pins: dict[str, str], present: dict[str, str]) -> list[Change]:
    found = []
    for name, version in sorted(present.items()):
        pinned = pins.get(name, "")
        if pinned and Version(pinned) == Version(version):
            continue
        if not pinned and name in BOOTSTRAP:
            continue
        found.append(Change(name, pinned, version))
    return found


def table(found: list[Change], path: Path, pinned_here: int) -> str:
    python = f"Python {platform.python_version()}"
    if not found:
        return f"no dependency moved: {pinned_here} pins of {path} apply to {python}"
    rows = [("package", "pinned", "installed", "")]
    rows += [(c.name, c.pinned or "-", c.installed, c.kind) for c in found]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"dependencies that differ from {path} ({python}):"]
    lines += [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths, strict=True)) + f"  {row[3]}"
        for row in rows
    ]
    moved = sum(1 for c in found if c.pinned)
    lines.append(f"{moved} moved, {len(found) - moved} not pinned")
    return "\n".join(line.rstrip() for line in lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("constraints", nargs="?", type=Path, default=Path(".ci/constraints.txt"))
    parser.add_argument("--check", action="store_true", help="exit 1 when anything differs")
    args = parser.parse_args(argv)
    try:
        pins = read_pins(args.constraints)
    except BadConstraints as exc:
        print(f"dependency_drift: {exc}", file=sys.stderr)
        return 2
    present = installed()
    found = changes(pins, present)
    print(table(found, args.constraints, sum(1 for name in pins if name in present)))
    return 1 if found and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
