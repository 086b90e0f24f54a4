"""The sweep of stale runs (services/sweeper.py, jobs.runs.sweep_stale_runs), what the
queues tell it (job_state, leases), and races between a run's possible ends: one terminal
state, and events that agree with it."""

import threading
import time
from datetime import timedelta

import pytest
import redis
from rq import Queue
from rq.job import Job, JobStatus

import jobs.runs
from extensions import db
from jobs import maintenance
from models import Run, UsageEvent
from services import clock, keys, quota, run_ends, sweeper
from services.queue import LOST, WAITING, WORKING, JobLease, LeaseKeeper, lease_key
from tests.helpers import auth, needs_pg, needs_redis

TOOL = "word-counter"
DISPATCH = "/v1/tools/run"


@pytest.fixture
def events(monkeypatch):
    """The events runs announce, as (event name, run id). Every key these tests make has
    a webhook: a run's end is announced only to a key with one."""
    sent: list[tuple[str, str]] = []
    lock = threading.Lock()
    create_key = keys.create_key

    def create_key_with_webhook(*args, **kwargs):
        key, raw = create_key(*args, **kwargs)
        key.webhook_url = "https://hooks.example.com/runs"
        return key, raw

    monkeypatch.setattr(keys, "create_key", create_key_with_webhook)

    def emit(key_id, event, event_id):
        with lock:
            sent.append((event["event"], event["run_id"]))

    monkeypatch.setattr(jobs.runs, "emit", emit)
    return sent


@pytest.fixture
def fast_confirm(app):
    """A lease renewal period (the confirmation delay) of 0.1 s."""
    app.config["JOB_LEASE_SECONDS"] = 0.3


def _past_grace(app) -> None:
    clock.set_offset(timedelta(seconds=app.config["SWEEP_GRACE_SECONDS"] + 1))


def _sweep_twice() -> int:
    """Two passes a renewal period apart: the first only suspects, the second fails."""
    first = jobs.runs.sweep_stale_runs()
    time.sleep(0.15)
    return first + jobs.runs.sweep_stale_runs()


def _submit(client, raw) -> str:
    response = client.post(
        DISPATCH,
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": "one two"},
    )
    assert response.status_code == 202
    db.session.commit()
    return response.get_json()["run_id"]


def _calls(run: Run) -> int:
    return quota.store().usage(run.api_key_id, clock.as_utc(run.created_at)).calls


# --- RQ: the queue and the lease ------------------------------------------------------------


@needs_redis
def test_rq_job_states_follow_the_queue_and_the_lease(app):
    redis = app.extensions["redis"]
    dispatcher = app.extensions["dispatcher"]
    created = clock.now()
    job = Queue("default", connection=redis).enqueue(print, "x", job_id="job-1", job_timeout=60)
    assert dispatcher.job_state("job-1", created, 5) == WAITING
    job.set_status(JobStatus.STARTED)
    assert dispatcher.job_state("job-1", created, 5) == LOST  # started, nobody holds it
    with JobLease(redis, "job-1", timeout=60, seconds=3):
        assert dispatcher.job_state("job-1", created, 5) == WORKING
        assert 0 < redis.ttl(lease_key("job-1")) <= 3
    assert redis.get(lease_key("job-1")) is None  # dropped when the job ends
    with JobLease(redis, "job-1", timeout=-10, seconds=3):  # past its deadline + grace
        assert dispatcher.job_state("job-1", created, 5) == LOST
    job.set_status(JobStatus.FINISHED)  # ended without ending its run
    assert dispatcher.job_state("job-1", created, 5) == LOST
    job.delete()
    assert dispatcher.job_state("job-1", created, 5) == LOST


@needs_redis
def test_a_lease_is_renewed_and_set_again_when_it_went_missing(app):
    redis = app.extensions["redis"]
    with JobLease(redis, "job-2", timeout=60, seconds=0.6):
        redis.delete(lease_key("job-2"))  # as if Redis had restarted
        time.sleep(0.5)
        assert redis.get(lease_key("job-2")) is not None


