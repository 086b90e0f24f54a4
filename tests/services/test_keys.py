"""Keys: format, hashing only, and the raw key never stored or logged."""

import logging
import re
import threading

import pytest
import requests
import sqlalchemy as sa
from werkzeug.serving import make_server

from extensions import db
from models import ApiKey
from services import keys
from tests.helpers import auth


def test_raw_key_format():
    raw = keys.generate_raw_key()
    assert re.fullmatch(r"svc_[A-Za-z0-9]{40}", raw)
    assert keys.looks_like_key(raw)
    assert keys.generate_raw_key() != raw


def test_only_the_sha256_is_stored(app, make_key):
    raw = make_key()
    key = db.session.scalar(db.select(ApiKey))
    assert key.key_hash == keys.hash_key(raw)
    assert len(key.key_hash) == 64
    assert key.hint == f"{raw[:8]}…{raw[-4:]}"


def test_raw_key_appears_nowhere_in_the_database_or_logs(client, make_key, caplog):
    caplog.set_level(logging.DEBUG)
    raw = make_key()
    client.get("/v1/public/whoami", headers=auth(raw))
    client.post("/v1/public/tools/word-counter/run", headers=auth(raw), json={"input": "hi"})
    client.post("/v1/public/tools/nope/run", headers=auth(raw), json={"input": "hi"})
    assert raw not in caplog.text
    assert raw[4:] not in caplog.text
    # Every text column of every table.
    for table in db.metadata.sorted_tables:
        rows = db.session.execute(sa.select(table)).all()
        assert raw not in repr(rows)
        assert raw[4:] not in repr(rows)


def test_regenerate_keeps_name_and_webhook_and_revokes_the_old_key(client, make_key, runner):
    raw = make_key()
    key = db.session.scalar(db.select(ApiKey))
    key.webhook_url = "https://hooks.example.com/x"
    db.session.commit()
    result = runner.invoke(args=["keys", "regenerate", key.hint])
    assert result.exit_code == 0, result.output
    new_raw = result.output.strip().splitlines()[-1]
    assert keys.looks_like_key(new_raw) and new_raw != raw
    assert client.get("/v1/public/whoami", headers=auth(raw)).status_code == 401
    who = client.get("/v1/public/whoami", headers=auth(new_raw)).get_json()
    assert who["key"]["name"] == "test key"
    new_key = db.session.scalar(db.select(ApiKey).where(ApiKey.revoked_at.is_(None)))
    assert new_key.webhook_url == "https://hooks.example.com/x"
    assert new_key.webhook_secret == key.webhook_secret


# --- keys in logs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        '"GET /v1/public/whoami?api_key={key} HTTP/1.1" 401 -',
        '"GET /v1/public/whoami?q=1&API-KEY={key}&x=2 HTTP/1.1" 401 -',
        '"GET /v1/public/whoami?token={key} HTTP/1.1" 401 -',
        '"GET /v1/tools/?k={key} HTTP/1.1" 200 -',
    ],
)
def test_a_key_in_a_log_line_is_redacted(line):
    raw = keys.generate_raw_key()
    redacted = keys.redact_secrets(line.format(key=raw))
    assert raw not in redacted and raw[4:12] not in redacted
    assert "[redacted]" in redacted and redacted.startswith('"GET /v1/')


def test_a_key_in_the_query_string_is_refused_and_not_logged_whole(app, caplog):
    """On the embedded default the server (werkzeug's) logs every request line."""
    raw = keys.generate_raw_key()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with caplog.at_level(logging.INFO, logger="werkzeug"):
            answer = requests.get(
                f"http://127.0.0.1:{server.port}/v1/public/whoami?api_key={raw}", timeout=10
            )
    finally:
        server.shutdown()
        thread.join(5)
    assert answer.status_code == 401
    lines = [record.getMessage() for record in caplog.records if record.name == "werkzeug"]
    assert any("/v1/public/whoami?api_key=[redacted]" in line for line in lines), lines
    assert not any(raw in line or raw[4:20] in line for line in caplog.messages)
