"""The builtin reviewer's content-aware screening: Python's AST decides the debugger rule, and
symlinks and submodules get no content rules (issue 20). Real git repositories throughout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitflow_agents.findings import Overall
from gitflow_agents.git import queries as g
from gitflow_agents.reviewer import builtin, builtin_report
from tests.conftest import git
from tests.helpers.builtin import locations, only, review
from tests.helpers.review import review_in_child

# --- debugger: Python's AST decides -----------------------------------------------------------


def test_debugger_words_inside_strings_are_not_statements(repo: Path) -> None:
    result = review(
        repo,
        {
            "t.py": (
                '"""Call breakpoint() or import pdb; pdb.set_trace() to debug."""\n'
                "import ast\n\n"
                "ast.parse('import pdb; pdb.set_trace()')\n"
                'HELP = """\n'
                "import pdb\n"
                "breakpoint()\n"
                '"""\n'
            )
        },
    )
    assert only(result, "debugger") == []


@pytest.mark.parametrize(
    ("source", "line", "what"),
    [
        ("import pdb\n", 1, "import pdb"),
        ("import os, ipdb\n", 1, "import ipdb"),
        ("from pudb import set_trace\n", 1, "from pudb import ..."),
        ("def f():\n    breakpoint()\n", 2, "breakpoint()"),
        ("def f():\n    import pdb; pdb.set_trace()\n", 2, "import pdb"),  # one per line
        ("from pdb import (\n    set_trace,\n)\n", 1, "from pdb import ..."),
        ("import pydevd_pycharm\n", 1, "import pydevd_pycharm"),
    ],
)
def test_debugger_statements_by_ast(repo: Path, source: str, line: int, what: str) -> None:
    result = review(repo, {"a.py": "x = 1\n" + source})
    found = only(result, "debugger")
    assert [(f.line, f.message) for f in found] == [
        (line + 1, f"Python debugger call left in: {what}")
    ]


def test_set_trace_call_added_under_an_existing_import(repo: Path) -> None:
    base = {"a.py": "import pdb\n\n\ndef f():\n    return 1\n"}
    result = review(
        repo,
        {"a.py": "import pdb\n\n\ndef f():\n    pdb.set_trace()\n    return 1\n"},
        base_files=base,
    )
    assert [(f.rule, f.line) for f in result.findings] == [("debugger", 5)]


def test_only_added_statements_are_reported(repo: Path) -> None:
    base = {"a.py": "import pdb\n"}
    result = review(repo, {"a.py": "import pdb\nname = 'pdb'\n"}, base_files=base)
    assert result.findings == ()


def test_a_file_that_does_not_parse_keeps_the_line_rule(repo: Path) -> None:
    result = review(repo, {"a.py": "def f(:\n    import pdb\n"})
    assert [(rule, line) for rule, _, line in locations(result)] == [
        ("python-syntax", 1),
        ("debugger", 2),
    ]


# --- symlinks and submodules ------------------------------------------------------------------

needs_symlinks = pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")


