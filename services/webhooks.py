"""Webhook settings and deliveries (docs/architecture/webhooks.md).

Settings: a key's URL is checked when it is saved (``check_url``: http or https, a sensible
port, a host resolving to public addresses only) and again at every attempt, whose
connection goes to the address checked (``services.fetch.post``). The secret is shown when
a webhook is created (a URL saved on a key that had none) and when it is rotated, never
otherwise: ``save`` returns it only then (the key page may reveal it again after a fresh
login). A rotation keeps the old secret signing beside the new one for
``PREVIOUS_SECRET_HOURS`` (24): meanwhile every attempt's ``webhook-signature`` carries both
signatures, ``v1,<new> v1,<old>``, as Standard Webhooks allows, so a receiver can switch to
the new secret at any moment of that day.

Deliveries: every event for a key with a webhook gets one ``WebhookDelivery`` (its
``event_id`` is the ``webhook-id``, the same on every attempt). An attempt succeeds on a 2xx
answered within 10 s; a redirect is not followed (a 3xx fails); a 410 Gone disables the
key's webhook. A failed attempt is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and
10 h (8 attempts in all), each delay counted from the failure with ±10 % jitter, and never
sooner than the receiver's ``Retry-After`` (honoured up to 10 h). ``claim`` makes sure only
one attempt of a delivery is in flight: it leases the delivery for ``LEASE_SECONDS``, so an
attempt whose worker died is made again once the lease has run out.

The functions here do the work and leave the scheduling of the next attempt to
``jobs.webhooks``, which runs them on the queue.
"""

import base64
import binascii
import email.utils
import logging
import random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import ApiKey, WebhookDelivery
from services import clock, fetch
from services.events import EVENTS, iso_utc, signed_delivery, webhook_test_event
from services.keys import new_webhook_secret

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 10
# Seconds from the 1st, 2nd, ... 7th failure to the next attempt.
RETRY_DELAYS = (5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600)
MAX_ATTEMPTS = 1 + len(RETRY_DELAYS)
JITTER = 0.10
MAX_RETRY_AFTER = 10 * 3600
# How long an attempt may be in flight before another may start (beyond any job timeout).
LEASE_SECONDS = 60
# An attempt this late has lost its job (a process restarted, Redis flushed): ``due_ids``.
OVERDUE_SECONDS = 30
MAX_URL_LENGTH = 2048
# After a rotation the previous secret signs beside the new one for this long.
PREVIOUS_SECRET_HOURS = 24
# 80, 443 and unprivileged ports; never SSH, SMTP and other well-known services.
_STANDARD_PORTS = frozenset({80, 443})
_FIRST_UNPRIVILEGED_PORT = 1024


class WebhookRefused(Exception):
    """A webhook operation was refused; the message is safe to show. ``status`` is 422
    for a bad URL and 409 when the webhook's state does not allow the operation."""

    def __init__(self, message: str, *, status: int = 422, code: str = "validation_failed"):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


# --- settings ---------------------------------------------------------------------------


def check_url(url: str) -> str:
    """``url`` stripped, or WebhookRefused: not http(s), a port outside 80, 443 and
    1024-65535, credentials in it, or a host that resolves to a non-public address (unless
    the operator allows private targets with ``FETCH_ALLOW_PRIVATE``)."""
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise WebhookRefused(f"The URL is longer than {MAX_URL_LENGTH} characters.")
    try:
        fetch.check_url(url)
    except fetch.FetchRefused as refused:
        raise WebhookRefused(_as_webhook(refused.message)) from None
    _check_port(url)
    return url


def _check_port(url: str) -> None:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    if port not in _STANDARD_PORTS and port < _FIRST_UNPRIVILEGED_PORT:
        raise WebhookRefused(
            f"Port {port} is not accepted for webhooks: use 80, 443 or a port from 1024 up."
        )


def _as_webhook(message: str) -> str:
    return message.replace("can be fetched", "can receive webhooks")


def save(key: ApiKey, url: str | None, *, rotate_secret: bool = False) -> str | None:
    """Set (or with None, remove) ``key``'s webhook URL; a URL saved again re-enables a
    webhook disabled by a 410. Returns the new secret when one was made (a webhook
    created, or ``rotate_secret``), else None. The caller commits."""
    created = False
    if url is not None:
        url = check_url(url)
        created = key.webhook_url is None
    key.webhook_url = url
    key.webhook_disabled_at = None
    key.webhook_disabled_reason = None
    if created:
        # A new webhook starts afresh: no receiver knows an older secret.
        key.webhook_secret = new_webhook_secret()
        key.webhook_previous_secret = key.webhook_previous_secret_until = None
        return key.webhook_secret
    if rotate_secret:
        return rotate(key)
    return None