@needs_redis
def test_a_lease_keeper_holds_renews_and_drops_the_leases_of_many_jobs(app):
    """The I/O worker's leases: set in the round trip that starts the job, renewed together
    (set again when one went missing), dropped in batches once their jobs end; the job
    states the sweep reads follow them."""
    redis = app.extensions["redis"]
    dispatcher = app.extensions["dispatcher"]
    keeper = LeaseKeeper(redis, seconds=0.6)
    keeper.drop_every = 0.05
    queue = Queue("io", connection=redis)
    created = clock.now()
    ids = [f"io-job-{n}" for n in range(3)]
    with redis.pipeline() as pipeline:
        for job_id in ids:
            queue.enqueue(print, job_id, job_id=job_id).set_status(JobStatus.STARTED)
            keeper.hold(job_id, 60, pipeline)
        assert redis.get(lease_key(ids[0])) is None  # nothing sent before the round trip
        pipeline.execute()
    assert all(dispatcher.job_state(job_id, created, 5) == WORKING for job_id in ids)
    keeping = threading.Thread(target=keeper.keep)
    keeping.start()
    try:
        redis.delete(lease_key(ids[1]))  # as if Redis had restarted
        time.sleep(0.5)  # past a renewal (every 0.2 s) and the keys' own 0.6 s
        assert all(redis.get(lease_key(job_id)) is not None for job_id in ids)
        keeper.drop(ids[0])
        time.sleep(0.2)
        assert redis.get(lease_key(ids[0])) is None and len(keeper) == 2
        assert dispatcher.job_state(ids[0], created, 5) == LOST  # started, nobody holds it
        keeper.drop(ids[2])
        with redis.pipeline() as pipeline:  # run again before its last lease was dropped
            keeper.hold(ids[2], 60, pipeline)
            pipeline.execute()
        time.sleep(0.2)
        assert redis.get(lease_key(ids[2])) is not None
    finally:
        keeper.stop()
        keeping.join(5)
    assert not keeping.is_alive()
    assert redis.get(lease_key(ids[1])) is not None  # held when the keeper stopped: it lapses
    assert 0 < redis.ttl(lease_key(ids[1])) <= 1


# --- the sweep on RQ --------------------------------------------------------------------------


@needs_pg
@needs_redis
def test_a_queued_run_whose_job_left_the_queue_is_failed_once(
    app, client, make_key, events, fast_confirm
):
    raw = make_key("pro", daily_override=3)
    lost, waiting = _submit(client, raw), _submit(client, raw)
    Job.fetch(lost, connection=app.extensions["redis"]).delete()
    assert _sweep_twice() == 0  # younger than the grace: its job may be on its way
    _past_grace(app)
    assert jobs.runs.sweep_stale_runs() == 0  # seen lost once: only suspected
    time.sleep(0.15)
    assert jobs.runs.sweep_stale_runs() == 1
    run = db.session.get(Run, lost, populate_existing=True)
    assert run.status == "failed" and run.error["code"] == "internal"
    assert "lost before it started" in run.error["message"]
    assert db.session.get(Run, waiting, populate_existing=True).status == "queued"
    assert _calls(run) == 1  # only the waiting run's reservation is left
    assert events == [("tool.failed", lost)]
    assert _sweep_twice() == 0 and events == [("tool.failed", lost)]


@needs_pg
@needs_redis
def test_a_lost_job_seen_once_then_found_alive_is_not_failed(app, client, make_key, events):
    """A lease that lapsed (say while Redis restarted) and came back before the next pass."""
    app.config["JOB_LEASE_SECONDS"] = 0.3
    raw = make_key()
    run_id = _submit(client, raw)
    redis = app.extensions["redis"]
    Job.fetch(run_id, connection=redis).set_status(JobStatus.STARTED)
    _past_grace(app)
    assert jobs.runs.sweep_stale_runs() == 0  # no lease: suspected
    with JobLease(redis, run_id, timeout=60, seconds=3):
        time.sleep(0.15)
        assert jobs.runs.sweep_stale_runs() == 0  # alive again: forgiven
    assert jobs.runs.sweep_stale_runs() == 0  # lost again: suspected anew, not failed
    assert db.session.get(Run, run_id, populate_existing=True).status == "queued"
    assert events == []


REVIEWS = "Love the app, but calendar sync fails every few days.\nSupport was quick and kind."


@pytest.fixture
def workflow_events(monkeypatch):
    sent: list[str] = []
    monkeypatch.setattr("jobs.workflows.emit", lambda key, event, _id: sent.append(event["event"]))
    return sent


def _start_workflow(client, raw) -> tuple[str, list[Run]]:
    response = client.post(
        "/v1/workflows/run",
        headers=auth(raw),
        json={"workflow_id": "review-insights", "input": REVIEWS},
    )
    assert response.status_code == 202, response.get_json()
    db.session.commit()
    workflow_run_id = response.get_json()["run_id"]
    queued = db.session.scalars(
        db.select(Run).where(Run.workflow_run_id == workflow_run_id, Run.status == "queued")
    ).all()
    assert queued
    return workflow_run_id, queued


