"""The secret rules on the peers' public test cases (tests/secret_cases.py) and on the shapes
issue 20 reported: every case's outcome is asserted, by-design differences named one by one."""

from __future__ import annotations

import json
import re

import pytest

from gitflow_agents.base.redact import redact_text, secret_values
from gitflow_agents.base.redact_stream import LineMasker
from gitflow_agents.base.secret_rules import TOKEN_RULES
from gitflow_agents.findings import fingerprint
from tests.secret_cases import (
    GITLEAKS_BY_DESIGN,
    GITLEAKS_SIBLING_POSITIVES,
    gitleaks_outcomes,
    keyword_outcomes,
    load,
    scan,
)

# Built at run time so this file itself never holds a literal secret-shaped string.
VALUE = "Zx9Qw8Er7" + "Ty6Ui5Op4As"
GH_TOKEN = "ghp_" + "Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6"
PEM_LINE = "MIIEowIBAAKCAQEAx7Qm2ZkP9sLw3Rt" + "Hq8vN4cY1uJ6bW0eT5gK2dF9sA7lZ3x"
AWS_SECRET = "Zx8kQ2/pL9vR4tYw7nB3" + "mC6dF1gH5jK0sA2eU8iO"  # an AWS secret access key


def rules(path: str, text: str) -> list[str | None]:
    return [f.rule for f in scan(path, text)]


# --- the peers' cases ------------------------------------------------------------------------


@pytest.mark.parametrize("rule", sorted(load("gitleaks_rules.json")["rules"]))
def test_gitleaks_cases_for_every_rule_we_claim(rule: str) -> None:
    missed, flagged, _, _ = gitleaks_outcomes(rule)
    assert missed == []
    assert sorted(flagged) == sorted(GITLEAKS_BY_DESIGN.get(rule, {}))


@pytest.mark.parametrize(
    ("rule", "text", "pattern"),
    [(r, t, p) for r, cases in GITLEAKS_SIBLING_POSITIVES.items() for t, p in cases.items()],
)
def test_a_sibling_rules_positive_is_no_negative(rule: str, text: str, pattern: str) -> None:
    """Left out of the negatives only when it is one: a negative case of one of the gitleaks
    rules ``rule`` claims, of the shape of another's positives (its pattern, as gitleaks wrote
    it), and reported by ``rule``."""
    entry = load("gitleaks_rules.json")["rules"][rule]
    assert len(entry["gitleaks"]) > 1 and text in entry["fps"]
    assert re.fullmatch(pattern, text)
    assert any(re.fullmatch(pattern, tp.split('"')[-2] if '"' in tp else tp) for tp in entry["tps"])
    assert [f.rule for f in scan("sample.txt", text)] == [rule]


def test_every_token_rule_has_gitleaks_cases() -> None:
    claimed = set(load("gitleaks_rules.json")["rules"])
    ours = {rule.id for rule in TOKEN_RULES} | {"private-key"}
    # url-credentials and azure-storage-key have no gitleaks rule: cases in this file
    assert ours - claimed == {"url-credentials", "azure-storage-key"}


def test_detect_secrets_keyword_cases() -> None:
    missed, alarms, positives, negatives = keyword_outcomes()
    assert [c["line"] for c in missed if not c["by_design"]] == []
    assert [c["line"] for c in alarms if not c["by_design"]] == []
    assert (positives, negatives) == (218, 133)  # the data file is whole
    assert len(missed) == 17  # 5 × words with spaces, 12 × unquoted Go values


def test_the_value_found_is_the_whole_value_detect_secrets_reports() -> None:
    for case in load("detect_secrets_keyword.json")["cases"]:
        if case["secret"] and scan(case["file"], case["line"]):
            assert secret_values([case["line"]], case["file"]) == {case["secret"]}, case


def test_what_the_token_rules_find_is_masked() -> None:
    """One table: every gitleaks positive the reviewer finds, masking hides too."""
    for rule, entry in load("gitleaks_rules.json")["rules"].items():
        if rule == "private-key":
            continue
        for text in entry["tps"]:
            values = secret_values(text.split("\n"), "sample.txt")
            assert values, text
            masked = redact_text(text)
            assert not any(value in masked for value in values), text


