"""Secrets by name: a ``password`` / ``token`` / ``api_key`` / … given a literal that looks like
a secret. Used by the builtin reviewer's ``high-entropy-secret`` rule and by masking.

A name counts when one of its words (``DB_PASSWORD``, ``apiKey``, ``my-api-token``) is a secret
word and its last word does not say it holds something else (``token_url``, ``password_file``,
``secret_name``). Its value is read in the forms code and configuration write it:
``name = "…"`` (any of ``= := ::= :::= ?= .= => : ,``, comparisons, a call ``name("…")``,
no operator when the name heads its statement: ``password "…";``, ``--password "…"``, or in a
netrc file follows netrc's own tokens: ``machine h login u password …``), typed
declarations (``const apiKey: string = "…"``, Go ``var apiKey string = "…"``, C ``char
secret[25] = "…"``), quoted keys (``"password": "…"``, ``setProperty("API_TOKEN", "…")``) and
``"…" == password``. A quoted value is read to its closing quote, whatever it holds. An unquoted
value is a literal in configuration files, a name or an expression in code (never a secret
there), and in other files (prose, logs) a literal unless it is shaped like code.

The value must look like a secret: 8+ characters, a letter or digit, entropy of at least 3 bits
per character (eased for 8 to 11 characters: ``secret_rules.below_floor``), two kinds of characters (or 16+ characters over 3.5 bits), and not a
placeholder, words or a sentence, a path (base64 holding a ``/`` is no path: ``_reads_random``), a call
(``datetime.date(1984, 3, 1)``), or a URL (a URL's password is the ``url-credentials`` token rule).
A quoted value longer than 4,096 characters or an unquoted one longer than 256 is data, not a
secret (and the bounds keep every scan linear).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator

from gitflow_agents.base.lazy import Lazy
from gitflow_agents.base.records import NamedTuple
from gitflow_agents.base.secret_rules import (
    TOKEN_PREFIXES,
    below_floor,
    entropy,
    is_placeholder,
    is_placeholder_token,
)

MIN_LENGTH = 8
ENTROPY_THRESHOLD = 3.0  # bits per character


class KeywordHit(NamedTuple):
    name: str
    value: str
    start: int  # the value's span in the text
    end: int
    quoted: bool


_SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "pass",
        "pwd",
        "secret",
        "secrete",
        "secrets",
        "token",
        "apikey",
        "credential",
        "credentials",
        "contraseña",
        "contrasena",
    }
)
# <word> key is a secret name for these words (api_key, privateKey, ACCOUNT-KEY); client,
# service, db and database as detect-secrets' keyword denylist has them (CLIENT_KEY,
# service_key, DB_KEY, database_key)
_KEY_WORDS = frozenset(
    {"api", "auth", "access", "private", "priv", "account", "master", "encryption", "signing"}
    | {"client", "service", "db", "database"}
)
# a <word> key named public is given to clients by design (NEXT_PUBLIC_API_KEY,
# publishableClientKey): no secret
_PUBLIC_WORDS = frozenset({"public", "publishable"})
# a name ending in one of these holds something about a secret, not the secret
_NOT_SECRET_ENDS = frozenset(
    {
        "url",
        "uri",
        "urls",
        "path",
        "paths",
        "file",
        "files",
        "filename",
        "dir",
        "directory",
        "name",
        "names",
        "id",
        "ids",
        "type",
        "types",
        "kind",
        "length",
        "len",
        "size",
        "count",
        "field",
        "fields",
        "header",
        "headers",
        "prefix",
        "suffix",
        "regex",
        "pattern",
        "env",
        "var",
        "label",
        "endpoint",
        "policy",
        "provider",
        "method",
        "format",
        "mode",
        "hash",
        "enabled",
        "required",
        "expiry",
        "expires",
        "expiration",
        "ttl",
        "timeout",
        "version",
        "scope",
        "scopes",
        "class",
        "manager",
        "schema",
        "validator",
        "helper",
        "ref",
        "arn",
        "template",
        "param",
        "params",
        "option",
        "options",
        "attr",
        "attribute",
        "column",
        "index",
        # an exception class or an error value (InvalidTokenError, token_error)
        "error",
        "errors",
        "exception",
        "warning",
    }
)
# a name starting with one of these says whether, not what (withCredentials, must-change-password)
_FLAG_STARTS = frozenset(
    {"with", "is", "has", "use", "uses", "enable", "disable", "require", "requires", "should"}
    | {"allow", "must", "no", "skip", "show", "hide", "need", "needs", "can", "hashed"}
)
_NAME_WORD = Lazy(r"[A-Z]?[a-zñ]+|[A-Z]+(?![a-z])|\d+")
# Every secret name holds one of these: names are looked for around them only.
_PREFILTER = ("pass", "pwd", "secret", "token", "key", "credential", "contrase")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyzñ0123456789_.$-")
_NAME_RUN = Lazy(r"[A-Za-zñ0-9_.$-]*")


@functools.lru_cache(maxsize=4096)  # logs and diffs repeat their names
def is_secret_name(name: str) -> bool:
    words = [w.lower() for w in _NAME_WORD.findall(name)]
    if not words or words[-1] in _NOT_SECRET_ENDS:
        return False
    if len(words) > 1 and words[0] in _FLAG_STARTS:
        return False
    if any(w in _SECRET_WORDS for w in words):
        return True
    if any(w in _PUBLIC_WORDS for w in words):
        return False  # a key meant to be public (NEXT_PUBLIC_API_KEY, PUBLISHABLE_CLIENT_KEY)
    return any(a in _KEY_WORDS and b == "key" for a, b in itertools.pairwise(words))


# What follows a secret name up to its value: an array or subscript suffix, the closing quote
# of a quoted key, a type annotation (: T =) or a Go type (name T =), then the operator.
_TAIL = Lazy(
    r"""(?x)
    (?:\[[^\]\n]{0,20}\])?
    (?P<keyquote>["'`]\]?|\])?
    (?:\s*:\s*[A-Za-z_][\w.]*(?:[<\[][^=\n]{0,60}?[>\]])?(?:\s*\|\s*[A-Za-z_][\w.]*)*(?=\s*=[^=>]))?
    (?P<gotype>[ \t]+[A-Za-z_*\[\]][\w.*\[\]]*(?=\s*=[^=>]))?
    \s*(?P<op>:::=|::=|:=|\?\?=|\?=|\|\|=|\.=|\+=|===|!==|==|!=|=>|=|:|,|\()?
    \s*@?
    (?:(?P<quote>["'`])(?P<qvalue>(?:\\.|(?!(?P=quote))[^\\\n]){0,4096})(?P=quote)
      |(?P<value>[^\s"'`]{1,256}(?![^\s"'`])))
    """
)
_REVERSED = Lazy(
    r"""(?P<quote>["'`])(?P<qvalue>(?:\\.|(?!(?P=quote))[^\\\n]){0,4096})(?P=quote)\s*(?:===?|!==?)\s*"""
    r"""(?P<name>[A-Za-z_$][A-Za-z0-9_.$-]*)"""
)

# a value that names what it stands for ("my-api-token", "db_password_here")
_NAMED_VALUE = Lazy(r"passw(?:or)?d|secret|token|api[_-]?key|private[_-]?key", re.I)
_WORDS = Lazy(r"[A-Za-z]+\d*(?:[-_. ][A-Za-z]+\d*)*(?:[-_.]\d{1,4})?")  # keyinfo_test_123
_URL = Lazy(r"[A-Za-z][A-Za-z0-9+.-]*://")
_ROOTED_PATH = Lazy(r"(?:/|~/|\.\.?/|[A-Za-z]:\\)\S*")
_RELATIVE_PATH = Lazy(r"[\w.-]+(?:/[\w.-]+)+/?")  # each part with a letter (_is_path)
# code: a name, an attribute chain, a call, a subscript or a generic (Token[AppContext])
_CODE = Lazy(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:[(\[<].*)?")
_CODE_MARKS = Lazy(r"[\w$]\s*[(\[<]|\)\s*$")
# a call on an attribute chain, quoted or not: the repr of a value (datetime.date(1984, 3, 1))
_CALL = Lazy(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+\(.*\)")


_LETTER_RUN = Lazy(r"[A-Za-z]+")


_PROSE_WORD = Lazy(r"[A-Za-z]{2,}(?:['-][A-Za-z]+)*")
_PUNCTUATION = ".,:;!?'\"`()[]{}<>&*"


def _prose(value: str) -> bool:
    """A sentence: 3+ parts between spaces, half of them or more words of 2+ letters once the
    punctuation around them is gone (``Use 8+ characters, 1 number & 1 symbol``, ``Invalid
    'crit' header: must be a list``)."""
    parts = value.split()
    if len(parts) < 3:
        return False
    words = sum(1 for part in parts if _PROSE_WORD.fullmatch(part.strip(_PUNCTUATION)))
    return 2 * words >= len(parts)


def _wordy(value: str) -> bool:
    """Words, not a secret: ``correct horse battery``, ``github-actions[bot]``, ``deploy-bot2``
    (no digit inside, every run of letters 2+ long, letters the most of it), or a sentence
    (``_prose``)."""
    if _WORDS.fullmatch(value) or (" " in value and _prose(value)):
        return True
    if any(c.isdigit() for c in value):
        return False
    runs = _LETTER_RUN.findall(value)
    return all(len(run) >= 2 for run in runs) and 2 * sum(map(len, runs)) >= len(value)


def _reads_random(value: str) -> bool:
    """Base64 with a ``/`` in it rather than a path (about half of AWS secret access keys hold
    one): 16+ letters and digits besides the ``/``, of both cases and with digits, in words
    (as ``_NAME_WORD`` splits them) of under 3 characters on average. Random base64 makes about
    1.9 (more than 3 for 1 value in 500); a path's names (``MyProject/Source/Win64``) make longer
    ones."""
    chars = value.replace("/", "")
    if len(chars) < 16 or not (chars.isascii() and chars.isalnum()):
        return False
    if not (
        any(c.islower() for c in chars)
        and any(c.isupper() for c in chars)
        and any(c.isdigit() for c in chars)
    ):
        return False
    return len(chars) < 3 * len(_NAME_WORD.findall(chars))


def _is_path(value: str) -> bool:
    if _reads_random(value):
        return False
    if _ROOTED_PATH.fullmatch(value):
        return True
    return bool(_RELATIVE_PATH.fullmatch(value)) and all(
        any(c.isalpha() for c in part) for part in value.strip("/").split("/")
    )


def _looks_like_code(value: str) -> bool:
    """An attribute chain, call, subscript or generic; or a bare identifier unless it reads as
    random (digits among letters and 3.5+ bits per character: Zx9Qw8Er7Ty6Ui5Op4As)."""
    if _CODE_MARKS.search(value):
        return True
    if not _CODE.fullmatch(value):
        return False
    return "." in value or not any(c.isdigit() for c in value) or entropy(value) < 3.5


def looks_like_secret(value: str, *, min_length: int, entropy_threshold: float) -> bool:
    """Whether a literal assigned to a secret name looks like a secret (module docstring)."""
    if len(value) < min_length or not any(c.isalnum() for c in value):
        return False
    if value.startswith(TOKEN_PREFIXES):
        return False  # a known token format's shape: its own rule decides (xoxp-1234567890)
    if is_placeholder(value) or _wordy(value) or _NAMED_VALUE.search(value):
        return False
    if _URL.match(value) or _is_path(value) or _CALL.fullmatch(value):
        return False
    if below_floor(value, entropy_threshold):
        return False
    bits = entropy(value)
    kinds = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )
    return kinds >= 2 or (len(value) >= 16 and bits >= 3.5)


def _may_hold(text: str, kind: str) -> bool:
    """False only when no secret name can be in ``text`` (exact for ASCII text): every form
    has an operator (``=``, ``:``, ``(``, ``,``) with a quote, or ``=`` / ``:``; in a
    configuration file a name may also be followed by a space and its value
    (``_statement_value``)."""
    if not (
        "=" in text
        or ":" in text
        or '"' in text
        or "'" in text
        or "`" in text
        or (kind in _UNQUOTED_KINDS and (" " in text or "\t" in text))
    ):
        return False
    if not text.isascii():
        return True
    lowered = text.lower()
    for word in _PREFILTER:  # noqa: SIM110 - no generator: this runs for every line
        if word in lowered:
            return True
    return False


# File kinds: where an unquoted value is a literal string, and where single quotes make a
# character rather than a string; by the file's name (any case), not by regular expressions:
# compiling those was a tenth of a millisecond each in every small review (issue 20).
_CONFIG_NAMES = frozenset(
    {".env", ".envrc", ".npmrc", ".pypirc", "dockerfile", "containerfile"}
    | {"makefile", "gnumakefile"}
)
_CONFIG_PREFIXES = (".env.", "dockerfile.")
_CONFIG_SUFFIXES: tuple[str, ...] = (
    ".env",
    ".dockerfile",
    ".mk",
    ".sh",
    ".bash",
    ".zsh",
    ".ksh",
    ".yml",
)
_CONFIG_SUFFIXES += (".yaml", ".ini", ".cfg", ".conf", ".toml", ".properties")
_CHAR_QUOTE_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".m", ".mm", ".cs", ".rs")
_CODE_SUFFIXES: tuple[str, ...] = (
    ".py",
    ".pyi",
    ".pyw",
    ".js",
    ".jsx",
    ".mjs",
    ".cjs",
    ".ts",
    ".tsx",
    ".mts",
)
_CODE_SUFFIXES += (".cts", ".vue", ".svelte", ".java", ".kt", ".kts", ".scala", ".groovy")
_CODE_SUFFIXES += (".gradle", ".go", ".rb", ".php", ".swift", ".cls", ".tf", ".lua", ".pl", ".pm")
_CODE_SUFFIXES += (".r", ".dart", ".ex", ".exs", ".erl", ".clj", ".fs", ".vb", ".ps1", ".sql")
_CODE_SUFFIXES += _CHAR_QUOTE_SUFFIXES


# curl, git and ftp's credentials file (``_netrc`` on Windows): configuration whose ``password``
# is read anywhere on its line (``_netrc_value``)
_NETRC_NAMES = frozenset({".netrc", "_netrc"})
_UNQUOTED_KINDS = frozenset({"config", "netrc"})


def file_kind(path: str) -> str:
    """``config`` (an unquoted value is a literal), ``netrc`` (configuration, ``.netrc`` or
    ``_netrc``), ``code`` (an unquoted value is code), or ``other``."""
    name = path.rpartition("/")[2].lower()
    if name in _NETRC_NAMES:
        return "netrc"
    if (
        name in _CONFIG_NAMES
        or name.startswith(_CONFIG_PREFIXES)
        or name.endswith(_CONFIG_SUFFIXES)
    ):
        return "config"
    if name.endswith(_CODE_SUFFIXES):
        return "code"
    return "other"


def is_config_file(path: str) -> bool:
    """A file where an unquoted ``KEY=value`` is a literal string (.env, shell, YAML, …)."""
    return file_kind(path) in _UNQUOTED_KINDS


def _heads_statement(match: re.Match[str], name: str) -> bool:
    """Whether a name given a quoted value with no operator (``password "…";``) heads its
    statement: first on its line or after ``;`` / ``{``, after one word (``ENV``, ``set``), or
    an option of a command line (``--password "…"``). Anywhere else it is a word of a
    sentence (``pass `dtype=…` to``, ``# pass "--color" to``); the English verb ``pass`` is
    never such a name."""
    if name.lower() == "pass":
        return False
    start = match.pos - len(name)
    head = match.string[max(0, start - 200) : start]
    if head.endswith("-"):
        before = head.rstrip("-")
        return len(head) - len(before) <= 2 and (not before or before[-1].isspace())
    statement = head[max(head.rfind(";"), head.rfind("{")) + 1 :].strip()
    return not statement or (statement.isascii() and statement.isalpha())


_HOSTNAME = Lazy(r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")


def _statement_value(match: re.Match[str], name: str, kind: str) -> bool:
    """Whether an unquoted value with no operator is the name's value: in a configuration
    file, the name heading its statement and a space before the value (Dockerfile's
    ``ENV MYSQL_ROOT_PASSWORD value``, ``--password value`` in a shell file, ``.netrc``'s
    ``password value``), and the value neither an option (``-1``), nor a ``key=value`` of
    one (``--secret id=npmrc,src=…``), nor a host name (``--password-stdin 1234.dkr.ecr…``).
    In a netrc file ``password`` after netrc's own tokens is read whatever its value
    (``_netrc_value``)."""
    if kind not in _UNQUOTED_KINDS or match.group("keyquote"):
        return False
    start = match.start("value")
    if start == match.pos or not match.string[match.pos : start].isspace():
        return False
    if kind == "netrc" and _netrc_value(match, name):
        return True
    value = match.group("value")
    if value.startswith("-") or "=" in value or _HOSTNAME.fullmatch(value.rstrip(",;")):
        return False
    return _heads_statement(match, name)


_NETRC_PAIRS = frozenset({"machine", "login", "account", "password"})


def _netrc_value(match: re.Match[str], name: str) -> bool:
    """Whether ``name`` is a ``.netrc`` ``password`` token with its value after it: the
    tokens before it on its line are netrc's own, each keyword with its value (``machine h
    login u password p machine h2 …``, ``default login x password y``). Not after ``macdef``
    (what follows is a macro's body) or a ``#`` comment."""
    if name != "password":
        return False
    start = match.pos - len(name)
    if start and not match.string[start - 1].isspace():
        return False
    tokens = match.string[match.string.rfind("\n", 0, start) + 1 : start].split()
    index = 0
    while index < len(tokens):
        if tokens[index] == "default":
            index += 1
        elif tokens[index] in _NETRC_PAIRS:
            index += 2
        else:
            return False  # macdef, a comment, or not netrc
    return index == len(tokens)


_STRING_START = Lazy(r"[\"'`]")
_PARAMETER_END = Lazy(r"[&;]")
_PATTERN_CHARS = frozenset("\\[](){}*^$|?<>%/")


def _in_string(text: str, position: int, char_quotes: bool) -> bool:
    """Whether ``position`` in a line of code is inside a string literal opened on that line
    (quotes paired from the line's start, backslash escapes skipped; in C-family files ``'…'``
    is a character, never a string). A line inside a multi-line string has no opening quote
    and counts as code."""
    index = 0
    while True:
        opening = _STRING_START.compiled.search(text, index, position)
        if opening is None:
            return False
        quote, index = opening.group(), opening.end()
        while index < len(text) and text[index] != quote:
            index += 2 if text[index] == "\\" else 1
        if index >= position:
            return not (char_quotes and quote == "'")
        index += 1


def _candidate(
    match: re.Match[str], name: str, kind: str, char_quotes: bool
) -> tuple[str, int, int, bool] | None:
    """The value a tail match gives (value, start, end, quoted), or None when it gives none."""
    op, quote = match.group("op"), match.group("quote")
    if quote:
        if char_quotes and quote == "'":
            return None  # a character, not a string
        if op == "," and not match.group("keyquote"):
            return None  # name, "…": an argument list, not a key and its value
        if op is None and (
            match.group("keyquote")
            or not (
                _heads_statement(match, name) or (kind == "netrc" and _netrc_value(match, name))
            )
        ):
            return None
        return match.group("qvalue"), match.start("qvalue"), match.end("qvalue"), True
    if op in (",", "(") or (op is None and not _statement_value(match, name, kind)):
        return None
    if match.group("gotype") and kind != "code":
        # Go's ``var name Type = value`` holds a string in quotes; an unquoted value after a
        # word outside code is a command line's ``key=value`` (``--secret id=npmrc,src=…``)
        return None
    value = match.group("value")
    in_string = False
    if kind == "code":
        # in code an unquoted value is code, unless the name and its value are inside a string
        # literal: a connection string (jdbc:…?user=app&password=…, "…;Password=…;",
        # "host=db password=…"), whose parameters end at ``&`` or ``;``
        if op != "=" or not _in_string(match.string, match.pos - len(name), char_quotes):
            return None
        in_string = True
        value = _PARAMETER_END.compiled.split(value, maxsplit=1)[0]
        if any(c in _PATTERN_CHARS for c in value):
            # a regular expression, a template or a path (AccountKey=[a-zA-Z0-9+/=]{88},
            # Credential=mock_access_key/20220524/us-east-1/…)
            return None
    # a string's escaped line end ends the value (privateKey\\n in a YAML string holding code)
    stripped = value.split("\\n", 1)[0].rstrip(",;'\"`")
    if (kind == "other" or in_string) and _looks_like_code(stripped):
        return None
    start = match.start("value")
    return stripped, start, start + len(stripped), False


def _secret_names(text: str) -> Iterator[tuple[int, str]]:
    """(start, name) of every secret name in ``text``: the name around each secret word
    (``_PREFILTER``, found with ``str.find`` on the lowered text), at most 64 characters back
    (linear however long a run of letters is)."""
    lowered = text.lower() if text.isascii() else text.casefold()
    if len(lowered) != len(text):  # a character that folds to several: no positions to share
        lowered = text
    positions: list[int] = []
    for word in _PREFILTER:
        position = lowered.find(word)
        while position >= 0:
            positions.append(position)
            position = lowered.find(word, position + 1)
    done = 0
    for position in sorted(positions):
        if position < done:
            continue
        start, floor = position, max(0, position - 64)
        while start > floor and text[start - 1] in _NAME_CHARS:
            start -= 1
        while start < position and not (text[start].isalpha() or text[start] in "_$"):
            start += 1
        run = _NAME_RUN.match(text, position)
        done = run.end() if run else position + 1
        name = text[start:done].rstrip(".-")
        if is_secret_name(name):
            yield start, name


def keyword_hits(
    text: str,
    *,
    kind: str,
    char_quotes: bool = False,
    min_length: int = MIN_LENGTH,
    entropy_threshold: float = ENTROPY_THRESHOLD,
) -> Iterator[KeywordHit]:
    """Secret-named literals in ``text`` (one line, or any text when masking), each value once.
    ``kind``: ``file_kind`` of the file the text is from; ``char_quotes``: single quotes make a
    character (C-family files)."""
    if not _may_hold(text, kind):
        return
    seen: set[str] = set()

    def accept(name: str, found: tuple[str, int, int, bool] | None) -> KeywordHit | None:
        if found is None or found[0] in seen:
            return None
        if is_placeholder_token(found[0]) or not looks_like_secret(
            found[0], min_length=min_length, entropy_threshold=entropy_threshold
        ):
            return None
        seen.add(found[0])
        return KeywordHit(name, *found)

    for start, name in _secret_names(text):
        tail = _TAIL.match(text, start + len(name))
        if tail is not None:
            hit = accept(name, _candidate(tail, name, kind, char_quotes))
            if hit is not None:
                yield hit
    if "==" in text or "!=" in text:
        for match in _REVERSED.finditer(text):
            if is_secret_name(match.group("name")) and not (
                char_quotes and match.group("quote") == "'"
            ):
                value = (match.group("qvalue"), match.start("qvalue"), match.end("qvalue"), True)
                hit = accept(match.group("name"), value)
                if hit is not None:
                    yield hit


def char_quote_file(path: str) -> bool:
    """C-family files, where ``'…'`` is a character, not a string."""
    return path.lower().endswith(_CHAR_QUOTE_SUFFIXES)