def _ids(steps: list[Run]) -> set[str]:
    return {step.step_id for step in steps}


def _workflow_record(client, raw, workflow_run_id) -> dict:
    path = f"/v1/workflows/run/{workflow_run_id}/status"
    return client.get(path, headers=auth(raw)).get_json()


@needs_pg
@needs_redis
def test_a_lost_workflow_step_fails_its_workflow_run(
    app, client, make_key, fast_confirm, workflow_events
):
    raw = make_key("pro")
    workflow_run_id, queued = _start_workflow(client, raw)
    for step in queued:
        Job.fetch(step.id, connection=app.extensions["redis"]).delete()
    _past_grace(app)
    # The first lost step fails the workflow run, which cancels the steps left.
    assert _sweep_twice() == 1
    record = _workflow_record(client, raw, workflow_run_id)
    assert record["status"] == "failed"
    assert sorted(step["status"] for step in record["steps"] if step["id"] in _ids(queued)) == [
        "canceled"
    ] * (len(queued) - 1) + ["failed"]
    assert "lost before it started" in record["error"]["message"]
    assert workflow_events == ["workflow.failed"]
    who = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    assert who["usage"]["calls_today"] == 0  # every step's reservation came back
    assert _sweep_twice() == 0 and workflow_events == ["workflow.failed"]


@needs_pg
@needs_redis
def test_a_workflow_run_no_step_moves_is_advanced(app, client, make_key, workflow_events):
    """A worker died between a step's end and the advance of its workflow run."""
    raw = make_key("pro")
    workflow_run_id, queued = _start_workflow(client, raw)
    for step in queued:
        run_ends.fail(step, "internal", "The worker died right after this.")
    db.session.commit()
    assert jobs.runs.sweep_stale_runs() == 0
    assert _workflow_record(client, raw, workflow_run_id)["status"] == "queued"  # in grace
    _past_grace(app)
    jobs.runs.sweep_stale_runs()
    record = _workflow_record(client, raw, workflow_run_id)
    assert record["status"] == "failed" and "worker died" in record["error"]["message"]
    assert workflow_events == ["workflow.failed"]


# --- the sweep on the in-process queue -------------------------------------------------------


def _orphan(app, status: str, *, age: float) -> str:
    """A run row as a process that is gone left it, created ``age`` seconds ago."""
    from services import accounts, keys

    account = accounts.create_account(f"orphan-{status}-{age}@example.com", "pro")
    key, _ = keys.create_key(account, "k")
    moment = clock.now() - timedelta(seconds=age)
    quota.store().reserve(key.id, 10, 1, moment)
    run = Run(
        account_id=account.id,
        api_key_id=key.id,
        tool_slug=TOOL,
        status=status,
        input={"text": "a b"},
        notify=True,
        created_at=moment,
        started_at=moment if status == "running" else None,
    )
    db.session.add(run)
    db.session.commit()
    return run.id


def test_the_in_process_queue_fails_what_a_previous_process_left(embedded_app, events):
    embedded_app.config["JOB_LEASE_SECONDS"] = 0.3
    running = _orphan(embedded_app, "running", age=120)
    queued = _orphan(embedded_app, "queued", age=120)
    assert _sweep_twice() == 2
    for run_id, words in ((running, "stopped before it finished"), (queued, "lost before")):
        run = db.session.get(Run, run_id, populate_existing=True)
        assert run.status == "failed" and words in run.error["message"]
        assert _calls(run) == 0 and run.finished_at is not None
    assert db.session.get(Run, running).duration_ms >= 120_000  # since it started
    assert sorted(events) == sorted([("tool.failed", running), ("tool.failed", queued)])


def test_the_in_process_queue_leaves_runs_of_this_process_alone(embedded_app, events):
    """A run created after this process started whose job it does not know (about to be
    enqueued) is not judged; neither is a job waiting in the pool."""
    embedded_app.config["JOB_LEASE_SECONDS"] = 0.3
    dispatcher = embedded_app.extensions["dispatcher"]
    dispatcher.started_at = clock.now() - timedelta(seconds=600)
    young = _orphan(embedded_app, "queued", age=120)
    _past_grace(embedded_app)
    assert _sweep_twice() == 0
    assert db.session.get(Run, young, populate_existing=True).status == "queued"
    assert events == []


