"""pip without the network: packages only from a local wheel folder (the pre-commit tests' and the
packaging tests' installs)."""

from __future__ import annotations

import os
from pathlib import Path


def offline_pip_env(
    wheelhouse: Path, *, drop: tuple[str, ...] = ("PIP_", "PYTHONPATH")
) -> dict[str, str]:
    """This environment without the variables starting with ``drop`` (the user's pip settings,
    the checkout on PYTHONPATH), pip told to install from ``wheelhouse`` alone, and not to
    compile what it installs: each install here is used by a few processes, which compile the
    modules they import (pip's compiling every module of every dependency, build environments
    included, was half of its CPU time)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheelhouse),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_COMPILE="0",  # --no-compile: pip reads the value as that of its --compile option
    )
    return env