def rotate(key: ApiKey) -> str:
    """Give ``key`` a new webhook secret and return it (to be shown once). The caller
    commits; deliveries attempted from then on are signed with it, and with the old one
    beside it for ``PREVIOUS_SECRET_HOURS`` (a secret rotated out earlier stops signing)."""
    key.webhook_previous_secret = key.webhook_secret
    key.webhook_previous_secret_until = clock.now() + timedelta(hours=PREVIOUS_SECRET_HOURS)
    key.webhook_secret = new_webhook_secret()
    return key.webhook_secret


def previous_secret(key: ApiKey) -> str | None:
    """The secret rotated out less than ``PREVIOUS_SECRET_HOURS`` ago, or None."""
    until = clock.as_utc(key.webhook_previous_secret_until)
    if key.webhook_previous_secret and until is not None and until > clock.now():
        return key.webhook_previous_secret
    return None


def previous_secret_until(key: ApiKey) -> datetime | None:
    """Until when the previous secret signs beside the current one (None: it does not)."""
    if previous_secret(key) is None:
        return None
    return clock.as_utc(key.webhook_previous_secret_until)


def describe(key: ApiKey) -> dict:
    """A key's webhook settings as the API shows them (never the secret itself)."""
    if key.webhook_disabled_at is not None:
        state = "disabled"
    else:
        state = "active" if key.webhook_url else "not_set"
    return {
        "url": key.webhook_url,
        "status": state,
        "disabled_at": clock.as_utc(key.webhook_disabled_at),
        "disabled_reason": key.webhook_disabled_reason,
        "secret_hint": key.webhook_secret[: len("whsec_") + 4] + "…",
        "previous_secret_until": previous_secret_until(key),
        "events": list(EVENTS),
    }


def _disable(key: ApiKey, reason: str) -> None:
    key.webhook_disabled_at = clock.now()
    key.webhook_disabled_reason = reason[:200]


# --- deliveries -------------------------------------------------------------------------


def record(
    key_id: str, event: dict, event_id: str, *, max_attempts: int = MAX_ATTEMPTS
) -> WebhookDelivery | None:
    """Record the delivery of ``event`` to the key's webhook and commit it. None when the
    key has no webhook or already has this event; a delivery recorded while the webhook is
    disabled starts ``disabled`` (it can be redelivered once the webhook works again)."""
    key = db.session.get(ApiKey, key_id)
    if key is None or not key.webhook_url:
        return None
    now = clock.now()
    disabled = key.webhook_disabled_at is not None
    delivery = WebhookDelivery(
        api_key_id=key.id,
        event=event["event"],
        event_id=event_id,
        payload=event,
        status="disabled" if disabled else "pending",
        attempts=[],
        attempt_count=0,
        max_attempts=max_attempts,
        next_attempt_at=None if disabled else now,
        created_at=now,
    )
    try:
        with db.session.begin_nested():
            db.session.add(delivery)
    except IntegrityError:
        log.info("webhook event %s for key %s was already recorded", event_id, key_id)
        db.session.commit()
        return None
    db.session.commit()
    return delivery


