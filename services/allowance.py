"""The site's web allowance: how many tool runs a visitor or an account may start in the
browser per UTC day (docs/architecture/quota-and-credits.md).

An anonymous visitor is counted three times and must be under every cap: by the id in its
signed visitor cookie and by its device (a salted hash of its address with its browser's
user agent and languages), each under the free plan's ``web_runs_per_day`` (5), so that
clearing cookies gives no more runs; and by its address alone (a salted hash; IPv6 by /64)
under ``WEB_ADDRESS_DAILY_CAP`` (20), so that neither new cookies nor a changed user agent
give more than that, while an office behind one address is not blocked at once. Hashes are
salted per day: yesterday's cannot be matched with today's. An account's members are counted
by account against its plan's ``web_runs_per_day`` (free 5, starter 50; none for pro and
above: unlimited, but still counted).

A run is reserved before it starts (``reserve``: every counter or none, atomically) and
given back if it fails or is canceled (``release``, ``release_run``), as the API's quota is.
The counters live in Redis (a dict in the embedded default) and expire after the day. Beside
them, the day's state key says whether they are complete: set once a day, "complete" when the
database held no web run of the day at that moment (a missing counter is then 0: no query),
"partial" when it did (Redis lost its data, or the process restarted, mid-day: a missing
counter is then counted again from the day's web runs, once). So a restart forgets nothing,
and a visitor's page costs one round trip to Redis and no query.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from flask import current_app
from sqlalchemy import func, select

from extensions import db
from models import Run
from services import clock
from services.plans import PlanInfo, get_plan
from services.redis import DirectConnections, redis_client

# Counters outlive their day by this much (a run reserved at 23:59:59 is released later).
_TTL_SECONDS = 2 * 86400
UNLIMITED = -1

# KEYS: the day's state, then the counters; ARGV: the ttl, then each counter's cap (-1: none).
# Returns {1, used...} when every counter was under its cap (each then counts one more),
# {0, i, used} when counter i is at its cap (nothing counted), {-1, i} when counter i does
# not exist in a partial day (count it from the database first: ``_seed``) and {-2} when the
# day has no state yet (``_state``). In a complete day a missing counter is 0.
_RESERVE = """
local state = redis.call('GET', KEYS[1])
if not state then return {-2} end
local values = {}
for i = 2, #KEYS do
  local value = redis.call('GET', KEYS[i])
  if not value then
    if state ~= 'complete' then return {-1, i - 1} end
    value = '0'
  end
  local cap = tonumber(ARGV[i])
  if cap >= 0 and tonumber(value) >= cap then return {0, i - 1, tonumber(value)} end
end
local used = {}
for i = 2, #KEYS do
  used[i - 1] = redis.call('INCR', KEYS[i])
  redis.call('EXPIRE', KEYS[i], ARGV[1])
end
return {1, unpack(used)}
"""
_RELEASE = """
for _, key in ipairs(KEYS) do
  local value = tonumber(redis.call('GET', key) or '0')
  if value > 0 then redis.call('DECR', key) end
end
return 1
"""


@dataclass(frozen=True)
class Visitor:
    """Who runs a tool on the site: an anonymous visitor (``account_id`` None) or a member
    of an account, with the address it comes from (a salted hash: ``address_hash``)."""

    id: str
    address: str
    device: str
    account_id: int | None = None
    plan: PlanInfo | None = None
    # The signed-in user running it for the account (runs.user_id).
    user_id: int | None = None


@dataclass(frozen=True)
class Allowance:
    """A visitor's runs of the day: ``limit`` and ``remaining`` None are unlimited.
    ``remaining`` may be below ``limit - used`` when the address's cap binds first."""

    limit: int | None
    used: int
    remaining: int | None
    resets_at: datetime


@dataclass(frozen=True)
class Ticket:
    """A reserved run: the counters it counted, to give back if the run does not succeed."""

    keys: tuple[str, ...]


class AllowanceExhausted(Exception):
    def __init__(self, allowance: Allowance, by_address: bool):
        super().__init__("the day's web runs are used up")
        self.allowance = allowance
        # The address's cap was reached (others on the same network ran tools), not the
        # visitor's or device's own.
        self.by_address = by_address


def address_hashes(address: str | None, browser: str, day: str) -> tuple[str, str]:
    """Salted hashes of ``address`` for ``day``, alone and with ``browser`` (its user agent
    and languages): the address's and the device's counters. An IPv6 address counts by its
    /64 network (one household or office gets a /64, and may change the rest at will)."""
    return _hashes(address, browser, day, str(current_app.config["SECRET_KEY"]))