# --- precision: what is not a secret ----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("README.md", "GITHUB_TOKEN=ghp_" + "x" * 36),
        ("README.md", "key = AKIA" + "X" * 16),
        ("README.md", "SLACK_TOKEN=xoxb-xxxxxxxxx-xxxxxxxxxx-xxxxxxxxxxxx"),
        ("conf.yaml", "aws_access_key: AKIA" + "IOSFODNN7EXAMPLE"),
        ("app.py", "self._cv_token: contextvars.Token[AppContext] | None = None"),
        ("app.py", "access_token_url='https://github.com/login/oauth/access_token',"),
        ("app.py", "token = request.headers['X-Api-Token']"),
        ("app.py", "def check(token: str, password: Optional[str] = None) -> bool:"),
        ("app.py", "password = getpass.getpass('Password: ')"),
        ("app.py", "PASSWORD_RE = re.compile(r'(?P<password>[^:@]+)@')"),
        ("app.py", 'SECRET_FILE = "conf/secrets/production-settings.json"'),
        ("app.js", "const token = localStorage.getItem('token') || generateToken(32);"),
        ("notes.md", "the token lives in `~/.config/tool/token.json`"),
        ("notes.yaml", "token: Token[AppContext]"),
        ("setup.cfg", "console_scripts = token-tool = pkg.token:main"),
        ("compose.yml", "DATABASE_URL: postgres://postgres:postgres@localhost/app"),
        ("run.sh", "curl http://admin:password@127.0.0.1:8080/api"),
        ("x.py", 'password = "your-password-here"'),
        ("x.py", 'api_key = "<your api key>"'),
        ("x.py", 'password = "correct horse battery staple"'),
        ("docs.md", "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----"),
        ("x.c", f"char secret[] = '{VALUE}';"),  # a character literal in C
        ("x.py", 'Token("github-actions[bot]", user_endpoint=False, app="github-actions"),'),
        ("x.md", "`github-actions[bot]` for `GITHUB_TOKEN`, `<app-slug>[bot]` for an app"),
        ("x.md", "(`anthropic/…` → `ANTHROPIC_API_KEY`, `openai/…` → `OPENAI_API_KEY`)"),
        ("x.py", '"apiKey": "{env:MOCK_KEY}",'),
        ("x.py", 'assert found == [("github-token", "deploy dir/my env.sh", 1)]'),
        ("x.md", 'a Stripe negative `nonMatchingToken := "task_test_<30 random characters>"`'),
        # seen on public projects' history (aws-cli, sentry-python, issue 20)
        ("presign.rst", "X-Amz-Credential=AKIA" + "EXAMPLE123456789%2F20210621%2Fus-west-2"),
        ("share.rst", '--portfolio-share-token "share-agngcybu4xxxx"'),
        ("test_db.py", '["Bob", "secret_pw", "datetime.date(1984, 3, 1)"],'),
        ("test_v2_event.py", 'api_key="sk_test_1234",'),  # stripe-python: too short for a key
        ("test_v2_error.py", '#         api_key="keyinfo_test_123",'),
        # aws-cloudformation-templates, axios
        ("t.yaml", "ZipFile: \"x = certPem\\n    d['privateKey'] = privateKey\\n    e = 1\\n\""),
        ("t.yaml", 'Sub: "gitea admin user create --must-change-password=false\\n\\n# Tell"'),
        (
            "t.yaml",
            'hashed-password: "$(echo -n $(aws sts get-caller-identity) | npx argon2-cli -e)"',
        ),
        ("axios.js.map", '"x: defaultToConfig2,\\n    withCredentials: defaultToConfig2,\\n'),
        # paths stay paths, whatever case and digits their names have
        ("a.yaml", "secret: src/app/main.py"),
        ("a.yaml", "password: /usr/local/bin"),
        ("a.yaml", "token: ../x/y"),
        ("a.yaml", "api_key: MyProject/Source/Win64/Release"),
        ("a.yaml", "secret_key: secret/data/MyApp2/Prod"),
        ("a.yaml", "secret: Library/Caches/Google3"),
        ("a.yaml", "token: objects/ab/cdef0123456789abcdef0123456789abcdef"),
        ("a.py", 'password = "Assets/Textures/Hero2"'),
        # an exception named for a token, given its message (PyJWT's api_jws.py)
        ("jws.py", "raise InvalidTokenError(\"Invalid 'crit' header: must be a list\")"),
        ("x.py", 'raise SecretNotFoundError("Missing a required field: name")'),
        # the word "pass" before a quoted or backticked string (hypothesis)
        ("impl.py", "err_msg = ' To generate valid datetimes, pass `dtype=\"datetime64[ns]\"`'"),
        ("stateful.py", 'hint = "a target.  You should instead pass `targets=(a, b)` to "'),
        ("x.py", '# pass "--color=always2" to force colour'),
        # sentences of an interface, digits and signs among their words
        ("en.json", '"token_expired": "Session expired (code 401). Please sign in.",'),
        ("en.json", '"passwordHint": "Use 8+ characters, 1 number & 1 symbol",'),
        ("en.json", '"password_rules": "Must contain 1 upper-case letter & 1 digit"'),
    ],
)
def test_not_secrets(path: str, line: str) -> None:
    assert rules(path, line) == []


