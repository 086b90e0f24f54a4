"""Chat completions from the model provider: whole, or streamed as the provider writes them.

``complete`` answers a ``Completion`` (its text, model and finish reason); ``streamed`` asks
for the same with ``"stream": true``, giving each piece of text to a callback, and retried as
every call until the first piece has come; ``chat_stream`` yields the pieces, tried once
(text already shown cannot be taken back). Both read server-sent ``chat.completion.chunk``
events (``_pieces``), or a whole JSON answer from a provider that does not stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import requests

from engines.base import ProviderUnavailable, note_model
from engines.models._http import Answer, Bearer, parse_retry_after, read_limited, session
from engines.models.breaker import breaker_for
from engines.models.provider_transport import (
    _RETRYABLE_STATUSES,
    MAX_RESPONSE_BYTES,
    Transport,
    _reported_retry_after,
)


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


class ChatCalls(Transport):
    """The chat operations of ``engines.models.providers.Provider``."""

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