def test_the_in_process_queue_starts_the_sweep_with_its_first_job(embedded_app, events):
    embedded_app.config.update(SWEEP_INTERVAL_SECONDS=0.1, JOB_LEASE_SECONDS=0.3)
    orphan = _orphan(embedded_app, "running", age=120)
    dispatcher = embedded_app.extensions["dispatcher"]
    assert dispatcher.maintenance is None
    from services import accounts, keys

    account = accounts.create_account("first-job@example.com", "pro")
    _, raw = keys.create_key(account, "k")
    db.session.commit()
    try:
        _submit(embedded_app.test_client(), raw)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            # The run's end is committed, then announced: wait for both.
            failed = db.session.get(Run, orphan, populate_existing=True).status == "failed"
            if failed and ("tool.failed", orphan) in events:
                break
            db.session.rollback()
            time.sleep(0.05)
        assert db.session.get(Run, orphan, populate_existing=True).status == "failed"
        assert ("tool.failed", orphan) in events
    finally:
        dispatcher.maintenance.stop()


_ran: list[str] = []


def _unreachable() -> None:
    raise redis.ConnectionError("Connection refused")


def _note() -> None:
    _ran.append("noted")


def test_a_failing_maintenance_task_does_not_stop_the_others(embedded_app, monkeypatch, caplog):
    monkeypatch.setattr(maintenance, "MAINTENANCE_TASKS", (_unreachable, _note))
    _ran.clear()
    maintenance.run_maintenance(embedded_app)
    assert _ran == ["noted"]
    assert "could not run: Connection refused" in caplog.text


# --- races: one terminal state, events that agree -------------------------------------------


def _racing(app, monkeypatch):
    """A queued run (respond-async: its end is announced) whose engine waits for ``go``."""
    go = threading.Event()
    inside = threading.Event()

    def engine(tool, inputs):
        inside.set()
        go.wait(10)
        return {"words": 2, "characters": 7}

    monkeypatch.setattr("services.runs.run_tool", engine)
    return go, inside


def _in_thread(app, target, *args) -> threading.Thread:
    def work():
        with app.app_context():
            target(*args)

    thread = threading.Thread(target=work)
    thread.start()
    return thread


def _assert_agrees(run_id: str, events: list, allowed: set[str]) -> Run:
    run = db.session.get(Run, run_id, populate_existing=True)
    assert run.status in allowed
    mine = [name for name, rid in events if rid == run_id]
    expected = {"succeeded": ["tool.completed"], "failed": ["tool.failed"], "canceled": []}
    assert mine == expected[run.status]
    usage = db.session.scalar(
        db.select(db.func.count(UsageEvent.id)).where(UsageEvent.run_id == run_id)
    )
    assert usage == (1 if run.status == "succeeded" else 0)
    assert _calls(run) == (1 if run.status == "succeeded" else 0)
    return run


@needs_pg
@pytest.mark.parametrize("attempt", range(4))
def test_cancel_racing_completion_ends_once_and_announces_accordingly(
    app, client, make_key, events, monkeypatch, attempt
):
    go, inside = _racing(app, monkeypatch)
    raw = make_key("pro", daily_override=1)
    run_id = _submit(client, raw)
    job = _in_thread(app, jobs.runs.run_tool_job, run_id)
    assert inside.wait(5)
    canceler = _in_thread(app, lambda: (run_ends.cancel(db.session.get(Run, run_id)), _commit()))
    time.sleep(attempt * 0.003)  # vary who gets there first
    go.set()
    job.join(10)
    canceler.join(10)
    _assert_agrees(run_id, events, {"succeeded", "canceled"})


@needs_pg
@pytest.mark.parametrize("attempt", range(4))
def test_sweep_racing_completion_ends_once_and_announces_accordingly(
    app, client, make_key, events, monkeypatch, attempt
):
    go, inside = _racing(app, monkeypatch)
    raw = make_key("pro", daily_override=1)
    run_id = _submit(client, raw)
    job = _in_thread(app, jobs.runs.run_tool_job, run_id)
    assert inside.wait(5)
    monkeypatch.setattr(sweeper, "find_stale", lambda: [sweeper.Stale(run_id, "swept")])
    sweep = _in_thread(app, jobs.runs.sweep_stale_runs)
    time.sleep(attempt * 0.003)  # vary who gets there first
    go.set()
    job.join(10)
    sweep.join(10)
    run = _assert_agrees(run_id, events, {"succeeded", "failed"})
    if run.status == "failed":
        assert run.error["message"] == "swept"


def _commit() -> None:
    db.session.commit()
