"""Idempotency keys for POSTs that start runs (DESIGN.md section 7).

Per API key and ``Idempotency-Key`` value, for 24 hours: the first request's answer is kept
and replayed to the same request again; the same key on a different request is refused, and
so is a repeat while the first is still in flight. Entries live in Redis, or in this
process's memory in the embedded default.
"""

import hashlib
import json
import threading
import time
from dataclasses import dataclass

from flask import current_app

from services.redis import redis_client

TTL_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Slot:
    """What ``claim`` found: ``new`` (go ahead), ``replay``, ``conflict`` or ``in_flight``."""

    state: str
    stored: dict | None = None


def fingerprint(method: str, path: str, body: bytes) -> str:
    return hashlib.sha256(b"\n".join([method.encode(), path.encode(), body])).hexdigest()


class _RedisEntries:
    def __init__(self, client):
        self.redis = client

    def add(self, key: str, value: dict) -> dict | None:
        """Store ``value`` unless the key exists; returns the existing value, if any."""
        if self.redis.set(key, json.dumps(value), nx=True, ex=TTL_SECONDS):
            return None
        existing = self.redis.get(key)
        return json.loads(existing) if existing else None

    def put(self, key: str, value: dict) -> None:
        self.redis.set(key, json.dumps(value), ex=TTL_SECONDS)

    def delete(self, key: str) -> None:
        self.redis.delete(key)


class _MemoryEntries:
    def __init__(self):
        self._entries: dict[str, tuple[float, dict]] = {}
        self._lock = threading.Lock()

    def add(self, key: str, value: dict) -> dict | None:
        with self._lock:
            found = self._entries.get(key)
            if found and found[0] > time.monotonic():
                return found[1]
            self._entries[key] = (time.monotonic() + TTL_SECONDS, value)
            return None

    def put(self, key: str, value: dict) -> None:
        with self._lock:
            self._entries[key] = (time.monotonic() + TTL_SECONDS, value)

    def delete(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)


def _entries():
    return current_app.extensions["idempotency"]


def _key(api_key_id: str, idempotency_key: str) -> str:
    digest = hashlib.sha256(idempotency_key.encode()).hexdigest()
    return f"idem:{api_key_id}:{digest}"


def claim(api_key_id: str, idempotency_key: str, request_fingerprint: str) -> Slot:
    existing = _entries().add(
        _key(api_key_id, idempotency_key), {"fingerprint": request_fingerprint, "state": "busy"}
    )
    if existing is None:
        return Slot("new")
    if existing["fingerprint"] != request_fingerprint:
        return Slot("conflict")
    if existing["state"] == "busy":
        return Slot("in_flight")
    return Slot("replay", existing)


def complete(
    api_key_id: str, idempotency_key: str, request_fingerprint: str, response: dict | None
) -> None:
    """Keep the answer to replay, or (``response`` None) forget the key so a retry runs."""
    key = _key(api_key_id, idempotency_key)
    if response is None:
        _entries().delete(key)
    else:
        _entries().put(key, {"fingerprint": request_fingerprint, "state": "done", **response})


def init_app(app) -> None:
    client = redis_client(app)
    app.extensions["idempotency"] = (
        _RedisEntries(client) if client is not None else _MemoryEntries()
    )
