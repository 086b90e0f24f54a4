"""Revocation and plan changes reach every process of a real deployment within one second."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from extensions import db
from models import ApiKey
from services import accounts, keys
from tests.conftest import PG_URL, REDIS_URL, needs_pg, needs_redis

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def server(app):
    """gunicorn with two worker processes on the test database and Redis."""
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": PG_URL,
        "REDIS_URL": REDIS_URL,
        "SECRET_KEY": "test",
        "APP_ENV": "production",
    }
    gunicorn = Path(sys.executable).with_name("gunicorn")
    process = subprocess.Popen(
        [str(gunicorn), "--workers", "2", "--bind", f"127.0.0.1:{port}", "wsgi:app"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            requests.get(base + "/v1/health", timeout=1)
            break
        except requests.ConnectionError:
            time.sleep(0.1)
    else:
        process.kill()
        pytest.fail("gunicorn did not start")
    yield base
    process.terminate()
    process.wait(timeout=10)


def _until(check, limit: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < limit + 1:
        if check():
            return time.monotonic() - started
        time.sleep(0.02)
    return float("inf")


@needs_pg
@needs_redis
def test_revocation_reaches_every_worker_within_one_second(server, make_key):
    raw = make_key("pro")
    headers = {"X-SVC-API-Key": raw}
    session = requests.Session()
    # Warm both workers' caches.
    for _ in range(20):
        assert session.get(server + "/v1/public/whoami", headers=headers).status_code == 200
    key = db.session.scalar(db.select(ApiKey))
    keys.revoke_key(key)
    db.session.commit()

    def every_worker_refuses():
        return all(
            requests.get(server + "/v1/public/whoami", headers=headers).status_code == 401
            for _ in range(10)
        )

    assert _until(every_worker_refuses, 1.0) <= 1.0


@needs_pg
@needs_redis
def test_plan_change_reaches_every_worker_within_one_second(server, make_key):
    raw = make_key("pro", email="mover@example.com")
    headers = {"X-SVC-API-Key": raw}
    path = server + "/v1/public/tools/word-counter/run"
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
