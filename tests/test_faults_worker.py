"""A worker killed mid-run, on real RQ worker processes and real Redis: the run is failed
by the sweep of the next worker (quota released, ``tool.failed`` delivered once), and RQ's
own abandoned-job cleanup reaches the same end through the job's failure callback."""

import contextlib
import json
import os
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
from rq import Queue
from rq.registry import StartedJobRegistry

from extensions import db
from models import ApiKey, Run
from services import clock, quota
from tests.fakes.webhook_receiver import Receiver
from tests.helpers import auth, deployment_env, needs_pg, needs_redis, start_worker, stop_worker

pytestmark = [needs_pg, needs_redis]

TOOL = "code-explainer"  # llm.chat, queued: the worker calls the provider
# Short enough for a test; production uses 15 s, 30 s and 30 s (config.py).
FAST_SWEEP = {
    "SWEEP_INTERVAL_SECONDS": "0.3",
    "SWEEP_GRACE_SECONDS": "1",
    "JOB_LEASE_SECONDS": "1.5",
}


@pytest.fixture
def workers(fake_provider, tmp_path):
    """Start ``flask --app app worker`` processes (and, with the first, one ``worker-io``, which
    delivers the webhooks) on the test database and Redis; every one
    still alive is stopped at the end. Their logs go to ``tmp_path``."""
    started: list[tuple[subprocess.Popen, Path]] = []

    def start(**settings: str) -> subprocess.Popen:
        env = {
            **deployment_env(),
            "AI_BASE_URL": fake_provider.base_url,
            "FETCH_ALLOW_PRIVATE": "1",
            **settings,
        }
        if not started:  # the I/O worker, which delivers the webhooks, once
            io_log_path = tmp_path / "worker-io.log"
            started.append((start_worker(env, io_log_path, kind="worker-io"), io_log_path))
        log_path = tmp_path / f"worker{len(started)}.log"
        started.append((start_worker(env, log_path), log_path))
        return started[-1][0]

    yield start
    for process, log_path in started:
        stop_worker(process, log_path)


def _until(check, seconds: float, message: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        db.session.rollback()  # read what other processes committed
        value = check()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(message)


def _run(run_id: str) -> Run:
    return db.session.get(Run, run_id, populate_existing=True)


def _start_hanging_run(client, fake_provider, make_key, receiver=None) -> tuple[str, str]:
    """A queued run whose provider call hangs: returns the raw key and the run id once the
    worker is inside the call."""
    raw = make_key("pro", daily_override=5)
    if receiver is not None:
        db.session.scalar(db.select(ApiKey)).webhook_url = receiver.url
        db.session.commit()
    fake_provider.hang_next(1, 60)
    response = client.post(
        "/v1/tools/run",
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": "print('hello')"},
    )
    assert response.status_code == 202, response.get_json()
    run_id = response.get_json()["run_id"]
    _until(lambda: _run(run_id).status == "running", 30, "no worker started the run")
    _until(lambda: fake_provider.calls("/v1/chat/completions"), 10, "the provider was not called")
    return raw, run_id


def _calls_today(key_id: str) -> int:
    return quota.store().usage(key_id, clock.now()).calls


def _queue(client) -> Queue:
    return Queue("default", connection=client.application.extensions["redis"])


def _kill(worker: subprocess.Popen) -> None:
    """SIGKILL the worker and its children: no handler, no cleanup, no failure callback."""
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=10)


