"""One call to the model provider: its timeouts, retries and circuit breaker, and the errors.

Every call has connect and read timeouts, is retried (at most ``MAX_ATTEMPTS`` attempts, with
exponential backoff and jitter) on connection errors, timeouts, 408, 429 and 5xx, honouring
``Retry-After`` up to ``MAX_RETRY_AFTER`` seconds, and goes through a circuit breaker per base
URL (``engines.models.breaker``; the HTTP session and the reading of answers are in
``engines.models._http``). A refusal of the input (400, 413, 422) is an ``EngineError``
carrying the provider's message (the API key scrubbed from it); anything else is
``ProviderUnavailable``. ``Transport`` is the base of ``engines.models.providers.Provider``,
whose operations (``provider_chat``, ``provider_capabilities``) post through ``_post``.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, Self

import requests

from engines.base import EngineError, ProviderUnavailable, note_model
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
from engines.models.provider_settings import MODEL_SETTINGS, redact_url, settings

# The adapter's one logger, named as before its modules were split (logging settings name it).
log = logging.getLogger("engines.models.providers")

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
# JSON answers (embeddings of many texts, base64 images); downloaded images and speech have
# provider_capabilities.MAX_DOWNLOAD_BYTES.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
_RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_INPUT_STATUSES = frozenset({400, 413, 422})

# Patched by tests: the retry loop sleeps through this.
_sleep = time.sleep


class Transport:
    """The provider at ``base_url``, as far as calling it goes: its address, key, models and
    timeout, and the POST every operation makes."""

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
    def from_settings(cls, config: Mapping[str, Any] | None = None) -> Self:
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


def _backoff(attempt: int) -> float:
    ceiling = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempt - 1))
    return random.uniform(ceiling / 2, ceiling)


def _reported_retry_after(retry_after: float | None) -> int:
    if retry_after is None:
        return 30
    return min(MAX_REPORTED_RETRY_AFTER, max(1, math.ceil(retry_after)))
