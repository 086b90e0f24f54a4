"""The caller's API key and its limits: the key looked up (401), the per-minute limit spent
(429, deferred until the body is read where the run's quota reservation spends it in the same
round trip), the plan's API access (402/403), and what the key's headroom says of a run."""

import time
from datetime import UTC, datetime

from flask import g, request

from blueprints.api.problems import Problem
from services import clock, keys, quota, ratelimit, runs
from services.keys import KeyContext
from services.plans import upgrade_url

# Code that runs on every request takes the objects behind Flask's ``request``, ``g`` and
# ``current_app`` with ``_get_current_object()``, once: each attribute read through a proxy
# first builds and discards an AttributeError (the proxy's ``__getattr__`` is asked only
# then), about 1 µs.


API_KEY_HEADER = "X-SVC-API-Key"
_API_KEY_ENVIRON = "HTTP_" + API_KEY_HEADER.upper().replace("-", "_")


def raw_key_from_request() -> str | None:
    environ = request._get_current_object().environ  # cheaper than request.headers
    raw = environ.get(_API_KEY_ENVIRON)
    if raw is None:
        scheme, _, value = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() == "bearer":
            raw = value
    return raw.strip() if raw else None


def authenticate(*, read_usage: bool = False, defer_limit: bool = False) -> KeyContext:
    """Resolve the key (401) and spend one request of its per-minute limit (429).

    With ``read_usage`` the day's usage is read too (``g.day_usage``), in the same Redis
    round trip where the limiter's storage allows it. With ``defer_limit`` (the run
    endpoints) the hit is spent later, with the run's quota reservation (``admit_run``), or
    when the request is refused before that (``settle_limit``): either way a caller over
    the limit is answered 429 before any later refusal, as the pipeline's order says.
    """
    raw = raw_key_from_request()
    if not raw:
        raise Problem(
            401,
            "invalid_api_key",
            f"Send your API key in the {API_KEY_HEADER} header "
            "(or as Authorization: Bearer <key>).",
            headers={"WWW-Authenticate": f'ApiKey header="{API_KEY_HEADER}"'},
        )
    context = keys.resolve(raw)
    if context is None:
        raise Problem(
            401,
            "invalid_api_key",
            "This API key is not valid: it is malformed, unknown, revoked or expired, or its "
            "account is suspended.",
            headers={"WWW-Authenticate": f'ApiKey header="{API_KEY_HEADER}"'},
        )
    state = g._get_current_object()
    state.key = context
    if defer_limit:
        state.limit_pending = True
    else:
        _spend_limit(context, read_usage=read_usage)
    return keys.touch(context)


def _spend_limit(
    context: KeyContext, *, read_usage: bool = False, reserve: quota.Request | None = None
) -> ratelimit.MinuteWindow:
    """Spend the key's per-minute hit (429 when over), with what rides along."""
    state = g._get_current_object()
    state.limit_pending = False
    now = clock.now()
    usage_hash = quota.usage_key(context.key_id, clock.utc_day(now)) if read_usage else None
    window = ratelimit.spend_minute(
        context.key_hash, context.per_minute, read_usage=usage_hash, reserve=reserve
    )
    state.minute_window = window
    _note_headroom(context.key_id, window.remaining if window.allowed else 0, window.reset_at)
    if read_usage:
        state.day_usage = (
            quota.Usage(clock.utc_day(now), *window.usage)
            if window.usage is not None
            else quota.store().usage(context.key_id, now)
        )
    if not window.allowed:
        retry_after = max(1, int(window.reset_at - time.time() + 0.999))
        raise Problem(
            429,
            "rate_limited",
            f"This key may make {context.per_minute} requests per minute; "
            f"try again in {retry_after} s.",
            headers={"Retry-After": retry_after},
            limit=context.per_minute,
            remaining=0,
            resets_at=_iso(window.reset_at),
        )
    return window


def settle_limit() -> None:
    """Spend a deferred per-minute hit now (429 when over); nothing if none is pending."""
    if g._get_current_object().get("limit_pending"):
        _spend_limit(current_key())


def admit_run(context: KeyContext, reserve: quota.Request | None) -> quota.Reservation | None:
    """A run's admission: the deferred per-minute hit (429) and the day's quota
    reservation ``reserve`` (None for sandbox keys), in one Redis round trip where the
    limiter's storage allows. Returns the reservation (None without one)."""
    reservation = None
    if g._get_current_object().get("limit_pending"):
        reservation = _spend_limit(context, reserve=reserve).reservation
    if reservation is None:
        reservation = runs.reserve_only(context, reserve)
    if reservation is not None:
        _note_headroom(context.key_id, day=reservation.remaining)
    return reservation


# Per process: how much room each key's last admission here left, as (requests left in its
# minute, when that minute ends, calls left today or None). An inline run is run before
# its admission (one Redis round trip instead of two: services/runs.py) only while both
# leave more than ``_HEADROOM``; near a limit it is admitted first, so that a refused call
# costs no work.
_headroom: dict[str, tuple[int, float, int | None]] = {}
_HEADROOM = 32
_HEADROOM_KEYS = 10_000
_KEEP = object()


def _note_headroom(key_id: str, minute: int | None = None, reset_at: float = 0.0, day=_KEEP):
    seen = _headroom.get(key_id)
    if minute is None:
        if seen is None:
            return
        minute, reset_at = seen[0], seen[1]
    if day is _KEEP:
        day = seen[2] if seen is not None else None
    if len(_headroom) >= _HEADROOM_KEYS and key_id not in _headroom:
        _headroom.clear()
    _headroom[key_id] = (minute, reset_at, day)


def likely_admitted(context: KeyContext) -> bool:
    """Whether this key's last admission in this process left room to spare under its
    per-minute limit (or that minute is over) and its daily quota."""
    seen = _headroom.get(context.key_id)
    if seen is None:
        return False
    minute, reset_at, day = seen
    if day is None or day <= _HEADROOM:
        return False
    return minute > _HEADROOM or (time.time() >= reset_at and context.per_minute > _HEADROOM)


def current_key() -> KeyContext:
    """The key ``authenticate`` resolved for this request."""
    return g._get_current_object().key


def require_api_access(*, on_slug_endpoint: bool = False) -> None:
    """Free and Starter keys may only call whoami (402 on the slug-in-path endpoint)."""
    context = current_key()
    if context.plan.api_access:
        return
    raise Problem(
        402 if on_slug_endpoint else 403,
        "plan_required",
        f"The {context.plan.name} plan has no API access beyond whoami; "
        "upgrade to Pro or higher to run tools.",
        upgrade_url=upgrade_url("pro"),
        required_plan="pro",
    )


def require_plan(required: str) -> None:
    """A paid plan below an endpoint's plan gets 402
    (docs/architecture/plan-gated-endpoints.md)."""
    context = current_key()
    if not context.plan.includes(required):
        raise Problem(
            402,
            "plan_required",
            f"This endpoint needs the {required} plan; this key's account is on "
            f"{context.plan.name}.",
            upgrade_url=upgrade_url(required),
            required_plan=required,
        )


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")
