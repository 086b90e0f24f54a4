"""The daily quota never over-admits after its counters are lost: Redis flushed, Redis
replaced by an empty one, or the embedded process restarted. The counter is rebuilt from
the database (the day's ledger and the runs still holding a reservation) before anything
is admitted."""

import pytest

from app import create_app
from extensions import db
from services import accounts, clock, keys, quota
from tests.fakes.redis_server import RedisServer
from tests.helpers import app_config, auth, embedded_app_at, needs_redis

RUN = "/v1/public/tools/word-counter/run"
WHOAMI = "/v1/public/whoami"
TEXT = {"input": "one two three"}


def _on_redis(redis_url: str) -> dict:
    """The settings of an app on the Redis at ``redis_url`` (its rate limits kept there too)."""
    return {"REDIS_URL": redis_url, "RATELIMIT_STORAGE_URI": "svc+" + redis_url}


@pytest.fixture
def app_settings(redis_server):
    """``app`` (and so ``make_key`` and ``client``) on the test database and a private Redis."""
    return _on_redis(redis_server.url)


def _spend(client, raw: str, times: int) -> list[int]:
    return [client.post(RUN, headers=auth(raw), json=TEXT).status_code for _ in range(times)]


def _whoami_calls(client, raw: str) -> int:
    return client.get(WHOAMI, headers=auth(raw)).get_json()["usage"]["calls_today"]


@needs_redis
def test_flushall_does_not_give_the_day_back(client, make_key, app):
    raw = make_key("pro", daily_override=5)
    assert _spend(client, raw, 5) == [200] * 5
    app.extensions["redis"].flushall()  # the private server's: nobody else's data
    keys.forget()

    assert _whoami_calls(client, raw) == 5
    refused = client.post(RUN, headers=auth(raw), json=TEXT)
    assert refused.status_code == 429 and refused.get_json()["code"] == "quota_exceeded"
    assert _whoami_calls(client, raw) == 5


@needs_redis
def test_a_fresh_redis_does_not_give_the_day_back(client, make_key):
    raw = make_key("pro", daily_override=5)
    assert _spend(client, raw, 3) == [200] * 3
    fresh = RedisServer()
    fresh.start()
    try:
        moved = create_app(app_config(**_on_redis(fresh.url)))
        keys.forget()
        with moved.app_context():
            try:
                mover = moved.test_client()
                assert _spend(mover, raw, 3) == [200, 200, 429]
                assert _whoami_calls(mover, raw) == 5
            finally:
                db.session.remove()
                db.engine.dispose()  # its pool's connections, closed rather than collected
                moved.extensions["redis"].close()
    finally:
        fresh.stop()


@needs_redis
def test_a_release_after_the_loss_does_not_make_a_partial_counter(client, make_key, app):
    raw = make_key("pro", daily_override=5)
    assert _spend(client, raw, 4) == [200] * 4
    context = keys.resolve(raw)
    app.extensions["redis"].flushall()
    store = quota.store()
    # A run reserved before the loss fails after it: its release finds no counter.
    store.release(context.key_id, 1, clock.utc_day())
    store.add_credits(context.key_id, 1, clock.utc_day())
    assert store.usage(context.key_id, clock.now()).calls == 4
    assert _spend(client, raw, 2) == [200, 429]


def test_the_embedded_default_remembers_the_day_across_a_restart(tmp_path):
    path = tmp_path / "embedded.db"
    with embedded_app_at(path) as first, first.app_context():
        account = accounts.create_account("restart@example.com", "pro")
        key, raw = keys.create_key(account, "k")
        key.daily_override = 5
        db.session.commit()
        assert _spend(first.test_client(), raw, 5) == [200] * 5
    keys.forget()
    # A new process: its counters start empty.
    with embedded_app_at(path) as restarted, restarted.app_context():
        client = restarted.test_client()
        assert _spend(client, raw, 1) == [429]
        assert _whoami_calls(client, raw) == 5
