"""Webhook deliveries against real receivers on loopback: signatures, the retry schedule
under a controlled clock, Retry-After, 410, redirects, at-least-once with deduplication,
and the SSRF guard at save and at send."""

import hashlib
import hmac
import json
import random
import socket
from datetime import timedelta
from email.utils import format_datetime

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from extensions import db
from jobs import webhooks as jobs
from models import ApiKey, WebhookDelivery
from services import accounts, clock, keys, webhooks
from services import fetch as fetcher
from services.events import canonical
from services.webhooks import MAX_ATTEMPTS, RETRY_DELAYS, WebhookRefused
from tests.fakes.webhook_receiver import Receiver, Reply

EVENT = {
    "event": "tool.completed",
    "run_id": "0b8f6c1e-4f3a-4c7e-9a51-2d5e8f7a9c10",
    "tool": "word-counter",
    "duration_ms": 12,
    "output_excerpt": "Größe: 3 words — fine",
}


@pytest.fixture
def scheduled(monkeypatch):
    """Attempts are queued here instead of on the queue: the test runs them itself."""
    queued: list[tuple[str, float]] = []
    monkeypatch.setattr(
        jobs, "schedule", lambda delivery_id, delay=0: queued.append((delivery_id, delay))
    )
    return queued


class _Dns(dict):
    """Host names answered as the test says (address lists, or an iterator of them)."""

    lookups: list[str]

    def getaddrinfo(self, real, host, port, *args, **kwargs):
        if host not in self:
            return real(host, port, *args, **kwargs)
        self.lookups.append(host)
        answer = self[host] if isinstance(self[host], list) else next(self[host])
        family = {True: socket.AF_INET6, False: socket.AF_INET}
        return [(family[":" in ip], socket.SOCK_STREAM, 6, "", (ip, port)) for ip in answer]


@pytest.fixture
def fake_dns(monkeypatch):
    dns = _Dns()
    dns.lookups = []
    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: dns.getaddrinfo(real, *a, **k))
    return dns


@pytest.fixture
def loopback_is_public(monkeypatch):
    """127.0.0.1 stands in for a public address (a receiver there is then reachable)."""
    real = fetcher.check_address
    monkeypatch.setattr(
        fetcher, "check_address", lambda ip: None if ip == "127.0.0.1" else real(ip)
    )


@pytest.fixture
def private_ok(app):
    app.config["FETCH_ALLOW_PRIVATE"] = True


def _key(url: str | None = None) -> ApiKey:
    account = accounts.create_account(f"hooks{random.randrange(10**9)}@example.com", "pro")
    key, _raw = keys.create_key(account, "hooks")
    if url is not None:
        webhooks.save(key, url)
    db.session.commit()
    return key


def _emit(key: ApiKey, event_id: str = "evt_1", event: dict | None = None) -> WebhookDelivery:
    jobs.emit(key.id, event or EVENT, event_id)
    return db.session.scalar(
        db.select(WebhookDelivery).where(
            WebhookDelivery.api_key_id == key.id, WebhookDelivery.event_id == event_id
        )
    )


def _advance(seconds: float) -> None:
    clock.set_offset(clock._offset + timedelta(seconds=seconds))


def _reload(delivery: WebhookDelivery) -> WebhookDelivery:
    db.session.expire_all()
    return db.session.get(WebhookDelivery, delivery.id)


# --- signatures ---------------------------------------------------------------------------


def test_a_delivery_is_signed_three_ways_and_a_changed_byte_fails_each(
    app, private_ok, receiver, scheduled
):
    key = _key(receiver.url)
    delivery = _emit(key)
    assert scheduled == [(delivery.id, 0)]
    jobs.deliver(delivery.id)
    (received,) = receiver.requests
    secret, body, headers = key.webhook_secret, received.body, received.headers
    payload = json.loads(body)
    assert set(payload) == {*EVENT, "delivered_at", "signature"}
    assert payload["output_excerpt"] == EVENT["output_excerpt"]  # UTF-8, not escaped
    unsigned = {name: value for name, value in payload.items() if name != "signature"}

    def body_field_ok(data: dict) -> bool:
        expected = hmac.new(secret.encode(), canonical(data), hashlib.sha256).hexdigest()
        return payload["signature"] == f"sha256={expected}"

    def header_ok(raw: bytes) -> bool:
        expected = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
        return headers["x-svc-signature"] == f"sha256={expected}"

    assert body_field_ok(unsigned) and header_ok(body)
    assert Webhook(secret).verify(body, headers) == payload
    assert headers["webhook-id"] == "evt_1"
    # One byte changed: none of the three verifies.
    tampered = body.replace(b'"duration_ms": 12', b'"duration_ms": 13')
    assert tampered != body
    assert not body_field_ok({**unsigned, "duration_ms": 13})
    assert not header_ok(tampered)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(tampered, headers)
    # Nor with another key's secret.
    with pytest.raises(WebhookVerificationError):
        Webhook(keys.new_webhook_secret()).verify(body, headers)
    assert _reload(delivery).status == "succeeded"


