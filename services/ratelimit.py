"""Per-minute limits per key, evaluated by flask-limiter on its configured storage.

flask-limiter reads a window's remaining count and reset time with two more Redis calls
after the hit. ``WindowRedisStorage`` makes the hit return both and remembers them for the
rest of the request, so a limited request costs one Redis round trip.
"""

import time

from flask import g, has_app_context
from limits.storage import RedisStorage

_INCR_WITH_TTL = """
local current = redis.call('INCRBY', KEYS[1], ARGV[2])
if tonumber(current) == tonumber(ARGV[2]) then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return {current, redis.call('TTL', KEYS[1])}
"""


class WindowRedisStorage(RedisStorage):
    """Redis storage whose ``incr`` also answers the window's count and expiry."""

    STORAGE_SCHEME = ["svc+redis", "svc+rediss"]

    def __init__(self, uri: str, **options):
        super().__init__(uri.replace("svc+", "", 1), **options)

    def initialize_storage(self, uri: str) -> None:
        super().initialize_storage(uri)
        self._incr_with_ttl = self.get_connection().register_script(_INCR_WITH_TTL)

    def _memo(self) -> dict | None:
        return g.setdefault("_limit_windows", {}) if has_app_context() else None

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        key = self.prefixed_key(key)
        current, ttl = self._incr_with_ttl([key], [expiry, amount])
        memo = self._memo()
        if memo is not None:
            memo[key] = (int(current), max(int(ttl), 0) + time.time())
        return int(current)

    def get(self, key: str) -> int:
        memo = self._memo()
        seen = memo.get(self.prefixed_key(key)) if memo is not None else None
        return seen[0] if seen else super().get(key)

    def get_expiry(self, key: str) -> float:
        memo = self._memo()
        seen = memo.get(self.prefixed_key(key)) if memo is not None else None
        return seen[1] if seen else super().get_expiry(key)


def storage_uri(redis_url: str | None) -> str:
    return f"svc+{redis_url}" if redis_url else "memory://"
