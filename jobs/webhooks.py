"""RQ jobs that deliver webhook events (queue: default)."""

import logging
import time
from urllib.parse import urlsplit

import requests
from flask import current_app

from extensions import db
from models import ApiKey
from services.events import signed_delivery
from services.fetch import FetchRefused, resolve_public
from services.queue import dispatcher

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 10


def emit(key_id: str, event: dict, event_id: str) -> None:
    """Announce ``event`` to the key's webhook: its delivery is queued (``event_id`` names
    it, stable across attempts). Every event of the product goes out through here."""
    dispatcher().enqueue(
        deliver_event,
        key_id,
        event,
        event_id,
        job_id=event_id,
        timeout=60,
        on_failure=_delivery_died,
    )


def _delivery_died(job_id: str) -> None:
    log.warning("webhook delivery %s died", job_id)


def deliver_event(key_id: str, event: dict, webhook_id: str) -> None:
    """POST ``event`` to the key's webhook once (the simple form: no retries yet)."""
    key = db.session.get(ApiKey, key_id)
    if key is None or not key.webhook_url:
        return
    url = key.webhook_url
    parts = urlsplit(url)
    try:
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise FetchRefused("the webhook URL is not an http(s) URL")
        resolve_public(
            parts.hostname,
            parts.port or (443 if parts.scheme == "https" else 80),
            allow_private=bool(current_app.config.get("FETCH_ALLOW_PRIVATE")),
        )
    except FetchRefused as refused:
        log.warning("webhook %s for key %s refused: %s", webhook_id, key_id, refused.message)
        return
    body, headers = signed_delivery(event, key.webhook_secret, webhook_id)
    started = time.monotonic()
    try:
        response = requests.post(
            url, data=body, headers=headers, timeout=TIMEOUT_SECONDS, allow_redirects=False
        )
        outcome = str(response.status_code)
    except requests.RequestException as error:
        outcome = type(error).__name__
    log.info(
        "webhook %s (%s) for key %s: %s in %.0f ms",
        webhook_id,
        event["event"],
        key_id,
        outcome,
        (time.monotonic() - started) * 1000,
    )
