"""The run journal: an inline run's rows are in Redis before it is answered, and written to
the database at most once, by their own process or, when it died, by the replay."""

import pytest
import redis
from sqlalchemy import exc, func, select

from extensions import db
from models import Run, UsageEvent
from services import clock, keys, quota
from services import recorder as recorder_module
from services.recorder import RunJournal, RunRecorder, replay_journal
from services.usage import ledger_row
from tests.helpers import auth, needs_pg, needs_redis
from tests.services.test_recorder import _account_id, _run

pytestmark = [needs_redis]


def _charged(account_id: int) -> tuple[dict, dict]:
    run = _run(account_id)
    return run, ledger_row(account_id, None, "word-counter", run["id"], 1, False, run["created_at"])


def _journal(app) -> list:
    return app.extensions["redis"].xrange(RunJournal.STREAM)


def _stored(run_id: str) -> tuple[int, int]:
    db.session.rollback()
    runs = db.session.scalar(select(func.count()).select_from(Run).where(Run.id == run_id))
    ledger = db.session.scalar(
        select(func.count()).select_from(UsageEvent).where(UsageEvent.run_id == run_id)
    )
    return runs, ledger


def test_a_run_is_journaled_before_record_returns_and_forgotten_once_written(app, client, make_key):
    recorder = RunRecorder(app, delay=3600)
    recorder._ensure_thread = lambda: None  # no background writer
    run, ledger = _charged(_account_id(client, make_key))
    recorder.record(run, ledger)
    assert len(_journal(app)) == 1 and _stored(run["id"]) == (0, 0)
    assert recorder.flush() == 2
    assert _stored(run["id"]) == (1, 1)
    assert _journal(app) == []


def test_the_replay_writes_what_a_dead_process_had_buffered_once(app, client, make_key):
    dead = RunRecorder(app, delay=3600)
    dead._ensure_thread = lambda: None
    run, ledger = _charged(_account_id(client, make_key))
    dead.record(run, ledger)
    del dead  # SIGKILLed: its buffer is gone, never written

    survivor = RunRecorder(app, delay=3600)
    assert survivor.replay(older_than=3600) == 0  # too young: its process may still write it
    assert survivor.replay(older_than=0) == 2
    assert _stored(run["id"]) == (1, 1)
    stored = db.session.get(Run, run["id"])
    assert stored.output == {"words": 1} and stored.created_at is not None
    assert _journal(app) == []
    assert survivor.replay(older_than=0) == 0


def test_a_replay_of_rows_already_written_inserts_nothing_twice(app, client, make_key, monkeypatch):
    recorder = RunRecorder(app, delay=3600)
    recorder._ensure_thread = lambda: None
    run, ledger = _charged(_account_id(client, make_key))
    recorder.record(run, ledger)
    # Written, but the process died before it deleted the entry.
    monkeypatch.setattr(RunJournal, "forget", lambda self, entries: None)
    assert recorder.flush() == 2
    monkeypatch.undo()
    assert len(_journal(app)) == 1
    app.config["RUN_JOURNAL_GRACE_SECONDS"] = 0
    app.extensions["run_recorder"] = recorder
    replay_journal()
    assert _stored(run["id"]) == (1, 1)
    assert _journal(app) == []


def test_without_the_journal_the_rows_are_written_before_the_answer(
    app, client, make_key, monkeypatch
):
    def unreachable(self, rows):
        raise redis.ConnectionError("Redis went away")

    monkeypatch.setattr(RunJournal, "append", unreachable)
    recorder = RunRecorder(app, delay=3600)
    run, ledger = _charged(_account_id(client, make_key))
    recorder.record(run, ledger)
    assert _stored(run["id"]) == (1, 1)  # committed before ``record`` returned


@needs_pg
def test_a_run_that_can_be_neither_journaled_nor_written_is_not_answered_200(
    app, client, make_key, monkeypatch
):
    raw = make_key("pro")

    def unreachable(self, rows):
        raise redis.ConnectionError("Redis went away")

    def database_gone(engine, rows):
        raise exc.OperationalError("INSERT", {}, Exception("the database went away"))

    monkeypatch.setattr(RunJournal, "append", unreachable)
    monkeypatch.setattr(recorder_module, "_write", database_gone)
    response = client.post(
        "/v1/public/tools/word-counter/run", headers=auth(raw), json={"input": "one two"}
    )
    assert response.status_code == 503
    assert response.get_json()["code"] == "service_unavailable"
    assert db.session.scalar(select(func.count()).select_from(Run)) == 0