# A visitor's every page asks for the same hashes (a tenth of a returning visit's time).
@lru_cache(maxsize=4096)
def _hashes(address: str | None, browser: str, day: str, secret: str) -> tuple[str, str]:
    try:
        parsed = ipaddress.ip_address(address or "")
    except ValueError:
        network = "unknown"
    else:
        if parsed.version == 6 and parsed.ipv4_mapped is not None:
            parsed = parsed.ipv4_mapped
        network = (
            str(ipaddress.ip_network(f"{parsed}/64", strict=False))
            if parsed.version == 6
            else str(parsed)
        )
    salt = _daily_salt(secret, day)
    address_hash = hmac.new(salt, network.encode(), hashlib.sha256).hexdigest()[:40]
    device = hmac.new(salt, f"{network}\n{browser}".encode(), hashlib.sha256).hexdigest()[:40]
    return address_hash, device


@lru_cache(maxsize=8)
def _daily_salt(secret: str, day: str) -> bytes:
    """The day's salt, from the secret key: yesterday's hashes cannot be matched with today's."""
    return hmac.new(secret.encode(), f"web-address:{day}".encode(), hashlib.sha256).digest()


def anonymous_limit() -> int:
    """Runs a day for a visitor without an account: the free plan's web runs."""
    return get_plan("free").web_runs_per_day or 0


def _counters(visitor: Visitor, day: str) -> list[tuple[str, int]]:
    """Each counter of ``visitor`` with its cap; the first is the visitor's own."""
    if visitor.account_id is not None:
        plan = visitor.plan
        cap = plan.web_runs_per_day if plan is not None else anonymous_limit()
        return [(f"web:{day}:account:{visitor.account_id}", UNLIMITED if cap is None else cap)]
    return [
        (f"web:{day}:visitor:{visitor.id}", anonymous_limit()),
        (f"web:{day}:device:{visitor.device}", anonymous_limit()),
        (f"web:{day}:address:{visitor.address}", current_app.config["WEB_ADDRESS_DAILY_CAP"]),
    ]


def current(visitor: Visitor, moment: datetime | None = None) -> Allowance:
    """The visitor's allowance now (what a tool page shows): one read of Redis."""
    moment = moment or clock.now()
    day = clock.utc_day(moment)
    counters = _counters(visitor, day)
    state, *values = store().get([_state_key(day), *(key for key, _ in counters)])
    if state is None:
        state = _state(day)
    for index, value in enumerate(values):
        if value is None:
            values[index] = 0 if state == COMPLETE else _seed(counters[index][0], day)
    own_cap = counters[0][1]
    left = [max(cap - value, 0) for (_, cap), value in zip(counters, values, strict=True)
            if cap != UNLIMITED]  # fmt: skip
    return Allowance(
        limit=None if own_cap == UNLIMITED else own_cap,
        used=values[0],
        remaining=min(left) if left else None,
        resets_at=datetime.fromisoformat(day).replace(tzinfo=UTC) + timedelta(days=1),
    )


def reserve(visitor: Visitor, moment: datetime | None = None) -> Ticket:
    """Count one run for ``visitor`` (AllowanceExhausted: nothing counted)."""
    moment = moment or clock.now()
    day = clock.utc_day(moment)
    counters = _counters(visitor, day)
    at_cap = reserve_counters(
        _state_key(day), counters, set_state=lambda: _state(day), seed=lambda key: _seed(key, day)
    )
    if at_cap is None:
        return Ticket(tuple(key for key, _ in counters))
    raise AllowanceExhausted(current(visitor, moment), by_address=at_cap == 3)


def reserve_counters(
    state_key: str,
    counters: list[tuple[str, int]],
    *,
    set_state: Callable[[], object],
    seed: Callable[[str], object],
) -> int | None:
    """Count one more on every counter of ``counters`` (key, cap) if each is under its cap,
    atomically: None; else the place (from 1) of the first at its cap, nothing counted.
    ``set_state()`` sets the day's ``state_key`` when it has none, ``seed(key)`` counts a
    missing counter of a partial day again from the database. (The web allowance's
    counters, and an agency widget's caps: services/embeds.py.)"""
    keys = [key for key, _ in counters]
    caps = [cap for _, cap in counters]
    for _attempt in range(len(keys) + 2):
        answer = store().reserve([state_key, *keys], caps)
        if answer[0] == 1:
            return None
        if answer[0] == 0:
            return answer[1]
        if answer[0] == -2:
            set_state()
        else:
            seed(keys[answer[1] - 1])
    raise RuntimeError("the counters could not be seeded")


def release(ticket: Ticket) -> None:
    """Give a reserved run back (it failed, was refused or canceled)."""
    store().release(list(ticket.keys))


def release_run(run: Run) -> None:
    """Give back the run of a web visitor that did not succeed (services/runs.py)."""
    day = clock.utc_day(clock.as_utc(run.created_at))
    if run.account_id is not None:
        keys = [f"web:{day}:account:{run.account_id}"]
    else:
        keys = [
            f"web:{day}:visitor:{run.visitor_id}",
            f"web:{day}:device:{run.web_device}",
            f"web:{day}:address:{run.web_address}",
        ]
    store().release(keys)


