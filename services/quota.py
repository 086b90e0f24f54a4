"""Daily quota per key: reserved atomically before a run, released if the run fails.

Counters live in Redis (one hash per key and UTC day, fields ``calls`` and ``credits``) or,
in the embedded default without Redis, in this process's memory. A reservation either
fits entirely or changes nothing, so concurrent callers can never over-admit.

A counter that is missing (the day's first call, or Redis lost its data: restarted without
persistence, flushed, replaced by a fresh one; the embedded process restarted) is rebuilt
from what the database knows (``usage.day_totals``) before anything is admitted: a missing
``calls`` field makes the reservation answer "unknown" and change nothing, the counter is
seeded once (the first seeder wins) and the reservation made again. A release or a credit
correction never creates the field, so a counter is never rebuilt from a partial figure.
"""

import threading
from dataclasses import dataclass
from datetime import datetime

from flask import current_app

from services import clock
from services.redis import redis_client

# One reservation, as a Lua function: the quota script below and the per-minute limit's
# script (services/ratelimit.py, which reserves in the same round trip) both call it.
RESERVE_FUNCTION = """
local function reserve(key, n, limit, ttl, credits, inflight, member, journal, payload)
  local calls = redis.call('HGET', key, 'calls')
  if not calls then return {-1, 0} end
  calls = tonumber(calls)
  if calls + n > limit then return {0, calls} end
  calls = redis.call('HINCRBY', key, 'calls', n)
  if credits ~= 0 then redis.call('HINCRBY', key, 'credits', credits) end
  redis.call('EXPIRE', key, ttl)
  if payload and payload ~= '' then
    return {1, calls, redis.call('XADD', journal, '*', 'r', payload)}
  end
  if member and member ~= '' then
    redis.call('ZADD', inflight, redis.call('TIME')[1], member)
  end
  return {1, calls}
end
"""

_RESERVE = RESERVE_FUNCTION + (
    "return reserve(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]),"
    " KEYS[2], ARGV[5], KEYS[3], ARGV[6])"
)

_RELEASE = """
if ARGV[3] ~= '' and redis.call('ZREM', KEYS[2], ARGV[3]) == 0 then return 0 end
if redis.call('HEXISTS', KEYS[1], 'calls') == 0 then return 0 end
local calls = redis.call('HINCRBY', KEYS[1], 'calls', -tonumber(ARGV[1]))
if calls < 0 then redis.call('HSET', KEYS[1], 'calls', 0) end
if tonumber(ARGV[2]) ~= 0 then
  local credits = redis.call('HINCRBY', KEYS[1], 'credits', -tonumber(ARGV[2]))
  if credits < 0 then redis.call('HSET', KEYS[1], 'credits', 0) end
end
return calls
"""

# A missing counter's figures from the database; the first seeder wins.
_SEED = """
if redis.call('HSETNX', KEYS[1], 'calls', ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'credits', ARGV[2])
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
return 1
"""
# What the reservation answers for a missing counter.
UNKNOWN = -1

# Inline runs between their reservation and their journal entry (services/recorder.py), as
# members "<run id> <counter> <calls> <credits>" scored by the reservation's time. A run whose
# process died in between (answered nothing) is left here: ``release_abandoned`` gives its
# reservation back.
INFLIGHT = "runs:inflight"
# Queued runs (async tool runs, workflow runs) between their reservation and the commit of
# their rows, as INFLIGHT's members are: ``settle`` takes a member out once its run is
# committed, ``release`` gives it back when the request fails first, and a worker's sweep
# gives back those whose process died in between (``abandoned_submissions``; a member whose
# run was committed after all is only taken out).
SUBMITTING = "runs:submitting"
# The run journal (services/recorder.py): a reservation made for a run that has already run
# adds the run's rows to it in the same step (``Request.journal``), and needs no in-flight
# member.
JOURNAL = "runs:journal"

_RELEASE_ABANDONED = """
local cutoff = tonumber(redis.call('TIME')[1]) - tonumber(ARGV[1])
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', cutoff, 'LIMIT', 0, 500)
for _, member in ipairs(members) do
  redis.call('ZREM', KEYS[1], member)
  local key, n, credits = string.match(member, '^%S+ (%S+) (%S+) (%S+)$')
  if key and redis.call('HEXISTS', key, 'calls') == 1 then
    if redis.call('HINCRBY', key, 'calls', -tonumber(n)) < 0 then
      redis.call('HSET', key, 'calls', 0)
    end
    if tonumber(credits) ~= 0 and redis.call('HINCRBY', key, 'credits', -tonumber(credits)) < 0
    then
      redis.call('HSET', key, 'credits', 0)
    end
  end
end
return #members
"""

