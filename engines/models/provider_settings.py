"""Where the model provider's settings come from, and how the provider is named in messages.

The settings are read at every call from the source ``read_settings_from`` installed (the
app's, which ``create_app`` installs; by default ``config.settings``, the defaults overlaid
with the environment). ``MODEL_SETTINGS`` names the setting of each operation's model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import config

# Which setting names the model for each operation (said in errors about a missing model).
MODEL_SETTINGS = {
    "chat": "AI_MODEL_CHAT",
    "images": "AI_MODEL_IMAGE",
    "transcribe": "AI_MODEL_TRANSCRIBE",
    "speech": "AI_MODEL_SPEECH",
    "embed": "AI_MODEL_EMBED",
}


# Where the settings are read from, at every call: a callable answering them as a mapping.
SettingsSource = Callable[[], Mapping[str, Any]]
_source: SettingsSource = config.settings


def read_settings_from(source: SettingsSource | None) -> None:
    """Read the settings from ``source`` from now on (the app installs its own in
    ``create_app``); None goes back to the default, the defaults overlaid with the
    environment (``config.settings``)."""
    global _source
    _source = config.settings if source is None else source


def settings() -> Mapping[str, Any]:
    """The settings, from the source ``read_settings_from`` installed."""
    return _source()


def configured() -> bool:
    """True when ``AI_BASE_URL`` is set."""
    return bool(settings().get("AI_BASE_URL"))


def redact_url(url: str) -> str:
    """``url`` without user name, password, query or fragment: safe to log and to show."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
