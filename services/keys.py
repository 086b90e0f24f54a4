"""API keys: generation, hashing, lookup with a short per-process cache, revocation, and
rolling a key with the old one kept working for a while.

Only the SHA-256 hex digest of a raw key is ever stored or logged. The resolved key is
cached per process for ``KEY_CACHE_SECONDS`` so that the request hot path does no SQL;
revocation, suspension and plan changes therefore reach every process within that time. A
rolled key's ``expires_at`` rides in the cached context and is compared with the clock at
every request, so it ends to the second on every process.

The key limit counts *working* keys: not revoked and not past their ``expires_at``. A key
kept working after a roll therefore counts until it expires (each working key has its own
daily quota, and the limit is what keeps per-key quotas honest: docs/architecture/accounts.md).
"""

import base64
import hashlib
import logging
import re
import secrets
import string
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import bindparam, or_, select, update

from extensions import db
from models import Account, ApiKey, Plan, User
from services import clock
from services.plans import PlanInfo, get_plan

KEY_PREFIX = "svc_"
KEY_RANDOM_LENGTH = 40
_ALPHABET = string.ascii_letters + string.digits
MAX_ACTIVE_KEYS_PER_SEAT = 5
# Free and Starter accounts may hold one key, for whoami only (docs/architecture/accounts.md).
MAX_KEYS_WITHOUT_API_ACCESS = 1
MAX_NAME_LENGTH = 100
# How long a rolled key may keep working beside its replacement: choice -> (label, time).
ROLL_OVERLAPS: dict[str, tuple[str, timedelta]] = {
    "now": ("Stop it now", timedelta(0)),
    "1h": ("1 hour", timedelta(hours=1)),
    "24h": ("24 hours", timedelta(hours=24)),
    "7d": ("7 days", timedelta(days=7)),
}
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
    # A rolled key works until then (None: until revoked).
    expires_at: datetime | None = None
    # The tools its MCP clients are shown when they name none (None: the default tools).
    mcp_tools: str | None = None


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


# What may carry a key in a logged line: a key's shape, whole or cut short, and the value of
# a query parameter that names a key or token (``?api_key=...``, however it is spelt).
_SECRET_IN_TEXT = re.compile(
    rf"{KEY_PREFIX}[A-Za-z0-9]{{16,}}"
    r"|(?<=[?&;])((?:api[_-]?key|key|token|access[_-]?token|secret|password)=)[^&\s\"]+",
    re.IGNORECASE,
)


def redact_secrets(text: str) -> str:
    """``text`` with every key and every value of a key-like query parameter replaced by
    ``[redacted]`` (for log lines: a request line's query string is logged as sent)."""
    return _SECRET_IN_TEXT.sub(lambda found: (found[1] or KEY_PREFIX) + "[redacted]", text)


