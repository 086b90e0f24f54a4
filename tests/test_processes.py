"""Revocation and plan changes reach every process of a real deployment within one second."""

import time

import requests

from extensions import db
from models import ApiKey
from services import accounts, keys
from tests.helpers import needs_pg, needs_redis


def _until(check, limit: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < limit + 1:
        if check():
            return time.monotonic() - started
        time.sleep(0.02)
    return float("inf")


@needs_pg
@needs_redis
def test_revocation_reaches_every_worker_within_one_second(live_server, make_key):
    raw = make_key("pro")
    headers = {"X-SVC-API-Key": raw}
    session = requests.Session()
    # Warm both workers' caches.
    for _ in range(20):
        assert session.get(live_server + "/v1/public/whoami", headers=headers).status_code == 200
    key = db.session.scalar(db.select(ApiKey))
    keys.revoke_key(key)
    db.session.commit()

    def every_worker_refuses():
        return all(
            requests.get(live_server + "/v1/public/whoami", headers=headers).status_code == 401
            for _ in range(10)
        )

    assert _until(every_worker_refuses, 1.0) <= 1.0


@needs_pg
@needs_redis
def test_plan_change_reaches_every_worker_within_one_second(live_server, make_key):
    raw = make_key("pro", email="mover@example.com")
    headers = {"X-SVC-API-Key": raw}
    path = live_server + "/v1/public/tools/word-counter/run"
    for _ in range(10):
        assert requests.post(path, headers=headers, json={"input": "a b"}).status_code == 200
    accounts.set_plan("mover@example.com", "free")
    db.session.commit()

    def every_worker_refuses():
        return all(
            requests.post(path, headers=headers, json={"input": "a b"}).status_code == 402
            for _ in range(10)
        )

    assert _until(every_worker_refuses, 1.0) <= 1.0
