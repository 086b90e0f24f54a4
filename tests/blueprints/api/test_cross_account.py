"""Every route that names an account's resource by id answers 404 to every other account,
the same as for an id that does not exist, and changes nothing of the owner's.

Runs on PostgreSQL and Redis with no worker: queued runs stay queued, so a refused cancel
can be seen to have changed nothing.
"""

import uuid

import pytest

from extensions import db
from jobs import webhooks
from models import ApiKey
from services import keys
from tests.helpers import auth

# Routes whose path names a resource that belongs to an account: (method, rule) -> the kind
# of resource the owner makes for it.
OWNED = {
    ("GET", "/v1/tools/run/<uuid:run_id>/status"): "tool_run",
    ("GET", "/v1/tools/run/<uuid:run_id>/events"): "tool_run",
    ("POST", "/v1/tools/run/<uuid:run_id>/cancel"): "queued_run",
    ("GET", "/v1/audiobooks/<uuid:run_id>"): "audiobook",
    ("DELETE", "/v1/files/<string:file_id>"): "file",
    ("GET", "/v1/webhook/deliveries/<uuid:delivery_id>"): "delivery",
    ("POST", "/v1/webhook/deliveries/<uuid:delivery_id>/redeliver"): "delivery",
    ("GET", "/v1/workflows/run/<uuid:run_id>/status"): "workflow_run",
    ("GET", "/v1/workflows/run/<uuid:run_id>/events"): "workflow_run",
    ("POST", "/v1/workflows/run/<uuid:run_id>/cancel"): "workflow_run",
    ("GET", "/v1/embeds/<uuid:embed_id>"): "embed",
    ("PATCH", "/v1/embeds/<uuid:embed_id>"): "embed",
    ("DELETE", "/v1/embeds/<uuid:embed_id>"): "embed",
}
# Routes with a path parameter that names nothing of an account's: catalogue entries, and
# stored files' GET, whose unguessable id is the capability (DELETE needs the owner's key).
NOT_OWNED = {
    ("GET", "/v1/tools/<slug:slug>"),
    ("POST", "/v1/public/tools/<slug:slug>/run"),
    ("GET", "/v1/workflows/<slug:workflow_id>"),
    ("GET", "/v1/files/<string:file_id>"),
}


def test_every_route_with_an_id_is_checked_here(app):
    routes = {
        (method, rule.rule)
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith("/v1/") and "<" in rule.rule
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    assert routes == set(OWNED) | NOT_OWNED


def _tool_run(client, raw):
    response = client.post(
        "/v1/tools/run", headers=auth(raw), json={"slug": "word-counter", "input": "one two"}
    )
    assert response.status_code == 200, response.get_json()
    run_id = response.get_json()["run_id"]
    return run_id, f"/v1/tools/run/{run_id}/status"


def _queued_run(client, raw):
    response = client.post(
        "/v1/tools/run",
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": "tweet-thread-writer", "input": "Caching made our CI four times faster."},
    )
    assert response.status_code == 202, response.get_json()
    run_id = response.get_json()["run_id"]
    return run_id, f"/v1/tools/run/{run_id}/status"


def _audiobook(client, raw):
    response = client.post(
        "/v1/audiobooks",
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"text": "Chapter 1\n\nHello there."},
    )
    assert response.status_code == 202, response.get_json()
    run_id = response.get_json()["run_id"]
    return run_id, f"/v1/audiobooks/{run_id}"


def _file(client, raw):
    response = client.post(
        "/v1/tools/run",
        headers=auth(raw),
        json={"slug": "qr-code-generator", "input": "https://example.com"},
    )
    assert response.status_code == 200, response.get_json()
    url = response.get_json()["output"]["image"]["url"]
    file_id = url.rsplit("/", 1)[1]
    return file_id, f"/v1/files/{file_id}"


def _delivery(client, raw):
    saved = client.put("/v1/webhook", headers=auth(raw), json={"url": "http://127.0.0.1:9999/hook"})
    assert saved.status_code == 200, saved.get_json()
    key = db.session.scalar(db.select(ApiKey).where(ApiKey.key_hash == keys.hash_key(raw)))
    event = {
        "event": "tool.completed",
        "run_id": str(uuid.uuid4()),
        "tool": "word-counter",
        "duration_ms": 3,
        "output_excerpt": "{}",
    }
    webhooks.emit(key.id, event, "evt_cross_account")
    listed = client.get("/v1/webhook/deliveries", headers=auth(raw)).get_json()
    delivery_id = listed["deliveries"][0]["id"]
    return delivery_id, f"/v1/webhook/deliveries/{delivery_id}"


def _workflow_run(client, raw):
    workflow = client.get("/v1/workflows/product-launch", headers=auth(raw)).get_json()
    response = client.post(
        "/v1/workflows/run",
        headers=auth(raw),
        json={"workflow_id": "product-launch", "input": workflow["example"]["input"]},
    )
    assert response.status_code == 202, response.get_json()
    run_id = response.get_json()["run_id"]
    return run_id, f"/v1/workflows/run/{run_id}/status"


def _embed(client, raw):
    response = client.post(
        "/v1/embeds",
        headers=auth(raw),
        json={"tool": "word-counter", "allowed_origins": ["https://client.example.com"]},
    )
    assert response.status_code == 201, response.get_json()
    embed_id = response.get_json()["id"]
    return embed_id, f"/v1/embeds/{embed_id}"


MAKE = {
    "tool_run": _tool_run,
    "queued_run": _queued_run,
    "audiobook": _audiobook,
    "file": _file,
    "delivery": _delivery,
    "workflow_run": _workflow_run,
    "embed": _embed,
}


@pytest.fixture
def private_webhooks(app):
    app.config["FETCH_ALLOW_PRIVATE"] = True


@pytest.mark.parametrize(("method", "rule"), sorted(OWNED), ids=lambda value: str(value))
def test_another_account_gets_404_and_changes_nothing(
    client, make_key, private_webhooks, monkeypatch, method, rule
):
    monkeypatch.setattr(webhooks, "schedule", lambda delivery_id, delay=0: None)
    owner, stranger = make_key("agency"), make_key("agency")
    resource_id, view = MAKE[OWNED[(method, rule)]](client, owner)
    before = client.get(view, headers=auth(owner))
    assert before.status_code == 200

    path = rule.split("<", 1)[0] + "{id}" + rule.split(">", 1)[1]
    for target in (resource_id, _unknown_like(resource_id)):
        refused = client.open(path.format(id=target), method=method, headers=auth(stranger))
        assert refused.status_code == 404, (target, refused.get_json())
        assert refused.mimetype == "application/problem+json"
        assert refused.get_json()["code"].endswith("_not_found")

    after = client.get(view, headers=auth(owner))
    assert after.status_code == 200
    if after.mimetype == "application/json":
        assert _without_clock(after.get_json()) == _without_clock(before.get_json())
    else:
        assert after.get_data() == before.get_data()


def _unknown_like(resource_id: str) -> str:
    """An id of the same form that names nothing."""
    try:
        uuid.UUID(resource_id)
    except ValueError:
        return resource_id[:-4] + "0000" if not resource_id.endswith("0000") else "f_unknown"
    return str(uuid.uuid4())


def _without_clock(body: dict) -> dict:
    """What may change while nothing happens: nothing but remaining-time style fields."""
    return {key: value for key, value in body.items() if key not in {"next_attempt_in"}}
