"""``key_body_lines``: which added lines sit inside a private key block whose BEGIN line the
change does not add (a rotated key).

It looked up from every added line that may be a key's body for the nearest armour line, up to
1,000 lines, with two regular expression searches per line: a list of 10,000 MD5 hashes (or of
64-character base64 lines) took 10-20 s of CPU to review (tester's repro-5). It now reads the
file once, down, remembering the nearest armour line; its answers are the old walk's, compared
here on generated files and on the private key fixtures of pre-commit-hooks.
"""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path

import pytest

from gitflow_agents.base.lazy import Lazy
from gitflow_agents.base.secret_rules import (
    ANY_BEGIN,
    ANY_END,
    KEY_BODY_LINE,
    PRIVATE_KEY,
    may_begin_key,
)
from gitflow_agents.git.diffparse import AddedLine, FileChange, git_lines
from gitflow_agents.reviewer import checks
from tests.conftest import ROOT
from tests.helpers.builtin import locations, review

KEY_BODY = "MIIEowIBAAKCAQEAx7Qm2ZkP9sLw3Rt" + "Hq8vN4cY1uJ6bW0eT5gK2dF9sA7lZ3x"  # a PEM line
FIXTURES = ROOT / "tests" / "data" / "pre-commit-hooks" / "cases" / "detect-private-key"


def walk_up(change: FileChange, text: str) -> list[AddedLine]:
    """The old ``key_body_lines``: the reference the one pass must agree with."""
    lines = git_lines(text)
    inside: list[AddedLine] = []
    for added in change.added_lines:
        if not KEY_BODY_LINE.fullmatch(added.text):
            continue
        for number in range(added.number - 2, max(-1, added.number - 2 - 1000), -1):
            line = lines[number] if number < len(lines) else ""
            if ANY_END.search(line):
                break
            if ANY_BEGIN.search(line):
                if PRIVATE_KEY.search(line):
                    inside.append(added)
                break
    return inside


def fixture_lines() -> list[str]:
    """Every line of the pre-commit-hooks private key fixtures (BEGIN lines of each kind,
    PuTTY's, a key's BEGIN line run on with others, ``ssh-rsa`` public keys, bytes that are
    not UTF-8)."""
    found: list[str] = []
    for path in sorted(FIXTURES.glob("*.txt")):
        found.extend(git_lines(path.read_bytes().decode("utf-8", "surrogateescape")))
    return found


ARMOUR = [
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "-----END CERTIFICATE-----",
    "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----",
    "---- END SSH2 ENCRYPTED PRIVATE KEY ----",
    "PuTTY-User-Key-File-2: ssh-rsa",
    "Private-MAC: 0123abcd",
    '  key = "-----BEGIN EC PRIVATE KEY-----',  # in a string
    "-----END EC PRIVATE KEY----- -----BEGIN OPENSSH PRIVATE KEY-----",  # END and BEGIN
    "-----BEGIN PRIVATE KEY----- x -----END PRIVATE KEY-----",
]


def body_line(rng: random.Random) -> str:
    choice = rng.randrange(4)
    if choice == 0:
        return hashlib.md5(str(rng.random()).encode()).hexdigest()
    if choice == 1:
        return "".join(rng.choice("ABCDEFGHIJabcdefgh0123456789+/") for _ in range(64))
    if choice == 2:
        return "  " + KEY_BODY + "=="
    return KEY_BODY[rng.randrange(8) :] + KEY_BODY[: rng.randrange(8)]


def generated_file(rng: random.Random, armour: list[str]) -> tuple[str, FileChange]:
    """A file of body lines, text and armour lines (with odd line ends: CRLF, a lone CR, a
    U+2028 that git does not end a line at) and a change adding a random part of it, some of
    its "added" lines past the end of the file, as a change and its file may disagree."""
    lines: list[str] = []
    sparse = rng.choice([0.01, 0.0005])  # armour lines more than 1,000 lines apart, or not
    for _ in range(rng.randrange(1, 2600)):
        pick = rng.random()
        if pick < sparse:
            lines.append(rng.choice(armour))
        elif pick < 0.75:
            lines.append(body_line(rng))
        elif pick < 0.8:
            lines.append("text with a lone\rcarriage return " + rng.choice(armour))
        elif pick < 0.82:
            lines.append("a line\u2028" + rng.choice(armour))
        else:
            lines.append(f"ordinary line {rng.random()}")
    ends = rng.choice(["\n", "\r\n"])
    text = ends.join(lines) + rng.choice([ends, ""])
    numbered = git_lines(text)
    share = rng.random()
    added = [
        AddedLine(number, line)
        for number, line in enumerate(numbered, 1)
        if rng.random() < share and not may_begin_key(line)
    ]
    if rng.random() < 0.3:  # lines the file does not have (the old walk read them as "")
        added += [AddedLine(len(numbered) + k, body_line(rng)) for k in (1, 5, 1200)]
    return text, FileChange("f.txt", "M", added_lines=tuple(added))