def test_a_worker_killed_mid_run_is_swept_by_the_next_worker(
    client, make_key, fake_provider, workers
):
    receiver = Receiver()
    try:
        first = workers(**FAST_SWEEP)
        raw, run_id = _start_hanging_run(client, fake_provider, make_key, receiver)
        key_id = _run(run_id).api_key_id
        assert _calls_today(key_id) == 1
        _kill(first)
        killed_at = time.monotonic()
        assert _run(run_id).status == "running"  # nobody knows yet

        workers(**FAST_SWEEP)  # the platform restarts the worker
        run = _until(
            lambda: _run(run_id).status == "failed" and _run(run_id),
            60,
            "the killed worker's run was not swept",
        )
        assert time.monotonic() - killed_at < 60
        assert run.error["code"] == "internal"
        assert "stopped before it finished" in run.error["message"]
        assert run.credits == 0 and run.output is None
        assert _calls_today(key_id) == 0  # the reservation came back

        status = client.get(f"/v1/tools/run/{run_id}/status", headers=auth(raw)).get_json()
        assert status["status"] == "failed" and status["error"] == run.error

        events = receiver.wait_for(1, 20)
        assert len(events) == 1
        event = json.loads(events[0].body)
        assert event["event"] == "tool.failed" and event["run_id"] == run_id
        assert "stopped before it finished" in event["output_excerpt"]

        # RQ's own cleanup of the dead worker's job comes later; the run has ended, so its
        # failure callback changes nothing and announces nothing again.
        StartedJobRegistry(queue=_queue(client)).cleanup(timestamp=time.time() + 10_000)
        time.sleep(0.5)
        assert _run(run_id).status == "failed" and _run(run_id).error == run.error
        assert len(receiver.requests) == 1
    finally:
        receiver.stop()


def test_rq_abandoned_job_cleanup_fails_the_run_through_its_callback(
    client, make_key, fake_provider, workers
):
    """Without any sweep, RQ's StartedJobRegistry cleanup (run by every worker's
    maintenance) calls the job's failure callback for a job whose worker died."""
    worker = workers(SWEEP_INTERVAL_SECONDS="0")
    raw, run_id = _start_hanging_run(client, fake_provider, make_key)
    key_id = _run(run_id).api_key_id
    _kill(worker)

    queue = _queue(client)
    registry = StartedJobRegistry(queue=queue)
    assert run_id in registry.get_job_ids(cleanup=False)
    # A SimpleWorker's job counts as abandoned once its timeout (+60 s) has passed.
    registry.cleanup(timestamp=time.time() + 10_000)

    run = _run(run_id)
    assert run.status == "failed"
    assert "did not finish in time" in run.error["message"]
    assert _calls_today(key_id) == 0
    assert run_id in queue.failed_job_registry.get_job_ids()


def _children(pid: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                children.append(int(stat.parent.name))
    return children


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (dead, not yet reaped by its new parent) counts as gone.
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


def test_a_killed_workers_scheduler_ends_and_the_next_worker_schedules(client, workers):
    """RQ's scheduler is a child process of the worker; when the worker is SIGKILLed it
    must end too (and give up its lock), or the next worker runs without a scheduler."""
    connection = client.application.extensions["redis"]
    lock = "rq:scheduler-lock:default"
    first = workers()
    owner = _until(lambda: connection.get(lock), 30, "the first worker's scheduler never started")
    scheduler_pid = _until(lambda: _children(first.pid), 10, "no scheduler process")[0]

    os.kill(first.pid, signal.SIGKILL)  # the worker alone: its scheduler gets no signal
    first.wait(timeout=10)
    _until(lambda: not _alive(scheduler_pid), 10, "the scheduler outlived its worker")
    assert connection.get(lock) is None  # it gave the lock back as it stopped

    workers()
    new_owner = _until(lambda: connection.get(lock), 30, "the next worker has no scheduler")
    assert new_owner != owner
    job = _queue(client).enqueue_in(timedelta(seconds=1), "os.getpid")
    _until(lambda: job.get_status(refresh=True) == "finished", 30, "a delayed job never ran")


def test_a_scheduler_whose_worker_died_while_it_started_gives_its_lock_back(client):
    """The lock is taken before RQ forks the scheduler, so a worker killed while its
    scheduler was still starting must not leave that lock behind: the scheduler, finding
    itself orphaned, stops at once and releases it (before, it died of the SIGTERM it sent
    itself, and the lock held the next worker's scheduler off for a minute)."""
    import multiprocessing

    from blueprints.cli.worker import WorkerBoundScheduler

    connection = client.application.extensions["redis"]
    lock = "rq:scheduler-lock:default"
    connection.delete(lock)
    scheduler = WorkerBoundScheduler(["default"], connection=connection)
    scheduler.acquire_locks()
    assert connection.get(lock) is not None
    scheduler._worker_pid = -1  # not this process's parent: as if the worker were gone
    process = multiprocessing.get_context("fork").Process(target=scheduler.work)
    process.start()
    process.join(timeout=20)
    assert process.exitcode == 0  # it stopped by itself, not by a signal
    assert connection.get(lock) is None
