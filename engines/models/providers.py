"""The OpenAI-compatible provider adapter: chat, images, transcription, speech, embeddings.

One HTTP API covers OpenAI, Ollama, vLLM, LM Studio, LocalAI, OpenRouter and others. It is
configured by the settings (``settings()``: the app's, which ``create_app`` installs with
``read_settings_from``), read at call time: ``AI_BASE_URL`` (for example
``https://api.openai.com/v1`` or ``http://localhost:11434/v1``), ``AI_API_KEY`` (optional: local
servers need none), one model per capability (``AI_MODEL_CHAT``, ``AI_MODEL_IMAGE``,
``AI_MODEL_TRANSCRIBE``, ``AI_MODEL_SPEECH``, ``AI_MODEL_EMBED``) and ``AI_TIMEOUT_SECONDS``.

Every call has connect and read timeouts, is retried (at most ``MAX_ATTEMPTS`` attempts, with
exponential backoff and jitter) on connection errors, timeouts, 408, 429 and 5xx, honouring
``Retry-After`` up to ``MAX_RETRY_AFTER`` seconds (both in ``provider_transport``), and goes
through a circuit breaker per base URL (``engines.models.breaker``; the HTTP session and the
reading of answers are in ``engines.models._http``). Failures surface as the two engine
errors: ``EngineError`` when the provider refuses the input (400, 413, 422: its message is
passed on), ``ProviderUnavailable`` for everything else. The API key is never logged nor
put in a message, and prompts are never logged above DEBUG.

This module is the adapter's face: ``Provider`` and its operations as module functions on
the provider the settings name. Its parts, one concern each: ``provider_settings`` (where
the settings come from), ``provider_transport`` (timeouts, retries, the breaker, errors),
``provider_chat`` (chat completions, whole and streamed) and ``provider_capabilities``
(images, transcription, speech, embeddings).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from engines.blob import Blob
from engines.models.provider_capabilities import CapabilityCalls
from engines.models.provider_chat import ChatCalls, Completion
from engines.models.provider_settings import (
    MODEL_SETTINGS,
    SettingsSource,
    configured,
    read_settings_from,
    redact_url,
    settings,
)

__all__ = [
    "MODEL_SETTINGS",
    "Completion",
    "Provider",
    "SettingsSource",
    "chat",
    "chat_stream",
    "complete",
    "configured",
    "embed",
    "generate_images",
    "read_settings_from",
    "redact_url",
    "settings",
    "speak",
    "streamed",
    "transcribe",
]


class Provider(ChatCalls, CapabilityCalls):
    """An OpenAI-compatible API at ``base_url``. Cheap to build: build one per call."""


# --- the configured provider, as module functions ----------------------------------------


def chat(
    messages: Sequence[Mapping[str, Any]],
    *,
    temperature: float,
    max_tokens: int,
    response_format: Mapping[str, Any] | None = None,
) -> str:
    """``Provider.chat`` on the provider the app's settings name."""
    return Provider.from_settings().chat(
        messages, temperature=temperature, max_tokens=max_tokens, response_format=response_format
    )


def complete(
    messages: Sequence[Mapping[str, Any]],
    *,
    temperature: float,
    max_tokens: int,
    response_format: Mapping[str, Any] | None = None,
) -> Completion:
    """``Provider.complete`` on the provider the app's settings name."""
    return Provider.from_settings().complete(
        messages, temperature=temperature, max_tokens=max_tokens, response_format=response_format
    )


def streamed(
    messages: Sequence[Mapping[str, Any]],
    *,
    temperature: float,
    max_tokens: int,
    on_text: Callable[[str], None],
) -> Completion:
    """``Provider.streamed`` on the provider the app's settings name."""
    return Provider.from_settings().streamed(
        messages, temperature=temperature, max_tokens=max_tokens, on_text=on_text
    )


def chat_stream(
    messages: Sequence[Mapping[str, Any]], *, temperature: float, max_tokens: int
) -> Iterator[str]:
    """``Provider.chat_stream`` on the provider the app's settings name."""
    return Provider.from_settings().chat_stream(
        messages, temperature=temperature, max_tokens=max_tokens
    )


def generate_images(
    prompt: str,
    *,
    n: int,
    size: str,
    style: str | None = None,
    negative_prompt: str | None = None,
) -> list[Blob]:
    """``Provider.generate_images`` on the provider the app's settings name."""
    return Provider.from_settings().generate_images(
        prompt, n=n, size=size, style=style, negative_prompt=negative_prompt
    )


def transcribe(audio: Blob, *, language: str | None = None) -> dict[str, Any]:
    """``Provider.transcribe`` on the provider the app's settings name."""
    return Provider.from_settings().transcribe(audio, language=language)


def speak(text: str, *, voice: str, format: str, speed: float) -> Blob:
    """``Provider.speak`` on the provider the app's settings name."""
    return Provider.from_settings().speak(text, voice=voice, format=format, speed=speed)


def embed(texts: Sequence[str]) -> list[list[float]]:
    """``Provider.embed`` on the provider the app's settings name."""
    return Provider.from_settings().embed(texts)
