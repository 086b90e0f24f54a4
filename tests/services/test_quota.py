"""The daily quota: atomic reservations, release, and the 00:00 UTC reset."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
import redis

from services import clock
from services.quota import MemoryQuota, RedisQuota
from tests.helpers import REDIS_URL, auth, needs_redis


@pytest.fixture(params=["redis", "memory"])
def store(request, app):
    if request.param == "memory":
        return MemoryQuota()
    if app.extensions["redis"] is None:
        pytest.skip("Redis is not reachable")
    return app.extensions["quota"]


MOMENT = datetime(2026, 11, 21, 15, 0, tzinfo=UTC)


def test_reservation_fits_or_changes_nothing(store):
    assert store.reserve("k", 3, 2, MOMENT).granted
    refused = store.reserve("k", 3, 2, MOMENT)
    assert (refused.granted, refused.used) == (False, 2)
    assert store.usage("k", MOMENT).calls == 2
    assert store.reserve("k", 3, 1, MOMENT).granted
    assert store.usage("k", MOMENT).calls == 3


def test_release_gives_calls_and_credits_back(store):
    reservation = store.reserve("k", 10, 1, MOMENT, credits=5)
    store.release("k", 1, reservation.day, credits=5)
    assert store.usage("k", MOMENT) == store.usage("k", MOMENT).__class__("2026-11-21", 0, 0)


def test_days_are_separate(store):
    assert store.reserve("k", 1, 1, MOMENT).granted
    assert not store.reserve("k", 1, 1, MOMENT).granted
    assert store.reserve("k", 1, 1, MOMENT + timedelta(days=1)).granted


@needs_redis
def test_200_concurrent_callers_racing_for_the_last_50_calls_never_over_admit(app):
    store = RedisQuota(redis.Redis.from_url(REDIS_URL))
    assert store.reserve("race", 1000, 950, MOMENT).granted
    barrier = threading.Barrier(200)
    granted = []

    def call():
        # One connection per caller, as separate processes would have.
        mine = RedisQuota(redis.Redis.from_url(REDIS_URL))
        barrier.wait()
        granted.append(mine.reserve("race", 1000, 1, MOMENT).granted)

    threads = [threading.Thread(target=call) for _ in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert granted.count(True) == 50
    assert store.usage("race", MOMENT).calls == 1000


def test_quota_resets_at_midnight_utc_with_a_controlled_clock(client, make_key):
    raw = make_key("pro", daily_override=1)
    just_before = datetime.now(UTC).replace(hour=23, minute=59, second=58, microsecond=0)
    clock.set_offset(just_before - datetime.now(UTC))
    run = {"input": "one two three"}
    path = "/v1/public/tools/word-counter/run"
    assert client.post(path, headers=auth(raw), json=run).status_code == 200
    refused = client.post(path, headers=auth(raw), json=run)
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) <= 2
    clock.set_offset(just_before + timedelta(seconds=2) - datetime.now(UTC))
    assert client.post(path, headers=auth(raw), json=run).status_code == 200
