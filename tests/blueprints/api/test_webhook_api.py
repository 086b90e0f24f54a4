"""/v1/webhook: the calling key's URL and secret, its deliveries, redelivery and the test
event, through the v1 pipeline (and one real RQ worker delivering with its scheduler)."""

import json
import logging
import time
import uuid

import pytest
from standardwebhooks import Webhook

from extensions import db
from jobs import webhooks as jobs
from models import ApiKey, WebhookDelivery
from services import keys
from tests.fakes.webhook_receiver import Reply
from tests.helpers import auth, needs_pg, needs_redis

EVENT = {
    "event": "tool.completed",
    "run_id": "0b8f6c1e-4f3a-4c7e-9a51-2d5e8f7a9c10",
    "tool": "word-counter",
    "duration_ms": 12,
    "output_excerpt": '{"words":3}',
}


@pytest.fixture
def private_ok(app):
    app.config["FETCH_ALLOW_PRIVATE"] = True


@pytest.fixture
def scheduled(monkeypatch):
    queued = []
    monkeypatch.setattr(jobs, "schedule", lambda delivery_id, delay=0: queued.append(delivery_id))
    monkeypatch.setattr(
        "blueprints.api.webhook.routes.schedule",
        lambda delivery_id, delay=0: queued.append(delivery_id),
    )
    return queued


def _row(raw: str) -> ApiKey:
    return db.session.scalar(db.select(ApiKey).where(ApiKey.key_hash == keys.hash_key(raw)))


def _put(client, raw, body):
    return client.put("/v1/webhook", headers=auth(raw), json=body)


def _with_webhook(client, raw, url) -> str:
    response = _put(client, raw, {"url": url})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["secret"]


# --- settings -----------------------------------------------------------------------------


def test_a_new_key_has_no_webhook(client, make_key):
    raw = make_key()
    response = client.get("/v1/webhook", headers=auth(raw))
    assert response.status_code == 200
    body = response.get_json()
    assert body["url"] is None and body["status"] == "not_set"
    assert "secret" not in body and body["secret_hint"].startswith("whsec_")
    assert "workflow.failed" in body["events"]
    assert response.headers["RateLimit-Policy"]


def test_the_secret_is_shown_on_creation_and_rotation_only(
    client, make_key, private_ok, receiver, caplog
):
    caplog.set_level(logging.DEBUG)
    raw = make_key()
    created = _put(client, raw, {"url": receiver.url})
    assert created.status_code == 200
    assert created.headers["Cache-Control"] == "no-store"
    first = created.get_json()["secret"]
    assert first.startswith("whsec_") and created.get_json()["status"] == "active"
    assert first == _row(raw).webhook_secret
    shown = client.get("/v1/webhook", headers=auth(raw)).get_json()
    assert "secret" not in shown and shown["secret_hint"] == first[:10] + "…"
    # Changing the URL keeps the secret, unseen.
    moved = _put(client, raw, {"url": receiver.url + "/v2"}).get_json()
    assert "secret" not in moved and moved["url"] == receiver.url + "/v2"
    rotated = _put(client, raw, {"rotate_secret": True}).get_json()
    assert rotated["secret"] not in (None, first) and rotated["url"] == receiver.url + "/v2"
    # Removing the webhook and creating it again makes (and shows) a new secret.
    cleared = _put(client, raw, {"url": None}).get_json()
    assert cleared["status"] == "not_set" and "secret" not in cleared
    again = _put(client, raw, {"url": receiver.url}).get_json()["secret"]
    assert again not in (first, rotated["secret"])
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert first not in logged and again not in logged


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.com/"}, "url"),
        ({"url": "http://127.0.0.1:8080/hooks"}, "url"),
        ({"url": "http://[::ffff:169.254.169.254]/"}, "url"),
        ({"url": ""}, "url"),
        ({"url": 5}, "url"),
        ({"rotate_secret": "yes please"}, "rotate_secret"),
        ({"events": ["tool.completed"]}, "events"),
    ],
)
def test_bad_settings_are_422_with_the_field(client, make_key, body, field):
    raw = make_key()
    response = _put(client, raw, body)
    assert response.status_code == 422
    problem = response.get_json()
    assert response.mimetype == "application/problem+json"
    assert problem["code"] == "validation_failed" and field in problem["errors"]
    assert _row(raw).webhook_url is None


def test_a_private_target_is_refused_at_save_with_a_reason(client, make_key):
    response = _put(client, make_key(), {"url": "http://127.0.0.1:8080/hooks"})
    assert "loopback" in response.get_json()["errors"]["url"][0]


def test_refusals_follow_the_pipeline(client, make_key):
    assert client.get("/v1/webhook").status_code == 401
    assert _put(client, "svc_" + "x" * 40, {"url": None}).status_code == 401
    free = make_key("free")
    refused = client.get("/v1/webhook", headers=auth(free))
    assert refused.status_code == 403 and refused.get_json()["code"] == "plan_required"
    raw = make_key()
    broken = client.put(
        "/v1/webhook",
        headers={**auth(raw), "Content-Type": "application/json"},
        data="{not json",
    )
    assert broken.status_code == 400 and broken.get_json()["code"] == "invalid_json"
    wrong_type = client.put(
        "/v1/webhook", headers=auth(raw), data="url=x", content_type="text/plain"
    )
    assert wrong_type.status_code == 415


