"""The database restarted or crashed under running processes, on a private PostgreSQL
server (``tests/fakes/postgres_server.py``) and the real Redis: workers carry on by
themselves."""

import contextlib
import json
import time

import pytest
from flask_migrate import upgrade

from app import create_app
from extensions import db
from models import ApiKey, Run
from tests.fakes.postgres_server import PrivatePostgres
from tests.fakes.webhook_receiver import Receiver
from tests.helpers import (
    app_config,
    auth,
    clean,
    deployment_env,
    needs_pg,
    needs_redis,
    start_worker,
    stop_worker,
)

pytestmark = [needs_pg, needs_redis]

TOOL = "code-explainer"  # llm.chat, queued: the worker calls the provider


@pytest.fixture(scope="module")
def private_pg():
    server = PrivatePostgres().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def app(private_pg):
    """The app on the private server (migrated) and the test Redis (the fixtures that take
    ``app``, ``client`` and ``make_key``, use it in this module). Redefined rather than given
    ``app_settings``: another database, which conftest's ``_schema`` does not migrate."""
    app = create_app(app_config(SQLALCHEMY_DATABASE_URI=private_pg.url))
    with app.app_context():
        upgrade()
        db.engine.dispose()
    yield from clean(app)


@pytest.fixture
def worker(private_pg, fake_provider, tmp_path):
    """The Procfile's workers on the private server (``worker``, and ``worker-io``, which
    delivers the webhooks); stopped at the end. Yields the compute worker."""
    env = {
        **deployment_env(),
        "DATABASE_URL": private_pg.url,
        "AI_BASE_URL": fake_provider.base_url,
        "FETCH_ALLOW_PRIVATE": "1",
        "SWEEP_INTERVAL_SECONDS": "0.5",
    }
    process = start_worker(env, tmp_path / "worker.log")
    io_process = start_worker(env, tmp_path / "worker-io.log", kind="worker-io")
    yield process
    stop_worker(io_process, tmp_path / "worker-io.log")
    stop_worker(process, tmp_path / "worker.log")


def _until(check, seconds: float, message: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            db.session.rollback()
            value = check()
            if value:
                return value
        time.sleep(0.1)
    pytest.fail(message)


def _queued_run(client, raw: str) -> str:
    response = client.post(
        "/v1/tools/run",
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": "print('hello')"},
    )
    assert response.status_code == 202, response.get_json()
    return response.get_json()["run_id"]


def _status(run_id: str) -> str | None:
    run = db.session.get(Run, run_id, populate_existing=True)
    return run.status if run is not None else None


def test_a_worker_carries_on_after_the_database_restarts(
    client, private_pg, worker, make_key, tmp_path
):
    receiver = Receiver()
    try:
        raw = make_key("pro")
        db.session.scalar(db.select(ApiKey)).webhook_url = receiver.url
        db.session.commit()
        first = _queued_run(client, raw)
        _until(lambda: _status(first) == "succeeded", 60, "the first run did not succeed")
        assert len(receiver.wait_for(1, 20)) == 1

        # The worker's connections die with the server (AdminShutdown on the next use).
        db.session.remove()
        private_pg.restart()
        private_pg.wait_until_ready()
        time.sleep(1.5)  # past the pool's idle ping: the dead connection is used as is

        # The next runs succeed, their webhooks go out, with no one touching the worker.
        second = _queued_run(client, raw)
        third = _queued_run(client, raw)
        for run_id in (second, third):
            _until(lambda r=run_id: _status(r) == "succeeded", 60, "a run after the restart")
        events = receiver.wait_for(3, 30)
        assert sorted(json.loads(e.body)["run_id"] for e in events[1:]) == sorted((second, third))
        assert {json.loads(e.body)["event"] for e in events} == {"tool.completed"}
        assert worker.poll() is None
        assert "PendingRollbackError" not in (tmp_path / "worker.log").read_text()
    finally:
        receiver.stop()


def test_submissions_refused_while_the_database_is_down_charge_nothing(
    app, client, private_pg, make_key
):
    """Async and workflow POSTs while PostgreSQL is stopped: 503, and calls_today as before
    (each had reserved its calls in Redis, then failed to insert: 8 such POSTs once raised
    the count by 12 with no run). The key is served from the process's cache meanwhile."""
    app.config["KEY_CACHE_SECONDS"] = 300
    raw = make_key("agency")
    assert _queued_run(client, raw)
    whoami = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    before = whoami["usage"]["calls_today"]
    assert before == 1
    workflow = {"workflow_id": "review-insights", "input": "Good value, slow delivery."}
    db.session.remove()
    private_pg.crash()
    try:
        answers = [
            client.post(
                "/v1/tools/run",
                headers={**auth(raw), "Prefer": "respond-async"},
                json={"slug": TOOL, "input": "print('hello')"},
            )
            for _ in range(4)
        ]
        answers += [
            client.post("/v1/workflows/run", headers=auth(raw), json=workflow) for _ in range(2)
        ]
    finally:
        private_pg.start()
        private_pg.wait_until_ready()
    assert [answer.status_code for answer in answers] == [503] * 6
    assert all("nothing was charged" in a.get_json()["detail"].lower() for a in answers)
    db.session.remove()
    after = _until(
        lambda: client.get("/v1/public/whoami", headers=auth(raw)).get_json(), 30, "whoami"
    )
    assert after["usage"]["calls_today"] == before
    assert app.extensions["redis"].zcard("runs:submitting") == 0
