"""Queued runs: Prefer, 202 + Location, status, cancel, timeouts, on RQ and in-process."""

import dataclasses
import threading
import time

import pytest

from catalogue import load_catalogue
from extensions import db
from models import Run, UsageEvent
from tests.helpers import auth, needs_pg, needs_redis

TOOL = "word-counter"
TEXT = "one two three"
DISPATCH = "/v1/tools/run"


def _status(client, raw, location):
    return client.get(location, headers=auth(raw)).get_json()


def _until_ended(client, raw, location, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        record = _status(client, raw, location)
        if record["status"] in {"succeeded", "failed", "canceled"}:
            return record
        time.sleep(0.05)
    pytest.fail(f"the run did not end: {record}")


@pytest.fixture
def queued_tool(monkeypatch):
    """The word counter declared ``queue: true``, as model-backed tools are."""
    tool = dataclasses.replace(load_catalogue().get(TOOL), queue=True)
    monkeypatch.setattr("blueprints.api.tools.runs.find_tool", lambda slug: tool)
    return tool


@pytest.fixture
def blocked_engine(monkeypatch):
    """Make the engine wait until the test releases it."""
    release = threading.Event()
    started = threading.Event()

    def slow(tool, inputs):
        started.set()
        release.wait(10)
        return {"words": 3}

    monkeypatch.setattr("services.runs.run_tool", slow)
    yield started, release
    release.set()


def _embedded_key(app, **fields):
    from services import accounts, keys

    account = accounts.create_account("q@example.com", "pro")
    key, raw = keys.create_key(account, "q")
    for name, value in fields.items():
        setattr(key, name, value)
    db.session.commit()
    return raw


def test_respond_async_answers_202_then_the_run_succeeds(embedded_app):
    client = embedded_app.test_client()
    raw = _embedded_key(embedded_app)
    response = client.post(
        DISPATCH,
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": TEXT},
    )
    assert response.status_code == 202
    assert response.headers["Preference-Applied"] == "respond-async"
    record = response.get_json()
    assert record["status"] in {"queued", "running", "succeeded"}
    assert response.headers["Location"] == f"/v1/tools/run/{record['run_id']}/status"
    assert record["status_url"].endswith(response.headers["Location"])
    ended = _until_ended(client, raw, response.headers["Location"])
    assert ended["status"] == "succeeded"
    assert ended["output"]["words"] == 3
    assert ended["finished_at"] and ended["error"] is None
    who = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    assert who["usage"]["calls_today"] == 1


def test_a_queued_tool_is_waited_for_and_answered_200(embedded_app, queued_tool):
    client = embedded_app.test_client()
    raw = _embedded_key(embedded_app)
    response = client.post(DISPATCH, headers=auth(raw), json={"slug": TOOL, "input": TEXT})
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["status"] == "succeeded" and body["output"]["words"] == 3
    assert db.session.get(Run, body["run_id"]).notify is False


def test_the_wait_runs_out_into_202_and_the_run_is_marked_for_an_event(
    embedded_app, queued_tool, blocked_engine
):
    started, release = blocked_engine
    client = embedded_app.test_client()
    raw = _embedded_key(embedded_app)
    response = client.post(
        DISPATCH, headers={**auth(raw), "Prefer": "wait=1"}, json={"slug": TOOL, "input": TEXT}
    )
    assert response.status_code == 202
    assert response.headers["Preference-Applied"] == "wait=1"
    run_id = response.get_json()["run_id"]
    db.session.expire_all()
    assert db.session.get(Run, run_id).notify is True
    release.set()
    assert _until_ended(client, raw, response.headers["Location"])["status"] == "succeeded"


def test_cancel_stops_a_running_run_releases_quota_and_charges_nothing(
    embedded_app, blocked_engine
):
    started, release = blocked_engine
    client = embedded_app.test_client()
    raw = _embedded_key(embedded_app, daily_override=1)
    response = client.post(
        DISPATCH,
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": TEXT},
    )
    run_id = response.get_json()["run_id"]
    db.session.commit()  # the test shares the request's session: end its transaction
    assert started.wait(5)
    canceled = client.post(f"/v1/tools/run/{run_id}/cancel", headers=auth(raw))
    assert canceled.status_code == 200 and canceled.get_json()["status"] == "canceled"
    release.set()
    time.sleep(0.3)
    record = _status(client, raw, f"/v1/tools/run/{run_id}/status")
    assert record["status"] == "canceled" and record["output"] is None
    assert db.session.scalar(db.select(db.func.count(UsageEvent.id))) == 0
    again = client.post(f"/v1/tools/run/{run_id}/cancel", headers=auth(raw))
    assert again.status_code == 409 and again.get_json()["code"] == "run_not_cancelable"
    # The reservation came back: the one call of the day is available again.
    assert (
        client.post(DISPATCH, headers=auth(raw), json={"slug": TOOL, "input": TEXT}).status_code
        == 200
    )


def test_a_run_past_its_timeout_fails_and_releases_quota(embedded_app, blocked_engine, monkeypatch):
    monkeypatch.setattr("jobs.runs.RUN_TIMEOUT", 0.3)
    client = embedded_app.test_client()
    raw = _embedded_key(embedded_app, daily_override=1)
    response = client.post(
        DISPATCH,
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": TEXT},
    )
    record = _until_ended(client, raw, response.headers["Location"])
    assert record["status"] == "failed"
    assert "did not finish in time" in record["error"]["message"]
    who = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    assert who["usage"]["calls_today"] == 0


@pytest.mark.parametrize("action", ["status", "cancel"])
def test_another_accounts_run_is_404(client, make_key, action, monkeypatch):
    owner, stranger = make_key(), make_key()
    response = client.post(
        DISPATCH,
        headers={**auth(owner), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": TEXT},
    )
    run_id = response.get_json()["run_id"]
    method = client.get if action == "status" else client.post
    refused = method(f"/v1/tools/run/{run_id}/{action}", headers=auth(stranger))
    assert refused.status_code == 404 and refused.get_json()["code"] == "run_not_found"
    unknown = method(
        f"/v1/tools/run/00000000-0000-4000-8000-000000000000/{action}", headers=auth(owner)
    )
    assert unknown.status_code == 404


@needs_pg
@needs_redis
def test_a_real_rq_worker_runs_queued_runs_and_wakes_the_waiter(client, make_key, rq_worker):
    raw = make_key()
    response = client.post(
        DISPATCH, headers={**auth(raw), "Prefer": "wait=20"}, json={"slug": TOOL, "input": TEXT}
    )
    # word-counter is light, but Prefer: wait on a queued path goes through RQ only when
    # the tool is queued; respond-async puts it on the queue for the worker.
    assert response.status_code == 200
    queued = client.post(
        DISPATCH,
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": TEXT},
    )
    assert queued.status_code == 202
    ended = _until_ended(client, raw, queued.headers["Location"], seconds=90)
    assert ended["status"] == "succeeded" and ended["output"]["words"] == 3


def test_the_in_process_worker_keeps_no_waiter_state_behind(embedded_app, blocked_engine):
    started, release = blocked_engine
    client = embedded_app.test_client()
    raw = _embedded_key(embedded_app)
    dispatcher = embedded_app.extensions["dispatcher"]
    # Nobody waits for a respond-async run; a waiter whose wait ran out forgets its run.
    for prefer in ("respond-async", "wait=1"):
        client.post(
            DISPATCH, headers={**auth(raw), "Prefer": prefer}, json={"slug": TOOL, "input": TEXT}
        )
    assert dispatcher._done == {}
    release.set()
