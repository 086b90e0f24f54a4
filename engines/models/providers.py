"""The OpenAI-compatible provider adapter: chat, images, transcription, speech, embeddings.

One HTTP API covers OpenAI, Ollama, vLLM, LM Studio, LocalAI, OpenRouter and others. It is
configured by the settings (``settings()``: the app's, which ``create_app`` installs with
``read_settings_from``), read at call time: ``AI_BASE_URL`` (for example
``https://api.openai.com/v1`` or ``http://localhost:11434/v1``), ``AI_API_KEY`` (optional: local
servers need none), one model per capability (``AI_MODEL_CHAT``, ``AI_MODEL_IMAGE``,
``AI_MODEL_TRANSCRIBE``, ``AI_MODEL_SPEECH``, ``AI_MODEL_EMBED``) and ``AI_TIMEOUT_SECONDS``.

Every call has connect and read timeouts, is retried (at most ``MAX_ATTEMPTS`` attempts, with
exponential backoff and jitter) on connection errors, timeouts, 408, 429 and 5xx, honouring
``Retry-After`` up to ``MAX_RETRY_AFTER`` seconds, and goes through a circuit breaker per base
URL (``engines.models.breaker``; the HTTP session and the reading of answers are in
``engines.models._http``). Failures surface as the two engine errors: ``EngineError`` when
the provider refuses the input (400, 413, 422: its message is passed on),
``ProviderUnavailable`` for everything else. The API key is never logged nor put in a
message, and prompts are never logged above DEBUG.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

import config
from engines.base import EngineError, ProviderUnavailable, note_model
from engines.blob import Blob
from engines.models._http import (
    Answer,
    Bearer,
    Retryable,
    error_message,
    parse_retry_after,
    read_limited,
    session,
)
from engines.models.breaker import breaker_for

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
# Backoff before retry n (1-based) is drawn from [d/2, d] with d = BACKOFF_BASE * 2**(n-1).
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0
# A Retry-After up to this is waited for; a longer one ends the call at once and is passed on
# to the caller (the API's 503 carries it), since waiting would only hold a worker.
MAX_RETRY_AFTER = 10.0
# Retry-After passed on to callers is kept within this (a misbehaving provider may say a day).
MAX_REPORTED_RETRY_AFTER = 3600
CONNECT_TIMEOUT_CAP = 10.0
# JSON answers (embeddings of many texts, base64 images) and downloaded files.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
MAX_DOWNLOAD_BYTES = 25 * 1024 * 1024
_RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_INPUT_STATUSES = frozenset({400, 413, 422})

# Which setting names the model for each operation (said in errors about a missing model).
MODEL_SETTINGS = {
    "chat": "AI_MODEL_CHAT",
    "images": "AI_MODEL_IMAGE",
    "transcribe": "AI_MODEL_TRANSCRIBE",
    "speech": "AI_MODEL_SPEECH",
    "embed": "AI_MODEL_EMBED",
}

_AUDIO_EXTENSIONS = {
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "audio/webm": "webm",
    "audio/flac": "flac",
    "audio/x-flac": "flac",
    "audio/mp4": "m4a",
    "audio/m4a": "m4a",
    "audio/x-m4a": "m4a",
    "audio/aac": "aac",
    "video/mp4": "mp4",
    "video/webm": "webm",
}

_SPEECH_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}

# Patched by tests: the retry loop sleeps through this.
_sleep = time.sleep


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


@dataclass(frozen=True)
class Completion:
    """A chat answer: its text, the model that wrote it, why it ended (``finish_reason``:
    "stop", "length" at the token limit, "loop" for the embedded model stopped in a loop;
    None when the provider does not say) and whether the embedded model wrote it."""

    text: str
    model: str
    finish_reason: str | None = None
    embedded: bool = False

    @property
    def truncated(self) -> bool:
        """It ended at the token limit or in a loop: what was written is cut short."""
        return self.finish_reason in ("length", "loop")


class Provider:
    """An OpenAI-compatible API at ``base_url``. Cheap to build: build one per call."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        models: Mapping[str, str] | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key or None
        self.models = {**{op: "" for op in MODEL_SETTINGS}, **(models or {})}
        self.timeout = float(timeout)
        self.where = redact_url(self.base_url)

    @classmethod
    def from_settings(cls, config: Mapping[str, Any] | None = None) -> Provider:
        """The provider the settings describe; ProviderUnavailable when AI_BASE_URL is unset."""
        config = settings() if config is None else config
        base_url = config.get("AI_BASE_URL")
        if not base_url:
            raise ProviderUnavailable(
                "No model provider is configured: set AI_BASE_URL to an OpenAI-compatible API "
                "(and AI_API_KEY if it needs one)."
            )
        return cls(
            base_url,
            api_key=config.get("AI_API_KEY"),
            models={op: config.get(setting) or "" for op, setting in MODEL_SETTINGS.items()},
            timeout=config.get("AI_TIMEOUT_SECONDS") or 60.0,
        )

    def __repr__(self) -> str:
        return f"<Provider {self.where}>"

    # --- operations ----------------------------------------------------------------------

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        temperature: float,
        max_tokens: int,
        response_format: Mapping[str, Any] | None = None,
    ) -> str:
        """POST /chat/completions; returns the first choice's text ("" when it has none)."""
        return self.complete(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            response_format=response_format,
        ).text

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        temperature: float,
        max_tokens: int,
        response_format: Mapping[str, Any] | None = None,
    ) -> Completion:
        """POST /chat/completions; the first choice's text ("" when it has none), the model
        the answer names (else the configured one) and its finish reason."""
        body = self._chat_body(messages, temperature, max_tokens)
        if response_format is not None:
            body["response_format"] = dict(response_format)
        data = self._post("chat", "/chat/completions", json_body=body).json()
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ProviderUnavailable("The model provider's chat answer has no choices.") from None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # content parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        model = data.get("model") if isinstance(data, dict) else None
        model = model if isinstance(model, str) and model else self.models["chat"]
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        note_model(model)
        return Completion(
            content if isinstance(content, str) else "",
            model,
            reason if isinstance(reason, str) else None,
        )

    def _chat_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        temperature: float,
        max_tokens: int,
        **extra: Any,
    ) -> dict[str, Any]:
        return {
            "model": self.models["chat"],
            "messages": list(messages),
            "temperature": temperature,
            "max_tokens": max_tokens,
            **extra,
        }

    def streamed(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        temperature: float,
        max_tokens: int,
        on_text: Callable[[str], None],
    ) -> Completion:
        """``complete``'s answer, asked for with ``"stream": true``: each piece of its text
        is given to ``on_text`` as the provider writes it. Retried as every call until the
        first piece has come; an answer that breaks off after it fails (its text was
        shown)."""
        body = self._chat_body(messages, temperature, max_tokens, stream=True)
        pieces: list[str] = []

        def read(response: requests.Response, content_type: str) -> Answer:
            try:
                for piece in _pieces(response, content_type):
                    pieces.append(piece)
                    on_text(piece)
            except requests.RequestException as error:
                if not pieces:
                    raise  # another attempt may answer
                raise ProviderUnavailable(
                    f"The model provider's answer broke off ({type(error).__name__})."
                ) from None
            return Answer(content_type, "".join(pieces).encode())

        answer = self._post("chat", "/chat/completions", json_body=body, read=read)
        model = self.models["chat"]
        note_model(model)
        return Completion(answer.body.decode(), model, "stop")

    def chat_stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        temperature: float,
        max_tokens: int,
    ) -> Iterator[str]:
        """POST /chat/completions with ``"stream": true``; yields the text as it arrives.

        Through the breaker as every call, but tried once: text already shown cannot be
        taken back. A failure before the first piece raises as ``chat`` does (so the caller
        can fall back); one later ends the stream with ProviderUnavailable. A provider that
        answers the whole completion as JSON instead is read as one piece.
        """
        breaker = breaker_for(self.base_url)
        if not breaker.allow():
            raise ProviderUnavailable(
                f"The model provider at {self.where} is failing; calls are paused for a while.",
                retry_after=breaker.retry_after(),
            )
        body = self._chat_body(messages, temperature, max_tokens, stream=True)
        auth = Bearer(self._api_key) if self._api_key else None
        try:
            response = session().post(
                self.base_url + "/chat/completions",
                json=body,
                auth=auth,
                timeout=self._timeouts(),
                stream=True,
                allow_redirects=False,
            )
        except requests.RequestException as error:
            breaker.failed()
            raise ProviderUnavailable(
                f"The model provider at {self.where} cannot be reached ({type(error).__name__})."
            ) from None
        with response:
            status = response.status_code
            if not 200 <= status < 300:
                answer = read_limited(response, MAX_RESPONSE_BYTES, "answer")
                if status in _RETRYABLE_STATUSES:
                    breaker.failed()
                    raise ProviderUnavailable(
                        f"The model provider at {self.where} answered HTTP {status}.",
                        retry_after=_reported_retry_after(
                            parse_retry_after(response.headers.get("Retry-After"))
                        ),
                    )
                breaker.succeeded()
                raise self._refusal("chat", "/chat/completions", status, answer)
            breaker.succeeded()
            content_type = response.headers.get("Content-Type", "").split(";")[0].strip()
            try:
                yield from _pieces(response, content_type)
            except requests.RequestException as error:
                raise ProviderUnavailable(
                    f"The model provider's answer broke off ({type(error).__name__})."
                ) from None

    def generate_images(
        self,
        prompt: str,
        *,
        n: int,
        size: str,
        style: str | None = None,
        negative_prompt: str | None = None,
    ) -> list[Blob]:
        """POST /images/generations; returns ``n`` images (base64 answers or downloaded URLs).

        The style and the negative prompt are written into the prompt: providers disagree on
        (or lack) fields for them, and a free-form style such as "watercolor" is only
        understood in the prompt anyway.
        """
        text = prompt.strip()
        if style:
            text += f"\n\nStyle: {style.strip()}."
        if negative_prompt:
            text += f"\n\nAvoid: {negative_prompt.strip()}."
        body = {"model": self.models["images"], "prompt": text, "n": n, "size": size}
        data = self._post("images", "/images/generations", json_body=body).json()
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or not items:
            raise ProviderUnavailable("The model provider's image answer holds no image.")
        images = []
        for index, item in enumerate(items, start=1):
            if isinstance(item, dict) and isinstance(item.get("b64_json"), str):
                try:
                    raw = base64.b64decode(item["b64_json"], validate=True)
                except (binascii.Error, ValueError):
                    raise ProviderUnavailable(
                        "The model provider sent an image that is not valid base64."
                    ) from None
                content_type = _image_type(raw, None)
            elif isinstance(item, dict) and isinstance(item.get("url"), str):
                raw, declared = self._download(item["url"])
                content_type = _image_type(raw, declared)
            else:
                raise ProviderUnavailable("The model provider's image answer holds no image.")
            if not raw:
                raise ProviderUnavailable("The model provider sent an empty image.")
            extension = content_type.split("/")[-1].replace("jpeg", "jpg")
            images.append(Blob(raw, content_type, f"image-{index}.{extension}"))
        return images

    def transcribe(self, audio: Blob, *, language: str | None = None) -> dict[str, Any]:
        """POST /audio/transcriptions (multipart, verbose_json).

        Returns ``{"text", "language", "duration", "segments"}``: ``language`` is what the
        provider reports (OpenAI gives a name such as "english") or the one asked for, or None;
        ``duration`` in seconds or None; ``segments`` a list of ``{"start", "end", "text"}``,
        empty when the provider gives none.
        """
        # Whisper servers tell the format by the file name's extension.
        content_type = audio.content_type.split(";")[0].strip().lower()
        extension = _AUDIO_EXTENSIONS.get(content_type, "bin")
        form = {"model": self.models["transcribe"], "response_format": "verbose_json"}
        if language:
            form["language"] = language
        files = {"file": (audio.filename or f"audio.{extension}", audio.data, audio.content_type)}
        data = self._post("transcribe", "/audio/transcriptions", form=form, files=files).json()
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise ProviderUnavailable("The model provider's transcription holds no text.")
        segments = []
        for segment in data.get("segments") or []:
            if isinstance(segment, dict) and isinstance(segment.get("text"), str):
                segments.append(
                    {
                        "start": float(segment.get("start") or 0.0),
                        "end": float(segment.get("end") or 0.0),
                        "text": segment["text"].strip(),
                    }
                )
        duration = data.get("duration")
        return {
            "text": data["text"].strip(),
            "language": data.get("language") or language or None,
            "duration": float(duration) if isinstance(duration, int | float) else None,
            "segments": segments,
        }

    def speak(self, text: str, *, voice: str, format: str, speed: float) -> Blob:
        """POST /audio/speech; returns the audio in ``format`` (mp3, opus, aac, flac, wav, pcm)."""
        body = {
            "model": self.models["speech"],
            "input": text,
            "voice": voice,
            "response_format": format,
            "speed": speed,
        }
        answer = self._post("speech", "/audio/speech", json_body=body, limit=MAX_DOWNLOAD_BYTES)
        if not answer.body:
            raise ProviderUnavailable("The model provider sent empty audio.")
        declared = answer.content_type
        if not declared.startswith("audio/"):
            declared = _SPEECH_TYPES.get(format, "application/octet-stream")
        return Blob(answer.body, declared, f"speech.{format}")

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """POST /embeddings; one vector per text, in order."""
        if not texts:
            return []
        body = {"model": self.models["embed"], "input": list(texts)}
        data = self._post("embed", "/embeddings", json_body=body).json()
        items = data.get("data") if isinstance(data, dict) else None
        try:
            ordered = sorted(items, key=lambda item: item.get("index", 0))
            vectors = [[float(x) for x in item["embedding"]] for item in ordered]
        except (AttributeError, KeyError, TypeError, ValueError):
            raise ProviderUnavailable(
                "The model provider's embeddings answer is malformed."
            ) from None
        if len(vectors) != len(texts):
            raise ProviderUnavailable(
                f"The model provider sent {len(vectors)} embeddings for {len(texts)} texts."
            )
        return vectors

    # --- transport -----------------------------------------------------------------------

    def _timeouts(self) -> tuple[float, float]:
        return (min(CONNECT_TIMEOUT_CAP, self.timeout), self.timeout)

    def _post(
        self,
        operation: str,
        path: str,
        *,
        json_body: Mapping[str, Any] | None = None,
        form: Mapping[str, str] | None = None,
        files: Mapping[str, Any] | None = None,
        limit: int = MAX_RESPONSE_BYTES,
        read: Callable[[requests.Response, str], Answer] | None = None,
    ) -> Answer:
        """POST with retries through the breaker; the answer of the first 2xx (``read``
        reads a 2xx response instead of reading its body whole: see ``streamed``)."""
        breaker = breaker_for(self.base_url)
        last = "no attempt was made"
        retry_after: float | None = None
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if not breaker.allow():
                raise ProviderUnavailable(
                    f"The model provider at {self.where} is failing; calls are paused for a "
                    f"while (last problem: {last}).",
                    retry_after=breaker.retry_after(),
                )
            started = time.perf_counter()
            try:
                answer = self._attempt(operation, path, json_body, form, files, limit, read)
            except Retryable as failure:
                breaker.failed()
                last, retry_after = failure.reason, failure.retry_after
                log.warning(
                    "Model provider %s%s: %s (attempt %d of %d).",
                    self.where, path, failure.reason, attempt, MAX_ATTEMPTS,
                )  # fmt: skip
            except EngineError as refusal:
                breaker.succeeded()  # a refusal still shows that the provider is up
                log.info("Model provider %s%s: %s", self.where, path, refusal.message)
                raise
            except ProviderUnavailable as refusal:
                breaker.succeeded()
                log.warning("Model provider %s%s: %s", self.where, path, refusal.message)
                raise
            except BaseException:
                breaker.abandon()
                raise
            else:
                breaker.succeeded()
                log.info(
                    "Model provider %s%s answered in %.0f ms (%d bytes).",
                    self.where, path, (time.perf_counter() - started) * 1000, len(answer.body),
                )  # fmt: skip
                if operation != "chat":  # a chat answer names its model: complete() notes it
                    note_model(self.models[operation])
                return answer
            if attempt == MAX_ATTEMPTS:
                break
            if retry_after is not None and retry_after > MAX_RETRY_AFTER:
                break  # Waiting that long would hold the worker; the caller retries later.
            delay = retry_after if retry_after is not None else _backoff(attempt)
            _sleep(delay)
        raise ProviderUnavailable(
            f"The model provider at {self.where} did not answer {path} "
            f"after {attempt} attempt{'s' if attempt > 1 else ''} (last problem: {last}).",
            retry_after=_reported_retry_after(retry_after),
        )

    def _attempt(
        self,
        operation: str,
        path: str,
        json_body: Mapping[str, Any] | None,
        form: Mapping[str, str] | None,
        files: Mapping[str, Any] | None,
        limit: int,
        read: Callable[[requests.Response, str], Answer] | None = None,
    ) -> Answer:
        auth = Bearer(self._api_key) if self._api_key else None
        try:
            with session().post(
                self.base_url + path,
                json=json_body,
                data=form,
                files=files,
                auth=auth,
                timeout=self._timeouts(),
                stream=True,
                allow_redirects=False,
            ) as response:
                status = response.status_code
                content_type = response.headers.get("Content-Type", "").split(";")[0].strip()
                if read is not None and 200 <= status < 300:
                    return read(response, content_type)
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                body = read_limited(response, limit, "answer")
        except requests.Timeout:
            raise Retryable(f"no answer within {self.timeout:g} s") from None
        except requests.ConnectionError as error:
            raise Retryable(f"cannot connect ({type(error).__name__})") from None
        except requests.RequestException as error:
            raise ProviderUnavailable(
                f"The model provider at {self.where} cannot be called ({type(error).__name__}): "
                "check AI_BASE_URL."
            ) from None
        if 200 <= status < 300:
            return Answer(content_type, body)
        if status in _RETRYABLE_STATUSES:
            raise Retryable(f"HTTP {status}", retry_after)
        raise self._refusal(operation, path, status, body)

    def _refusal(self, operation: str, path: str, status: int, body: bytes) -> Exception:
        """The error for a 4xx (other than 408 and 429) or an unexpected status."""
        if status in _INPUT_STATUSES:
            message = self._scrub(error_message(body)) or f"HTTP {status}"
            return EngineError(f"The model provider refused the request: {message}")
        if status in (401, 403):
            # The provider's message may quote part of the key: it is not passed on.
            return ProviderUnavailable(
                f"The model provider at {self.where} refused our credentials (HTTP {status}): "
                "check AI_API_KEY."
            )
        if status == 404:
            setting = MODEL_SETTINGS[operation]
            return ProviderUnavailable(
                f"The model provider at {self.where} answered 404 to {path} for model "
                f"{self.models[operation]!r}: set {setting} to a model it serves, and check "
                "that AI_BASE_URL includes the API's path prefix (such as /v1)."
            )
        if 300 <= status < 400:
            return ProviderUnavailable(
                f"The model provider at {self.where} redirects {path} (HTTP {status}): set "
                "AI_BASE_URL to the API's own address."
            )
        return ProviderUnavailable(
            f"The model provider at {self.where} answered HTTP {status} to {path}."
        )

    def _scrub(self, text: str) -> str:
        if self._api_key and self._api_key in text:
            text = text.replace(self._api_key, "[redacted]")
        return text

    def _download(self, url: str) -> tuple[bytes, str | None]:
        """Fetch an image the provider answered with as a URL (never with our credentials)."""
        if urlsplit(url).scheme not in ("http", "https"):
            raise ProviderUnavailable("The model provider sent an image URL that is not HTTP.")
        try:
            with session().get(url, timeout=self._timeouts(), stream=True) as response:
                if response.status_code != 200:
                    raise ProviderUnavailable(
                        f"The model provider's image could not be downloaded "
                        f"(HTTP {response.status_code})."
                    )
                declared = response.headers.get("Content-Type", "").split(";")[0].strip()
                return read_limited(response, MAX_DOWNLOAD_BYTES, "image"), declared or None
        except requests.RequestException as error:
            raise ProviderUnavailable(
                f"The model provider's image could not be downloaded ({type(error).__name__})."
            ) from None


