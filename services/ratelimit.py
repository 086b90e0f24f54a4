"""Per-minute limits per key, evaluated by flask-limiter's strategy on its configured storage.

A limited request should cost one Redis round trip (DESIGN.md section 14). flask-limiter's
fixed window reads the window's count and expiry with two more calls after the hit, and
whoami needs the day's usage too; ``WindowRedisStorage`` answers all of that from the one
script that spends the hit, and keeps the answers for the rest of the request.
"""

import time
from dataclasses import dataclass
from functools import cache

from flask import g, has_app_context
from limits import RateLimitItemPerMinute
from limits.storage import RedisStorage

from extensions import limiter

# KEYS[1]: the window counter; KEYS[2] (optional): a hash whose calls/credits to read too.
_HIT = """
local current = redis.call('INCRBY', KEYS[1], ARGV[2])
if tonumber(current) == tonumber(ARGV[2]) then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
local answer = {current, redis.call('TTL', KEYS[1])}
if KEYS[2] then
  local extra = redis.call('HMGET', KEYS[2], 'calls', 'credits')
  answer[3] = extra[1] or '0'
  answer[4] = extra[2] or '0'
end
return answer
"""


class WindowRedisStorage(RedisStorage):
    """Redis storage whose ``incr`` also answers the window's expiry (and, when asked, one
    usage hash), remembered for the rest of the request."""

    STORAGE_SCHEME = ["svc+redis", "svc+rediss"]

    def __init__(self, uri: str, **options):
        super().__init__(uri.replace("svc+", "", 1), **options)

    def initialize_storage(self, uri: str) -> None:
        super().initialize_storage(uri)
        self._hit = self.get_connection().register_script(_HIT)

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        key = self.prefixed_key(key)
        also_read = g.get("_limit_also_read") if has_app_context() else None
        answer = self._hit([key, also_read] if also_read else [key], [expiry, amount])
        current, ttl = int(answer[0]), max(int(answer[1]), 0)
        if has_app_context():
            g.setdefault("_limit_windows", {})[key] = (current, ttl + time.time())
            if also_read:
                g._limit_extra = (int(answer[2]), int(answer[3]))
        return current

    def _seen(self, key: str):
        return g.get("_limit_windows", {}).get(key) if has_app_context() else None

    def get(self, key: str) -> int:
        seen = self._seen(self.prefixed_key(key))
        return seen[0] if seen else super().get(key)

    def get_expiry(self, key: str) -> float:
        seen = self._seen(self.prefixed_key(key))
        return seen[1] if seen else super().get_expiry(key)


@dataclass(frozen=True)
class MinuteWindow:
    allowed: bool
    limit: int
    remaining: int
    reset_at: float
    # (calls, credits) of the hash asked for, when the storage could read it in passing.
    extra: tuple[int, int] | None


@cache
def _per_minute(limit: int) -> RateLimitItemPerMinute:
    return RateLimitItemPerMinute(limit)


def spend_minute(identifier: str, per_minute: int, also_read: str | None = None) -> MinuteWindow:
    """Spend one request of ``identifier``'s per-minute limit; optionally read a usage hash
    in the same round trip (``extra`` is None when the storage cannot)."""
    item = _per_minute(per_minute)
    g._limit_also_read = also_read
    try:
        allowed = limiter.limiter.hit(item, "api-key", identifier)
        reset_at, remaining = limiter.limiter.get_window_stats(item, "api-key", identifier)
    finally:
        g._limit_also_read = None
    return MinuteWindow(allowed, per_minute, remaining, reset_at, g.pop("_limit_extra", None))


def storage_uri(redis_url: str | None) -> str:
    return f"svc+{redis_url}" if redis_url else "memory://"
