"""The secret rules as data: one table of token formats, read by the builtin reviewer
(``reviewer/checks.py``) and by masking (``redact.py``), so whatever is found is also masked.

Each rule is an id, the pattern of its token (based on gitleaks' rule of the same format,
``cmd/generate/config/rules/*.go``), an entropy floor (bits per character over the token: a
placeholder such as ``ghp_xxxx…`` falls below it), an allow pattern for published example
values, and a severity. ``tests/data/secrets/gitleaks_rules.json`` holds gitleaks' own positive
and negative cases for every rule here; docs/review.md lists where we differ by design.

Private keys are not one-line tokens: the BEGIN/END lines of each format are here too, and
``redact.py`` / ``reviewer/checks.py`` follow a block from its BEGIN line to its END line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from gitflow_agents.base.lazy import Lazy
from gitflow_agents.base.records import NamedTuple


class TokenRule(NamedTuple):
    id: str
    label: str  # what a finding calls the token
    pattern: Lazy  # group 1 is the token
    starts: tuple[str, ...]  # literals every token holds: a cheap test before the regex
    entropy: float = 3.0  # floor, bits per character over the token
    allow: Lazy | None = None  # published example values, searched in the token
    severity: str = "error"  # a findings.Severity value
    words: bool = False  # also drop placeholders (is_placeholder) and plain words (postgres)


# The end of a token: not followed by another character it could hold.
_END = r"(?![A-Za-z0-9_-])"
# gitleaks' end of a token it generates a unique-token rule for (utils.GenerateUniqueTokenRegex):
# a quote, a space, ``;``, an escaped line end or the end of the text
_UNIQUE_END = r"""(?=[`'"\s;]|\\[nr]|$)"""

TOKEN_RULES: tuple[TokenRule, ...] = (
    TokenRule(
        "aws-access-key",
        "AWS access key id",
        Lazy(r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})\b"),
        ("A3T", "AKIA", "ASIA", "ABIA", "ACCA"),
        # AWS documentation's example ids: AKIAIOSFODNN7EXAMPLE, AKIAEXAMPLE123456789 (aws-cli's
        # examples), ... (gitleaks allows only a final EXAMPLE)
        allow=Lazy(r"EXAMPLE"),
    ),
    TokenRule(
        "github-token",
        "GitHub token",
        Lazy(r"\b(gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    TokenRule(
        "slack-token",
        "Slack token",
        Lazy(
            r"\b(xoxb-[0-9]{10,13}-[0-9]{10,13}[A-Za-z0-9-]*"  # bot
            r"|xox[pe](?:-[0-9]{10,13}){3}-[A-Za-z0-9-]{28,34}"  # user
            r"|xoxb-[0-9]{8,14}-[A-Za-z0-9]{18,26}"  # legacy bot
            r"|xox[ar]-(?:\d-)?[0-9A-Za-z]{8,48}"  # legacy workspace
            r"|xox[os]-\d+-\d+-\d+-[A-Fa-f0-9]+)"  # legacy
        ),
        ("xox",),
        entropy=2.0,
    ),
    TokenRule(
        "openai-api-key",
        "OpenAI API key",
        Lazy(
            r"\b(sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ"
            r"(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})"
            + _END
        ),
        ("sk-",),
    ),
    TokenRule(
        "anthropic-api-key",
        "Anthropic API key",
        Lazy(r"\b(sk-ant-(?:api03|admin01)-[A-Za-z0-9_-]{93}AA)" + _END),
        ("sk-ant-",),
    ),
    TokenRule(
        "stripe-api-key",
        "Stripe API key",
        Lazy(r"\b((?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,99})\b"),
        ("sk_test_", "sk_live_", "sk_prod_", "rk_test_", "rk_live_", "rk_prod_"),
        entropy=2.0,
    ),
    TokenRule(
        "google-api-key",
        "Google API key",
        Lazy(r"\b(AIza[A-Za-z0-9_-]{35})" + _END),
        ("AIza",),
        entropy=4.0,
        # the Firebase SDK's published example keys (gitleaks' allowlist)
        allow=Lazy(
            r"AIzaSy(?:abcdefghijklmnopqrstuvwxyz1234567|AnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs"
            r"|CkEhVjf3pduRDt6d1yKOMitrUEke8agEM|DMAScliyLx7F0NPDEJi1QmyCgHIAODrlU"
            r"|D3asb-2pEZVqMkmL6M9N6nHZRR_znhrh0|AdOS2zB6NCsk1pCdZ4-P6GBdi_UUPwX7c"
            r"|ASWm6HmTMdYWpgMnjRBjxcQ9CKctWmLd4|ANUvH9H9BsUccjsu2pCmEkOPjjaXeDQgY"
            r"|A5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM|A4UrcGxgwQFTfaI3no3t7Lt1sjmdnP5sQ"
            r"|DSb51JiIcB6OJpwwMicseKRhhrOq1cS7g|BF2RrAIm4a0mO64EShQfqfd2AFnzAvvuU"
            r"|BcE-OOIbhjyR83gm4r2MFCu4MJmprNXsw|B8qGxt4ec15vitgn44duC5ucxaOi4FmqE"
            r"|A8vmApnrHNFE0bApF4hoZ11srVL_n0nvY)|AIzayDNSXIbFmlXbIE6mCzDLQAqITYefhixbX4A"
        ),
    ),
    TokenRule(
        "npm-token",
        "npm access token",
        Lazy(r"\b(npm_[A-Za-z0-9]{36})" + _END),
        ("npm_",),
        entropy=2.0,
    ),
    TokenRule(
        "pypi-token",
        "PyPI upload token",
        Lazy(r"\b(pypi-AgE[IN][A-Za-z0-9_-]{60,1000})" + _END),
        ("pypi-AgE",),
    ),
    TokenRule(
        "gitlab-token",
        "GitLab personal access token",
        Lazy(r"\b(glpat-[A-Za-z0-9_-]{20,300}(?:\.[0-9a-z]{9})?)(?![A-Za-z0-9_.-])"),
        ("glpat-",),
    ),
    TokenRule(
        "sendgrid-api-key",
        "SendGrid API key",
        Lazy(r"\b(SG\.[A-Za-z0-9=_.-]{66})(?![A-Za-z0-9=_.-])"),
        ("SG.",),
        entropy=2.0,
    ),
    TokenRule(
        "twilio-api-key",
        "Twilio API key",
        Lazy(r"\b(SK[0-9a-fA-F]{32})\b"),
        ("SK",),
    ),
    TokenRule(
        "azure-storage-key",
        "Azure storage account key",
        Lazy(r"AccountKey=([A-Za-z0-9+/]{86}==)"),
        ("AccountKey=",),
        # the storage emulator's (Azurite's) well-known development key
        allow=Lazy(r"^Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq"),
    ),
    TokenRule(
        "jwt",
        "JSON web token",
        Lazy(r"\b(ey[A-Za-z0-9]{17,}\.ey[A-Za-z0-9/\\_-]{17,}\.(?:[A-Za-z0-9/\\_-]{10,}={0,2})?)"),
        (".ey",),  # the payload after the header: a literal every JWT holds
        severity="warn",  # often a public test fixture or a short-lived session token
    ),
    TokenRule(
        "slack-webhook-url",
        "Slack webhook URL",
        # gitleaks' slack-webhook-url; the token is the URL's secret path, so the host stays
        # readable where it is masked
        Lazy(
            r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/]{43,56})"
        ),
        ("hooks.slack.com/",),
    ),
    TokenRule(
        "huggingface-token",
        "Hugging Face access token",
        # gitleaks' huggingface-access-token and huggingface-organization-api-token, with the
        # end gitleaks gives its unique tokens (a quote, a space, ;, an escaped line end)
        Lazy(r"\b((?:hf_|api_org_)[A-Za-z]{34})" + _UNIQUE_END),
        ("hf_", "api_org_"),
    ),
    TokenRule(
        "digitalocean-token",
        "DigitalOcean token",
        # gitleaks' digitalocean-pat, -access-token and -refresh-token
        Lazy(r"\b(do[opr]_v1_[a-f0-9]{64})" + _UNIQUE_END),
        ("dop_v1_", "doo_v1_", "dor_v1_"),
    ),
    TokenRule(
        "vault-token",
        "HashiCorp Vault token",
        # gitleaks' vault-service-token (its current hvs. form; the legacy s.<24> form is left
        # out: too short a prefix to tell from code) and vault-batch-token
        Lazy(r"\b(hvs\.[A-Za-z0-9_-]{90,120}|hvb\.[A-Za-z0-9_-]{138,300})" + _UNIQUE_END),
        ("hvs.", "hvb."),
        entropy=3.5,
    ),
    TokenRule(
        "url-credentials",
        "password in a URL",
        # scheme://user:password@host (or scheme://:password@host, as Redis has it); the password
        # is the token
        Lazy(
            r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@'\"`<>]{0,100}:([^\s:/@'\"`<>]{3,200})@"
            r"[A-Za-z0-9\[]"
        ),
        ("://",),
        severity="warn",  # test databases' user:pass@localhost are common and harmless
        words=True,
    ),
)

