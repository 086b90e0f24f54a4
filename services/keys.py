"""API keys: generation, hashing, lookup with a short per-process cache, revocation.

Only the SHA-256 hex digest of a raw key is ever stored or logged. The resolved key is
cached per process for ``KEY_CACHE_SECONDS`` so that the request hot path does no SQL;
revocation and plan changes therefore reach every process within that time.
"""

import base64
import hashlib
import re
import secrets
import string
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime

from flask import current_app
from sqlalchemy import bindparam, or_, select, update

from extensions import db
from models import Account, ApiKey, Plan
from services import clock
from services.plans import PlanInfo, get_plan

KEY_PREFIX = "svc_"
KEY_RANDOM_LENGTH = 40
_ALPHABET = string.ascii_letters + string.digits
MAX_ACTIVE_KEYS_PER_SEAT = 5
_CACHE_SIZE = 10_000
# last_used_at is written at most this often per key and process.
_LAST_USED_EVERY = 60.0


class KeyRefused(Exception):
    """A key operation was refused; the message is safe to show."""


@dataclass(frozen=True)
class KeyContext:
    """Everything the request pipeline needs about an authenticated key."""

    key_id: str
    key_hash: str
    name: str
    hint: str
    sandbox: bool
    created_at: datetime
    last_used_at: datetime | None
    account_id: int
    account_name: str
    free_calls_used: int
    plan: PlanInfo
    per_minute: int
    daily_quota: int


def generate_raw_key() -> str:
    return KEY_PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(KEY_RANDOM_LENGTH))


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def key_hint(raw: str) -> str:
    body = raw[len(KEY_PREFIX) :]
    return f"{KEY_PREFIX}{body[:4]}…{body[-4:]}"


_KEY_SHAPE = re.compile(rf"{KEY_PREFIX}[A-Za-z0-9]{{{KEY_RANDOM_LENGTH}}}")


def looks_like_key(raw: str) -> bool:
    return _KEY_SHAPE.fullmatch(raw) is not None


def new_webhook_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def create_key(account: Account, name: str, *, sandbox: bool = False) -> tuple[ApiKey, str]:
    """Add a new key to ``account``; returns the row and the raw key (shown once)."""
    active = db.session.scalar(
        select(db.func.count(ApiKey.id)).where(
            ApiKey.account_id == account.id, ApiKey.revoked_at.is_(None)
        )
    )
    allowed = MAX_ACTIVE_KEYS_PER_SEAT * account.plan.seats
    if active >= allowed:
        raise KeyRefused(
            f"This account already has {active} active keys, the most its plan allows "
            f"({MAX_ACTIVE_KEYS_PER_SEAT} per seat). Revoke one first."
        )
    raw = generate_raw_key()
    key = ApiKey(
        account_id=account.id,
        name=name,
        key_hash=hash_key(raw),
        hint=key_hint(raw),
        sandbox=sandbox,
        webhook_secret=new_webhook_secret(),
    )
    db.session.add(key)
    db.session.flush()
    return key, raw


def find_key(id_or_hint: str) -> ApiKey:
    """The one key whose id or display hint is ``id_or_hint``; raises KeyRefused otherwise."""
    value = id_or_hint.strip().replace("...", "…")
    keys = db.session.scalars(
        select(ApiKey).where(or_(ApiKey.id == value, ApiKey.hint == value))
    ).all()
    if not keys:
        raise KeyRefused(f"No key has the id or hint {id_or_hint!r}.")
    if len(keys) > 1:
        raise KeyRefused(f"{len(keys)} keys have the hint {id_or_hint!r}; use the key id.")
    return keys[0]


def revoke_key(key: ApiKey) -> None:
    if key.revoked_at is None:
        key.revoked_at = clock.now()
    forget(key.key_hash)


def regenerate_key(key: ApiKey) -> tuple[ApiKey, str]:
    """Revoke ``key`` and issue a new one with the same name, webhook and settings."""
    revoke_key(key)
    db.session.flush()
    new_key, raw = create_key(key.account, key.name, sandbox=key.sandbox)
    new_key.webhook_url = key.webhook_url
    new_key.webhook_secret = key.webhook_secret
    new_key.per_minute_override = key.per_minute_override
    new_key.daily_override = key.daily_override
    return new_key, raw