@pytest.mark.parametrize("seed", range(40))
def test_the_one_pass_finds_what_the_walk_up_found(seed: int) -> None:
    rng = random.Random(seed)
    text, change = generated_file(rng, ARMOUR if seed % 2 else fixture_lines())
    assert checks.key_body_lines(change, text) == walk_up(change, text)


def test_a_key_of_each_fixture_kind_is_found_as_the_walk_up_found_it() -> None:
    """Each fixture line as the armour line above a key body: near it, 1,000 lines below it
    (the last line looked up to), 1,001 lines below (out of reach), and after an END line."""
    for begin in fixture_lines():
        for gap in (0, 998, 999, 1000):
            lines = [begin, *(["filler"] * gap), KEY_BODY, "-----END RSA PRIVATE KEY-----"]
            lines += [KEY_BODY]
            text = "\n".join(lines) + "\n"
            change = FileChange(
                "k", "M", added_lines=(AddedLine(gap + 2, KEY_BODY), AddedLine(gap + 4, KEY_BODY))
            )
            assert checks.key_body_lines(change, text) == walk_up(change, text), (begin, gap)
    found = FileChange("k", "M", added_lines=(AddedLine(1001, KEY_BODY),))  # BEGIN: 1,000 lines up
    text = "-----BEGIN RSA PRIVATE KEY-----\n" + "x\n" * 999 + KEY_BODY + "\n"
    assert checks.key_body_lines(found, text) == [AddedLine(1001, KEY_BODY)] == walk_up(found, text)


class Counted(Lazy):
    """A regular expression that counts its searches."""

    __slots__ = ("calls",)

    def __init__(self, source: Lazy) -> None:
        super().__init__(source.compiled.pattern)
        self.calls = 0

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        self.calls += 1
        return super().search(text, pos)


def test_a_list_of_hashes_is_read_once(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tester's case, smaller: a commit adding 3,000 MD5 hashes. Each line was searched for
    an armour line once per body line below it, up to 1,000 times (~5.5 million searches here);
    now each line is searched once, for an END line and for a BEGIN line."""
    counted = {name: Counted(getattr(checks, name)) for name in ("ANY_BEGIN", "ANY_END")}
    for name, pattern in counted.items():
        monkeypatch.setattr(checks, name, pattern)
    hashes = "".join(hashlib.md5(str(i).encode()).hexdigest() + "\n" for i in range(3000))
    result = review(repo, {"known_hashes.txt": hashes})
    assert locations(result) == []
    assert counted["ANY_END"].calls <= 3000
    assert counted["ANY_BEGIN"].calls <= 3000


def test_a_rotated_key_below_a_list_of_hashes_is_found(repo: Path) -> None:
    """The one pass still finds a key whose body lines change below the hashes, and not the
    hashes themselves, nor a body line 1,001 lines below a BEGIN line."""
    hashes = "".join(hashlib.md5(str(i).encode()).hexdigest() + "\n" for i in range(1500))
    key = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n{KEY_BODY[::-1]}\n"
    old = hashes + key + "-----END RSA PRIVATE KEY-----\n"
    new_body = KEY_BODY[5:] + KEY_BODY[:5]
    far = "-----BEGIN RSA PRIVATE KEY-----\n" + "x\n" * 1000 + KEY_BODY + "\n"
    result = review(
        repo,
        {"keys.txt": old.replace(KEY_BODY[::-1], new_body) + hashes, "far.txt": far + "y\n"},
        base_files={"keys.txt": old, "far.txt": far.replace(KEY_BODY, "z") + "y\n"},
    )
    assert locations(result) == [("private-key", "keys.txt", 1503)]