def test_a_rotated_secret_signs_the_next_attempt(app, private_ok, receiver, scheduled):
    key = _key(receiver.url)
    receiver.answer(Reply(500))
    delivery = _emit(key)
    jobs.deliver(delivery.id)
    new_secret = webhooks.rotate(key)
    db.session.commit()
    _advance(10)
    jobs.deliver(delivery.id)
    first, second = receiver.requests
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == "evt_1"
    Webhook(new_secret).verify(second.body, second.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret).verify(first.body, first.headers)


# --- retries ------------------------------------------------------------------------------


def test_retry_delays_follow_the_schedule_with_ten_percent_jitter():
    rng = random.Random(7)
    for failures, base in enumerate(RETRY_DELAYS, start=1):
        delays = [webhooks.retry_delay(failures, rng=rng) for _ in range(400)]
        assert base * 0.9 <= min(delays) < base * 0.95
        assert base * 1.05 < max(delays) <= base * 1.1
    assert RETRY_DELAYS == (5, 300, 1800, 7200, 18000, 36000, 36000)
    assert MAX_ATTEMPTS == 8


def test_retry_after_is_a_floor_bounded_to_ten_hours():
    rng = random.Random(1)
    assert webhooks.retry_delay(1, 120, rng=rng) == 120
    assert 270 <= webhooks.retry_delay(2, 3, rng=rng) <= 330  # never sooner than the schedule
    assert webhooks.retry_delay(1, 10**9, rng=rng) == 36000


def test_retry_after_reads_seconds_and_http_dates(app):
    assert webhooks.parse_retry_after("120") == 120
    later = clock.now() + timedelta(seconds=300)
    assert 298 <= webhooks.parse_retry_after(format_datetime(later, usegmt=True)) <= 300
    assert webhooks.parse_retry_after("soon") is None
    assert webhooks.parse_retry_after(None) is None


def test_a_failing_receiver_is_retried_on_schedule_then_given_up(
    app, private_ok, receiver, scheduled
):
    receiver.default = Reply(503)
    key = _key(receiver.url)
    delivery = _emit(key)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        delivery_id, delay = scheduled[-1]
        _advance(delay)
        jobs.deliver(delivery_id)
        delivery = _reload(delivery)
        assert delivery.attempt_count == attempt == len(receiver.requests)
        if attempt == MAX_ATTEMPTS:
            break
        base = RETRY_DELAYS[attempt - 1]
        _, delay = scheduled[-1]
        assert base * 0.9 <= delay <= base * 1.1
        expected = clock.now() + timedelta(seconds=delay)
        assert abs(clock.as_utc(delivery.next_attempt_at) - expected) < timedelta(seconds=1)
        # Not due yet: an early job (or sweep) does nothing.
        _advance(delay * 0.5)
        jobs.deliver(delivery.id)
        assert webhooks.due_ids() == []
        assert len(receiver.requests) == attempt
        _advance(-delay * 0.5)
    assert delivery.status == "failed" and delivery.next_attempt_at is None
    assert len(scheduled) == MAX_ATTEMPTS  # the first attempt and seven retries
    assert [a["status_code"] for a in delivery.attempts] == [503] * MAX_ATTEMPTS
    assert [a["number"] for a in delivery.attempts] == list(range(1, MAX_ATTEMPTS + 1))
    assert {r.headers["webhook-id"] for r in receiver.requests} == {"evt_1"}
    # Each attempt is stamped anew, at its own (controlled) time.
    stamps = [int(r.headers["webhook-timestamp"]) for r in receiver.requests]
    assert stamps == sorted(stamps)
    assert stamps[-1] - stamps[0] >= 0.9 * sum(RETRY_DELAYS)


