"""Backing services going away and coming back: Redis (a private redis-server, stopped and
started again on the same port), the database, and the model provider. Answers are clean
503 problems with Retry-After, never 500s, and requests succeed again once the service is
back, with no restart."""

import dataclasses
import subprocess
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
import redis

import jobs.runs
from app import create_app
from catalogue import load_catalogue
from engines.models import breaker, local_llm, provider_transport
from extensions import db
from models import Run
from services import clock, quota
from tests.fakes import FakeOpenAI
from tests.helpers import (
    app_config,
    auth,
    clean,
    deployment_env,
    free_port,
    needs_pg,
    start_worker,
    stop_worker,
)

WHOAMI = "/v1/public/whoami"
DISPATCH = "/v1/tools/run"
TEXT = {"slug": "word-counter", "input": "one two three"}


@pytest.fixture
def outage_app(_schema, redis_server):
    """The app on the test database and the private Redis."""
    app = create_app(
        app_config(REDIS_URL=redis_server.url, RATELIMIT_STORAGE_URI="svc+" + redis_server.url)
    )
    yield from clean(app)


def _key(plan: str = "pro", **fields) -> str:
    from services import accounts, keys

    account = accounts.create_account(f"outage{time.monotonic_ns()}@example.com", plan)
    key, raw = keys.create_key(account, "k")
    for name, value in fields.items():
        setattr(key, name, value)
    db.session.commit()
    return raw


def _assert_unavailable(response) -> dict:
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert body["code"] == "service_unavailable" and body["status"] == 503
    assert body["request_id"] == response.headers["X-Request-Id"]
    assert "Traceback" not in response.get_data(as_text=True)
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    return body


def _calls(raw) -> int:
    from services import keys

    context = keys.resolve(raw)
    return quota.store().usage(context.key_id, clock.now()).calls


@needs_pg
def test_redis_down_is_503_everywhere_and_back_without_a_restart(outage_app, redis_server):
    client = outage_app.test_client()
    raw = _key()
    queued = client.post(DISPATCH, headers={**auth(raw), "Prefer": "respond-async"}, json=TEXT)
    assert queued.status_code == 202
    status_url = queued.headers["Location"]

    redis_server.stop()
    headers = auth(raw)
    requests = {
        "whoami": lambda: client.get(WHOAMI, headers=headers),
        "inline run": lambda: client.post(DISPATCH, headers=headers, json=TEXT),
        "slug run": lambda: client.post(
            "/v1/public/tools/word-counter/run", headers=headers, json={"input": "a b"}
        ),
        "queued run": lambda: client.post(
            DISPATCH, headers={**headers, "Prefer": "respond-async"}, json=TEXT
        ),
        "idempotent run": lambda: client.post(
            DISPATCH, headers={**headers, "Idempotency-Key": "k1"}, json=TEXT
        ),
        "status": lambda: client.get(status_url, headers=headers),
        "cancel": lambda: client.post(status_url.replace("status", "cancel"), headers=headers),
        "workflow": lambda: client.post(
            "/v1/workflows/run",
            headers=headers,
            json={"workflow_id": "review-insights", "input": "Great app, but sync fails often."},
        ),
    }
    for name, send in requests.items():
        started = time.monotonic()
        _assert_unavailable(send())
        assert time.monotonic() - started < 5, name
    health = client.get("/v1/health")
    assert health.status_code == 503 and health.get_json()["checks"]["redis"]["status"] == "error"
    assert client.get("/v1/tools/word-counter").status_code == 200  # no key, no Redis

    redis_server.start()  # empty: its counters and queue are gone, as after a real restart
    assert client.get(WHOAMI, headers=headers).status_code == 200
    assert client.post(DISPATCH, headers=headers, json=TEXT).status_code == 200
    replay = client.post(DISPATCH, headers={**headers, "Idempotency-Key": "k1"}, json=TEXT)
    assert replay.status_code == 200 and "Idempotent-Replayed" not in replay.headers
    assert client.get(status_url, headers=headers).get_json()["status"] == "queued"
    assert client.get("/v1/health").status_code == 200