def test_the_same_token_twice_on_a_line_is_one_finding() -> None:
    assert rules("a.py", f'T = "{GH_TOKEN}" if x else "{GH_TOKEN}"') == ["github-token"]


def test_a_token_as_a_urls_password_is_one_finding_of_its_format() -> None:
    line = f'URL = "https://user:{GH_TOKEN}@github.com/x/y.git"'
    assert rules("conf.py", line) == ["github-token"]
    # a password of no known format is still the URL's
    assert rules("conf.py", f'URL = "https://user:{VALUE}@github.com/x/y.git"') == [
        "url-credentials"
    ]


# --- recall: what is --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "line", "value"),
    [
        (".env", 'DB_PASSWORD="p@ss;w0rd(2024)Xq9!Lm#"', "p@ss;w0rd(2024)Xq9!Lm#"),
        ("a.ts", f'const apiKey: string = "{VALUE}";', VALUE),
        ("a.go", f'var apiKey string = "{VALUE}"', VALUE),
        ("Makefile", f"API_TOKEN ?= {VALUE}", VALUE),
        ("Makefile", f"API_TOKEN ::= {VALUE}", VALUE),
        ("a.java", f'System.setProperty("API_TOKEN", "{VALUE}");', VALUE),
        ("a.json", f'{{"client_secret": "{VALUE}"}}', VALUE),
        ("a.c", f'char secret[25] = "{VALUE}";', VALUE),
        ("a.js", f'if (apiKey === "{VALUE}") {{', VALUE),
        ("a.js", f'if ("{VALUE}" == password) {{', VALUE),
        ("notes.md", f"password={VALUE}", VALUE),
        # an AWS secret access key holding a "/" (about half of them): random, not a path
        ("credentials", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
        ("a.py", f'AWS_SECRET_ACCESS_KEY = "{AWS_SECRET}"', AWS_SECRET),
        ("a.yaml", f"secret_key: /{VALUE}", f"/{VALUE}"),
        # a name and a quoted value with no operator: a statement of a configuration language,
        # or an option on a command line (not a word in a sentence)
        ("a.conf", f'  password "{VALUE}";', VALUE),
        ("run.sh", f'mysql -u root --password "{VALUE}" app', VALUE),
        # a value with a space or two is not yet prose
        ("a.py", 'password = "Xk29 slQp7a!Bq"', "Xk29 slQp7a!Bq"),
        ("a.py", 'secret = "q8Zr 3kP9 xW2m N7vB"', "q8Zr 3kP9 xW2m N7vB"),
    ],
)
def test_secret_named_literals(path: str, line: str, value: str) -> None:
    assert rules(path, line) == ["high-entropy-secret"]
    assert secret_values([line], path) == {value}


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        ("url = postgres://app:" + VALUE + "@db.internal/app", "url-credentials"),
        # Redis and others take a password with no user name
        ("REDIS_URL=redis://:" + VALUE + "@cache.internal:6379/0", "url-credentials"),
        (
            "conn = DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
            + "lJzRc1YdHaAA2KCNJJ1tkYwF/+mKK6Ygw0NGe170Xu592euJv2wYUtBlV8z+qnlcNQSnIYVTkLWntUO1F8j8rQ==;",
            "azure-storage-key",
        ),
    ],
)
def test_url_and_connection_string_secrets(line: str, rule: str) -> None:
    assert rules("settings.txt", line) == [rule]


# tokens whose format says what they are, whatever name holds them (or none)
SLACK_HOOK = "https://hooks.slack.com/services/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"
HF_TOKEN = "hf_" + "QNqXrtFihRuySZubEgnUVvGcnENCBhKgGD"
DO_TOKEN = "dop_v1_" + "4f9c2b7e1a8d3f6c0e5b9a2d7f1c4e8b3a6d9f2c5e8b1a4d7f0c3e6b9a2d5f8c"
VAULT_TOKEN = (
    "hvs."
    + "CAESIP2jTxc9S2K7Z6CtcFWQv7-044m_oSsxnPE1H3nF89l3GiYKHGh2cy5sQmlIZVNyTWJNcDRsYWJpQjlhYjVlb1cQh6PL8wEYAg"
)


