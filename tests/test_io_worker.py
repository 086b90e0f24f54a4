"""The I/O worker (the Procfile's ``worker-io``): many provider runs in flight in one process,
cut off at their timeout, canceled midway, recovered after a SIGKILL; and compute jobs on
the other kind of worker never hold them up. Real worker processes, PostgreSQL and Redis."""

import os
import signal
import time

import pytest
from rq import Queue, Worker

from catalogue import load_catalogue
from extensions import db
from models import Run
from services import clock, quota, runs
from services.queue import DEFAULT_QUEUE, IO_QUEUE, IO_WEB_QUEUE, WEB_QUEUE
from tests.helpers import auth, deployment_env, needs_pg, needs_redis, start_worker, stop_worker

pytestmark = [needs_pg, needs_redis]

TOOL = "code-explainer"  # llm.chat, queued: waits on the provider
FAST_SWEEP = {"SWEEP_INTERVAL_SECONDS": "0.5", "SWEEP_GRACE_SECONDS": "1", "JOB_LEASE_SECONDS": "2"}


@pytest.fixture
def workers(provider_in_env, tmp_path):
    """``start(kind, **settings)`` starts one of the Procfile's workers; all are stopped at
    the end (their logs in ``tmp_path``)."""
    started = []

    def start(kind: str = "worker-io", **settings: str):
        log_path = tmp_path / f"{kind}-{len(started)}.log"
        process = start_worker({**deployment_env(), **settings}, log_path, kind=kind)
        started.append((process, log_path))
        return process

    yield start
    failures = []
    for process, log_path in started:
        try:
            stop_worker(process, log_path)
        except pytest.fail.Exception as failed:  # stop the others first
            failures.append(str(failed))
    if failures:
        pytest.fail("\n".join(failures))