@needs_pg
def test_redis_lost_between_admission_and_queue_leaves_nothing_charged(
    outage_app, redis_server, monkeypatch
):
    """The run row is committed and its quota reserved, then Redis goes before the job is
    queued: the caller gets 503, and once Redis is back the sweep fails the run (its job
    never existed) and gives the reservation back."""
    outage_app.config["JOB_LEASE_SECONDS"] = 0.3
    client = outage_app.test_client()
    raw = _key()
    dispatcher = outage_app.extensions["dispatcher"]
    enqueue = dispatcher.enqueue

    def enqueue_after_redis_died(*args, **kwargs):
        redis_server.stop()
        return enqueue(*args, **kwargs)

    monkeypatch.setattr(dispatcher, "enqueue", enqueue_after_redis_died)
    response = client.post(DISPATCH, headers={**auth(raw), "Prefer": "respond-async"}, json=TEXT)
    _assert_unavailable(response)
    run = db.session.scalar(db.select(Run))
    assert run.status == "queued"

    redis_server.start()
    # The restarted Redis is empty: the day's counter is rebuilt from the database, where
    # the queued run still holds its call.
    assert _calls(raw) == 1
    clock.set_offset(timedelta(seconds=outage_app.config["SWEEP_GRACE_SECONDS"] + 1))
    jobs.runs.sweep_stale_runs()
    time.sleep(0.15)
    assert jobs.runs.sweep_stale_runs() == 1
    assert db.session.get(Run, run.id, populate_existing=True).status == "failed"
    assert _calls(raw) == 0


@needs_pg
def test_a_caller_waiting_when_redis_goes_gets_202_and_the_status_url(
    outage_app, redis_server, monkeypatch
):
    tool = dataclasses.replace(load_catalogue().get("word-counter"), queue=True)
    monkeypatch.setattr("blueprints.api.tools.runs.find_tool", lambda slug: tool)
    client = outage_app.test_client()
    raw = _key()
    queued = redis.Redis.from_url(redis_server.url)

    def stop_once_queued():
        # No worker: the caller is still waiting when Redis goes. Stopping on a fixed timer
        # raced a slow machine, where Redis went before the call was admitted (a 503).
        deadline = time.monotonic() + 8
        while not queued.llen("rq:queue:default") and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        redis_server.stop()

    outage = threading.Thread(target=stop_once_queued)
    outage.start()
    try:
        response = client.post(DISPATCH, headers={**auth(raw), "Prefer": "wait=10"}, json=TEXT)
    finally:
        outage.join()
        redis_server.start()
    assert response.status_code == 202, response.get_json()
    assert response.headers["Location"].endswith("/status")
    assert response.get_json()["status"] == "queued"


@pytest.fixture
def worker_on(tmp_path):
    """``flask --app app worker`` on the test database and a given Redis."""
    started: list[tuple[subprocess.Popen, Path]] = []

    def start(redis_url: str) -> subprocess.Popen:
        log_path = tmp_path / f"worker{len(started)}.log"
        process = start_worker({**deployment_env(), "REDIS_URL": redis_url}, log_path)
        started.append((process, log_path))
        return process

    yield start
    for process, log_path in started:
        stop_worker(process, log_path)


@needs_pg
def test_a_worker_carries_on_when_redis_comes_back(outage_app, redis_server, worker_on):
    client = outage_app.test_client()
    # Polled every 50 ms for up to a minute while the worker recovers: a plan's per-minute
    # limit would answer 429 long before that.
    raw = _key(per_minute_override=100_000)
    worker_on(redis_server.url)
    wait = {**auth(raw), "Prefer": "respond-async"}
    first = client.post(DISPATCH, headers=wait, json=TEXT)
    assert _until_ended(client, raw, first.headers["Location"], 60)["status"] == "succeeded"

    redis_server.stop()
    time.sleep(1)  # the worker meets the outage and keeps retrying
    redis_server.start()
    second = client.post(DISPATCH, headers=wait, json=TEXT)
    assert second.status_code == 202
    assert _until_ended(client, raw, second.headers["Location"], 60)["status"] == "succeeded"


@needs_pg
def test_a_worker_that_loses_redis_while_ending_a_job_is_replaced(redis_server, worker_on):
    """RQ's worker waits out an outage only while it waits for a job: Redis gone while it
    reports a job's end made it quit, and the process ran no job again."""
    from rq import Queue
    from rq.job import Job

    client = redis.Redis.from_url(redis_server.url)
    queue = Queue(connection=client)
    worker_on(redis_server.url)
    slow = queue.enqueue("time.sleep", 2)
    deadline = time.monotonic() + 30
    while slow.get_status(refresh=True) != "started":  # the worker is on it
        assert time.monotonic() < deadline, slow.get_status()
        time.sleep(0.05)
    redis_server.stop()
    time.sleep(3)  # the job ends while Redis is gone
    redis_server.start()
    client = redis.Redis.from_url(redis_server.url)
    after = Queue(connection=client).enqueue("os.getpid")
    deadline = time.monotonic() + 60
    while (status := Job.fetch(after.id, connection=client).get_status()) != "finished":
        assert time.monotonic() < deadline, status
        time.sleep(0.1)