def claim(delivery_id: str) -> WebhookDelivery | None:
    """Lease a pending delivery whose attempt is due and not in flight (committed), or
    None: another attempt holds it, it has ended, or its attempt is not due yet."""
    now = clock.now()
    leased = db.session.execute(
        update(WebhookDelivery)
        .where(
            WebhookDelivery.id == delivery_id,
            WebhookDelivery.status == "pending",
            WebhookDelivery.next_attempt_at <= now + timedelta(seconds=1),
            or_(WebhookDelivery.claimed_until.is_(None), WebhookDelivery.claimed_until < now),
        )
        .values(claimed_until=now + timedelta(seconds=LEASE_SECONDS))
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    if leased.rowcount != 1:
        return None
    return db.session.get(WebhookDelivery, delivery_id, populate_existing=True)


@dataclass(frozen=True)
class Outcome:
    """What an attempt came to; ``retry_in`` is the delay (s) to the next one, if any."""

    delivery: WebhookDelivery
    attempt: dict | None
    retry_in: float | None = None


def attempt(delivery_id: str, *, rng: random.Random | None = None) -> Outcome | None:
    """Make the due attempt of a delivery and record it (committed); None when there is
    none to make (see ``claim``). The caller schedules ``retry_in``."""
    delivery = claim(delivery_id)
    if delivery is None:
        return None
    key = db.session.get(ApiKey, delivery.api_key_id)
    if not key.webhook_url or key.webhook_disabled_at is not None:
        _finish(delivery, "disabled")
        db.session.commit()
        return Outcome(delivery, None)
    entry = _send(delivery, key)
    retry_in = None
    status_code = entry["status_code"]
    if status_code is not None and 200 <= status_code < 300:
        _finish(delivery, "succeeded")
    elif status_code == 410:
        _disable(key, f"The receiver answered 410 Gone on {iso_utc(clock.now())}.")
        _finish(delivery, "disabled")
    elif delivery.attempt_count + 1 < delivery.max_attempts:
        retry_in = retry_delay(delivery.attempt_count + 1, entry["retry_after"], rng=rng)
        delivery.next_attempt_at = clock.now() + timedelta(seconds=retry_in)
    else:
        _finish(delivery, "failed")
    delivery.attempts = [*delivery.attempts, entry]
    delivery.attempt_count += 1
    delivery.last_attempt_at = clock.now()
    delivery.claimed_until = None
    db.session.commit()
    log.info(
        "webhook %s (%s) attempt %d to key %s: %s in %d ms -> %s",
        delivery.event_id,
        delivery.event,
        delivery.attempt_count,
        delivery.api_key_id,
        status_code if status_code is not None else entry["error"],
        entry["latency_ms"],
        delivery.status if retry_in is None else f"retry in {retry_in:.0f} s",
    )
    return Outcome(delivery, entry, retry_in)


def _finish(delivery: WebhookDelivery, status: str) -> None:
    delivery.status = status
    delivery.next_attempt_at = None
    delivery.claimed_until = None


def _send(delivery: WebhookDelivery, key: ApiKey) -> dict:
    """POST the delivery once, signed now; the attempt's record (never the answer's body)."""
    url = key.webhook_url
    body, headers = signed_delivery(
        delivery.payload, key.webhook_secret, delivery.event_id, previous_secret(key)
    )
    at = clock.now()
    started = time.monotonic()
    status_code = retry_after = error = None
    try:
        _check_port(url)
        answer = fetch.post(url, body, headers, timeout=TIMEOUT_SECONDS)
    except (fetch.FetchRefused, WebhookRefused) as refused:
        error = _as_webhook(refused.message)
    else:
        status_code = answer.status
        retry_after = parse_retry_after(answer.headers.get("retry-after"))
        if 300 <= status_code < 400:
            error = "Redirects are not followed: answer the webhook URL itself with a 2xx."
        elif status_code == 410:
            error = "410 Gone: the webhook is disabled until its URL is saved again."
    return {
        "number": delivery.attempt_count + 1,
        "at": at.isoformat(),
        "url": url,
        "status_code": status_code,
        "error": error,
        "latency_ms": round((time.monotonic() - started) * 1000),
        "retry_after": retry_after,
    }


def retry_delay(failures: int, retry_after: int | None = None, *, rng=None) -> float:
    """Seconds to wait after the ``failures``-th failed attempt: the schedule's delay with
    ±10 % jitter, but at least ``retry_after`` (bounded to 10 h)."""
    jitter = (rng or random).uniform(1 - JITTER, 1 + JITTER)
    delay = RETRY_DELAYS[failures - 1] * jitter
    if retry_after is not None:
        delay = max(delay, min(retry_after, MAX_RETRY_AFTER))
    return delay


def parse_retry_after(value: str | None) -> int | None:
    """``Retry-After`` in seconds (RFC 9110: delay-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0, int((when - clock.now()).total_seconds()))


def due_ids(limit: int = 500) -> list[str]:
    """Pending deliveries whose attempt is overdue (by more than ``OVERDUE_SECONDS``: its
    job was lost) and not in flight."""
    now = clock.now()
    return list(
        db.session.scalars(
            select(WebhookDelivery.id)
            .where(
                WebhookDelivery.status == "pending",
                WebhookDelivery.next_attempt_at <= now - timedelta(seconds=OVERDUE_SECONDS),
                or_(WebhookDelivery.claimed_until.is_(None), WebhookDelivery.claimed_until < now),
            )
            .order_by(WebhookDelivery.next_attempt_at)
            .limit(limit)
        )
    )


def redeliver(delivery: WebhookDelivery, key: ApiKey) -> None:
    """Make the delivery due now (the caller commits and schedules it). A pending one has
    its next attempt brought forward; one that has ended gets one more attempt."""
    require_enabled(key)
    now = clock.now()
    if delivery.claimed_until is not None and clock.as_utc(delivery.claimed_until) > now:
        raise WebhookRefused(
            "An attempt of this delivery is in progress; try again in a few seconds.",
            status=409,
            code="delivery_in_progress",
        )
    if delivery.status != "pending":
        delivery.status = "pending"
        delivery.max_attempts = delivery.attempt_count + 1
    delivery.next_attempt_at = now


def require_enabled(key: ApiKey) -> None:
    """409 unless ``key`` has a webhook URL that is not disabled."""
    if not key.webhook_url:
        raise WebhookRefused(
            "This key has no webhook URL: set one with PUT /v1/webhook first.",
            status=409,
            code="webhook_not_set",
        )
    if key.webhook_disabled_at is not None:
        raise WebhookRefused(
            f"The webhook is disabled ({key.webhook_disabled_reason}) Save its URL again "
            "with PUT /v1/webhook to enable it.",
            status=409,
            code="webhook_disabled",
        )


def send_test(key: ApiKey) -> Outcome:
    """Send a ``webhook.test`` event now, once (no retries), and record it."""
    require_enabled(key)
    event_id = f"evt_{uuid.uuid4()}"
    delivery = record(key.id, webhook_test_event(event_id), event_id, max_attempts=1)
    outcome = attempt(delivery.id)
    return outcome


# --- listing ----------------------------------------------------------------------------


def deliveries(
    key_id: str, *, status: str | None, limit: int, cursor: str | None
) -> tuple[list[WebhookDelivery], str | None]:
    """A page of the key's deliveries, newest first, and the cursor of the next page."""
    query = select(WebhookDelivery).where(WebhookDelivery.api_key_id == key_id)
    if status is not None:
        query = query.where(WebhookDelivery.status == status)
    if cursor is not None:
        created_at, last_id = decode_cursor(cursor)
        query = query.where(
            or_(
                WebhookDelivery.created_at < created_at,
                and_(WebhookDelivery.created_at == created_at, WebhookDelivery.id < last_id),
            )
        )
    query = query.order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc())
    page = list(db.session.scalars(query.limit(limit + 1)))
    if len(page) <= limit:
        return page, None
    page = page[:limit]
    return page, encode_cursor(page[-1])