COMPLETE, PARTIAL = "complete", "partial"


def _state_key(day: str) -> str:
    return f"web:{day}:state"


def _state(day: str) -> str:
    """The day's state, set now if it has none: "complete" when the database holds no web
    run of the day (every counter to come starts in Redis), else "partial"."""
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    any_run = db.session.scalar(
        select(Run.id)
        .where(
            # Read from the partial index of web runs by address, not the whole table.
            Run.web_address.isnot(None),
            Run.source == "web",
            Run.created_at >= start,
            Run.created_at < start + timedelta(days=1),
        )
        .limit(1)
    )
    store().seed(_state_key(day), PARTIAL if any_run else COMPLETE, _TTL_SECONDS)
    return store().get([_state_key(day)])[0] or PARTIAL


def _seed(key: str, day: str) -> int:
    """Count a missing counter again from the database; returns its value."""
    value = _count(key, day)
    store().seed(key, value, _TTL_SECONDS)
    return value


def _count(key: str, day: str) -> int:
    """A counter's value as the database tells it: the day's web runs that did not fail
    (a workflow's steps started on the site are not tool runs of the allowance)."""
    _, _, kind, value = key.split(":", 3)
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    column = {
        "visitor": Run.visitor_id,
        "device": Run.web_device,
        "address": Run.web_address,
        "account": Run.account_id,
    }
    query = select(func.count()).where(
        column[kind] == (int(value) if kind == "account" else value),
        Run.source == "web",
        Run.workflow_run_id.is_(None),
        Run.created_at >= start,
        Run.created_at < start + timedelta(days=1),
        Run.status.notin_(("failed", "canceled")),
    )
    return db.session.scalar(query) or 0


def _value(raw: bytes | str | None) -> int | str | None:
    if raw is None:
        return None
    text = raw.decode() if isinstance(raw, bytes) else raw
    return int(text) if text.isdigit() else text


class RedisCounters:
    def __init__(self, client):
        self.client = client
        # Every page of the site reads the counters: one packed command, as the API's hot
        # path sends its own (services/redis.py).
        self._connections = DirectConnections(client)
        self._reserve = client.register_script(_RESERVE)
        self._release = client.register_script(_RELEASE)

    def get(self, keys: list[str]) -> list:
        """The keys' values: a counter as an int, the day's state as its text."""
        return [_value(value) for value in self._connections.execute("MGET", *keys)]

    def reserve(self, keys: list[str], caps: list[int]) -> list[int]:
        return [int(value) for value in self._reserve(keys, [_TTL_SECONDS, *caps])]

    def seed(self, key: str, value: int | str, ttl: int) -> None:
        self.client.set(key, value, nx=True, ex=ttl)

    def release(self, keys: list[str]) -> None:
        self._release(keys)


class MemoryCounters:
    """The same in one process (the embedded default): counters forgotten on restart are
    counted again from the database."""

    def __init__(self):
        self._values: dict[str, int] = {}
        self._lock = threading.Lock()

    def get(self, keys: list[str]) -> list:
        with self._lock:
            return [self._values.get(key) for key in keys]

    def reserve(self, keys: list[str], caps: list[int]) -> list[int]:
        """As the Redis script: ``keys`` are the day's state, then the counters."""
        with self._lock:
            state, counters = self._values.get(keys[0]), keys[1:]
            if state is None:
                return [-2]
            for index, key in enumerate(counters, start=1):
                if key not in self._values and state != COMPLETE:
                    return [-1, index]
                cap, value = caps[index - 1], self._values.get(key, 0)
                if cap >= 0 and value >= cap:
                    return [0, index, value]
            for key in counters:
                self._values[key] = self._values.get(key, 0) + 1
            return [1, *(self._values[key] for key in counters)]

    def seed(self, key: str, value: int | str, ttl: int) -> None:
        with self._lock:
            if key not in self._values:
                self._forget_old_days(key.split(":")[1])
                self._values[key] = value

    def _forget_old_days(self, day: str) -> None:
        """Drop the counters of days before yesterday (called with the lock held)."""
        yesterday = (datetime.fromisoformat(day) - timedelta(days=1)).date().isoformat()
        for key in [key for key in self._values if key.split(":")[1] < yesterday]:
            del self._values[key]

    def release(self, keys: list[str]) -> None:
        with self._lock:
            for key in keys:
                if self._values.get(key, 0) > 0:
                    self._values[key] -= 1


def store() -> RedisCounters | MemoryCounters:
    return current_app.extensions["web_allowance"]


def init_app(app) -> None:
    client = redis_client(app)
    app.extensions["web_allowance"] = (
        RedisCounters(client) if client is not None else MemoryCounters()
    )
