"""The HTTP under the provider adapter: the pooled session, bearer auth, bounded reads, errors.

The adapter (``engines.models.providers``: ``provider_transport`` and the operations) sends
every call through ``session()`` and reads answers with ``read_limited``; an attempt that
another may fix raises ``Retryable``.
"""

from __future__ import annotations

import email.utils
import http.cookiejar
import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from requests.auth import AuthBase

from engines.base import ProviderUnavailable

# How much of a provider's error message is passed on.
MESSAGE_LIMIT = 500


class Bearer(AuthBase):
    """Bearer authentication; passed as ``auth`` so that requests never swaps in ~/.netrc
    credentials and drops the header on a redirect to another host."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self.token}"
        return request

    def __repr__(self) -> str:
        return "Bearer(<redacted>)"


POOL_MAXSIZE = 256

_session_lock = threading.Lock()
_session: tuple[int, requests.Session] | None = None


def session() -> requests.Session:
    """One pooled session per process (connections must not cross a fork), shared by threads.

    Cookies are refused so that the session holds no per-caller state.
    """
    global _session
    with _session_lock:
        if _session is None or _session[0] != os.getpid():
            pooled = requests.Session()
            pooled.cookies.set_policy(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
            # Connections kept per provider host: an I/O worker holds hundreds of calls at
            # once (blueprints/cli/worker.py); with 16, every call past the 16th opened a
            # connection of its own and threw it away after.
            adapter = HTTPAdapter(pool_connections=4, pool_maxsize=POOL_MAXSIZE)
            pooled.mount("http://", adapter)
            pooled.mount("https://", adapter)
            _session = (os.getpid(), pooled)
        return _session[1]


class Retryable(Exception):
    """One attempt failed in a way that another attempt may fix."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def read_limited(response: requests.Response, limit: int, what: str) -> bytes:
    """The response's body; ProviderUnavailable (naming it ``what``) past ``limit`` bytes."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ProviderUnavailable(f"The model provider sent a {what} over {limit:,} bytes.")
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_content(64 * 1024):
        size += len(chunk)
        if size > limit:
            raise ProviderUnavailable(f"The model provider sent a {what} over {limit:,} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)


def error_message(body: bytes) -> str:
    """The provider's own error message from an OpenAI-shaped error body, or its text."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:MESSAGE_LIMIT]
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            error = error.get("message") or error.get("detail") or error
        if isinstance(error, str):
            return error[:MESSAGE_LIMIT]
        detail = data.get("detail")
        if isinstance(detail, str):
            return detail[:MESSAGE_LIMIT]
    return text[:MESSAGE_LIMIT]


@dataclass(frozen=True)
class Answer:
    """A 2xx answer: its content type (without parameters) and its body."""

    content_type: str
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            raise ProviderUnavailable(
                "The model provider answered with something that is not JSON."
            ) from None