# --- the per-process cache -------------------------------------------------------------

_cache: OrderedDict[str, tuple[float, KeyContext | None]] = OrderedDict()
# Keys whose stale cache entry one caller is reloading right now.
_reloading: set[str] = set()
_last_used_written: dict[str, float] = {}
_lock = threading.Lock()


def forget(key_hash: str | None = None) -> None:
    """Drop one key (or all) from this process's cache."""
    with _lock:
        if key_hash is None:
            _cache.clear()
        else:
            _cache.pop(key_hash, None)


def resolve(raw: str) -> KeyContext | None:
    """The active key for a raw key value, or None (unknown, malformed or revoked).

    A cached answer is served for ``KEY_CACHE_SECONDS``. When it has gone stale, one caller
    reloads it while the others keep the stale answer, for at most as long again (so a
    revocation reaches every request within twice that); before, every request in flight
    when the entry expired loaded the key at once, and with a web worker's 32 greenlets a
    burst of loads overran the database pool, which opened and closed connections for them.
    """
    if not looks_like_key(raw):
        return None
    key_hash = hash_key(raw)
    config = current_app._get_current_object().config  # blueprints/api/pipeline.py says why
    ttl = config["KEY_CACHE_SECONDS"]
    now = time.monotonic()
    hit = _cache.get(key_hash)
    if hit is not None:
        age = now - hit[0]
        if age < ttl:
            return hit[1]
        if age < 2 * ttl:
            with _lock:
                reloaded_elsewhere = key_hash in _reloading
                _reloading.add(key_hash)
            if reloaded_elsewhere:
                return hit[1]
    try:
        context = _load(key_hash)
    finally:
        with _lock:
            _reloading.discard(key_hash)
    with _lock:
        _cache[key_hash] = (now, context)
        _cache.move_to_end(key_hash)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return context


# Built once: constructing this select cost more CPU than running it (each process reloads
# every cached key every KEY_CACHE_SECONDS).
_ACTIVE_KEY = (
    select(
        ApiKey.id,
        ApiKey.name,
        ApiKey.hint,
        ApiKey.sandbox,
        ApiKey.created_at,
        ApiKey.last_used_at,
        ApiKey.per_minute_override,
        ApiKey.daily_override,
        Account.id.label("account_id"),
        Account.name.label("account_name"),
        Account.free_calls_used,
        Plan.name.label("plan_name"),
    )
    .join(Account, Account.id == ApiKey.account_id)
    .join(Plan, Plan.name == Account.plan_name)
    .where(ApiKey.key_hash == bindparam("key_hash"), ApiKey.revoked_at.is_(None))
)


def _load(key_hash: str) -> KeyContext | None:
    row = db.session.execute(_ACTIVE_KEY, {"key_hash": key_hash}).first()
    db.session.rollback()  # end the read transaction; the hot path keeps none open
    if row is None:
        return None
    plan = get_plan(row.plan_name)
    return KeyContext(
        key_id=row.id,
        key_hash=key_hash,
        name=row.name,
        hint=row.hint,
        sandbox=row.sandbox,
        created_at=clock.as_utc(row.created_at),
        last_used_at=clock.as_utc(row.last_used_at),
        account_id=row.account_id,
        account_name=row.account_name,
        free_calls_used=row.free_calls_used,
        plan=plan,
        per_minute=row.per_minute_override or plan.per_minute,
        daily_quota=row.daily_override if row.daily_override is not None else plan.daily_quota,
    )


def touch(context: KeyContext) -> KeyContext:
    """Record that the key was used; writes at most once a minute per key and process.

    This small write commits on its own: it is bookkeeping, not part of the request's work,
    and must not wait for (or be rolled back with) what the request does next.
    """
    now = time.monotonic()
    if now - _last_used_written.get(context.key_id, -_LAST_USED_EVERY) < _LAST_USED_EVERY:
        return context
    _last_used_written[context.key_id] = now
    moment = clock.now()
    db.session.execute(
        update(ApiKey).where(ApiKey.id == context.key_id).values(last_used_at=moment)
    )
    db.session.commit()
    return replace(context, last_used_at=moment)
