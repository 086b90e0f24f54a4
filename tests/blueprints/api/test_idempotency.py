"""Idempotency-Key on the run endpoints (docs/architecture/request-pipeline.md)."""

import json
import os
import signal
import socket
import time

import pytest

from extensions import db
from models import Run
from services import idempotency
from tests.helpers import auth, needs_pg, needs_redis
from tests.test_slow_clients import web_command

DISPATCH = "/v1/tools/run"
BODY = {"slug": "word-counter", "input": "one two three"}


def _post(client, raw, key, body=BODY, **headers):
    return client.post(
        DISPATCH, headers={**auth(raw), "Idempotency-Key": key, **headers}, json=body
    )


def _runs() -> int:
    return db.session.scalar(db.select(db.func.count(Run.id)))


def test_same_key_same_request_replays_the_first_answer(client, make_key):
    raw = make_key()
    first = _post(client, raw, "order-1")
    again = _post(client, raw, "order-1")
    assert first.status_code == again.status_code == 200
    assert again.get_json() == first.get_json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert _runs() == 1
    usage = client.get("/v1/public/whoami", headers=auth(raw)).get_json()["usage"]
    assert usage["calls_today"] == 1


def test_same_key_on_a_different_request_is_422(client, make_key):
    raw = make_key()
    _post(client, raw, "order-2")
    other = _post(client, raw, "order-2", body={**BODY, "input": "something else"})
    assert other.status_code == 422
    assert other.get_json()["code"] == "idempotency_key_reused"


def test_keys_are_scoped_per_api_key(client, make_key):
    first, second = make_key(), make_key()
    a = _post(client, first, "shared-key")
    b = _post(client, second, "shared-key")
    assert a.get_json()["run_id"] != b.get_json()["run_id"]
    assert "Idempotent-Replayed" not in b.headers


def test_a_202_is_replayed_with_its_location(client, make_key):
    raw = make_key()
    first = _post(client, raw, "async-1", Prefer="respond-async")
    again = _post(client, raw, "async-1", Prefer="respond-async")
    assert first.status_code == again.status_code == 202
    assert again.headers["Location"] == first.headers["Location"]
    assert again.get_json()["run_id"] == first.get_json()["run_id"]


def test_a_refusal_that_did_not_start_the_run_leaves_the_key_free(client, make_key):
    raw = make_key("pro", daily_override=0)
    assert _post(client, raw, "retry-me").status_code == 429
    # Once the key has quota again the same request with the same key runs.
    from models import ApiKey
    from services import keys

    key = db.session.scalar(db.select(ApiKey))
    key.daily_override = 5
    db.session.commit()
    keys.forget()
    assert _post(client, raw, "retry-me").status_code == 200


def test_in_flight_duplicate_is_409(client, make_key, app):
    raw = make_key()
    from services import idempotency

    with app.test_request_context():
        from services.keys import resolve

        context = resolve(raw)
        request_print = idempotency.fingerprint(
            "POST", DISPATCH, client.application.json.dumps(BODY).encode()
        )
        assert idempotency.claim(context.key_id, "busy-key", request_print).state == "new"
    response = _post(client, raw, "busy-key")
    assert response.status_code == 409
    assert response.get_json()["code"] == "idempotency_in_flight"


@pytest.mark.parametrize("bad", ["", "x" * 256])
def test_malformed_keys_are_422(client, make_key, bad):
    response = _post(client, make_key(), bad)
    assert response.status_code == 422
    assert "Idempotency-Key" in response.get_json()["errors"]


# --- a claim in flight is a lease -----------------------------------------------------------


@needs_redis
def test_a_claim_in_flight_is_a_short_lease_renewed_while_its_request_runs(app, monkeypatch):
    monkeypatch.setattr(idempotency, "LEASE_SECONDS", 1)
    client = app.extensions["redis"]
    slot = idempotency.claim("key-1", "order-9", "print")
    assert slot.state == "new"
    stored = idempotency._key("key-1", "order-9")
    assert 0 < client.ttl(stored) <= 1
    time.sleep(2.5)  # past the lease twice over: renewed meanwhile
    assert idempotency.claim("key-1", "order-9", "print").state == "in_flight"
    idempotency.complete("key-1", "order-9", "print", {"status": 200, "body": "{}"})
    assert client.ttl(stored) > 23 * 3600  # the answer is kept a day
    time.sleep(1.5)  # and no renewal cuts it short
    assert client.ttl(stored) > 23 * 3600


@needs_redis
def test_a_claim_whose_process_died_is_free_once_its_lease_ends(app, monkeypatch):
    monkeypatch.setattr(idempotency, "LEASE_SECONDS", 1)
    assert idempotency.claim("key-2", "order-9", "print").state == "new"
    app.extensions["idempotency_leases"]._held.clear()  # its process stopped renewing
    assert idempotency.claim("key-2", "order-9", "print").state == "in_flight"
    time.sleep(1.6)
    assert idempotency.claim("key-2", "order-9", "print").state == "new"


@needs_pg
@needs_redis
def test_a_retry_after_the_web_process_was_killed_mid_request_is_not_refused_past_the_lease(
    app, make_key, tmp_path
):
    """The Procfile's web command is SIGKILLed while a request holds its key (a queued run
    waited for, with no worker to run it); once the command is back, a retry with the same
    key runs within the lease (it was refused for a day)."""
    raw = make_key("pro")
    with web_command(tmp_path) as web:
        _kill_mid_request_and_retry(web, raw, app.extensions["redis"])


def _kill_mid_request_and_retry(web, raw: str, redis_client) -> None:
    body = json.dumps(
        {"slug": "abstractive-summarizer", "input": "Flask is a small web framework. " * 3}
    ).encode()
    head = (
        f"POST /v1/tools/run HTTP/1.1\r\nHost: 127.0.0.1\r\nX-SVC-API-Key: {raw}\r\n"
        f"Idempotency-Key: killed-1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
    ).encode()
    waiting = socket.create_connection(("127.0.0.1", web.port), timeout=30)
    waiting.sendall(head + b"Prefer: wait=30\r\n\r\n" + body)
    claimed = _until(lambda: redis_client.keys("idem:*"), 10)
    assert claimed, "the request never claimed its key"
    os.killpg(web.process.pid, signal.SIGKILL)
    web.process.wait(10)
    waiting.close()
    killed_at = time.monotonic()
    web.start()
    statuses = []
    while time.monotonic() - killed_at < idempotency.LEASE_SECONDS + 15:
        retry = socket.create_connection(("127.0.0.1", web.port), timeout=30)
        with retry:
            retry.sendall(head + b"Prefer: respond-async\r\nConnection: close\r\n\r\n" + body)
            answer = b""
            while chunk := retry.recv(65536):
                answer += chunk
        statuses.append(int(answer.split(b" ", 2)[1]))
        if statuses[-1] != 409:
            break
        time.sleep(0.5)
    assert statuses[-1] == 202, statuses
    assert time.monotonic() - killed_at < idempotency.LEASE_SECONDS + 15


def _until(check, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.05)
    return None