# Values that only hold the place of a secret: a run of one character (xxxx…, 0000…), our own
# and the usual masks, ellipses, <descriptions>, template and environment references ({env:X},
# ${X}, {{ x }}, %(x)s), and words that say so.
# a run of one character; or a value ending in xxxx, as documentation masks ids (share-agn4xxxx)
_PLACEHOLDER_RUN = Lazy(r"([xX*#.0])\1{5,}|([A-Za-z])\2{9,}|[xX]{4,}$")
_PLACEHOLDER = Lazy(
    r"\*\*\*|\.\.\.|…|<[^<>]{2,}>|^\{[^{}]+\}$|^\$[{(]|^\{\{|^%\(|%s\b|^\$[A-Za-z_]|\bchars\)"
    r"|example|placeholder|changeme|change[_-]me|redacted|dummy|sample|your[_-]?|"
    r"fake|insert[_-]|replace[_-]?me|^(?:none|null|nil|undefined|true|false)$",
    re.I,
)


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts: dict[str, int] = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values()) if n else 0.0


def below_floor(value: str, floor: float) -> bool:
    """Whether ``value``'s entropy is under ``floor``, which is eased for 8 to 11 characters:
    a string of n characters has at most log2(n) bits per character, so a 3-bit floor would
    ask a 10-character password (``S3cr3tPa55``: 2.9 bits) for nearly all-different characters.
    Eased to log2(n) - 0.5 there (8: 2.5, 10: 2.8); shorter values keep the floor."""
    n = len(value)
    eased = floor if n < 8 else min(floor, math.log2(n) - 0.5)
    return entropy(value) < eased


