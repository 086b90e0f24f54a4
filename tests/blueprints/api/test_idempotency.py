"""Idempotency-Key on the run endpoints (DESIGN.md section 7)."""

import pytest

from extensions import db
from models import Run
from tests.conftest import auth

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
