"""Every test of a module that imports `parser` (autouse) runs twice: with libyaml and with PyYAML's own parser."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["libyaml", "pure"], autouse=True)
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: with libyaml (when installed) and with PyYAML's own parser (what a
    machine without libyaml uses): the same answers either way."""
    if request.param == "pure":
        import yaml

        from gitflow_agents.base import safe_yaml

        resolvers = {
            first: [(tag, regex) for tag, regex in entries if not tag.endswith(":timestamp")]
            for first, entries in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }
        pure = type("PureLoader", (yaml.SafeLoader,), {"yaml_implicit_resolvers": resolvers})
        monkeypatch.setattr(safe_yaml, "_loader_class", lambda: pure)
    return str(request.param)
