"""Which model provider a multi-provider CLI (aider, opencode) talks to, and its variables.

Such an agent gets the variables of exactly one provider: the provider of its configured model,
or, with no model configured, the first provider in the adapter's documented order whose key is
set (the one the CLI picks by itself). A model of a provider not listed here gets none: name its
variables with ``allow_env``. docs/security.md lists these tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple


class Provider(NamedTuple):
    """A provider's variables: ``keys`` (any one set means it is configured) and ``extra``
    (endpoints and the like, passed along with the keys)."""

    keys: tuple[str, ...]
    extra: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return self.keys + self.extra


ProviderTable = Mapping[str, Provider]

# Aider (litellm provider names: the prefix of "provider/model").
AIDER_PROVIDERS: ProviderTable = {
    "anthropic": Provider(("ANTHROPIC_API_KEY",)),
    "openai": Provider(("OPENAI_API_KEY",), ("OPENAI_API_BASE", "OPENAI_BASE_URL")),
    "gemini": Provider(("GEMINI_API_KEY",)),
    "deepseek": Provider(("DEEPSEEK_API_KEY",)),
    "openrouter": Provider(("OPENROUTER_API_KEY",)),
    "groq": Provider(("GROQ_API_KEY",)),
    "mistral": Provider(("MISTRAL_API_KEY",)),
    "xai": Provider(("XAI_API_KEY",)),
    "ollama": Provider(("OLLAMA_API_BASE",)),
    "azure": Provider(("AZURE_API_KEY",), ("AZURE_API_BASE", "AZURE_API_VERSION")),
}
# Aider's own choice without --model (aider/onboarding.py): the first of these keys that is set.
AIDER_DEFAULT_ORDER = ("anthropic", "deepseek", "openrouter", "openai", "gemini")
# Aider's model aliases (aider/models.py MODEL_ALIASES) and litellm's provider-less names.
_AIDER_ALIASES = {
    **dict.fromkeys(("sonnet", "haiku", "opus"), "anthropic"),
    **dict.fromkeys(("3", "4", "4o", "4-turbo", "35turbo", "35-turbo"), "openai"),
    **dict.fromkeys(("deepseek", "r1"), "deepseek"),
    **dict.fromkeys(("flash", "flash-lite", "gemini", "gemini-2.5-pro", "gemini-exp"), "gemini"),
    **dict.fromkeys(("quasar", "optimus"), "openrouter"),
    "grok3": "xai",
}
_AIDER_PREFIX_ALIASES = {"ollama_chat": "ollama"}
_BARE_NAMES = (
    ("claude", "anthropic"),
    ("gpt-", "openai"),
    ("chatgpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("gemini", "gemini"),
    ("deepseek", "deepseek"),
    ("grok", "xai"),
    ("mistral", "mistral"),
    ("codestral", "mistral"),
    ("devstral", "mistral"),
)

# opencode (models.dev provider ids: the prefix of "provider/model").
OPENCODE_PROVIDERS: ProviderTable = {
    "anthropic": Provider(("ANTHROPIC_API_KEY",)),
    "openai": Provider(("OPENAI_API_KEY",)),
    "google": Provider(("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY")),
    "openrouter": Provider(("OPENROUTER_API_KEY",)),
    "groq": Provider(("GROQ_API_KEY",)),
    "deepseek": Provider(("DEEPSEEK_API_KEY",)),
    "mistral": Provider(("MISTRAL_API_KEY",)),
    "xai": Provider(("XAI_API_KEY",)),
}
OPENCODE_DEFAULT_ORDER = tuple(OPENCODE_PROVIDERS)


def aider_provider(model: str) -> str | None:
    """The litellm provider of an aider model name (``anthropic/claude-…``, ``sonnet``,
    ``gpt-4o``); None when it cannot be told."""
    name = model.strip().lower()
    if "/" in name:
        prefix = name.split("/", 1)[0]
        prefix = _AIDER_PREFIX_ALIASES.get(prefix, prefix)
        return prefix if prefix in AIDER_PROVIDERS else None
    if name in _AIDER_ALIASES:
        return _AIDER_ALIASES[name]
    return next((provider for start, provider in _BARE_NAMES if name.startswith(start)), None)


def opencode_provider(model: str) -> str | None:
    """The provider id of an opencode ``provider/model``; None for one not listed here."""
    prefix = model.strip().split("/", 1)[0].lower() if "/" in model else ""
    return prefix if prefix in OPENCODE_PROVIDERS else None


def default_provider(
    table: ProviderTable, order: tuple[str, ...], env: Mapping[str, str]
) -> str | None:
    """The first provider of ``order`` with one of its keys set in ``env``."""
    return next((p for p in order if any(env.get(key) for key in table[p].keys)), None)


def provider_env(
    table: ProviderTable,
    order: tuple[str, ...],
    model: str | None,
    which: str | None,
    env: Mapping[str, str],
) -> tuple[str, ...]:
    """The variables to pass: those of ``which`` (the model's provider, None when unknown) when
    a model is configured, else those of the default provider."""
    provider = which if model else default_provider(table, order, env)
    return table[provider].names if provider else ()
