"""tool.completed / tool.failed reach the key's webhook when the caller stopped waiting."""

import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from extensions import db
from models import ApiKey
from services.events import canonical
from tests.blueprints.api.test_queued_runs import DISPATCH, TEXT, TOOL, _until_ended
from tests.helpers import app_config, auth


@pytest.fixture
def receiver():
    """A webhook receiver on loopback that records what it is sent."""
    received = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((dict(self.headers), body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hooks", received
    server.shutdown()
    server.server_close()


@pytest.fixture
def events_app(tmp_path):
    from flask_migrate import upgrade

    from app import create_app
    from tests.helpers import clean

    app = create_app(
        app_config(
            SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp_path / 'events.db'}",
            REDIS_URL=None,
            RATELIMIT_STORAGE_URI="memory://",
            FETCH_ALLOW_PRIVATE=True,
        )
    )
    with app.app_context():
        upgrade()
    yield from clean(app)


def _key_with_webhook(url):
    from services import accounts, keys

    account = accounts.create_account("hooks@example.com", "pro")
    key, raw = keys.create_key(account, "hooks")
    key.webhook_url = url
    db.session.commit()
    return raw, key.webhook_secret


def _wait_for(received, count=1, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(received) < count:
        time.sleep(0.02)
    return received


def test_respond_async_run_emits_a_signed_tool_completed(events_app, receiver):
    url, received = receiver
    client = events_app.test_client()
    raw, secret = _key_with_webhook(url)
    response = client.post(
        DISPATCH,
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": TEXT},
    )
    run_id = response.get_json()["run_id"]
    _until_ended(client, raw, response.headers["Location"])
    headers, body = _wait_for(received)[0]
    payload = json.loads(body)
    assert set(payload) == {
        "event",
        "run_id",
        "tool",
        "duration_ms",
        "output_excerpt",
        "delivered_at",
        "signature",
    }
    assert payload["event"] == "tool.completed"
    assert payload["run_id"] == run_id and payload["tool"] == TOOL
    assert payload["delivered_at"].endswith("Z")
    assert len(payload["output_excerpt"]) <= 280 and '"words":3' in payload["output_excerpt"]
    # The body field signs the canonical payload without the signature ...
    unsigned = {k: v for k, v in payload.items() if k != "signature"}
    expected = hmac.new(secret.encode(), canonical(unsigned), hashlib.sha256).hexdigest()
    assert payload["signature"] == f"sha256={expected}"
    # ... the header the exact raw body, and Standard Webhooks the id.timestamp.body.
    raw_sig = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-SVC-Signature"] == f"sha256={raw_sig}"
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    key = base64.b64decode(secret.removeprefix("whsec_"))
    standard = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    assert headers["webhook-signature"] == f"v1,{standard}"
    assert headers["webhook-id"] == f"evt_{run_id}"


def test_a_failed_run_emits_tool_failed_with_the_error(events_app, receiver, monkeypatch):
    from engines import ProviderUnavailable

    def down(tool, inputs):
        raise ProviderUnavailable("The model provider is down.")

    monkeypatch.setattr("services.runs.run_tool", down)
    url, received = receiver
    client = events_app.test_client()
    raw, _secret = _key_with_webhook(url)
    response = client.post(
        DISPATCH,
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": TEXT},
    )
    assert _until_ended(client, raw, response.headers["Location"])["status"] == "failed"
    payload = json.loads(_wait_for(received)[0][1])
    assert payload["event"] == "tool.failed"
    assert payload["output_excerpt"] == "The model provider is down."


def test_a_result_returned_synchronously_emits_nothing(events_app, receiver, monkeypatch):
    import dataclasses

    from catalogue import load_catalogue

    tool = dataclasses.replace(load_catalogue().get(TOOL), queue=True)
    monkeypatch.setattr("blueprints.api.tools.runs.find_tool", lambda slug: tool)
    url, received = receiver
    client = events_app.test_client()
    raw, _secret = _key_with_webhook(url)
    response = client.post(DISPATCH, headers=auth(raw), json={"slug": TOOL, "input": TEXT})
    assert response.status_code == 200
    time.sleep(0.5)
    assert received == []


def test_no_webhook_url_means_no_delivery(events_app, receiver):
    url, received = receiver
    client = events_app.test_client()
    raw, _secret = _key_with_webhook(url)
    key = db.session.scalar(db.select(ApiKey))
    key.webhook_url = None
    db.session.commit()
    response = client.post(
        DISPATCH,
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": TEXT},
    )
    _until_ended(client, raw, response.headers["Location"])
    time.sleep(0.3)
    assert received == []


def test_a_private_webhook_address_is_refused_without_the_operator_setting(embedded_app, receiver):
    url, received = receiver
    client = embedded_app.test_client()
    raw, _secret = _key_with_webhook(url)
    response = client.post(
        DISPATCH,
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": TEXT},
    )
    assert _until_ended(client, raw, response.headers["Location"])["status"] == "succeeded"
    time.sleep(0.5)
    assert received == []
