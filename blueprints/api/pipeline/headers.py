"""The rate-limit headers of every authenticated answer (``RateLimit``, ``RateLimit-Policy``
and the ``X-RateLimit-*`` ones)."""

import time
from functools import lru_cache

from flask import g

from services import clock, quota, ratelimit
from services.keys import KeyContext
from speedups import append_headers

# --- headers on every authenticated response ---------------------------------------------


def rate_limit_headers(response):
    state = g._get_current_object()  # one context lookup for the reads below
    context: KeyContext | None = state.get("key")
    window: ratelimit.MinuteWindow | None = state.get("minute_window")
    if context is None or window is None:
        return response
    minute_reset = max(0, int(window.reset_at - time.time() + 0.999))
    remaining = f'"minute";r={window.remaining};t={minute_reset}'
    if context.sandbox:
        policy = _policy(window.limit, None)
    else:
        usage = state.get("day_usage")
        if usage is None:
            usage = quota.store().usage(context.key_id, clock.now())
        day_left = max(0, context.daily_quota - usage.calls)
        remaining += f', "day";r={day_left};t={clock.seconds_to_midnight()}'
        policy = _policy(window.limit, context.daily_quota)
    # Built from numbers and quoted names: appended as they are (speedups.py says why).
    append_headers(
        response.headers,
        (
            ("RateLimit-Policy", policy),
            ("RateLimit", remaining),
            ("X-RateLimit-Limit", str(window.limit)),
            ("X-RateLimit-Remaining", str(window.remaining)),
            ("X-RateLimit-Reset", str(int(window.reset_at + 0.999))),
        ),
    )
    return response


@lru_cache(maxsize=1024)
def _policy(per_minute: int, daily: int | None) -> str:
    """The ``RateLimit-Policy`` value: the minute's window, and the day's unless sandbox."""
    minute = f'"minute";q={per_minute};w=60'
    return minute if daily is None else f'{minute}, "day";q={daily};w=86400'
