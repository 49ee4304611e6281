"""Choosing the session's provider: a script file, or the configured `[provider] active` profile."""

import os
from pathlib import Path

from scv import __version__
from scv.config.load import Config, ProviderProfile
from scv.core.errors import ConfigError
from scv.providers.base import Provider
from scv.providers.http import StreamingClient

# Each wire API is imported when its profile is chosen: `scv exec` imports only the one it speaks.
ANTHROPIC_VERSION = "2023-06-01"


def build_provider(config: Config, *, script: Path | None = None, model: str | None = None) -> Provider:
    if script is not None:
        from scv.providers.script import ScriptProvider
        return ScriptProvider(script)
    name = config.provider.active
    if not name:
        raise ConfigError("no model provider is configured; set [provider] active = \"NAME\" and a [providers.NAME] "
                          "table in $SCV_HOME/config.toml, or run offline with --script FILE (see examples/)")
    profile = config.providers.get(name)
    if profile is None:
        known = ", ".join(sorted(config.providers)) or "none"
        raise ConfigError(f"provider.active is {name!r}, but there is no [providers.{name}] table (configured: "
                          f"{known}); add it or change provider.active")
    chosen = model or profile.model
    if not chosen:
        raise ConfigError(f"providers.{name} names no model; set providers.{name}.model or pass --model")
    base = profile.endpoint.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ConfigError(f"providers.{name}.base_url {base!r} is not an http(s) URL; set it to the endpoint's "
                          "address" + (" (https://api.anthropic.com by default)" if profile.kind == "anthropic"
                                       else " ending in /v1"))
    headers = {"User-Agent": f"scv/{__version__}", "Accept": "text/event-stream"}
    if profile.kind == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
    headers.update(profile.headers)
    key = _key(name, profile)
    if key is not None:
        # Anthropic reads its own header and no bearer token.
        headers.update({"x-api-key": key} if profile.kind == "anthropic" else {"Authorization": f"Bearer {key}"})
    if profile.kind == "anthropic":
        from scv.providers.anthropic import AnthropicProvider, messages_url
        client = StreamingClient(name, chosen, messages_url(base), headers, profile.timeout)
        return AnthropicProvider(name, chosen, client, profile.max_tokens)
    if profile.wire_api == "chat":
        from scv.providers.openai_chat import ChatProvider
        client = StreamingClient(name, chosen, f"{base}/chat/completions", headers, profile.timeout)
        return ChatProvider(name, chosen, client)
    from scv.providers.openai_responses import ResponsesProvider
    client = StreamingClient(name, chosen, f"{base}/responses", headers, profile.timeout)
    return ResponsesProvider(name, chosen, client)


def _key(name: str, profile: ProviderProfile) -> str | None:
    if profile.api_key_env:
        key = os.environ.get(profile.api_key_env)
        if not key:
            raise ConfigError(f"providers.{name}.api_key_env names {profile.api_key_env}, which is not set; "
                              f"export {profile.api_key_env} or set providers.{name}.api_key")
        return key
    return profile.api_key or None