def _commit_links(repo: Path) -> builtin.BuiltinResult:
    """A commit adding a symlink to a JSON file (its blob: the target path, no newline), a
    symlink to a directory, and a submodule (gitlink) pointing at a commit of this repository
    (so its id names an object git can read)."""
    (repo / "conf").mkdir()
    (repo / "conf" / "real.json").write_text('{"a": 1}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = g.head_sha(repo)
    (repo / "link.json").symlink_to("conf/real.json")
    (repo / "settings.py").symlink_to("conf")
    git(repo, "add", "link.json", "settings.py")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{base},vendor/lib.json")
    git(repo, "commit", "-q", "-m", "links")
    return builtin.review_diff(repo, g.DiffSpec(base, g.head_sha(repo)))


@needs_symlinks
def test_symlinks_and_submodules_get_no_content_rules(repo: Path) -> None:
    result = _commit_links(repo)
    assert result.findings == ()
    assert result.overall is Overall.APPROVE
    assert result.unreviewed_files == ()
    assert result.files_reviewed == 2  # the diff leaves submodules out (--ignore-submodules)


@needs_symlinks
def test_staged_symlink_gets_no_content_rules(repo: Path) -> None:
    (repo / "target.yaml").write_text("a: [1\n")  # the target's content is not the link's
    (repo / "link.yaml").symlink_to("target.yaml")
    git(repo, "add", "link.yaml")
    result = builtin.review_diff(repo, g.DiffSpec(g.head_sha(repo), None))
    assert result.findings == ()


@needs_symlinks
def test_a_file_that_replaces_a_symlink_is_reviewed(repo: Path) -> None:
    (repo / "link.json").symlink_to("elsewhere.json")
    git(repo, "add", "link.json")
    git(repo, "commit", "-q", "-m", "link")
    base = g.head_sha(repo)
    (repo / "link.json").unlink()
    (repo / "link.json").write_text('{"a": \n')
    git(repo, "add", "link.json")
    git(repo, "commit", "-q", "-m", "file")
    result = builtin.review_diff(repo, g.DiffSpec(base, g.head_sha(repo)))
    assert [rule for rule, _, _ in locations(result)] == ["json-syntax"]


# --- the builtin review without its markdown round trip ----------------------------------------


def test_as_review_equals_parsing_the_report(repo: Path) -> None:
    """``builtin.as_review`` (what ``git agent-review`` uses) gives the Review that parsing the
    builtin report gives (what a report file read back gives, e.g. in a chain)."""
    from gitflow_agents.findings import Severity, fill_fingerprints, parse_review

    (repo / "old.json").write_text('{"a": 1,}\n')  # an error the base already had
    result = review(
        repo,
        {
            "a.py": "import pdb\n# TODO: x\n",
            "b.json": "{\n",
            "c.txt": "no newline",
            "old.json": '{"a": 1,}\n\n',
            # two secrets on a line: the second's occurrence goes through the report too
            "d.json": '{"db_password": "Xk29slQp7aBq", "api_secret": "Zx8kQ2pL9vR4tYw7nB3m"}\n',
        },
        threshold=Severity.WARN,
    )
    assert len(result.findings) >= 6
    assert [f.occurrence for f in result.findings if f.file == "d.json"] == [1, 2]
    head = g.head_sha(repo)
    shas = {"reviewed_sha": head, "base_sha": "b" * 40}
    text = builtin_report.report(result, **shas, threshold=Severity.WARN)
    parsed = parse_review(text, **shas)
    direct = builtin.as_review(result, **shas, threshold=Severity.WARN)
    assert direct.overall is Overall.REVISE
    # git agent-review fills the fingerprints of both from the reviewed lines
    unset_direct = fill_fingerprints(f._replace(fingerprint="") for f in direct.findings)
    assert direct._replace(findings=unset_direct) == parsed._replace(
        findings=fill_fingerprints(parsed.findings)
    )


@pytest.mark.parametrize(
    "files",
    [
        {"a.py": "x = 1\n"},  # nothing found: an empty findings list, one line of JSON
        {"a.bin": "\0\1\2", "b.py": "import pdb\n", "c.txt": 'tab\tand "quotes"\nx'},
    ],
)
def test_as_review_names_the_verdict_line_of_the_report(repo: Path, files: dict[str, str]) -> None:
    """``as_review`` counts the report's lines without writing its JSON block (json is not
    imported by a review: issue 20): the verdict line it names is the report's."""
    from gitflow_agents.findings import parse_review

    result = review(repo, files)
    shas = {"reviewed_sha": g.head_sha(repo), "base_sha": "b" * 40}
    text = builtin_report.report(result, **shas)
    assert builtin.as_review(result, **shas).reason == parse_review(text, **shas).reason
    assert parse_review(text, **shas).reason.endswith(f"on line {len(text.splitlines())}")


HEAVY = ("markdown_it", "rich", "jinja2", "github", "psutil", "yaml", "concurrent", "tomllib")
# ... and what only a finding (its fingerprint), a config error or a worktree needs (issue 20)
HEAVY += ("hashlib", "difflib")
if hasattr(os, "memfd_create"):  # elsewhere git.cmd's scratch file for stderr is tempfile's
    HEAVY += ("tempfile",)
# our own packages a review without `.flow/base.yaml` has no use for (config/ imports plan/)
UNNEEDED = ("gitflow_agents.config", "gitflow_agents.plan")
# ... nor the parser of every command: an everyday argv is read without argparse (issue 20)
HEAVY += ("argparse",)
# ... nor dataclasses (and the inspect it pulls in): the values on the path are NamedTuples
HEAVY += ("dataclasses", "inspect")
# ... nor ast, unless an added line of a Python file names a debugger (issue 20)
HEAVY += ("ast",)
UNNEEDED += ("gitflow_agents.cli",)
# ... nor the reading of an agent's report, nor chain steps' work trees and remotes (issue 20)
UNNEEDED += (
    "gitflow_agents.findings.report",
    "gitflow_agents.findings.reply",
    "gitflow_agents.findings.verdict",
    "gitflow_agents.base.markdown",
    "gitflow_agents.git.worktree",
    "gitflow_agents.git.remote",
)


def test_git_agent_review_imports_nothing_heavy_for_a_small_commit(repo: Path) -> None:
    """The builtin path of ``git agent-review`` (every commit through the hook) does not import
    the libraries it does not need: their import dominated a small review (issue 20)."""
    (repo / "a.py").write_text("import os\n\nmy_value = os.environ.get('X-Y', '')\n")
    (repo / "b.md").write_text("# notes\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    code = (
        "import sys\n"
        "from gitflow_agents.git_agent_review import main\n"
        "sys.argv = ['git-agent-review', 'HEAD', '--no-note', '--format', 'json']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
        f"heavy = {HEAVY!r}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)), file=sys.stderr)\n"
        f"print(sorted(m for m in sys.modules if m.startswith({UNNEEDED!r})), file=sys.stderr)\n"
        "from gitflow_agents.base import secret_rules as r\n"
        "print([t.id for t in r.TOKEN_RULES if t.pattern.ready], file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    assert json.loads(done.stdout)["overall"] == "approve"
    # ... nor compiles the regex of a token format its lines give no reason to run
    assert done.stderr.strip().splitlines()[-3:] == ["[]", "[]", "[]"]


# ... and, printing to the terminal without a note (the benchmark's commit, the pre-commit
# hook's staged changes), none of JSON: the approval note, the baseline (there is none), the
# incremental review of an agent reviewer (issue 20)
JSON_USERS = (
    "json",
    "gitflow_agents.base.jsondata",
    "gitflow_agents.base.fsutil",
    "gitflow_agents.reviewer.notes",
    "gitflow_agents.reviewer.note_record",
    "gitflow_agents.reviewer.incremental",
    "gitflow_agents.findings.baseline",
)


@pytest.mark.parametrize(
    "call",
    ["main(['HEAD', '--no-note'])", "gitflow_agents_main(['review', '--hook'])"],
)
def test_a_small_review_to_the_terminal_imports_no_json(repo: Path, call: str) -> None:
    (repo / "a.py").write_text("import os\n\nmy_value = os.environ.get('X-Y', '')\n")
    git(repo, "add", "-A")
    if call.startswith("main"):
        git(repo, "commit", "-q", "-m", "change")
    more = (
        "from gitflow_agents.findings import accept, model\n"
        "from gitflow_agents.base import redact\n"
        "from gitflow_agents.git import diffparse\n"
        "from gitflow_agents.reviewer import checks, syntax\n"
        "unused = [accept._IGNORE, model._WS, redact._LOCATION_PATH, diffparse._RANGES,\n"
        "          syntax._JSONC, syntax._TOML_LINE, checks._CONFLICT, checks._TODO]\n"
        "print(sum(r.ready for r in unused), file=sys.stderr)\n"
    )
    done = review_in_child(repo, call, JSON_USERS, more)
    assert "APPROVED" in done.stdout
    # ... and compiles none of the regular expressions only a finding, a JSON or TOML file, an
    # agent reviewer or a line holding a conflict marker or a TODO needs
    assert done.stderr.strip().splitlines()[-2:] == ["0 []", "0"]


def test_review_settings_are_read_without_json(repo: Path) -> None:
    """``.flow/`` is read through ``base/fsutil.py``'s bounded read, which imports json only
    to write JSON (issue 20)."""
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text("review:\n  rules:\n    todo: {enabled: false}\n")
    (repo / "a.py").write_text("x = 1  # TODO later\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    code = (
        "import sys\n"
        "from gitflow_agents.git_agent_review import main\n"
        "code = main(['HEAD', '--no-note'])\n"
        "print(code, 'json' in sys.modules, 'gitflow_agents.config.review' in sys.modules, "
        "file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    assert "1 accepted" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "0 False True"


@pytest.mark.parametrize(
    "call",
    ["main(['HEAD', '--no-note'])", "gitflow_agents_main(['review', '--hook'])"],
)
def test_git_is_asked_where_the_review_is_before_the_review_loads(repo: Path, call: str) -> None:
    """The first git process (the top of the work tree and the commit, or HEAD for the staged
    changes), the git cat-file the contents are read through and the diff start before the
    review's modules are imported, so that git works while they load (issue 20)."""
    (repo / "a.py").write_text("import pdb\n")
    git(repo, "add", "-A")
    if call.startswith("main"):
        git(repo, "commit", "-q", "-m", "change")
    code = (
        "import os, sys\n"
        "loaded = []\n"
        "spawn = os.posix_spawn\n"
        "def posix_spawn(path, argv, *args, **kwargs):\n"
        "    what = next(a for a in argv if a in ('rev-parse', 'diff', 'cat-file'))\n"
        "    loaded.append((what, 'gitflow_agents.reviewer.target' in sys.modules))\n"
        "    return spawn(path, argv, *args, **kwargs)\n"
        "os.posix_spawn = posix_spawn\n"
        "from gitflow_agents.git_agent_review import main, gitflow_agents_main\n"
        f"code = {call}\n"
        "print(code, loaded, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    assert "debugger" in done.stdout
    # rev-parse and cat-file first, the diff once rev-parse named the commit: all three
    # before the builtin reviewer's modules load
    expected = [("rev-parse", False), ("cat-file", False), ("diff", False)]
    assert done.stderr.strip().splitlines()[-1] == f"0 {expected}"


@pytest.mark.parametrize(
    "call", ["main(['HEAD', '--no-note'])", "gitflow_agents_main(['review', 'HEAD', '--no-note'])"]
)
def test_a_review_runs_the_cyclic_collector_seldom(repo: Path, call: str) -> None:
    """Both review entry points raise the collector's threshold before they import the review
    (start-up ran it ~20 times: issue 20); the review's result is the same."""
    code = (
        "import gc, sys\n"
        "from gitflow_agents.git_agent_review import main, gitflow_agents_main\n"
        f"code = {call}\n"
        "print(code, gc.get_threshold()[0], file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-1] == "0 50000"


def test_review_settings_alone_load_no_shape_of_the_chain(repo: Path) -> None:
    """With a ``.flow/base.yaml`` holding review settings only, the review reads them (a
    disabled rule is accepted) without the shape of the chain, agents and plans: no plan/, no
    adapters, no values, no dataclasses (issue 20: ~20 ms of every commit)."""
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text("review:\n  rules:\n    todo: {enabled: false}\n")
    (repo / "a.py").write_text("x = 1  # TODO later\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    code = (
        "import sys\n"
        "from gitflow_agents.git_agent_review import main\n"
        "main(['HEAD', '--no-note', '--format', 'json'])\n"
        "heavy = ('gitflow_agents.plan', 'gitflow_agents.agents', 'gitflow_agents.config.shape',"
        " 'gitflow_agents.config.values', 'gitflow_agents.config.load', 'dataclasses')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    data = json.loads(done.stdout)
    assert [(a["rule"], a["accepted"]["by"]) for a in data["accepted"]] == [("todo", "config")]
    assert done.stderr.strip().splitlines()[-1] == "[]"


def test_the_hook_form_of_gitflow_agents_reads_no_parser(repo: Path) -> None:
    """``gitflow-agents review`` as ``.pre-commit-hooks.yaml`` runs it (every commit) does not
    import ``cli`` or argparse; another argv still reaches the parser (issue 20)."""
    (repo / "a.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    code = (
        "import sys\n"
        "from gitflow_agents.git_agent_review import gitflow_agents_main\n"
        "code = gitflow_agents_main(['review', '--hook', '--format', 'json'])\n"
        "print(code, 'argparse' in sys.modules, 'gitflow_agents.cli' in sys.modules, "
        "file=sys.stderr)\n"
        "gitflow_agents_main(['review', '--staged', '--output', 'out.json', '--no-note'])\n"
        "print('argparse' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-2:] == ["0 False False", "True"]
    first, _ = json.JSONDecoder().raw_decode(done.stdout)  # the terminal format follows it
    assert first["overall"] == "approve"
    assert json.loads((repo / "out.json").read_text())["overall"] == "approve"


# --- json-syntax and yaml-syntax: repeated keys ------------------------------------------------


def test_a_repeated_json_key_is_a_json_error_at_its_line(repo: Path) -> None:
    result = review(
        repo,
        {
            "a.json": '{\n  "name": "x",\n  "nested": {"k": 1, "k": 2}\n}\n',
            # the line of the second key, not of its value; escapes are the same key
            "b.json": '{"k": 1,\n "other": {"k": 2},\n "\\u006b"\n  :\n  3}\n',
            "c.json": '[{"a": 1}, {"a": 2,\n\n "a": {"deep": [1, {"x": 1, "y": 2}]}}]\n',
        },
    )
    assert [(f.rule, f.file, f.line, f.message) for f in result.findings] == [
        ("json-syntax", "a.json", 3, "invalid JSON: duplicate key 'k' (first on line 3)"),
        ("json-syntax", "b.json", 3, "invalid JSON: duplicate key 'k' (first on line 1)"),
        ("json-syntax", "c.json", 3, "invalid JSON: duplicate key 'a' (first on line 1)"),
    ]


def test_a_repeated_key_the_base_already_had_is_not_reported(repo: Path) -> None:
    """Off the added lines, as any syntax error the base version already had."""
    base = {"a.json": '{\n  "k": 1,\n  "k": 2\n}\n'}
    result = review(repo, {"a.json": '{\n  "first": 0,\n  "k": 1,\n  "k": 2\n}\n'}, base_files=base)
    assert result.findings == ()


def test_a_repeated_yaml_key_is_a_yaml_error_at_its_line(repo: Path) -> None:
    """The tester's case: a compose file that repeats ``environment`` (the later value silently
    wins: PyYAML builds it; ruamel.yaml, and so pre-commit-hooks' check-yaml, refuses it), as
    the same mistake in JSON is."""
    compose = (
        "services:\n  web:\n    image: app:1\n    environment:\n      LOG_LEVEL: info\n"
        '    environment:\n      DEBUG: "1"\n'
    )
    result = review(
        repo,
        {
            "compose.yaml": compose,
            "compose.json": '{"services": {"web": {"environment": {"LOG_LEVEL": "info"}, '
            '"environment": {"DEBUG": "1"}}}}\n',
        },
    )
    assert [(f.rule, f.file, f.line, f.message) for f in result.findings] == [
        (
            "json-syntax",
            "compose.json",
            1,
            "invalid JSON: duplicate key 'environment' (first on line 1)",
        ),
        (
            "yaml-syntax",
            "compose.yaml",
            6,
            "invalid YAML: duplicate key 'environment' (first on line 4)",
        ),
    ]


# --- REV: one commit, known without asking git ---------------------------------------------------


def test_a_single_commit_is_reviewed_without_asking_git_whether_it_is_one(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitflow_agents.commands import review as command
    from gitflow_agents.findings import Severity
    from gitflow_agents.reviewer.agent_target import review_target

    (repo / "a.py").write_text("import pdb\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    target = command.resolve_target(repo, "HEAD", staged=False)
    assert target.one_commit and target.base == git(repo, "rev-parse", "HEAD~1").strip()
    known = review_target(
        repo, target, agent="builtin", threshold=Severity.ERROR, max_file_size=1 << 20
    )
    asked = review_target(
        repo,
        target._replace(one_commit=False),
        agent="builtin",
        threshold=Severity.ERROR,
        max_file_size=1 << 20,
    )
    assert known == asked and [f.rule for f in known[0].findings] == ["debugger"]

    def refuse(*args: object) -> bool:
        raise AssertionError("asked git")

    monkeypatch.setattr(g, "is_one_commit", refuse)
    monkeypatch.setattr(g, "is_ancestor", refuse)
    assert command.nothing_to_review(repo, target) is None
    assert (
        review_target(
            repo, target, agent="builtin", threshold=Severity.ERROR, max_file_size=1 << 20
        )
        == known
    )


def test_a_merge_or_root_commit_as_rev(repo: Path) -> None:
    from gitflow_agents.commands import review as command

    root = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    first = command.resolve_target(repo, root, staged=False)
    assert first.one_commit and first.base == g.empty_tree(repo)
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "side.txt").write_text("side\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "side")
    git(repo, "checkout", "-q", "main")
    (repo / "main.txt").write_text("main\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main")
    git(repo, "merge", "-q", "--no-edit", "side")
    merge = command.resolve_target(repo, "HEAD", staged=False)
    assert not merge.one_commit
    assert merge.base == git(repo, "rev-parse", "HEAD^1").strip()