def test_retry_after_delays_the_next_attempt(app, private_ok, receiver, scheduled):
    receiver.answer(Reply(429, {"Retry-After": "600"}))
    delivery = _emit(_key(receiver.url))
    jobs.deliver(delivery.id)
    assert scheduled[-1] == (delivery.id, 600)
    assert _reload(delivery).attempts[0]["retry_after"] == 600


def test_a_slow_receiver_fails_the_attempt(app, private_ok, receiver, scheduled, monkeypatch):
    monkeypatch.setattr(webhooks, "TIMEOUT_SECONDS", 0.3)
    receiver.answer(Reply(204, delay=1))
    delivery = _emit(_key(receiver.url))
    jobs.deliver(delivery.id)
    attempt = _reload(delivery).attempts[0]
    assert attempt["status_code"] is None and "timed out" in attempt["error"]
    assert _reload(delivery).status == "pending"


def test_a_receiver_down_then_up_gets_every_event_once_per_webhook_id(
    app, private_ok, receiver, scheduled
):
    key = _key(receiver.url)
    receiver.stop()  # down: connections refused
    deliveries = [_emit(key, f"evt_{n}") for n in range(5)]
    for delivery in deliveries:
        jobs.deliver(delivery.id)
    assert all(_reload(d).attempts[0]["error"] for d in deliveries)
    receiver.start()  # up again, on the same port
    # It processes the first event but answers 500, so that one arrives twice.
    receiver.answer(Reply(500))
    for _ in range(3):
        _advance(60 * 60)
        scheduled.clear()
        jobs.deliver_due()
        for delivery_id, _delay in scheduled:
            jobs.deliver(delivery_id)
    assert {_reload(d).status for d in deliveries} == {"succeeded"}
    assert len(receiver.requests) == 6  # at least once ...
    assert sorted(receiver.by_id()) == [f"evt_{n}" for n in range(5)]  # ... once per id
    assert webhooks.due_ids() == []


def test_an_attempt_in_flight_is_not_made_twice_until_its_lease_runs_out(
    app, private_ok, receiver, scheduled
):
    delivery = _emit(_key(receiver.url))
    assert webhooks.claim(delivery.id) is not None  # a worker took it, then died
    jobs.deliver(delivery.id)
    assert receiver.requests == [] and webhooks.due_ids() == []
    _advance(webhooks.LEASE_SECONDS + 1)
    assert webhooks.due_ids() == [delivery.id]
    jobs.deliver(delivery.id)
    assert len(receiver.requests) == 1 and _reload(delivery).status == "succeeded"


def test_a_dead_attempt_job_is_tried_again_after_the_lease(scheduled):
    jobs._attempt_died("webhook-5f0c6a57-8a7e-4a53-9a63-0d7f4c1b2e10-0a1b2c3d")
    assert scheduled == [("5f0c6a57-8a7e-4a53-9a63-0d7f4c1b2e10", webhooks.LEASE_SECONDS)]


def test_the_same_event_is_recorded_once(app, private_ok, receiver, scheduled):
    key = _key(receiver.url)
    jobs.emit(key.id, EVENT, "evt_1")
    jobs.emit(key.id, EVENT, "evt_1")
    assert db.session.scalar(db.select(db.func.count(WebhookDelivery.id))) == 1
    assert len(scheduled) == 1


def test_no_webhook_no_delivery(app, scheduled):
    key = _key()
    jobs.emit(key.id, EVENT, "evt_1")
    assert db.session.scalar(db.select(db.func.count(WebhookDelivery.id))) == 0
    assert scheduled == []


# --- 410, redirects -----------------------------------------------------------------------