def encode_cursor(delivery: WebhookDelivery) -> str:
    """An opaque, URL-safe token for the page after ``delivery``."""
    token = f"{clock.as_utc(delivery.created_at).isoformat()}|{delivery.id}"
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The (created_at, id) a cursor names; ValueError when it is not one of ours."""
    try:
        token = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("not a cursor") from None
    moment, _, delivery_id = token.partition("|")
    created_at = datetime.fromisoformat(moment)
    if created_at.tzinfo is None or len(delivery_id) != 36:
        raise ValueError("not a cursor")
    return created_at, delivery_id


def latest_deliveries(key_ids: list[str]) -> dict[str, WebhookDelivery]:
    """Each key's newest delivery (keys without one are left out), in one query."""
    if not key_ids:
        return {}
    ranked = (
        select(
            WebhookDelivery.id,
            func.row_number()
            .over(
                partition_by=WebhookDelivery.api_key_id,
                order_by=(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc()),
            )
            .label("rank"),
        )
        .where(WebhookDelivery.api_key_id.in_(key_ids))
        .subquery()
    )
    newest = db.session.scalars(
        select(WebhookDelivery)
        .join(ranked, ranked.c.id == WebhookDelivery.id)
        .where(ranked.c.rank == 1)
    )
    return {delivery.api_key_id: delivery for delivery in newest}


def find(key_id: str, delivery_id: str) -> WebhookDelivery | None:
    """The key's delivery with this id, or None (another key's is not found either)."""
    delivery = db.session.get(WebhookDelivery, delivery_id)
    if delivery is None or delivery.api_key_id != key_id:
        return None
    return delivery


def delivery_record(delivery: WebhookDelivery) -> dict:
    """A delivery as the API shows it."""
    return {
        "id": delivery.id,
        "event": delivery.event,
        "event_id": delivery.event_id,
        "run_id": delivery.payload.get("run_id"),
        "status": delivery.status,
        "attempt_count": delivery.attempt_count,
        "max_attempts": delivery.max_attempts,
        "next_attempt_at": clock.as_utc(delivery.next_attempt_at)
        if delivery.status == "pending"
        else None,
        "created_at": clock.as_utc(delivery.created_at),
        "last_attempt_at": clock.as_utc(delivery.last_attempt_at),
        "payload": delivery.payload,
        "attempts": delivery.attempts,
    }
