"""Flow configuration: `.flow/` YAML layers, merged, validated and resolved into frozen values.

Layers, later wins: ``.flow/base.yaml`` -> ``.flow/<flow_type>/base.yaml`` ->
``.flow/<flow_type>/<variant>.yaml``. Scalars are replaced, mappings merge key by key, lists are
concatenated (duplicates dropped); ``agents.<name>.command`` is one argv and is replaced whole.
Each file is validated on its own, so every error names the file, the line and the key path:
``.flow/base.yaml:12: agents.builder.model: expected a string, got a list``.

``@path`` values (completion templates, system prompts, write templates) are read from files
relative to the project root; ``@@text`` is the literal ``@text``. When no config file is read at
all, the shipped ``templates/flow/`` files stand in for the project's `.flow/` (the same files
``gitflow-agents init`` copies), so every command works before ``init``.

The modules, in the order a file goes through them: ``files`` (where files come from),
``yaml_nodes`` (YAML with line numbers), ``shape`` (the keys a file may hold, declared once),
``check`` (a layer against the shape; merging layers), ``build`` (the values), ``load`` (all of
it for one project); ``values`` holds the frozen results and ``json_schema`` turns the shape
into the editor schema ``init`` writes.
"""

from __future__ import annotations

from gitflow_agents.base.lazy import lazy_names
from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:
    from gitflow_agents.config.files import (
        builtin_flow_dir,
        find_project_root,
        project_root,
        repository_project,
        scaffold_files,
    )
    from gitflow_agents.config.json_schema import flow_config_schema, schema_text
    from gitflow_agents.config.load import config_problems, load_flow_config
    from gitflow_agents.config.values import (
        TEMPLATE_VARIABLES,
        AgentConfig,
        ChainConfig,
        CompletionWorkflow,
        FlowConfig,
        SharedFile,
        branch_pattern_problem,
    )

# Each name's module is imported when the name is first asked for: the builtin reviewer reads
# a layer of review settings through ``review.py`` alone, and importing this package must not
# load the whole shape, the plan parser and the adapters for it (issue 20).
_LAZY = {
    "builtin_flow_dir": "files",
    "find_project_root": "files",
    "project_root": "files",
    "repository_project": "files",
    "scaffold_files": "files",
    "flow_config_schema": "json_schema",
    "schema_text": "json_schema",
    "config_problems": "load",
    "load_flow_config": "load",
    "TEMPLATE_VARIABLES": "values",
    "AgentConfig": "values",
    "ChainConfig": "values",
    "CompletionWorkflow": "values",
    "FlowConfig": "values",
    "SharedFile": "values",
    "branch_pattern_problem": "values",
}


__getattr__ = lazy_names(__name__, _LAZY)


__all__ = [
    "TEMPLATE_VARIABLES",
    "AgentConfig",
    "ChainConfig",
    "CompletionWorkflow",
    "FlowConfig",
    "SharedFile",
    "branch_pattern_problem",
    "builtin_flow_dir",
    "config_problems",
    "find_project_root",
    "flow_config_schema",
    "load_flow_config",
    "project_root",
    "repository_project",
    "scaffold_files",
    "schema_text",
]