def is_placeholder_token(token: str) -> bool:
    """A token-shaped value made of one repeated character (``ghp_xxxx…``, ``AKIAXXXX…``)."""
    return bool(_PLACEHOLDER_RUN.search(token))


def is_placeholder(value: str) -> bool:
    """A value that holds the place of a secret (``xxxx…``, ``<token>``, ``${X}``, ``changeme``,
    ``your-api-key``, ``fake…``) rather than being one."""
    return bool(_PLACEHOLDER_RUN.search(value) or _PLACEHOLDER.search(value))


def _is_word_or_placeholder(value: str) -> bool:
    return value.isalpha() or is_placeholder(value) or bool(_NAMED.search(value))


_NAMED = Lazy(r"pass|secret|token", re.I)
_STARTS = tuple(sorted({start for rule in TOKEN_RULES for start in rule.starts}))
# The first test: every token holds one of these characters (found at memchr speed), or one of
# these literals, or starts like an AWS or Google key.
_ANY_CHARS = ("_", "-", "=")
_ANY_LITERALS = (".ey", "://", "SG.", "SK", "hooks.slack.com/", "hvs.", "hvb.")
_AWS_OR_GOOGLE = Lazy(r"A(?:KIA|SIA|BIA|CCA|3T|Iza)")  # one literal first: a fast scan
_ANY_START = Lazy("|".join(re.escape(start) for start in _STARTS))  # one scan, short text
TOKEN_PREFIXES = tuple(
    start for start in _STARTS if len(start) >= 3 and start[0].isalpha() and "=" not in start
)
"""How the token formats begin: a value that does is judged by its format's rule alone."""


def _holds_any(text: str, literals: tuple[str, ...]) -> bool:
    """The cheap test before a regex scans (the scans cost ~10 MB/s; agent output streams
    through here, and every line the builtin reviewer checks)."""
    for literal in literals:  # noqa: SIM110 - no generator: this runs for every line
        if literal in text:
            return True
    return False