@pytest.mark.parametrize(
    ("path", "line", "rule", "token"),
    [
        (
            "notify.yml",
            f"- run: curl -X POST -d '{{}}' {SLACK_HOOK}",
            "slack-webhook-url",
            SLACK_HOOK[33:],
        ),
        ("notify.js", f'const WEBHOOK = "{SLACK_HOOK}";', "slack-webhook-url", SLACK_HOOK[33:]),
        ("run.sh", f"huggingface-cli login --token {HF_TOKEN}", "huggingface-token", HF_TOKEN),
        ("a.py", f'login("{HF_TOKEN}")', "huggingface-token", HF_TOKEN),
        (
            "main.tf",
            f'provider "digitalocean" {{ token = "{DO_TOKEN}" }}',
            "digitalocean-token",
            DO_TOKEN,
        ),
        ("run.sh", f"doctl auth init -t {DO_TOKEN}", "digitalocean-token", DO_TOKEN),
        ("run.sh", f"vault login {VAULT_TOKEN}", "vault-token", VAULT_TOKEN),
    ],
)
def test_token_formats_found_without_a_secret_name(
    path: str, line: str, rule: str, token: str
) -> None:
    assert rules(path, line) == [rule]
    assert secret_values([line], path) == {token}
    assert token not in redact_text(line)


@pytest.mark.parametrize(
    "line",
    [
        "url: https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "SLACK_WEBHOOK=https://hooks.slack.com/services/YOUR/WEBHOOK/URL",
        "see https://hooks.slack.com/services/ for incoming webhooks",
        "HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "hf_generatedByHomeAppForDebuggingPurposesKey(x)",
        "x = hf_hub_download(repo_id, filename)",
        "DIGITALOCEAN_TOKEN=dop_v1_" + "x" * 64,
        "VAULT_TOKEN=hvs." + "x" * 96,
        "token: s.ZC9Ecf4M5g9o34Q6RkzGsj0z",  # the legacy Vault form: not claimed
    ],
)
def test_token_format_placeholders_are_not_secrets(line: str) -> None:
    assert rules("README.md", line) == []


def test_client_service_and_database_keys_are_secret_names() -> None:
    """detect-secrets' keyword denylist names them; a key named public is given to clients,
    and a constant naming a storage key (DB_KEY = "app_state_v2") holds words."""
    found = [
        'CLIENT_KEY = "9f2c7a1e4b8d3f6a0c5e9b2d7f1a4c8e"',
        'service_key = "a8Kd93JslQ02mZx7Pq4Lr5Tw"',
        'DB_KEY = "Zq8vR3kP2mW7Lz1Xk9mQ"',
        'database_key = "Hq3vT8kR2mW7Lz1Yk9pN"',
        'Parse.initialize(applicationId: "x", clientKey: "8A4eqYwOATOIxM634S2Hf3oTVvbbjnUY")',
    ]
    for line in found:
        assert rules("settings.py", line) == ["high-entropy-secret"], line
    silent = [
        'DB_KEY = "corechella:state"',
        'DB_KEY = "grab_demo_db_v1"',
        'DB_KEY = "123"',
        'KRUMBS_SDK_CLIENT_KEY = "io.krumbs.sdk.CLIENT_KEY"',
        'SERVICE_KEY = "serviceId"',
        'client_key = "certs/client2.key"',
        'client_key = "${base64decode(data.k8s.client_key)}"',
        'client_key_file = "Zq8vR3kP2mW7Lz1Xk9mQ"',
        'service_key_id = "Zq8vR3kP2mW7Lz1Xk9mQ"',
        'PUBLISHABLE_CLIENT_KEY = "pck_h2aft7g9pqjzrkdnzs199h1may5wjt"',
        'NEXT_PUBLIC_API_KEY = "Zq8vR3kP2mW7Lz1Xk9mQ"',
        "db_key = cache.key_for(user)",
    ]
    for line in silent:
        assert rules("settings.py", line) == [], line


# 2.9 bits per character: a 10-character value cannot reach a 3-bit floor with two repeats
SHORT_PASSWORD = "S3cr3t" + "Pa55"