def _until(check, seconds: float, message: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        db.session.rollback()  # read what other processes committed
        if value := check():
            return value
        time.sleep(0.05)
    pytest.fail(message)


def _submit(client, raw: str, count: int) -> list[str]:
    ids = []
    for n in range(count):
        response = client.post(
            "/v1/tools/run",
            headers={**auth(raw), "Prefer": "respond-async"},
            json={"slug": TOOL, "input": f"print({n})"},
        )
        assert response.status_code == 202, response.get_json()
        ids.append(response.get_json()["run_id"])
    return ids


def _statuses(ids: list[str]) -> list[str]:
    return [db.session.get(Run, run_id, populate_existing=True).status for run_id in ids]


def _errors(ids: list[str]) -> list:
    return [
        db.session.get(Run, run_id).error for run_id in ids if db.session.get(Run, run_id).error
    ]


def _ended(ids: list[str]) -> bool:
    return all(status in ("succeeded", "failed", "canceled") for status in _statuses(ids))


def test_runs_go_to_the_queue_their_engine_calls_for(provider_in_env, app):
    catalogue = load_catalogue()
    with app.app_context():
        assert runs.queue_for(catalogue.get(TOOL)) == IO_QUEUE
        assert runs.queue_for(catalogue.get(TOOL), site=True) == IO_WEB_QUEUE
        ocr = next(tool for tool in catalogue.tools.values() if tool.engine == "ocr.text")
        assert runs.queue_for(ocr) == DEFAULT_QUEUE
        assert runs.queue_for(ocr, site=True) == WEB_QUEUE
        # Every engine that only a provider runs (pictures seen or made), the plan-gated
        # endpoints' tools included.
        by_engine = {tool.engine: tool for tool in catalogue.tools.values()}
        by_engine["productions.images"] = runs.find_tool("images/generate")
        for engine in ("vision.chat", "images.generate", "productions.images"):
            assert by_engine[engine].engine == engine
            assert runs.queue_for(by_engine[engine]) == IO_QUEUE, engine


def test_without_a_provider_the_embedded_model_computes_on_the_compute_queue(app):
    with app.app_context():
        assert runs.queue_for(load_catalogue().get(TOOL)) == DEFAULT_QUEUE


def test_one_worker_process_holds_many_provider_runs_in_flight(
    provider_in_env, client, make_key, workers
):
    provider_in_env.latency = 3.0
    workers("worker-io")
    raw = make_key("agency")
    ids = _submit(client, raw, 60)
    _until(lambda: _ended(ids), 120, "the runs did not end")
    assert set(_statuses(ids)) == {"succeeded"}, _errors(ids)
    # Sixty calls of 3 s each, from one process: most of them were waiting at once.
    assert provider_in_env.peak_in_flight >= 50, provider_in_env.peak_in_flight


def test_a_compute_job_does_not_hold_up_provider_runs(provider_in_env, client, make_key, workers):
    provider_in_env.latency = 0.5
    workers("worker")
    workers("worker-io")
    connection = client.application.extensions["redis"]
    _until(lambda: len(Worker.all(connection=connection)) >= 2, 60, "the workers did not start")
    compute = Queue(DEFAULT_QUEUE, connection=connection)
    busy = compute.enqueue("tests.jobs_for_tests.spin", 12, job_timeout=120)
    _until(lambda: busy.get_status(refresh=True) == "started", 60, "the compute job never began")
    raw = make_key("agency")
    ids = _submit(client, raw, 10)
    _until(lambda: _ended(ids), 60, "provider runs waited behind the compute job")
    assert set(_statuses(ids)) == {"succeeded"}
    assert busy.get_status(refresh=True) == "started"  # still computing meanwhile
    _until(lambda: busy.get_status(refresh=True) == "finished", 60, "the compute job hung")


def test_a_provider_that_hangs_is_cut_off_at_the_runs_timeout(
    provider_in_env, client, make_key, workers, monkeypatch
):
    monkeypatch.setattr("jobs.runs.RUN_TIMEOUT", 3)
    provider_in_env.hang_next(1, 60)
    workers("worker-io")
    raw = make_key("pro", daily_override=5)
    [run_id] = _submit(client, raw, 1)
    key_id = db.session.get(Run, run_id).api_key_id
    run = _until(
        lambda: (
            (run := db.session.get(Run, run_id, populate_existing=True)).status == "failed" and run
        ),
        60,
        "the hanging run was not failed at its timeout",
    )
    assert "did not finish in time" in run.error["message"]
    assert run.credits == 0
    assert quota.store().usage(key_id, clock.now()).calls == 0  # its call given back


def test_a_run_canceled_while_its_provider_call_is_in_flight(
    provider_in_env, client, make_key, workers
):
    provider_in_env.hang_next(1, 5)
    workers("worker-io")
    raw = make_key("pro", daily_override=5)
    [run_id] = _submit(client, raw, 1)
    _until(
        lambda: provider_in_env.calls("/v1/chat/completions"), 60, "the provider was never called"
    )
    canceled = client.post(f"/v1/tools/run/{run_id}/cancel", headers=auth(raw))
    assert canceled.status_code == 200, canceled.get_json()
    # The call's late answer is refused (the run has ended); the worker goes on working.
    [later] = _submit(client, raw, 1)
    _until(lambda: _ended([later]), 60, "the next run did not end")
    time.sleep(5)  # the canceled run's call has answered by now
    assert _statuses([run_id, later]) == ["canceled", "succeeded"]


def test_a_killed_io_worker_leaves_no_run_behind(provider_in_env, client, make_key, workers):
    provider_in_env.latency = 120.0  # the calls are still in flight when the worker dies
    first = workers("worker-io", **FAST_SWEEP)
    raw = make_key("agency")
    ids = _submit(client, raw, 100)
    key_id = db.session.get(Run, ids[0]).api_key_id
    _until(
        lambda: provider_in_env.in_flight >= 100, 60, "the worker did not hold every call at once"
    )
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    provider_in_env.latency = 0.0
    workers("worker-io", **FAST_SWEEP)
    _until(lambda: _ended(ids), 120, "runs were left queued or running")
    assert set(_statuses(ids)) == {"failed"}
    # Every reservation was given back: nothing of the hundred runs counts against the key.
    assert quota.store().usage(key_id, clock.now()).calls == 0
