"""Callers waiting for queued runs (``Prefer: wait``): woken by one subscription per process,
holding no Redis connection while they wait (services/queue/waiters.py ``Waiters``)."""

import threading
import time

import pytest
import redis

from services import parking
from services.queue import RQDispatcher, Waiters, done_channel
from tests.helpers import needs_redis

pytestmark = needs_redis


@pytest.fixture
def dispatcher(app):
    return RQDispatcher(app, app.extensions["redis"])


def test_a_waiter_is_woken_when_its_run_ends(dispatcher):
    ended = threading.Timer(0.3, dispatcher.finished, ("run-1",))
    ended.start()
    started = time.monotonic()
    assert dispatcher.wait("run-1", 10)
    assert time.monotonic() - started < 5  # woken, not found by a later look


def test_a_run_that_ended_before_the_wait_is_found(dispatcher):
    dispatcher.finished("run-2")
    assert dispatcher.wait("run-2", 1)


def test_a_wait_that_runs_out_answers_false_and_forgets_the_run(dispatcher):
    assert not dispatcher.wait("run-3", 0.3)
    assert dispatcher.waiters.waiting() == 0


def test_many_waiters_share_one_subscription(app, dispatcher):
    client = app.extensions["redis"]
    channel = done_channel(client)
    before = client.pubsub_numsub(channel)[0][1]  # earlier tests' listeners, until idle
    results = {}

    def wait(n):
        results[n] = dispatcher.wait(f"many-{n}", 10)

    threads = [threading.Thread(target=wait, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 5
    while dispatcher.waiters.waiting() < 50 and time.monotonic() < deadline:
        time.sleep(0.01)
    # One subscriber on the channel for the fifty of them.
    assert client.pubsub_numsub(channel)[0][1] == before + 1
    for n in range(50):
        dispatcher.finished(f"many-{n}")
    for thread in threads:
        thread.join(10)
    assert results == {n: True for n in range(50)}


def test_a_wait_is_parked(dispatcher):
    parked = []

    class Hook:
        def __enter__(self):
            parked.append("in")

        def __exit__(self, *exc_info):
            parked.append("out")

    parking.install(Hook)
    try:
        dispatcher.wait("run-4", 0.1)
    finally:
        parking.install(None)
    assert parked == ["in", "out"]


def test_an_unreachable_redis_answers_not_yet():
    waiters = Waiters(redis.Redis(port=1, socket_connect_timeout=0.2))
    assert waiters.wait("run-5", 1) is False