def test_410_gone_disables_the_webhook_until_its_url_is_saved_again(
    app, private_ok, receiver, scheduled
):
    key = _key(receiver.url)
    receiver.answer(Reply(410))
    first = _emit(key, "evt_1")
    jobs.deliver(first.id)
    assert _reload(first).status == "disabled"
    assert len(scheduled) == 1  # no retry
    db.session.refresh(key)
    assert webhooks.describe(key)["status"] == "disabled"
    assert "410 Gone" in key.webhook_disabled_reason
    # Later events are recorded but not sent.
    second = _emit(key, "evt_2")
    assert second.status == "disabled" and len(scheduled) == 1
    with pytest.raises(WebhookRefused) as refused:
        webhooks.redeliver(second, key)
    assert refused.value.code == "webhook_disabled"
    # Saving the URL again enables it, with the same secret.
    secret = key.webhook_secret
    assert webhooks.save(key, receiver.url) is None
    db.session.commit()
    assert webhooks.describe(key)["status"] == "active" and key.webhook_secret == secret
    webhooks.redeliver(second, key)
    db.session.commit()
    jobs.deliver(second.id)
    assert _reload(second).status == "succeeded"
    assert [r.headers["webhook-id"] for r in receiver.requests] == ["evt_1", "evt_2"]


def test_pending_retries_stop_when_the_webhook_is_removed(app, private_ok, receiver, scheduled):
    key = _key(receiver.url)
    receiver.answer(Reply(500))
    delivery = _emit(key)
    jobs.deliver(delivery.id)
    webhooks.save(key, None)
    db.session.commit()
    _advance(10)
    jobs.deliver(delivery.id)
    assert _reload(delivery).status == "disabled" and len(receiver.requests) == 1


def test_a_redirect_is_not_followed(app, private_ok, receiver, scheduled):
    other = Receiver()
    try:
        receiver.answer(Reply(307, {"Location": other.url}))
        delivery = _emit(_key(receiver.url))
        jobs.deliver(delivery.id)
        attempt = _reload(delivery).attempts[0]
        assert attempt["status_code"] == 307 and "Redirects are not followed" in attempt["error"]
        assert other.requests == []
        assert _reload(delivery).status == "pending"
    finally:
        other.stop()


def test_the_receivers_body_is_never_kept(app, private_ok, receiver, scheduled):
    receiver.answer(Reply(500, body=b"stack trace with SECRET-TOKEN"))
    delivery = _emit(_key(receiver.url))
    jobs.deliver(delivery.id)
    assert "SECRET-TOKEN" not in json.dumps(
        webhooks.delivery_record(_reload(delivery)), default=str
    )


def test_redeliver_of_an_ended_delivery_is_one_more_attempt(app, private_ok, receiver, scheduled):
    key = _key(receiver.url)
    delivery = _emit(key)
    jobs.deliver(delivery.id)
    receiver.answer(Reply(500))
    webhooks.redeliver(_reload(delivery), key)
    db.session.commit()
    jobs.deliver(delivery.id)
    delivery = _reload(delivery)
    assert delivery.status == "failed" and delivery.attempt_count == 2
    assert len(scheduled) == 1  # no automatic retry of a manual attempt
    assert [r.headers["webhook-id"] for r in receiver.requests] == ["evt_1", "evt_1"]


# --- the SSRF guard -----------------------------------------------------------------------

