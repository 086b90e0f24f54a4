"""The embedded default: a SQLite file, no Redis, limits and quota in process memory."""

from extensions import db
from services import accounts, keys
from tests.helpers import auth


def _key(app, **fields) -> str:
    account = accounts.create_account("solo@example.com", "pro")
    key, raw = keys.create_key(account, "solo")
    for name, value in fields.items():
        setattr(key, name, value)
    db.session.commit()
    return raw


def test_runs_and_whoami_work_without_redis(embedded_app):
    assert embedded_app.extensions["redis"] is None
    client = embedded_app.test_client()
    raw = _key(embedded_app)
    response = client.post(
        "/v1/public/tools/word-counter/run", headers=auth(raw), json={"input": "one two"}
    )
    assert response.status_code == 200 and response.get_json()["output"]["words"] == 2
    usage = client.get("/v1/public/whoami", headers=auth(raw)).get_json()["usage"]
    assert usage["calls_today"] == 1 and usage["remaining_today"] == 999
    health = client.get("/v1/health").get_json()
    assert health["checks"]["database"]["detail"] == "sqlite"


def test_limits_and_quota_hold_in_memory(embedded_app):
    client = embedded_app.test_client()
    raw = _key(embedded_app, per_minute_override=3, daily_override=1)
    path = "/v1/public/tools/word-counter/run"
    assert client.post(path, headers=auth(raw), json={"input": "a"}).status_code == 200
    refused = client.post(path, headers=auth(raw), json={"input": "a"})
    assert refused.get_json()["code"] == "quota_exceeded"
    assert client.get("/v1/public/whoami", headers=auth(raw)).status_code == 200
    limited = client.get("/v1/public/whoami", headers=auth(raw))
    assert limited.status_code == 429 and limited.get_json()["code"] == "rate_limited"
    assert int(limited.headers["Retry-After"]) >= 1


def test_revocation_is_immediate_in_one_process(embedded_app):
    client = embedded_app.test_client()
    raw = _key(embedded_app)
    assert client.get("/v1/public/whoami", headers=auth(raw)).status_code == 200
    keys.revoke_key(db.session.scalar(db.select(keys.ApiKey)))
    db.session.commit()
    assert client.get("/v1/public/whoami", headers=auth(raw)).status_code == 401