@pytest.mark.parametrize(
    ("path", "line", "rule"),
    [
        ("settings.txt", f"url = postgres://user:{SHORT_PASSWORD}@host/db", "url-credentials"),
        (".env", f"DB_PASSWORD={SHORT_PASSWORD}", "high-entropy-secret"),
        ("a.py", f'password = "{SHORT_PASSWORD}"', "high-entropy-secret"),
    ],
)
def test_short_passwords_are_held_to_what_their_length_allows(
    path: str, line: str, rule: str
) -> None:
    assert rules(path, line) == [rule]
    assert SHORT_PASSWORD not in redact_text(line, secret_values([line], path))


@pytest.mark.parametrize("value", ["aaaa1111", "ab12ab12ab", "abc123"])
def test_short_repetitive_values_stay_below_the_eased_floor(value: str) -> None:
    assert rules(".env", f"DB_PASSWORD={value}") == []
    assert rules("settings.txt", f"url = postgres://user:{value}@host/db") == []


@pytest.mark.parametrize(
    "block",
    [
        f'---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: "k"\n{PEM_LINE}\n'
        "---- END SSH2 ENCRYPTED PRIVATE KEY ----",
        f"PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nPublic-Lines: 1\n{PEM_LINE}\n"
        f"Private-Lines: 1\n{PEM_LINE[::-1]}\nPrivate-MAC: 2a3b",
        "-----BEGIN OpenVPN Static key V1-----\ne5b4c3f2a1d0918273645546372819a0\n"
        "-----END OpenVPN Static key V1-----",
    ],
    ids=["ssh2", "putty", "openvpn"],
)
def test_private_key_formats_are_found_and_masked(block: str) -> None:
    assert rules("key", block) == ["private-key"]
    body = block.split("\n")[-2]
    assert body not in redact_text(f"the key:\n{block}\n")
    masker = LineMasker()
    lines = (block + "\n").encode().splitlines(keepends=True)
    streamed = b"".join(masker.feed(line) for line in lines) + masker.flush()
    assert body.encode() not in streamed


def test_a_private_key_in_a_json_string_is_found_and_its_body_masked() -> None:
    """A Google service-account key file: the key in a JSON string, its line ends escaped."""
    pem = f"-----BEGIN PRIVATE KEY-----\n{PEM_LINE}\n{PEM_LINE[::-1]}\n-----END PRIVATE KEY-----\n"
    line = f'  "private_key": {json.dumps(pem)},'
    after = '  "client_email": "bot@demo.iam.gserviceaccount.com",'
    assert rules("sa.json", f"{{\n{line}\n{after}\n}}") == ["private-key"]
    values = secret_values(["{", line, after, "}"], "sa.json")
    assert {PEM_LINE, PEM_LINE[::-1]} <= values
    assert not any("gserviceaccount" in value for value in values)  # the key ends on its line
    assert PEM_LINE not in redact_text(line, values) and PEM_LINE not in redact_text(line)


# --- every secret of a line -------------------------------------------------------------------

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)


def test_every_secret_on_a_line_is_a_finding_of_its_own() -> None:
    """A token does not hide a secret-named value beside it, nor one such value another; each
    finding has its own fingerprint, and the first of its rule on the line keeps the one it has
    alone (baselines hold it)."""
    line = f'{{"session_jwt": "{JWT}", "db_password": "{VALUE}", "api_secret": "{VALUE[::-1]}"}}'
    found = scan("a.json", line)
    assert [f.rule for f in found] == ["jwt", "high-entropy-secret", "high-entropy-secret"]
    assert [f.message.split()[0] for f in found[1:]] == ["db_password", "api_secret"]
    assert len({f.fingerprint for f in found}) == 3
    for alone in (f'{{"session_jwt": "{JWT}"}}', f'{{"db_password": "{VALUE}"}}'):
        (single,) = scan("a.json", alone)
        assert single.fingerprint == fingerprint("a.json", single.rule, single.message, alone)
    first = next(f for f in found if f.rule == "high-entropy-secret")
    assert first.fingerprint == fingerprint("a.json", first.rule, first.message, line)
    # two tokens of one rule
    two = scan("a.sh", f"A={GH_TOKEN} B={GH_TOKEN[:-1]}Z")
    assert [f.rule for f in two] == ["github-token", "github-token"]
    assert two[0].fingerprint != two[1].fingerprint


def test_a_token_assigned_to_a_secret_name_is_one_finding() -> None:
    assert rules("a.py", f'token = "{JWT}"') == ["jwt"]
    assert rules("a.py", f'auth_token = "Bearer {JWT}"') == ["jwt"]