def token_hits(text: str) -> Iterator[tuple[TokenRule, str]]:
    """(rule, token) for every known token format in ``text``, each token once, by the first
    rule that finds it (the rules run from the most specific: a GitHub token as a URL's
    password is a ``github-token``, not also ``url-credentials``); placeholders, published
    examples and tokens under their rule's entropy floor left out."""
    if not (
        _holds_any(text, _ANY_CHARS)
        or _holds_any(text, _ANY_LITERALS)
        or _AWS_OR_GOOGLE.search(text)
    ) or not _ANY_START.search(text):
        return
    seen: set[str] = set()
    for rule in TOKEN_RULES:
        if not _holds_any(text, rule.starts):
            continue
        for match in rule.pattern.finditer(text):
            token = match.group(1)
            if token in seen:
                continue
            seen.add(token)
            if (
                (_is_word_or_placeholder(token) if rule.words else is_placeholder_token(token))
                or (rule.allow is not None and rule.allow.search(token))
                or below_floor(token, rule.entropy)
            ):
                continue
            yield rule, token


# --- private keys -----------------------------------------------------------------------------

# PEM (-----BEGIN … PRIVATE KEY-----, PGP's … PRIVATE KEY BLOCK), SSH2 (---- BEGIN SSH2
# ENCRYPTED PRIVATE KEY ----), OpenVPN static keys, and PuTTY's key files.
PRIVATE_KEY = Lazy(
    r"-{4,5} ?BEGIN (?:[A-Z0-9_]+ ){0,8}PRIVATE KEY(?: BLOCK)? ?-{4,5}"
    r"|-----BEGIN OpenVPN Static key V\d-----|PuTTY-User-Key-File-\d+:"
)
PRIVATE_KEY_END = Lazy(
    r"-{4,5} ?END (?:[A-Z0-9_]+ ){0,8}PRIVATE KEY(?: BLOCK)? ?-{4,5}"
    r"|-----END OpenVPN Static key V\d-----|Private-MAC:"
)
# Any BEGIN line: what encloses a body line (a certificate's body is not a key's).
ANY_BEGIN = Lazy(r"-{4,5} ?BEGIN [A-Za-z0-9 _-]{1,100}?-{4,5}|PuTTY-User-Key-File-\d+:")
ANY_END = Lazy(r"-{4,5} ?END [A-Za-z0-9 _-]{1,100}?-{4,5}|Private-MAC:")
KEY_BODY = Lazy(r"[A-Za-z0-9+/=]{16,}")
# A line that is wholly a key body line: base64 (PEM, SSH2, PuTTY) or hex (OpenVPN).
KEY_BODY_LINE = Lazy(r"\s*(?:[A-Za-z0-9+/]{40,}={0,2}|[0-9a-f]{32})\s*")


# What quotes or joins the pieces of a key written as strings (``"MIIE…\\n" +``).
_QUOTING = " \t\"'`,;+()"


def key_body_pieces(line: str) -> list[str]:
    """The pieces of a line of a key block that may be body lines: the line itself, or, for a
    key written in a string (``"-----BEGIN …-----\\nMIIE…\\n…"``, a Google service-account key
    file; ``"MIIE…\\n" +``), each part between escaped line ends without its quotes."""
    if "\\" not in line and not any(q in line for q in "\"'`"):
        return [line]
    pieces = line.replace("\\r", "\\n").split("\\n")  # a line end escaped: \\n, \\r\\n, \\r
    return [piece.strip(_QUOTING) for piece in pieces]


def is_key_body(lines: list[str]) -> bool:
    """Whether the lines after a BEGIN line hold a key body: a base64 or hex line of real
    entropy (not ``anything``, ``...`` or ``<your key>``), alone on its line or between the
    escaped line ends of a string (``key_body_pieces``)."""
    return any(
        KEY_BODY_LINE.fullmatch(piece) and entropy(piece.strip()) >= 3.0
        for line in lines
        for piece in key_body_pieces(line)
    )


def may_begin_key(text: str) -> bool:
    """False only when ``text`` holds no BEGIN line of a private key (a cheap test first)."""
    return ("BEGIN" in text or "PuTTY-User-Key-File" in text) and bool(PRIVATE_KEY.search(text))
