"""Idempotency keys for POSTs that start runs (docs/architecture/request-pipeline.md).

Per API key and ``Idempotency-Key`` value, for 24 hours: the first request's answer is kept
and replayed to the same request again; the same key on a different request is refused, and
so is a repeat while the first is still in flight. Entries live in Redis, or in this
process's memory in the embedded default.

A claim in flight is a lease of ``LEASE_SECONDS``, renewed every third of that by its
process while the request runs (``_Leases``): a request whose process died leaves its key
busy (409) for at most that long, then a retry runs afresh. Only the answer is kept 24 hours.
"""

import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass

from flask import current_app

from services.redis import redis_client

log = logging.getLogger(__name__)

TTL_SECONDS = 24 * 3600
LEASE_SECONDS = 10

# Extend each busy entry (a claim in flight) by the lease; an answer stored meanwhile is left
# with its own expiry.
_RENEW = """
for _, key in ipairs(KEYS) do
  local value = redis.call('GET', key)
  if value and cjson.decode(value)['state'] == 'busy' then
    redis.call('EXPIRE', key, ARGV[1])
  end
end
return 1
"""


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
        self._renew = client.register_script(_RENEW)

    def add(self, key: str, value: dict, ttl: int) -> dict | None:
        """Store ``value`` for ``ttl`` seconds unless the key exists; returns the existing
        value, if any."""
        if self.redis.set(key, json.dumps(value), nx=True, ex=ttl):
            return None
        existing = self.redis.get(key)
        return json.loads(existing) if existing else None

    def put(self, key: str, value: dict) -> None:
        self.redis.set(key, json.dumps(value), ex=TTL_SECONDS)

    def delete(self, key: str) -> None:
        self.redis.delete(key)

    def renew(self, keys: list[str], ttl: int) -> None:
        self._renew(keys=keys, args=[ttl])


class _MemoryEntries:
    def __init__(self):
        self._entries: dict[str, tuple[float, dict]] = {}
        self._lock = threading.Lock()

    def add(self, key: str, value: dict, ttl: int) -> dict | None:
        with self._lock:
            found = self._entries.get(key)
            if found and found[0] > time.monotonic():
                return found[1]
            self._entries[key] = (time.monotonic() + ttl, value)
            return None

    def put(self, key: str, value: dict) -> None:
        with self._lock:
            self._entries[key] = (time.monotonic() + TTL_SECONDS, value)

    def delete(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def renew(self, keys: list[str], ttl: int) -> None:
        with self._lock:
            for key in keys:
                found = self._entries.get(key)
                if found and found[1]["state"] == "busy":
                    self._entries[key] = (time.monotonic() + ttl, found[1])


class _Leases:
    """The claims this process holds in flight, renewed every third of ``LEASE_SECONDS`` by
    one daemon thread (a greenlet under the web command's gevent worker) while their
    requests run."""

    def __init__(self, entries):
        self.entries = entries
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def hold(self, key: str) -> None:
        with self._lock:
            self._held[key] = self._held.get(key, 0) + 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._renew, daemon=True)
                self._thread.start()

    def drop(self, key: str) -> None:
        with self._lock:
            left = self._held.get(key, 0) - 1
            if left > 0:
                self._held[key] = left
            else:
                self._held.pop(key, None)

    def _renew(self) -> None:
        while True:
            time.sleep(LEASE_SECONDS / 3)
            with self._lock:
                keys = list(self._held)
            if keys:
                try:
                    self.entries.renew(keys, LEASE_SECONDS)
                except Exception:  # Redis away: the next round tries again
                    log.warning("could not renew %d idempotency leases", len(keys))


def _entries():
    return current_app.extensions["idempotency"]


def _leases() -> _Leases:
    return current_app.extensions["idempotency_leases"]


def _key(api_key_id: str, idempotency_key: str) -> str:
    digest = hashlib.sha256(idempotency_key.encode()).hexdigest()
    return f"idem:{api_key_id}:{digest}"


def claim(api_key_id: str, idempotency_key: str, request_fingerprint: str) -> Slot:
    """Claim the key for this request (a lease, renewed until ``complete``), or say why not."""
    key = _key(api_key_id, idempotency_key)
    existing = _entries().add(
        key, {"fingerprint": request_fingerprint, "state": "busy"}, LEASE_SECONDS
    )
    if existing is None:
        _leases().hold(key)
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
    _leases().drop(key)
    if response is None:
        _entries().delete(key)
    else:
        _entries().put(key, {"fingerprint": request_fingerprint, "state": "done", **response})


def init_app(app) -> None:
    client = redis_client(app)
    entries = _RedisEntries(client) if client is not None else _MemoryEntries()
    app.extensions["idempotency"] = entries
    app.extensions["idempotency_leases"] = _Leases(entries)