# Keep a day's counters a little past midnight so late releases still find them.
_GRACE_SECONDS = 3600


@dataclass(frozen=True)
class Reservation:
    granted: bool
    used: int
    limit: int
    day: str
    # The journal entry of the run's rows, when they were journaled with the reservation.
    entry: str | None = None

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


@dataclass(frozen=True)
class Request:
    """A reservation to make: ``n`` calls (and ``credits``) of ``key_id``'s day at ``moment``."""

    key_id: str
    limit: int
    n: int
    moment: datetime
    credits: int = 0
    # The inline run this reserves for: the reservation is kept in ``INFLIGHT`` until the
    # run is journaled or released.
    run_id: str | None = None
    # The rows of a run that has already run, journaled with the reservation when it is
    # granted (``RunJournal.payload``); the reservation then keeps nothing in flight.
    journal: bytes | None = None
    # A queued run's submission (``run_id``): kept in ``SUBMITTING`` until it is settled.
    submitting: bool = False

    @property
    def inflight_key(self) -> str:
        return SUBMITTING if self.submitting else INFLIGHT

    @property
    def day(self) -> str:
        return clock.utc_day(self.moment)

    @property
    def hash_key(self) -> str:
        return usage_key(self.key_id, self.day)

    @property
    def ttl(self) -> int:
        return clock.seconds_to_midnight(self.moment) + _GRACE_SECONDS

    @property
    def member(self) -> str:
        """Its ``INFLIGHT`` member ('' when it is not an inline run's)."""
        if self.run_id is None or self.journal is not None:
            return ""
        return inflight_member(self.run_id, self.hash_key, self.n, self.credits)

    def answer(self, granted: bool, used: int, entry: bytes | None = None) -> Reservation:
        return Reservation(granted, used, self.limit, self.day, entry and entry.decode())


def inflight_member(run_id: str, hash_key: str, n: int, credits: int) -> str:
    return f"{run_id} {hash_key} {n} {credits}"


@dataclass(frozen=True)
class Usage:
    day: str
    calls: int
    credits: int


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def usage_key(key_id: str, day: str) -> str:
    """The Redis hash of one key's calls and credits on one UTC day."""
    return f"quota:{key_id}:{day}"


_key = usage_key


def _seed_figures(key_id: str, day: str) -> tuple[int, int]:
    from services.usage import day_totals  # services.usage reads the models

    return day_totals(key_id, day)


class RedisQuota:
    def __init__(self, redis_client):
        self.redis = redis_client
        self._reserve = redis_client.register_script(_RESERVE)
        self._release = redis_client.register_script(_RELEASE)
        self._seed = redis_client.register_script(_SEED)
        self._release_abandoned = redis_client.register_script(_RELEASE_ABANDONED)

    def reserve(
        self,
        key_id: str,
        limit: int,
        n: int,
        moment: datetime,
        credits: int = 0,
        run_id: str | None = None,
        journal: bytes | None = None,
        submitting: bool = False,
    ) -> Reservation:
        request = Request(key_id, limit, n, moment, credits, run_id, journal, submitting)
        keys = [request.hash_key, request.inflight_key, JOURNAL]
        args = [n, limit, request.ttl, credits, request.member, journal or ""]
        answer = self._reserve(keys=keys, args=args)
        if answer[0] == UNKNOWN:
            self.seed(key_id, moment)
            answer = self._reserve(keys=keys, args=args)
        entry = answer[2] if len(answer) > 2 else None
        return request.answer(answer[0] == 1, int(answer[1]), entry)

    def seed(self, key_id: str, moment: datetime) -> None:
        """Rebuild ``key_id``'s counter of ``moment``'s day from the database, unless
        another caller has meanwhile."""
        request = Request(key_id, 0, 0, moment)
        calls, credits = _seed_figures(key_id, request.day)
        self._seed(keys=[request.hash_key], args=[calls, credits, request.ttl])

    def release(
        self,
        key_id: str,
        n: int,
        day: str,
        credits: int = 0,
        run_id: str | None = None,
        submitting: bool = False,
    ) -> None:
        """Give a reservation back (an inline run's or a submission's, ``run_id``, at most
        once)."""
        key = _key(key_id, day)
        member = "" if run_id is None else inflight_member(run_id, key, n, credits)
        self._release(keys=[key, SUBMITTING if submitting else INFLIGHT], args=[n, credits, member])

    def settle(self, key_id: str, n: int, day: str, run_id: str) -> None:
        """A submission's run is committed: its reservation stands (nothing to give back)."""
        self.redis.zrem(SUBMITTING, inflight_member(run_id, _key(key_id, day), n, 0))

    def abandoned_submissions(self, older_than: float) -> list[tuple[str, str]]:
        """The submissions reserved more than ``older_than`` seconds ago and neither settled
        nor released, as (run id, member), at most 500."""
        now = self.redis.time()[0]
        members = self.redis.zrangebyscore(SUBMITTING, "-inf", now - older_than, 0, 500)
        return [(member.split(" ", 1)[0], member) for member in map(_text, members)]

    def release_member(self, member: str) -> None:
        """Give back the submission ``member`` (at most once), as ``release`` would."""
        _run_id, key, n, credits = member.split(" ")
        self._release(keys=[key, SUBMITTING], args=[int(n), int(credits), member])

    def forget_member(self, member: str) -> None:
        """Take ``member`` out of the submissions: its run was committed."""
        self.redis.zrem(SUBMITTING, member)

    def release_abandoned(self, older_than: float) -> int:
        """Give back the reservations of inline runs neither journaled nor released within
        ``older_than`` seconds (their process died mid-run); returns how many."""
        return int(self._release_abandoned(keys=[INFLIGHT], args=[int(older_than)]))

    def add_credits(self, key_id: str, credits: int, day: str) -> None:
        """Correct a reservation's credits (rare: only when the free-call guess was wrong)."""
        if credits:
            self.redis.hincrby(_key(key_id, day), "credits", credits)

    def usage(self, key_id: str, moment: datetime) -> Usage:
        day = clock.utc_day(moment)
        calls, credits = self.redis.hmget(_key(key_id, day), "calls", "credits")
        if calls is None:
            self.seed(key_id, moment)
            calls, credits = self.redis.hmget(_key(key_id, day), "calls", "credits")
        return Usage(day, int(calls or 0), int(credits or 0))