def test_a_journaled_run_the_database_refuses_is_dropped_not_retried_forever(app, client, make_key):
    recorder = RunRecorder(app, delay=3600)
    recorder._ensure_thread = lambda: None
    orphan = _run(10**9)  # an account that does not exist: the database refuses the row
    recorder.record(orphan)
    assert recorder.flush() == 0
    assert _journal(app) == []
    assert recorder.replay(older_than=0) == 0


@needs_pg
@pytest.mark.parametrize(
    "text, stored",
    [
        ("\ud800 lone", "\ufffd lone"),
        ("nul \x00 inside", "nul \ufffd inside"),
        ("pair \U0001f600", "pair \U0001f600"),
    ],
    ids=["lone-surrogate", "nul", "astral"],
)
def test_awkward_text_survives_the_journal(app, client, make_key, text, stored):
    recorder = RunRecorder(app, delay=3600)
    recorder._ensure_thread = lambda: None
    run = _run(_account_id(client, make_key))
    run["output"] = {"text": text}
    recorder.record(run)
    del recorder
    assert RunRecorder(app, delay=3600).replay(older_than=0) == 1
    assert db.session.get(Run, run["id"]).output["text"] == stored


def test_a_run_that_died_before_its_journal_entry_gives_its_reservation_back(
    app, client, make_key, monkeypatch
):
    """Its process was killed mid-run: nothing was answered, nothing is journaled, and the
    maintenance gives the call back once the grace has passed."""
    raw = make_key("pro")
    context = keys.resolve(raw)

    def killed(*args, **kwargs):
        raise SystemExit("the process died here")

    monkeypatch.setattr("services.runs._run_engine", killed)
    with pytest.raises(SystemExit):
        client.post("/v1/public/tools/word-counter/run", headers=auth(raw), json={"input": "x"})
    monkeypatch.undo()
    store = quota.store()
    assert store.usage(context.key_id, clock.now()).calls == 1
    assert app.extensions["redis"].zcard(quota.INFLIGHT) == 1

    assert store.release_abandoned(older_than=3600) == 0  # it may still be running
    app.config["RUN_INFLIGHT_GRACE_SECONDS"] = 0
    replay_journal()
    assert store.usage(context.key_id, clock.now()).calls == 0
    assert app.extensions["redis"].zcard(quota.INFLIGHT) == 0


def test_a_journaled_or_failed_inline_run_leaves_nothing_in_flight(app, client, make_key):
    raw = make_key("pro")
    ok = client.post("/v1/public/tools/word-counter/run", headers=auth(raw), json={"input": "x"})
    assert ok.status_code == 200
    failed = client.post(
        "/v1/public/tools/json-formatter/run", headers=auth(raw), json={"input": "{not json"}
    )
    assert failed.status_code == 422, failed.get_json()
    assert app.extensions["redis"].zcard(quota.INFLIGHT) == 0
    app.config["RUN_INFLIGHT_GRACE_SECONDS"] = 0
    replay_journal()
    assert quota.store().usage(keys.resolve(raw).key_id, clock.now()).calls == 1


@pytest.mark.parametrize("where", ["this process", "another process"])
def test_a_run_answered_but_not_yet_written_has_a_status_at_once(app, client, make_key, where):
    """Its batch is written up to RUN_RECORD_DELAY later: meanwhile its status (and a cancel,
    which finds it ended) are read from this process's buffer, or from the journal when
    another process answered it; another account still gets 404."""
    recorder = RunRecorder(app, delay=3600)
    recorder._ensure_thread = lambda: None  # no background writer: nothing is written
    app.extensions["run_recorder"] = recorder
    raw = make_key("pro")
    run = client.post(
        "/v1/tools/run", headers=auth(raw), json={"slug": "word-counter", "input": "one two"}
    ).get_json()
    assert _stored(run["run_id"]) == (0, 0)
    if where == "another process":
        app.extensions["run_recorder"] = RunRecorder(app, delay=3600)  # an empty buffer

    status = client.get(f"/v1/tools/run/{run['run_id']}/status", headers=auth(raw))
    assert status.status_code == 200, status.get_json()
    record = status.get_json()
    assert (record["run_id"], record["status"], record["output"]) == (
        run["run_id"], "succeeded", run["output"],
    )  # fmt: skip
    assert record["credits"] == run["credits"] and record["finished_at"]
    cancel = client.post(f"/v1/tools/run/{run['run_id']}/cancel", headers=auth(raw))
    assert cancel.status_code == 409 and cancel.get_json()["code"] == "run_not_cancelable"
    other = client.get(f"/v1/tools/run/{run['run_id']}/status", headers=auth(make_key("pro")))
    assert other.status_code == 404
    assert _stored(run["run_id"]) == (0, 0)  # only read
    assert recorder.flush() == 2
