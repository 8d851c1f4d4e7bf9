"""``base/secret_keywords.py``: which files' unquoted values are literals (``config``), which
are code, and where single quotes make a character; by the file's name, in any case."""

from __future__ import annotations

import pytest

from gitflow_agents.base.secret_keywords import char_quote_file, file_kind

CONFIG = [".env", ".env.local", "prod.env", "deploy/.ENV", ".envrc", "a/.npmrc", ".pypirc"]
CONFIG += ["Dockerfile", "web.dockerfile", "Dockerfile.prod", "Containerfile"]
CONFIG += ["GNUmakefile", "Makefile", "rules.mk", "run.sh", "a.BASH", "z.zsh", "k.ksh", "c.yml"]
CONFIG += ["c.YAML", "s.ini", "s.cfg", "n.conf", "p.toml", "app.properties", "x/dockerfile.d"]
CODE = ["x.py", "X.PY", "a.pyi", "b.tsx", "c.c", "d.H", "e.rs", "f.sql", "g.ps1", "a/b.r", "q.mm"]
NETRC = [".netrc", "_netrc", "a/_NETRC"]  # configuration, with its own syntax
OTHER = ["h.txt", "README", "env", "a.envx", "dir.py/file", "makefile.am", ".env/x", "a.mk/b", ""]
OTHER += ["x.netrc", ".netrc/x"]


@pytest.mark.parametrize(
    ("path", "kind"),
    [(p, "config") for p in CONFIG]
    + [(p, "netrc") for p in NETRC]
    + [(p, "code") for p in CODE]
    + [(p, "other") for p in OTHER],
)
def test_file_kind_by_name(path: str, kind: str) -> None:
    assert file_kind(path) == kind
    assert file_kind(f"deep/er/{path}") == kind


def test_single_quotes_make_a_character_in_the_c_family() -> None:
    assert [
        p for p in ("a.c", "b.HPP", "c.cs", "d.rs", "e.m", "f.py", "g.js") if char_quote_file(p)
    ] == [
        "a.c",
        "b.HPP",
        "c.cs",
        "d.rs",
        "e.m",
    ]