def _backoff(attempt: int) -> float:
    ceiling = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempt - 1))
    return random.uniform(ceiling / 2, ceiling)


def _reported_retry_after(retry_after: float | None) -> int:
    if retry_after is None:
        return 30
    return min(MAX_REPORTED_RETRY_AFTER, max(1, math.ceil(retry_after)))


_IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _image_type(data: bytes, declared: str | None) -> str:
    """The image's type from its first bytes (base64 answers declare none)."""
    for signature, content_type in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return content_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if declared and declared.startswith("image/"):
        return declared
    raise ProviderUnavailable("The model provider sent an image in an unknown format.")


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


def _pieces(response: requests.Response, content_type: str) -> Iterator[str]:
    """The text of a streamed chat answer as it arrives: its server-sent
    ``chat.completion.chunk`` events' content, or the whole message of a provider that
    answered JSON instead. Raises ProviderUnavailable for an answer it cannot read, and
    requests' errors for a connection that broke off."""
    try:
        if content_type == "application/json":
            data = json.loads(read_limited(response, MAX_RESPONSE_BYTES, "answer"))
            message = (data.get("choices") or [{}])[0].get("message") or {}
            if isinstance(message.get("content"), str):
                yield message["content"]
            return
        received = 0
        done = False
        # Read to the body's end, past "[DONE]": a connection left unread is closed rather
        # than kept for the next call.
        for line in response.iter_lines():
            received += len(line)
            if received > MAX_RESPONSE_BYTES:
                raise ProviderUnavailable("The model provider's answer is too long.")
            if done or not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                done = True
                continue
            chunk = json.loads(data)
            choices = chunk.get("choices") if isinstance(chunk, dict) else None
            delta = (choices[0] if choices else {}).get("delta") or {}
            if isinstance(delta.get("content"), str) and delta["content"]:
                yield delta["content"]
    except (ValueError, AttributeError, TypeError):
        raise ProviderUnavailable(
            "The model provider's streamed chat answer could not be read."
        ) from None


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