class MemoryQuota:
    """The same contract in one process, for the embedded default."""

    def __init__(self):
        self._counters: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def reserve(
        self,
        key_id: str,
        limit: int,
        n: int,
        moment: datetime,
        credits: int = 0,
        run_id: str | None = None,
        journal: bytes | None = None,
        submitting: bool = False,
    ) -> Reservation:
        # No reservation outlives this process, so none is tracked in flight (and there is
        # no journal: the embedded default writes a run's rows in its request).
        day = clock.utc_day(moment)
        self._seed_if_missing(key_id, day)
        with self._lock:
            counter = self._counters[_key(key_id, day)]
            if counter["calls"] + n > limit:
                return Reservation(False, counter["calls"], limit, day)
            counter["calls"] += n
            counter["credits"] += credits
            return Reservation(True, counter["calls"], limit, day)

    def release(
        self,
        key_id: str,
        n: int,
        day: str,
        credits: int = 0,
        run_id: str | None = None,
        submitting: bool = False,
    ) -> None:
        with self._lock:
            counter = self._counters.get(_key(key_id, day))
            if counter:
                counter["calls"] = max(0, counter["calls"] - n)
                counter["credits"] = max(0, counter["credits"] - credits)

    def release_abandoned(self, older_than: float) -> int:
        return 0

    def settle(self, key_id: str, n: int, day: str, run_id: str) -> None:
        pass  # nothing is kept in flight here

    def abandoned_submissions(self, older_than: float) -> list[tuple[str, str]]:
        return []

    def add_credits(self, key_id: str, credits: int, day: str) -> None:
        with self._lock:
            counter = self._counters.get(_key(key_id, day))
            if counter:
                counter["credits"] += credits

    def usage(self, key_id: str, moment: datetime) -> Usage:
        day = clock.utc_day(moment)
        self._seed_if_missing(key_id, day)
        counter = self._counters[_key(key_id, day)]
        return Usage(day, counter["calls"], counter["credits"])

    def _seed_if_missing(self, key_id: str, day: str) -> None:
        """A day's counter this process has not seen (a restart lost it) starts from the
        database's figures."""
        key = _key(key_id, day)
        if key in self._counters:
            return
        calls, credits = _seed_figures(key_id, day)
        with self._lock:
            self._counters.setdefault(key, {"calls": calls, "credits": credits})


def store() -> RedisQuota | MemoryQuota:
    return current_app.extensions["quota"]


def init_app(app) -> None:
    client = redis_client(app)
    app.extensions["quota"] = RedisQuota(client) if client is not None else MemoryQuota()