class RedactSecrets(logging.Filter):
    """A logging filter that writes its records with ``redact_secrets`` applied: on the
    access logs (werkzeug's server on the embedded default, gunicorn's when enabled), which
    write the request line whole."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_secrets(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True


def new_webhook_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def key_limit(account: Account) -> int:
    """How many working keys ``account`` may hold: 5 per seat, or one whoami-only key on a
    plan without API access (free, starter)."""
    if not account.plan.api_access:
        return MAX_KEYS_WITHOUT_API_ACCESS
    return MAX_ACTIVE_KEYS_PER_SEAT * account.plan.seats


def is_working(key: ApiKey, now: datetime | None = None) -> bool:
    """Not revoked and not past its expiry (a rolled key's overlap)."""
    if key.revoked_at is not None:
        return False
    expires_at = clock.as_utc(key.expires_at)
    return expires_at is None or expires_at > (now or clock.now())


def _working(now: datetime):
    """The SQL condition of ``is_working``."""
    return ApiKey.revoked_at.is_(None) & or_(ApiKey.expires_at.is_(None), ApiKey.expires_at > now)


def count_working(account_id: int) -> int:
    return db.session.scalar(
        select(db.func.count(ApiKey.id)).where(
            ApiKey.account_id == account_id, _working(clock.now())
        )
    )


def limit_message(account: Account, working: int) -> str:
    """Why no key can be added, for the page, the CLI and create_key's refusal."""
    if not account.plan.api_access:
        return (
            f"The {account.plan.name} plan allows one key, for whoami only (to check a key "
            "works before upgrading); this account has it. Upgrade to Pro or higher for more "
            "keys and API access, or revoke the key to make a new one."
        )
    return (
        f"This account has {working} working keys, the most its plan allows "
        f"({MAX_ACTIVE_KEYS_PER_SEAT} per seat, {account.plan.seats} "
        f"seat{'s' if account.plan.seats != 1 else ''}); a key kept working after a roll "
        "counts until it expires. Revoke one first."
    )


def clean_name(name: str | None) -> str:
    """The key's name stripped; KeyRefused when empty or too long."""
    name = (name or "").strip()
    if not name:
        raise KeyRefused("Give the key a name, to recognise it by.")
    if len(name) > MAX_NAME_LENGTH:
        raise KeyRefused(f"A key's name is at most {MAX_NAME_LENGTH} characters.")
    return name


def create_key(
    account: Account, name: str, *, sandbox: bool = False, created_by: User | None = None
) -> tuple[ApiKey, str]:
    """Add a new key to ``account``; returns the row and the raw key (shown once).
    KeyRefused for a bad name or when the account's working keys are at its limit."""
    name = clean_name(name)
    working = count_working(account.id)
    if working >= key_limit(account):
        raise KeyRefused(limit_message(account, working))
    raw = generate_raw_key()
    key = ApiKey(
        account_id=account.id,
        name=name,
        key_hash=hash_key(raw),
        hint=key_hint(raw),
        sandbox=sandbox,
        webhook_secret=new_webhook_secret(),
        created_by_user_id=created_by.id if created_by is not None else None,
    )
    db.session.add(key)
    db.session.flush()
    return key, raw


def working_keys(account_id: int) -> list[tuple[ApiKey, str | None]]:
    """The account's working keys, oldest first, each with its creator's email (None for a
    key made by an operator command, or whose creator was deleted)."""
    rows = db.session.execute(
        select(ApiKey, User.email)
        .outerjoin(User, User.id == ApiKey.created_by_user_id)
        .where(ApiKey.account_id == account_id, _working(clock.now()))
        .order_by(ApiKey.created_at, ApiKey.id)
    )
    return [(key, email) for key, email in rows]


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


def regenerate_key(key: ApiKey, *, keep_old_for: str = "now") -> tuple[ApiKey, str]:
    """Roll ``key``: issue a new one with the same name, sandbox flag, creator, webhook (URL,
    secrets, state) and limits, and revoke the old one now or let it work for the overlap
    ``keep_old_for`` (a ``ROLL_OVERLAPS`` choice) beside the new one. KeyRefused for a key
    that no longer works or was already rolled, an unknown choice, or an overlap that would
    put the account past its key limit (the old key counts until it expires)."""
    if keep_old_for not in ROLL_OVERLAPS:
        raise KeyRefused(
            f"Keep the old key working for one of: {', '.join(ROLL_OVERLAPS)} "
            f"(not {keep_old_for!r})."
        )
    now = clock.now()
    if not is_working(key, now):
        raise KeyRefused("This key no longer works: there is nothing to roll.")
    if key.expires_at is not None:
        raise KeyRefused("This key was already rolled: roll the key that replaced it instead.")
    overlap = ROLL_OVERLAPS[keep_old_for][1]
    if overlap:
        working = count_working(key.account_id)
        if working >= key_limit(key.account):
            raise KeyRefused(
                f"Keeping the old key working would make {working + 1} working keys, past "
                f"this account's limit of {key_limit(key.account)} (a rolled key counts until "
                'it expires). Roll it with "Stop it now", or revoke another key first.'
            )
        key.expires_at = now + overlap
        forget(key.key_hash)
    else:
        revoke_key(key)
    db.session.flush()
    raw = generate_raw_key()
    new_key = ApiKey(
        account_id=key.account_id,
        name=key.name,
        key_hash=hash_key(raw),
        hint=key_hint(raw),
        sandbox=key.sandbox,
        webhook_url=key.webhook_url,
        webhook_secret=key.webhook_secret,
        webhook_previous_secret=key.webhook_previous_secret,
        webhook_previous_secret_until=key.webhook_previous_secret_until,
        webhook_disabled_at=key.webhook_disabled_at,
        webhook_disabled_reason=key.webhook_disabled_reason,
        per_minute_override=key.per_minute_override,
        daily_override=key.daily_override,
        created_by_user_id=key.created_by_user_id,
    )
    db.session.add(new_key)
    db.session.flush()
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
    config = current_app._get_current_object().config  # blueprints/api/pipeline/keys.py says why
    ttl = config["KEY_CACHE_SECONDS"]
    now = time.monotonic()
    hit = _cache.get(key_hash)
    if hit is not None:
        age = now - hit[0]
        if age < ttl:
            context = hit[1]
            if context is None or context.expires_at is None:
                return context  # most keys: no call, no clock read
            return _unexpired(context)
        if age < 2 * ttl:
            with _lock:
                reloaded_elsewhere = key_hash in _reloading
                _reloading.add(key_hash)
            if reloaded_elsewhere:
                return _unexpired(hit[1])
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
    return _unexpired(context)


def resolve_id(key_id: str | None) -> KeyContext | None:
    """The working key with this id, as ``resolve`` answers for its raw value, read from the
    database (an agency's widget runs through a key whose raw value is never stored)."""
    if not key_id:
        return None
    key_hash = db.session.scalar(select(ApiKey.key_hash).where(ApiKey.id == key_id))
    return None if key_hash is None else _unexpired(_load(key_hash))


def _unexpired(context: KeyContext | None) -> KeyContext | None:
    """``context`` unless its key's overlap after a roll has ended: checked at every
    request, so the cache never lets an expired key through (no SQL, no Redis)."""
    if context is None or context.expires_at is None or clock.now() < context.expires_at:
        return context
    return None


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
        ApiKey.expires_at,
        ApiKey.mcp_tools,
        Account.id.label("account_id"),
        Account.name.label("account_name"),
        Account.free_calls_used,
        Plan.name.label("plan_name"),
    )
    .join(Account, Account.id == ApiKey.account_id)
    .join(Plan, Plan.name == Account.plan_name)
    .where(
        ApiKey.key_hash == bindparam("key_hash"),
        ApiKey.revoked_at.is_(None),
        or_(ApiKey.expires_at.is_(None), ApiKey.expires_at > bindparam("now")),
        # A suspended account's keys answer 401 (within a second, as revocation).
        Account.suspended_at.is_(None),
    )
)


def _load(key_hash: str) -> KeyContext | None:
    row = db.session.execute(_ACTIVE_KEY, {"key_hash": key_hash, "now": clock.now()}).first()
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
        expires_at=clock.as_utc(row.expires_at),
        mcp_tools=row.mcp_tools,
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