def test_the_per_minute_limit_applies(client, make_key):
    raw = make_key(per_minute_override=2)
    statuses = [client.get("/v1/webhook", headers=auth(raw)).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


# --- test event ---------------------------------------------------------------------------


def test_the_test_event_reports_status_and_latency(client, make_key, private_ok, receiver):
    raw = make_key()
    secret = _with_webhook(client, raw, receiver.url)
    response = client.post("/v1/webhook/test", headers=auth(raw))
    assert response.status_code == 200
    result = response.get_json()
    assert result["status"] == "succeeded" and result["status_code"] == 204
    assert result["latency_ms"] >= 0 and result["error"] is None
    (received,) = receiver.requests
    payload = Webhook(secret).verify(received.body, received.headers)
    assert payload["event"] == "webhook.test"
    assert received.headers["webhook-id"] == result["event_id"]
    listed = client.get("/v1/webhook/deliveries", headers=auth(raw)).get_json()["deliveries"]
    assert [d["id"] for d in listed] == [result["delivery_id"]]


def test_the_test_event_never_shows_the_receivers_body(client, make_key, private_ok, receiver):
    raw = make_key()
    _with_webhook(client, raw, receiver.url)
    receiver.answer(Reply(500, body=b"internal SECRET-DETAIL"))
    response = client.post("/v1/webhook/test", headers=auth(raw))
    result = response.get_json()
    assert result["status"] == "failed" and result["status_code"] == 500
    assert "SECRET-DETAIL" not in response.get_data(as_text=True)
    detail = client.get(f"/v1/webhook/deliveries/{result['delivery_id']}", headers=auth(raw))
    assert "SECRET-DETAIL" not in detail.get_data(as_text=True)
    assert detail.get_json()["status"] == "failed"  # a test event is sent once


def test_the_test_event_needs_a_webhook(client, make_key):
    response = client.post("/v1/webhook/test", headers=auth(make_key()))
    assert response.status_code == 409 and response.get_json()["code"] == "webhook_not_set"


# --- deliveries ---------------------------------------------------------------------------


def _emit_many(raw: str, count: int) -> list[str]:
    key = _row(raw)
    for n in range(count):
        jobs.emit(key.id, {**EVENT, "run_id": str(uuid.uuid4())}, f"evt_{n}")
    return [f"evt_{n}" for n in range(count)]


def test_deliveries_are_listed_newest_first_page_by_page(
    client, make_key, private_ok, receiver, scheduled
):
    raw = make_key()
    _with_webhook(client, raw, receiver.url)
    emitted = _emit_many(raw, 5)
    seen, cursor = [], None
    while True:
        query = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/webhook/deliveries", headers=auth(raw), query_string=query)
        assert page.status_code == 200
        body = page.get_json()
        assert len(body["deliveries"]) <= 2
        seen += [d["event_id"] for d in body["deliveries"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(emitted))
    first = client.get("/v1/webhook/deliveries", headers=auth(raw)).get_json()["deliveries"][0]
    assert first["status"] == "pending" and first["attempts"] == []
    assert first["max_attempts"] == 8 and first["payload"]["tool"] == "word-counter"


def test_deliveries_filter_by_status_and_show_every_attempt(
    client, make_key, private_ok, receiver, scheduled
):
    raw = make_key()
    _with_webhook(client, raw, receiver.url)
    _emit_many(raw, 2)
    receiver.answer(Reply(503, {"Retry-After": "30"}))
    for delivery_id in list(scheduled):
        jobs.deliver(delivery_id)
    pending = client.get(
        "/v1/webhook/deliveries", headers=auth(raw), query_string={"status": "pending"}
    ).get_json()["deliveries"]
    succeeded = client.get(
        "/v1/webhook/deliveries", headers=auth(raw), query_string={"status": "succeeded"}
    ).get_json()["deliveries"]
    assert len(pending) == len(succeeded) == 1
    (attempt,) = pending[0]["attempts"]
    assert attempt["status_code"] == 503 and attempt["retry_after"] == 30
    assert attempt["url"] == receiver.url and attempt["number"] == 1
    assert pending[0]["next_attempt_at"] is not None
    assert succeeded[0]["attempts"][0]["status_code"] == 204


@pytest.mark.parametrize(
    "query",
    [{"status": "lost"}, {"limit": 0}, {"limit": 101}, {"cursor": "nope"}, {"colour": "red"}],
)
def test_bad_listing_queries_are_422(client, make_key, query):
    response = client.get("/v1/webhook/deliveries", headers=auth(make_key()), query_string=query)
    assert response.status_code == 422 and response.get_json()["code"] == "validation_failed"


def test_redeliver_sends_the_same_event_again(client, make_key, private_ok, receiver, scheduled):
    raw = make_key()
    secret = _with_webhook(client, raw, receiver.url)
    _emit_many(raw, 1)
    jobs.deliver(scheduled.pop())
    delivery_id = db.session.scalar(db.select(WebhookDelivery.id))
    response = client.post(f"/v1/webhook/deliveries/{delivery_id}/redeliver", headers=auth(raw))
    assert response.status_code == 202
    assert response.headers["Location"].endswith(f"/v1/webhook/deliveries/{delivery_id}")
    assert response.get_json()["status"] == "pending"
    assert scheduled == [delivery_id]
    jobs.deliver(scheduled.pop())
    first, second = receiver.requests
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == "evt_0"
    Webhook(secret).verify(second.body, second.headers)
    record = client.get(response.headers["Location"], headers=auth(raw)).get_json()
    assert record["status"] == "succeeded" and record["attempt_count"] == 2


def test_redeliver_needs_an_enabled_webhook(client, make_key, private_ok, receiver, scheduled):
    raw = make_key()
    _with_webhook(client, raw, receiver.url)
    _emit_many(raw, 1)
    delivery_id = db.session.scalar(db.select(WebhookDelivery.id))
    _put(client, raw, {"url": None})
    response = client.post(f"/v1/webhook/deliveries/{delivery_id}/redeliver", headers=auth(raw))
    assert response.status_code == 409 and response.get_json()["code"] == "webhook_not_set"


# --- another account's deliveries are invisible -------------------------------------------

ROUTES_WITH_AN_ID = [
    ("get", "/v1/webhook/deliveries/{id}"),
    ("post", "/v1/webhook/deliveries/{id}/redeliver"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES_WITH_AN_ID)
def test_another_accounts_delivery_is_not_found(
    client, make_key, private_ok, receiver, scheduled, method, path
):
    owner = make_key()
    _with_webhook(client, owner, receiver.url)
    _emit_many(owner, 1)
    delivery_id = db.session.scalar(db.select(WebhookDelivery.id))
    stranger = make_key()
    _with_webhook(client, stranger, receiver.url)
    for target in (delivery_id, str(uuid.uuid4())):
        response = getattr(client, method)(path.format(id=target), headers=auth(stranger))
        assert response.status_code == 404
        assert response.get_json()["code"] == "delivery_not_found"
    listed = client.get("/v1/webhook/deliveries", headers=auth(stranger)).get_json()
    assert listed["deliveries"] == []
    assert getattr(client, method)(
        path.format(id=delivery_id), headers=auth(owner)
    ).status_code in (
        200,
        202,
    )


def test_another_keys_settings_are_untouched(client, make_key, private_ok, receiver):
    first, second = make_key(), make_key()
    _with_webhook(client, first, receiver.url)
    assert client.get("/v1/webhook", headers=auth(second)).get_json()["url"] is None
    _put(client, second, {"url": None, "rotate_secret": True})
    assert _row(first).webhook_url == receiver.url


# --- a real worker ------------------------------------------------------------------------


@pytest.fixture
def worker_allowing_private(monkeypatch, request):
    """``flask worker`` (RQ, with its scheduler) in a deployment that allows private
    targets, so that it may deliver to the loopback receiver."""
    monkeypatch.setenv("FETCH_ALLOW_PRIVATE", "1")
    return request.getfixturevalue("rq_worker")


@needs_pg
@needs_redis
def test_a_real_worker_delivers_and_retries_on_rqs_scheduler(
    client, make_key, private_ok, receiver, worker_allowing_private
):
    raw = make_key()
    secret = _with_webhook(client, raw, receiver.url)
    receiver.answer(Reply(503))  # the first attempt fails; the retry comes ~5 s later
    jobs.emit(_row(raw).id, EVENT, "evt_worker")
    received = receiver.wait_for(2, seconds=40)
    assert len(received) == 2, "the worker did not retry"
    # 5 s ± 10 %, and RQ's scheduler looks for due jobs every second or so.
    assert 4.5 <= received[1].at - received[0].at < 8
    payload = Webhook(secret).verify(received[1].body, received[1].headers)
    assert payload["run_id"] == EVENT["run_id"]
    assert {r.headers["webhook-id"] for r in received} == {"evt_worker"}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        record = client.get("/v1/webhook/deliveries", headers=auth(raw)).get_json()
        if record["deliveries"][0]["status"] == "succeeded":
            break
        time.sleep(0.1)
    delivery = record["deliveries"][0]
    assert delivery["status"] == "succeeded"
    assert [a["status_code"] for a in delivery["attempts"]] == [503, 204]
    assert json.loads(received[1].body)["event"] == "tool.completed"


def test_a_put_without_a_body_is_422(client, make_key):
    raw = make_key()
    response = client.put("/v1/webhook", headers=auth(raw))
    assert response.status_code == 422
    assert response.get_json()["errors"] == {"": ["The body is required: send a JSON object."]}
    assert client.put("/v1/webhook", headers=auth(raw), json={}).status_code == 200
