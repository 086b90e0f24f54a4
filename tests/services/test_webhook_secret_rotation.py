"""A rotated webhook secret keeps signing beside the new one for 24 hours: both signatures in
``webhook-signature`` (``v1,<new> v1,<old>``), checked with the Standard Webhooks algorithm
written out here and with the ``standardwebhooks`` library, never with our own code."""

import base64
import hashlib
import hmac
import random
from datetime import timedelta

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from extensions import db
from jobs import webhooks as jobs
from models import ApiKey, WebhookDelivery
from services import accounts, clock, keys, webhooks
from tests.helpers import auth

EVENT = {
    "event": "tool.completed",
    "run_id": "0b8f6c1e-4f3a-4c7e-9a51-2d5e8f7a9c10",
    "tool": "word-counter",
    "duration_ms": 12,
    "output_excerpt": "three words here",
}


@pytest.fixture
def private_ok(app):
    app.config["FETCH_ALLOW_PRIVATE"] = True


@pytest.fixture
def scheduled(monkeypatch):
    """Attempts are not queued: the test makes them itself."""
    monkeypatch.setattr(jobs, "schedule", lambda delivery_id, delay=0: None)


def standard_signatures(headers: dict, body: bytes, secret: str) -> list[bool]:
    """Which ``v1`` signatures of ``webhook-signature`` ``secret`` made, by the Standard
    Webhooks specification: HMAC-SHA256 keyed with the base64-decoded part of the secret
    after ``whsec_``, over ``{webhook-id}.{webhook-timestamp}.{body}``, base64-encoded."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    found = []
    for part in headers["webhook-signature"].split(" "):
        version, _, signature = part.partition(",")
        assert version == "v1"
        found.append(hmac.compare_digest(signature, expected))
    return found


def _key(url: str) -> ApiKey:
    account = accounts.create_account(f"rotate{random.randrange(10**9)}@example.com", "pro")
    key, _raw = keys.create_key(account, "hooks")
    webhooks.save(key, url)
    db.session.commit()
    return key


def _deliver(key: ApiKey, event_id: str):
    jobs.emit(key.id, EVENT, event_id)
    delivery = db.session.scalar(
        db.select(WebhookDelivery).where(WebhookDelivery.event_id == event_id)
    )
    jobs.deliver(delivery.id)
    return delivery


def test_after_a_rotation_both_secrets_sign_each_delivery(app, private_ok, receiver, scheduled):
    key = _key(receiver.url)
    old = key.webhook_secret
    new = webhooks.rotate(key)
    db.session.commit()
    assert new != old and key.webhook_previous_secret == old
    _deliver(key, "evt_both")
    (received,) = receiver.requests
    headers, body = received.headers, received.body
    assert len(headers["webhook-signature"].split(" ")) == 2
    assert standard_signatures(headers, body, new) == [True, False]
    assert standard_signatures(headers, body, old) == [False, True]
    # The library accepts the delivery with either secret, and with no other.
    assert Webhook(new).verify(body, headers)["event"] == "tool.completed"
    assert Webhook(old).verify(body, headers)["event"] == "tool.completed"
    with pytest.raises(WebhookVerificationError):
        Webhook(keys.new_webhook_secret()).verify(body, headers)
    # The single-valued signatures use the new secret only.
    expected = hmac.new(new.encode(), body, hashlib.sha256).hexdigest()
    assert headers["x-svc-signature"] == f"sha256={expected}"


def test_the_old_secret_stops_signing_24_hours_after_the_rotation(
    app, private_ok, receiver, scheduled
):
    key = _key(receiver.url)
    old = key.webhook_secret
    new = webhooks.rotate(key)
    db.session.commit()
    until = clock.as_utc(key.webhook_previous_secret_until)
    assert abs(until - clock.now() - timedelta(hours=24)) < timedelta(seconds=5)
    clock.set_offset(until - clock.now() - timedelta(seconds=2) + clock._offset)
    _deliver(key, "evt_last_minute")
    clock.set_offset(until - clock.now() + clock._offset)
    _deliver(key, "evt_next_day")
    before, after = receiver.requests
    assert standard_signatures(before.headers, before.body, old) == [False, True]
    assert standard_signatures(after.headers, after.body, new) == [True]
    assert standard_signatures(after.headers, after.body, old) == [False]
    assert webhooks.previous_secret(key) is None
    assert webhooks.describe(key)["previous_secret_until"] is None


def test_a_second_rotation_keeps_only_the_secret_it_replaced(app, private_ok, receiver, scheduled):
    key = _key(receiver.url)
    first = key.webhook_secret
    second = webhooks.rotate(key)
    third = webhooks.rotate(key)
    db.session.commit()
    _deliver(key, "evt_third")
    (received,) = receiver.requests
    assert standard_signatures(received.headers, received.body, third) == [True, False]
    assert standard_signatures(received.headers, received.body, second) == [False, True]
    assert not any(standard_signatures(received.headers, received.body, first))


def test_a_new_webhook_has_one_secret_and_one_signature(app, private_ok, receiver, scheduled):
    key = _key(receiver.url)
    webhooks.rotate(key)
    webhooks.save(key, None)
    created = webhooks.save(key, receiver.url)
    db.session.commit()
    assert created == key.webhook_secret
    assert key.webhook_previous_secret is None and webhooks.previous_secret(key) is None
    _deliver(key, "evt_fresh")
    (received,) = receiver.requests
    assert standard_signatures(received.headers, received.body, created) == [True]


def test_the_api_rotation_keeps_the_old_secret_signing_and_says_until_when(
    client, make_key, private_ok, receiver
):
    raw = make_key()
    created = client.put("/v1/webhook", headers=auth(raw), json={"url": receiver.url})
    old = created.get_json()["secret"]
    assert created.get_json()["previous_secret_until"] is None
    rotated = client.put("/v1/webhook", headers=auth(raw), json={"rotate_secret": True})
    assert rotated.status_code == 200
    new = rotated.get_json()["secret"]
    until = rotated.get_json()["previous_secret_until"]
    shown = client.get("/v1/webhook", headers=auth(raw)).get_json()
    assert shown["previous_secret_until"] == until and "secret" not in shown
    sent = client.post("/v1/webhook/test", headers=auth(raw))
    assert sent.status_code == 200 and sent.get_json()["status"] == "succeeded"
    (received,) = receiver.requests
    assert received.headers["webhook-id"] == sent.get_json()["event_id"]
    assert standard_signatures(received.headers, received.body, new) == [True, False]
    assert standard_signatures(received.headers, received.body, old) == [False, True]
    assert Webhook(old).verify(received.body, received.headers)["event"] == "webhook.test"