@needs_pg
def test_database_unreachable_is_503_without_a_trace(redis_server):
    dead = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/nowhere"
    app = create_app(
        app_config(
            SQLALCHEMY_DATABASE_URI=dead,
            REDIS_URL=redis_server.url,
            RATELIMIT_STORAGE_URI="svc+" + redis_server.url,
        )
    )
    client = app.test_client()
    headers = auth("svc_" + "a" * 40)
    with app.app_context():
        _assert_unavailable(client.get(WHOAMI, headers=headers))
        _assert_unavailable(client.post(DISPATCH, headers=headers, json=TEXT))
        assert client.get("/v1/health").status_code == 503
        db.engine.dispose()


# --- the model provider ---------------------------------------------------------------------

CODE = {"slug": "code-explainer", "input": "print('hello')"}


@pytest.fixture
def provider_app(embedded_app, monkeypatch):
    """The embedded app whose only text model is the fake provider, failing fast, with the
    provider's circuit breaker on a clock the test moves."""
    monkeypatch.setattr(local_llm, "unavailable_reason", lambda: "not in this test")
    monkeypatch.setattr(provider_transport, "_sleep", lambda seconds: None)
    embedded_app.config["AI_TIMEOUT_SECONDS"] = 1.0
    return embedded_app


@pytest.fixture
def breaker_clock(monkeypatch):
    now = [time.monotonic()]
    monkeypatch.setattr(breaker, "_now", lambda: now[0])
    return now


def _until_ended(client, raw, location, seconds: float = 20) -> dict:
    deadline = time.monotonic() + seconds
    while (record := client.get(location, headers=auth(raw)).get_json())["status"] in {
        "queued",
        "running",
    }:
        assert time.monotonic() < deadline, record
        time.sleep(0.05)
    assert isinstance(record["status"], str), record  # a run's status, not a refusal's
    return record


def test_provider_gone_mid_run_is_503_then_runs_succeed_when_it_is_back(
    provider_app, breaker_clock, monkeypatch
):
    client = provider_app.test_client()
    raw = _key("pro", daily_override=10, per_minute_override=100_000)  # polled below
    gone = threading.Event()
    # A provider of its own, not the shared ``fake_provider``: it goes away mid-run and
    # another comes back on its port.
    with FakeOpenAI() as fake:
        provider_app.config["AI_BASE_URL"] = fake.base_url
        port = int(fake.origin.rsplit(":", 1)[1])
        assert client.post(DISPATCH, headers=auth(raw), json=CODE).status_code == 200

        def provider_goes_away(seconds):  # the adapter's pause between two attempts
            if not gone.is_set():
                gone.set()
                fake.__exit__(None, None, None)

        monkeypatch.setattr(provider_transport, "_sleep", provider_goes_away)
        fake.hang_next(1, 30)  # the first attempt times out, then the provider is gone
        queued = client.post(DISPATCH, headers={**auth(raw), "Prefer": "respond-async"}, json=CODE)
        record = _until_ended(client, raw, queued.headers["Location"])
    assert gone.is_set()
    assert record["status"] == "failed" and record["error"]["code"] == "provider"
    # While it is away, callers get 503 provider_unavailable with Retry-After.
    for _ in range(2):
        response = client.post(DISPATCH, headers=auth(raw), json=CODE)
        assert response.status_code == 503, response.get_json()
        assert response.get_json()["code"] == "provider_unavailable"
        assert int(response.headers["Retry-After"]) >= 1
    assert breaker.breaker_for(fake.base_url).state == "open"
    who = client.get(WHOAMI, headers=auth(raw)).get_json()
    assert who["usage"]["calls_today"] == 1  # failed runs gave their quota back

    with FakeOpenAI(port=port):  # back at the same URL
        breaker_clock[0] += breaker.BREAKER_OPEN_SECONDS + 1  # the breaker lets a probe by
        response = client.post(DISPATCH, headers=auth(raw), json=CODE)
        assert response.status_code == 200, response.get_json()
        assert response.get_json()["status"] == "succeeded"
        assert client.post(DISPATCH, headers=auth(raw), json=CODE).status_code == 200
