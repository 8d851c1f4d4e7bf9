"""The editor JSON Schema is generated from the shape the loader checks: it is valid, has every
key, carries the loader's defaults, accepts every example config, and rejects what the loader
rejects."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.base.errors import ConfigError
from gitflow_agents.base.units import parse_duration
from gitflow_agents.config import (
    ChainConfig,
    builtin_flow_dir,
    flow_config_schema,
    load_flow_config,
    schema_text,
)
from gitflow_agents.config import shape as module
from tests.conftest import ROOT
from tests.helpers.config_files import MINIMAL, load_error, write

jsonschema = pytest.importorskip("jsonschema")


def _validator() -> Any:
    return jsonschema.Draft202012Validator(flow_config_schema())


def _shipped(name: str) -> str:
    return (builtin_flow_dir() / name).read_text(encoding="utf-8")


def test_schema_is_valid_draft_2020_12() -> None:
    schema = flow_config_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "flow-config.schema.json"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_schema_text_is_the_schema_as_json() -> None:
    import json

    text = schema_text()
    assert json.loads(text) == flow_config_schema()
    assert text.endswith("}\n") and text.startswith('{\n  "$schema"')


def test_schema_keys_match_the_loader() -> None:
    def keys(spec: object) -> object:
        if isinstance(spec, module.Obj):
            return {name: keys(sub) for name, sub in spec.fields.items()}
        if isinstance(spec, module.MapOf):
            return {"*": keys(spec.item)}
        return None

    def schema_keys(node: dict[str, object]) -> object:
        props = node.get("properties")
        if isinstance(props, dict):
            return {name: schema_keys(sub) for name, sub in props.items()}
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            return {"*": schema_keys(extra)}
        return None

    assert schema_keys(flow_config_schema()) == keys(module.TOP)
    assert len(str(keys(module.TOP))) > 500  # the whole tree, not an empty one


def test_every_key_is_described() -> None:
    def undescribed(node: dict[str, Any], path: str) -> list[str]:
        missing = [] if node.get("description") else [path]
        for name, sub in node.get("properties", {}).items():
            missing += undescribed(sub, f"{path}.{name}")
        if isinstance(node.get("additionalProperties"), dict):
            missing += undescribed(node["additionalProperties"], f"{path}.*")
        return missing

    assert undescribed(flow_config_schema(), "") == []


def test_schema_defaults_are_the_loaders_defaults(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL + "agents:\n  a: {}\n  b:\n    model: x\n")
    config = load_flow_config(tmp_path)
    agent = config.agent("a")
    props = flow_config_schema()["properties"]
    loaded = {
        "flow_dir": config.flow_dir,
        "default_branch": config.default_branch,
        "specs_folder": config.specs_folder,
        "defaults": {
            "stuck_timeout_secs": config.stuck_timeout_secs,
            "max_wait_secs": config.max_wait_secs,
            "stuck_retry_grace_secs": config.stuck_retry_grace_secs,
        },
        "spec_plan": {
            "top_level_end_marker": config.spec_plan.top_level_end_marker,
            "step_header_pattern": config.spec_plan.step_header_pattern,
        },
        "chain": {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in vars(config.chain).items()
            if value is not None and key != "gc"
        },
    }
    gc = props["chain"]["properties"]["gc"]["properties"]  # durations and sizes as written
    assert parse_duration(gc["older_than"]["default"]) == config.chain.gc.older_than
    assert "default" not in gc["max_size"] and config.chain.gc.max_size is None
    for key, value in loaded.items():
        if isinstance(value, dict):
            for sub, expected in value.items():
                assert props[key]["properties"][sub]["default"] == expected, (key, sub)
        else:
            assert props[key]["default"] == value, key
    report = props["completion_workflow"]["properties"]["report"]["properties"]
    assert report["filename"]["default"] == config.completion_workflow.report_filename
    assert report["success_suffix"]["default"] == config.completion_workflow.success_suffix
    assert report["failure_suffix"]["default"] == config.completion_workflow.failure_suffix
    agent_props = props["agents"]["additionalProperties"]["properties"]
    assert agent_props["adapter"]["default"] == agent.adapter
    assert agent_props["structured_reply"]["default"] is agent.structured_reply
    shared = props["shared_files"]["additionalProperties"]["properties"]
    assert shared["writable"]["default"] is False


def test_unknown_key_fails_schema_and_loader(tmp_path: Path) -> None:
    import yaml

    text = MINIMAL + "agents:\n  builder:\n    colour: red\n"
    validator = _validator()
    assert list(validator.iter_errors(yaml.safe_load(text)))
    write(tmp_path, ".flow/base.yaml", text)
    assert load_error(tmp_path).startswith(".flow/base.yaml:5: agents.builder.colour: unknown key")


# One layer each; the loader and the schema must give the same answer (the loader's message is
# checked in test_config.py).
AGENTS = "agents:\n  builder: {}\n  reviewer: {}\n  fixer: {}\n"
REJECTED = [
    "flow_dir: ''\n",
    "flow_dir: 3\n",
    "default_brnach: main\n",
    "defaults:\n  max_wait_secs: 0\n",
    "defaults:\n  stuck_retry_grace_secs: -1\n",
    "defaults:\n  max_wait_secs: '60'\n",
    "spec_plan: []\n",
    "completion_workflow:\n  report:\n    filename: ''\n",
    "agents: []\n",
    "agents:\n  bad name: {}\n",
    "agents:\n  a:\n    adapter: copilot\n",
    "agents:\n  a:\n    model: [x]\n",
    "agents:\n  a:\n    allow_env: [1BAD]\n",
    "agents:\n  a:\n    options: [x]\n",
    "agents:\n  a:\n    structured_reply: 'no'\n",
    "agents:\n  a:\n    adapter: command\n    command: []\n",
    "shared_files:\n  log:\n    path: x.md\n    info: ''\n",
    "shared_files:\n  log:\n    path: x.md\n    writable: 1\n",
    "shared_files:\n  log:\n    path: x.md\n    agents: ['a b']\n",
    AGENTS + "chain:\n  merge: rebase\n",
    AGENTS + "chain:\n  severity_threshold: fatal\n",
    AGENTS + "chain:\n  max_iterations: 0\n",
    AGENTS + "chain:\n  reviewers: []\n",
    AGENTS + "chain:\n  branch_pattern: agents/{plan_name}\n",
    "review:\n  paths:\n    docs/: {severity_threshold: fatal}\n",
    "review:\n  paths:\n    docs/: {threshold: warn}\n",
    "review:\n  paths: [docs/]\n",
]
ACCEPTED = [
    "",
    "agents:\n  a:\n    adapter: builtin\n    model: null\n    description: null\n",
    "agents:\n  a:\n    adapter: command\n    command: my-agent --task {task}\n",
    "agents:\n  a:\n    adapter: command\n    command: [my-agent, '{task}']\n",
    "agents:\n  a:\n    allow_env: [MY_TOKEN]\n    options: {max_turns: 3}\n",
    "shared_files:\n  log:\n    path: '{flow_dir}/log.md'\n    writable: true\n    agents: [a]\n",
    AGENTS + "chain:\n  reviewers: [reviewer]\n  merge: merge\n  severity_threshold: warn\n",
    AGENTS + "chain:\n  branch_pattern: 'ai/{plan}/step-{step2}'\n  max_iterations: 1\n",
    "defaults:\n  stuck_retry_grace_secs: 0\n",
    "review:\n  exclude: []\n  paths:\n    'docs/**': {severity_threshold: info}\n",
]


@pytest.mark.parametrize(
    ("extra", "valid"), [(t, False) for t in REJECTED] + [(t, True) for t in ACCEPTED]
)
def test_schema_and_loader_agree(tmp_path: Path, extra: str, valid: bool) -> None:
    import yaml

    text = MINIMAL + extra
    schema_ok = not list(_validator().iter_errors(yaml.safe_load(text)))
    write(tmp_path, ".flow/base.yaml", text)
    try:
        load_flow_config(tmp_path)
        loader_ok = True
    except ConfigError:
        loader_ok = False
    assert (schema_ok, loader_ok) == (valid, valid)


def test_shipped_yaml_validates_against_schema() -> None:
    import yaml

    validator = _validator()
    paths = list(builtin_flow_dir().rglob("*.yaml"))
    assert paths
    for path in paths:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert not list(validator.iter_errors(data)), path


def test_docs_examples_validate_against_schema() -> None:
    """Every ```yaml block in docs/ that sets flow config keys is a valid layer."""
    import yaml

    validator = _validator()
    top = set(module.TOP.fields)
    checked = []
    for path in sorted((ROOT / "docs").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for block in re.findall(r"^```yaml\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
            try:
                data = yaml.safe_load(block)
            except yaml.YAMLError:  # several documents: frontmatter examples
                continue
            if not isinstance(data, dict) or not top & set(data):
                continue  # a workflow, a pre-commit config, frontmatter: not a flow layer
            errors = [error.message for error in validator.iter_errors(data)]
            assert not errors, (path.name, block, errors)
            checked.append(path.name)
    assert {"configuration.md", "agents.md", "spec-plans.md"} <= set(checked)


def test_shipped_chain_example_loads_and_fits_the_schema(tmp_path: Path) -> None:
    import yaml

    lines = _shipped("base.yaml").splitlines()
    start = lines.index("# chain:")
    example = [lines[start][2:]]
    example += [ln[2:] for ln in lines[start + 1 :] if ln.startswith("#   ")][:8]
    assert len(example) == 9
    text = MINIMAL + AGENTS
    text += "\n".join(example) + "\n"
    validator = _validator()
    assert not list(validator.iter_errors(yaml.safe_load(text)))
    write(tmp_path, ".flow/base.yaml", text)
    assert load_flow_config(tmp_path).chain == ChainConfig(target="main")
    for bad in ("merge: rebase", "branch_pattern: agents/{plan_name}", "max_iterations: 0"):
        data = yaml.safe_load(MINIMAL + "chain:\n  " + bad + "\n")
        assert list(validator.iter_errors(data)), bad