REFUSED_ADDRESSES = [
    ("127.0.0.1", "loopback"),
    ("127.8.8.8", "loopback"),
    ("::1", "loopback"),
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("192.168.0.10", "private"),
    ("fc00::5", "private"),
    ("169.254.10.10", "link-local"),
    ("fe80::1", "link-local"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.127.255.254", "carrier-grade NAT"),
    ("224.0.0.251", "multicast"),
    ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    # Reserved (class E) and broadcast: the standard library counts them as private.
    ("240.0.0.1", "private"),
    ("255.255.255.255", "private"),
    ("192.0.2.1", "private"),
    ("169.254.169.254", "metadata"),
    ("fd00:ec2::254", "metadata"),
    ("::ffff:127.0.0.1", "IPv4-mapped"),
    ("::ffff:10.0.0.1", "IPv4-mapped"),
    ("::ffff:169.254.169.254", "metadata"),
]


def _bracketed(ip: str) -> str:
    return f"[{ip}]" if ":" in ip else ip


@pytest.mark.parametrize(("ip", "reason"), REFUSED_ADDRESSES)
def test_a_non_public_address_is_refused_when_saved(app, fake_dns, ip, reason):
    key = _key()
    fake_dns["hooks.example.test"] = [ip]
    for url in (f"https://{_bracketed(ip)}/hooks", "https://hooks.example.test/hooks"):
        with pytest.raises(WebhookRefused) as refused:
            webhooks.save(key, url)
        assert "only public addresses can receive webhooks" in refused.value.message
        assert reason.split()[0].lower() in refused.value.message.lower()
    assert key.webhook_url is None


@pytest.mark.parametrize(("ip", "reason"), REFUSED_ADDRESSES)
def test_a_non_public_address_is_refused_when_sent(
    app,
    fake_dns,
    receiver,
    scheduled,
    ip,
    reason,
):
    """The URL was saved while its name resolved to a public address; now it does not."""
    key = _key()
    key.webhook_url = f"http://hooks.example.test:{receiver.port}/hooks"
    db.session.commit()
    fake_dns["hooks.example.test"] = [ip]
    delivery = _emit(key)
    jobs.deliver(delivery.id)
    attempt = _reload(delivery).attempts[0]
    assert attempt["status_code"] is None
    assert "only public addresses can receive webhooks" in attempt["error"]
    assert receiver.requests == []


def test_the_metadata_address_stays_refused_with_private_targets_allowed(app, private_ok, fake_dns):
    fake_dns["hooks.example.test"] = ["169.254.169.254"]
    with pytest.raises(WebhookRefused, match="metadata"):
        webhooks.save(_key(), "http://hooks.example.test/")


def test_the_checked_address_is_the_one_connected_to(
    app,
    fake_dns,
    loopback_is_public,
    receiver,
    scheduled,
):
    """One lookup per attempt, the connection to its answer, the name in Host: a DNS answer
    that changes after the check cannot move the request elsewhere."""
    fake_dns["hooks.example.test"] = iter([["127.0.0.1"], ["10.0.0.1"]])
    key = _key()
    key.webhook_url = f"http://hooks.example.test:{receiver.port}/hooks"
    db.session.commit()
    delivery = _emit(key)
    jobs.deliver(delivery.id)
    assert _reload(delivery).status == "succeeded"
    assert fake_dns.lookups == ["hooks.example.test"]
    assert receiver.requests[0].headers["host"] == f"hooks.example.test:{receiver.port}"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://hooks.example.test/", "Only http and https"),
        ("https://user:pw@hooks.example.test/", "user name or password"),
        ("https://hooks.example.test:22/", "Port 22 is not accepted"),
        ("http://hooks.example.test:25/", "Port 25 is not accepted"),
        ("https://", "no host"),
        ("https://no-such-host.invalid/", "could not be resolved"),
        ("https://hooks.example.test/" + "a" * 2048, "longer than 2048"),
    ],
)
def test_bad_urls_are_refused_when_saved(app, fake_dns, url, message):
    fake_dns["hooks.example.test"] = ["93.184.215.14"]
    with pytest.raises(WebhookRefused, match=message):
        webhooks.save(_key(), url)


@pytest.mark.parametrize("port", [80, 443, 1024, 8080, 65535])
def test_public_urls_on_sensible_ports_are_saved(app, fake_dns, port):
    fake_dns["hooks.example.test"] = ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]
    key = _key()
    secret = webhooks.save(key, f" https://hooks.example.test:{port}/in?x=1 ")
    assert key.webhook_url == f"https://hooks.example.test:{port}/in?x=1"
    assert secret.startswith("whsec_") and secret == key.webhook_secret


def test_the_secret_is_new_when_a_webhook_is_created_and_only_then(app, private_ok, receiver):
    key = _key()
    created = webhooks.save(key, receiver.url)
    assert created is not None
    assert webhooks.save(key, receiver.url + "/other") is None
    assert webhooks.save(key, None) is None
    recreated = webhooks.save(key, receiver.url)
    assert recreated not in (None, created)
    rotated = webhooks.save(key, receiver.url, rotate_secret=True)
    assert rotated not in (None, recreated) and key.webhook_secret == rotated
    assert rotated not in json.dumps(webhooks.describe(key), default=str)


def test_redeliver_waits_for_an_attempt_in_flight(app, private_ok, receiver, scheduled):
    key = _key(receiver.url)
    delivery = _emit(key)
    assert webhooks.claim(delivery.id) is not None
    with pytest.raises(WebhookRefused) as refused:
        webhooks.redeliver(_reload(delivery), key)
    assert refused.value.status == 409 and refused.value.code == "delivery_in_progress"
