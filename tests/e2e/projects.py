"""Each agent CLI's test project: the adapter, the stand-in's address and credentials in the
environment the CLI reads, the model and the adapter options (one factory per CLI, by name in
``PROJECTS``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from .conftest import Project, make_project
from .model_standin import Standin


def aider_project(tmp_path: Path, standin: Standin) -> Project:
    standin.tools_required = False  # every request is part of the conversation
    return make_project(
        tmp_path,
        "aider",
        {"OPENAI_API_BASE": f"{standin.base_url}/v1", "OPENAI_API_KEY": "sk-standin"},
        model="openai/standin-model",
        options={"edit_format": "whole"},
    )


def auggie_project(tmp_path: Path, standin: Standin) -> Project:
    session = {"accessToken": "standin-token", "tenantURL": f"{standin.base_url}/", "scopes": []}
    return make_project(
        tmp_path,
        "auggie",
        {"AUGMENT_SESSION_AUTH": json.dumps(session)},
        options={"max_turns": 10},
    )


def claude_project(tmp_path: Path, standin: Standin) -> Project:
    return make_project(
        tmp_path,
        "claude",
        {
            "ANTHROPIC_BASE_URL": standin.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-standin",
            # Without this a refused connection is retried for about 3 minutes.
            "CLAUDE_CODE_MAX_RETRIES": "1",
        },
        model="claude-sonnet-4-5",
        options={"max_turns": 10},
    )


def codex_project(tmp_path: Path, standin: Standin) -> Project:
    return make_project(
        tmp_path,
        "codex",
        {"STANDIN_API_KEY": "sk-standin"},
        model="gpt-5-codex",
        options={
            # Codex 0.169 ignores OPENAI_BASE_URL: a custom provider is the way to point it.
            "provider": {
                "base_url": f"{standin.base_url}/v1",
                "env_key": "STANDIN_API_KEY",
                "request_max_retries": 1,
                "stream_max_retries": 1,
            },
        },
    )


def gemini_project(tmp_path: Path, standin: Standin) -> Project:
    return make_project(
        tmp_path,
        "gemini",
        {
            "GOOGLE_GEMINI_BASE_URL": standin.base_url,
            "GEMINI_API_KEY": "standin-key",
        },
        model="gemini-2.5-flash",
    )


def opencode_project(tmp_path: Path, standin: Standin) -> Project:
    return make_project(
        tmp_path,
        "opencode",
        {"STANDIN_API_KEY": "sk-standin"},
        model="standin/standin-model",
        options={
            "allow_env": ["STANDIN_API_KEY"],
            "config": {
                "provider": {
                    "standin": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Stand-in",
                        "options": {
                            "baseURL": f"{standin.base_url}/v1",
                            "apiKey": "{env:STANDIN_API_KEY}",
                        },
                        "models": {"standin-model": {"name": "Stand-in model"}},
                    }
                }
            },
        },
    )


PROJECTS: dict[str, Callable[[Path, Standin], Project]] = {
    "aider": aider_project,
    "auggie": auggie_project,
    "claude": claude_project,
    "codex": codex_project,
    "gemini": gemini_project,
    "opencode": opencode_project,
}
