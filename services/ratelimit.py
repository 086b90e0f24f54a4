"""Per-minute limits per key, evaluated by flask-limiter's strategy on its configured storage.

A limited request should cost one Redis round trip (docs/architecture/request-pipeline.md).
flask-limiter's fixed window reads the window's count and expiry with two more calls after
the hit; whoami needs the day's usage too, and a run reserves the day's quota.
``WindowRedisStorage`` answers all of that from the one script that spends the hit (the
reservation is made only when the hit is within the limit), so the window's figures need no
more calls.
"""

import time
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache

import redis
from limits import RateLimitItemPerMinute
from limits.storage import RedisStorage

from extensions import limiter
from services import quota
from services.redis import DirectConnections

# KEYS[1]: the window counter; KEYS[2] (optional): a day's usage hash, to read ('read') or
# to reserve in ('reserve' n limit ttl credits minute_limit inflight_member journal_payload,
# KEYS[3] the in-flight set and KEYS[4] the run journal of services/quota.py) when the hit
# is allowed. A missing hash reads as calls -1, and a reservation in it answers -1
# (quota.UNKNOWN); a reservation that journaled a run answers its entry's id third.
_HIT = (
    quota.RESERVE_FUNCTION
    + """
local current = redis.call('INCRBY', KEYS[1], ARGV[2])
if tonumber(current) == tonumber(ARGV[2]) then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
local answer = {current, redis.call('TTL', KEYS[1])}
if ARGV[3] == 'read' then
  local extra = redis.call('HMGET', KEYS[2], 'calls', 'credits')
  answer[3] = extra[1] or '-1'
  answer[4] = extra[2] or '0'
elseif ARGV[3] == 'reserve' and tonumber(current) <= tonumber(ARGV[8]) then
  local reserved = reserve(KEYS[2], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6],
                           tonumber(ARGV[7]), KEYS[3], ARGV[9], KEYS[4], ARGV[10])
  answer[3] = reserved[1]
  answer[4] = reserved[2]
  answer[5] = reserved[3]
end
return answer
"""
)


class WindowRedisStorage(RedisStorage):
    """Redis storage whose ``incr`` also answers the window's expiry (and, when asked, a
    day's usage hash) to the ``spend_minute`` call it serves."""

    STORAGE_SCHEME = ["svc+redis", "svc+rediss"]

    def __init__(self, uri: str, **options):
        super().__init__(uri.replace("svc+", "", 1), **options)

    def initialize_storage(self, uri: str) -> None:
        super().initialize_storage(uri)
        self._script = self.get_connection().register_script(_HIT)
        self._connections = DirectConnections(self.get_connection())

    def _hit(self, keys: list[str], args: list) -> list:
        """The hit's script in one round trip, on this thread's own connection (every
        authenticated request makes this call)."""
        try:
            return self._connections.execute("EVALSHA", self._script.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:  # Redis restarted: the client loads it again
            return self._script(keys, args)

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        key = self.prefixed_key(key)
        exchange = _exchange.get()
        along = exchange.along if exchange is not None else None
        if along is None:
            answer = self._hit([key], [expiry, amount])
        else:
            keys = [key, along.hash_key, along.inflight_key, quota.JOURNAL]
            answer = self._hit(keys, [expiry, amount, *along.args])
        current = int(answer[0])
        if exchange is not None:
            exchange.window = (current, max(int(answer[1]), 0) + time.time())
            if len(answer) > 2:
                entry = answer[4] if len(answer) > 4 else None
                exchange.along_answer = (int(answer[2]), int(answer[3]), entry)
        return current


@dataclass(frozen=True)
class _Along:
    """What the hit's script does with a day's usage hash besides spending the hit."""

    hash_key: str
    args: tuple
    inflight_key: str = quota.INFLIGHT


@dataclass
class _Exchange:
    """What ``spend_minute`` hands the storage through flask-limiter's strategy, and what a
    ``WindowRedisStorage`` answers besides the count: the window's (count, reset time) and
    the answer of ``along``."""

    along: _Along | None
    window: tuple[int, float] | None = None
    along_answer: tuple[int, int, bytes | None] | None = None


_exchange: ContextVar[_Exchange | None] = ContextVar("limit_exchange", default=None)


@dataclass(frozen=True)
class MinuteWindow:
    allowed: bool
    limit: int
    remaining: int
    reset_at: float
    # The day's (calls, credits), when asked for and the storage could read them in passing.
    usage: tuple[int, int] | None = None
    # The quota reservation asked for, when the storage could make it in passing (never
    # when the hit was refused).
    reservation: quota.Reservation | None = None


@cache
def _per_minute(limit: int) -> RateLimitItemPerMinute:
    return RateLimitItemPerMinute(limit)


def spend_minute(
    identifier: str,
    per_minute: int,
    *,
    read_usage: str | None = None,
    reserve: quota.Request | None = None,
) -> MinuteWindow:
    """Spend one request of ``identifier``'s per-minute limit and, in the same round trip
    where the storage can: read the usage hash ``read_usage``, or make the reservation
    ``reserve`` if the hit is allowed. ``usage``/``reservation`` are None when it could not
    (the caller then reads or reserves on its own)."""
    item = _per_minute(per_minute)
    along = None
    if read_usage is not None:
        along = _Along(read_usage, ("read",))
    elif reserve is not None:
        args = ("reserve", reserve.n, reserve.limit, reserve.ttl, reserve.credits, per_minute,
                reserve.member, reserve.journal or "")  # fmt: skip
        along = _Along(reserve.hash_key, args, reserve.inflight_key)
    exchange = _Exchange(along)
    token = _exchange.set(exchange)
    try:
        allowed = limiter.limiter.hit(item, "api-key", identifier)
    finally:
        _exchange.reset(token)
    if exchange.window is not None:
        current, reset_at = exchange.window
        remaining = max(0, per_minute - current)
    else:  # a storage that answers the count alone (memory://, the embedded default)
        reset_at, remaining = limiter.limiter.get_window_stats(item, "api-key", identifier)
    usage = reservation = None
    answer = exchange.along_answer
    # A day's counter that is missing answers UNKNOWN: the caller then reads or reserves
    # on its own, which rebuilds the counter from the database first (services/quota.py).
    if answer is None or answer[0] == quota.UNKNOWN:
        pass
    elif read_usage is not None:
        usage = answer[:2]
    else:
        reservation = reserve.answer(answer[0] == 1, answer[1], answer[2])
    return MinuteWindow(allowed, per_minute, remaining, reset_at, usage, reservation)


def storage_uri(redis_url: str | None) -> str:
    return f"svc+{redis_url}" if redis_url else "memory://"
