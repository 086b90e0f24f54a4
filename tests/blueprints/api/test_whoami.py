from datetime import UTC, datetime

from tests.helpers import auth


def test_whoami_describes_key_account_plan_and_usage(client, make_key):
    raw = make_key("creator", email="ada@example.com")
    response = client.get("/v1/public/whoami", headers=auth(raw))
    assert response.status_code == 200
    body = response.get_json()
    assert set(body) == {"key", "account", "plan", "usage"}
    assert body["key"]["name"] == "test key"
    assert body["key"]["hint"] == f"{raw[:8]}…{raw[-4:]}"
    assert body["key"]["sandbox"] is False
    assert body["account"]["name"] == "ada"
    assert body["plan"]["name"] == "creator"
    assert body["plan"]["daily_quota"] == 2000 and body["plan"]["per_minute"] == 200
    assert body["plan"]["categories"]
    today = datetime.now(UTC).date().isoformat()
    assert body["usage"]["date"] == today
    assert body["usage"]["calls_today"] == 0
    assert body["usage"]["remaining_today"] == 2000
    assert body["usage"]["credits_today"] == 0
    assert body["usage"]["free_calls_remaining"] == 100
    assert body["usage"]["resets_at"].startswith(today) is False
    assert body["usage"]["resets_at"].endswith("T00:00:00+00:00")


def test_whoami_accepts_bearer(client, make_key):
    raw = make_key()
    response = client.get("/v1/public/whoami", headers={"Authorization": f"Bearer {raw}"})
    assert response.status_code == 200


def test_whoami_does_not_consume_quota(client, make_key):
    raw = make_key("pro", daily_override=5)
    for _ in range(3):
        client.get("/v1/public/whoami", headers=auth(raw))
    assert (
        client.get("/v1/public/whoami", headers=auth(raw)).get_json()["usage"]["calls_today"] == 0
    )


def test_rate_limit_headers_on_authenticated_responses(client, make_key):
    raw = make_key("pro")
    response = client.get("/v1/public/whoami", headers=auth(raw))
    assert response.headers["RateLimit-Policy"] == '"minute";q=200;w=60, "day";q=1000;w=86400'
    minute, day = response.headers["RateLimit"].split(", ")
    assert minute.startswith('"minute";r=199;t=')
    assert day.startswith('"day";r=1000;t=')
    assert response.headers["X-RateLimit-Limit"] == "200"
    assert response.headers["X-RateLimit-Remaining"] == "199"
    assert int(response.headers["X-RateLimit-Reset"]) > datetime.now(UTC).timestamp()


def test_whoami_reports_key_overrides(client, make_key):
    raw = make_key("pro", per_minute_override=500, daily_override=7)
    plan = client.get("/v1/public/whoami", headers=auth(raw)).get_json()["plan"]
    assert (plan["per_minute"], plan["daily_quota"]) == (500, 7)
