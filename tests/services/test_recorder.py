"""The run recorder: batched writes off the request path, nothing lost on a failed write."""

import time
from decimal import Decimal

from sqlalchemy import exc

from extensions import db
from models import Run, UsageEvent
from services import clock
from services import recorder as recorder_module
from services.recorder import RunRecorder
from services.runs import InlineRun
from services.usage import ledger_row
from tests.helpers import auth, needs_pg


def _run(account_id: int, slug: str = "word-counter") -> dict:
    """An inline run's row, as ``services.runs.InlineRun.row`` makes it."""
    moment = clock.now()
    return InlineRun(
        id=f"00000000-0000-4000-8000-{int(time.time_ns()) % 10**12:012d}",
        account_id=account_id,
        api_key_id=None,
        tool_slug=slug,
        sandbox=False,
        input={"text": "a"},
        created_at=moment,
        started_at=moment,
        status="succeeded",
        output={"words": 1},
        credits=1,
    ).row()


def _account_id(client, make_key) -> int:
    raw = make_key()
    return client.get("/v1/public/whoami", headers=auth(raw)).get_json()["account"]["id"]


def test_rows_are_written_in_the_background_within_the_delay(app, client, make_key):
    account_id = _account_id(client, make_key)
    recorder = RunRecorder(app, delay=0.05)
    run = _run(account_id)
    ledger = ledger_row(account_id, None, "word-counter", run["id"], 1, False, run["created_at"])
    recorder.record(run, ledger)
    assert db.session.get(Run, run["id"]) is None  # not yet: it is buffered
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and db.session.get(Run, run["id"]) is None:
        db.session.rollback()
        time.sleep(0.02)
    assert db.session.get(Run, run["id"]).output == {"words": 1}
    stored = db.session.scalar(db.select(UsageEvent).where(UsageEvent.run_id == run["id"]))
    assert stored.credits == 1 and stored.id is not None


def test_under_load_a_request_writes_the_due_batch_once_its_answer_is_sent(
    app, client, make_key, monkeypatch
):
    recorder = RunRecorder(app, delay=0.3)
    monkeypatch.setattr(recorder, "_ensure_thread", lambda: None)  # no background writer
    monkeypatch.setitem(app.extensions, "run_recorder", recorder)
    raw = make_key()
    body = {"slug": "word-counter", "input": "One two three."}

    def run() -> str:
        with client.post("/v1/tools/run", json=body, headers=auth(raw)) as response:
            assert response.status_code == 200
            return response.get_json()["run_id"]
        # leaving the block closes the answer, as a server does once it has sent it

    first = run()
    assert db.session.get(Run, first) is None  # buffered, not yet due
    time.sleep(0.3)
    second = run()  # the oldest row is due: this request writes the batch
    db.session.rollback()
    assert db.session.get(Run, first).status == "succeeded"
    assert db.session.get(Run, second).status == "succeeded"
    assert (
        db.session.scalar(db.select(db.func.count()).where(UsageEvent.run_id.in_([first, second])))
        == 2
    )
    third = run()
    assert db.session.get(Run, third) is None  # a new batch, not yet due


def test_under_gevent_no_request_writes_a_batch_the_background_writer_does(
    app, client, make_key, monkeypatch
):
    """Under the web command's gevent worker the writer is a greenlet (no GIL to fight): a
    due batch is left to it, so that no client's connection waits for the database."""
    monkeypatch.setattr(recorder_module, "is_module_patched", lambda name: name == "threading")
    recorder = RunRecorder(app, delay=0.2)
    assert recorder._cooperative
    started = []
    monkeypatch.setattr(recorder, "_ensure_thread", lambda: started.append(True))
    monkeypatch.setitem(app.extensions, "run_recorder", recorder)
    raw = make_key()
    body = {"slug": "word-counter", "input": "One two three."}
    ids = []
    for _ in range(2):
        with client.post("/v1/tools/run", json=body, headers=auth(raw)) as response:
            assert response.status_code == 200
            ids.append(response.get_json()["run_id"])
        time.sleep(0.25)  # the first run's row is due at the second request
    db.session.rollback()
    assert [db.session.get(Run, run_id) for run_id in ids] == [None, None]
    assert started  # the background writer was asked for
    recorder._flush_if_due()  # what its loop does every delay
    db.session.rollback()
    assert [db.session.get(Run, run_id).status for run_id in ids] == ["succeeded"] * 2


def test_a_failed_write_keeps_the_rows_for_the_next_flush(app, client, make_key, monkeypatch):
    account_id = _account_id(client, make_key)
    recorder = RunRecorder(app, delay=3600)
    run = _run(account_id)
    recorder.record(run)
    real_write = recorder_module._write

    def database_gone(engine, rows):
        raise exc.OperationalError("COPY", {}, Exception("connection refused"))

    monkeypatch.setattr(recorder_module, "_write", database_gone)
    assert recorder.flush() == 0
    monkeypatch.setattr(recorder_module, "_write", real_write)
    assert recorder.flush() == 1
    assert db.session.get(Run, run["id"]).status == "succeeded"


def test_a_row_the_database_refuses_does_not_hold_back_the_others(app, client, make_key, caplog):
    account_id = _account_id(client, make_key)
    recorder = RunRecorder(app, delay=3600)
    kept, refused = _run(account_id), _run(account_id)
    refused["id"] = refused["id"][:-1] + "9"
    refused["account_id"] = 10**9  # no such account
    for run in (kept, refused):
        recorder.record(run, ledger_row(run["account_id"], None, "word-counter", run["id"], 1,
                                        False, run["created_at"]))  # fmt: skip
    assert recorder.flush() == 2  # the kept run and its ledger row
    assert db.session.get(Run, kept["id"]).status == "succeeded"
    assert db.session.get(Run, refused["id"]) is None
    assert f"dropped the rows of run {refused['id']}" in caplog.text
    assert recorder.flush() == 0  # nothing left to retry


def test_every_value_is_written_exactly_as_recorded(app, client, make_key):
    """Text that JSON and SQL both escape, nested JSON, nulls and microsecond timestamps
    come back from the database as they were recorded; a sandbox run (no ledger row) and a
    charged run go in the same batch."""
    account_id = _account_id(client, make_key)
    recorder = RunRecorder(app, delay=3600)
    awkward = "tab\there, line\nbreak, back\\slash, 'quote' \"double\", é ✓ 🚀, %s %(x)s"
    charged, sandbox = _run(account_id), _run(account_id)
    sandbox["id"] = sandbox["id"][:-1] + "7"
    charged.update(
        input={"text": awkward, "nested": {"list": [1, 2.5, None, True], "empty": {}}},
        output={"echo": awkward, "n": 0},
        error=None,
        created_at=clock.now().replace(microsecond=123456),
        finished_at=clock.now().replace(microsecond=1),
        duration_ms=7,
    )
    sandbox.update(sandbox=True, status="failed", output=None, error={"kind": "input"})
    recorder.record(charged, ledger_row(account_id, None, awkward[:90], charged["id"], 3, True,
                                        charged["created_at"]))  # fmt: skip
    recorder.record(sandbox)
    assert recorder.flush() == 3
    stored = db.session.get(Run, charged["id"])
    assert stored.input == charged["input"] and stored.output == charged["output"]
    assert stored.error is None and stored.duration_ms == 7
    assert stored.created_at == charged["created_at"]
    assert stored.finished_at == charged["finished_at"]
    ledger = db.session.scalar(db.select(UsageEvent).where(UsageEvent.run_id == charged["id"]))
    assert (ledger.tool_slug, ledger.credits, ledger.free_call) == (awkward[:90], 3, True)
    assert ledger.created_at == charged["created_at"]
    other = db.session.get(Run, sandbox["id"])
    assert (other.sandbox, other.status, other.output, other.error) == (
        True, "failed", None, {"kind": "input"}
    )  # fmt: skip


def test_a_value_the_database_cannot_read_is_dropped_not_retried_forever(
    app, client, make_key, caplog
):
    account_id = _account_id(client, make_key)
    recorder = RunRecorder(app, delay=3600)
    kept, unreadable = _run(account_id), _run(account_id)
    unreadable["id"] = unreadable["id"][:-1] + "8"
    unreadable["duration_ms"] = 2**40  # PostgreSQL's integer column refuses it
    recorder.record(kept)
    recorder.record(unreadable)
    if db.engine.dialect.name == "postgresql":
        assert recorder.flush() == 1
        assert db.session.get(Run, unreadable["id"]) is None
        assert f"dropped the rows of run {unreadable['id']}" in caplog.text
    else:  # SQLite's integers are 64 bits wide
        assert recorder.flush() == 2
    assert db.session.get(Run, kept["id"]).status == "succeeded"
    assert recorder.flush() == 0  # nothing left to retry


@needs_pg  # SQLite's path serializes through SQLAlchemy's JSON type, which refuses it
def test_a_value_json_cannot_hold_is_written_as_its_text(app, client, make_key):
    account_id = _account_id(client, make_key)
    recorder = RunRecorder(app, delay=3600)
    run = _run(account_id)
    run["output"] = {"amount": Decimal("1.50")}
    recorder.record(run)
    assert recorder.flush() == 1
    assert db.session.get(Run, run["id"]).output == {"amount": "1.50"}


@needs_pg  # SQLite's path serializes through SQLAlchemy's JSON type
def test_nan_is_written_as_null_and_a_wide_integer_as_it_is(app, client, make_key):
    account_id = _account_id(client, make_key)
    recorder = RunRecorder(app, delay=3600)
    nan, wide = _run(account_id), _run(account_id)
    wide["id"] = wide["id"][:-1] + "8"
    nan["output"] = {"score": float("nan"), "top": float("inf")}  # the answer shows null
    wide["output"] = {"count": 2**70}  # wider than orjson writes: the stdlib writes it
    recorder.record(nan)
    recorder.record(wide)
    assert recorder.flush() == 2
    assert db.session.get(Run, nan["id"]).output == {"score": None, "top": None}
    assert db.session.get(Run, wide["id"]).output == {"count": 2**70}


@needs_pg  # PostgreSQL reads no NUL in these rows; SQLite stores what it is given
def test_a_nul_character_is_stored_as_a_replacement_character_not_lost(app, client, make_key):
    account_id = _account_id(client, make_key)
    recorder = RunRecorder(app, delay=3600)
    run = _run(account_id)
    # A NUL, a NUL after an escaped backslash, and the six characters \u0000 (kept as they are).
    run["input"] = {"text": "a\x00b \\\x00 \\u0000"}
    run["output"] = {"first": "\x00"}
    recorder.record(
        run, ledger_row(account_id, None, "word-counter", run["id"], 1, False, clock.now())
    )
    assert recorder.flush() == 2
    stored = db.session.get(Run, run["id"])
    assert stored.input == {"text": "a\ufffdb \\\ufffd \\u0000"}
    assert stored.output == {"first": "\ufffd"}
    assert db.session.scalar(db.select(UsageEvent).where(UsageEvent.run_id == run["id"]))


def test_a_row_journaled_before_a_column_existed_is_written_with_its_default():
    """A run journaled by the version before the site's columns (source, visitor_id...) is
    replayed with the defaults an insert without them would take; a key the database makes
    (the ledger's id) is left to it."""
    from models import Run, UsageEvent
    from services.recorder import _revive

    old_run = {"id": "r1", "status": "succeeded", "created_at": "2026-11-24T10:00:00+00:00"}
    revived = _revive(Run.__table__, dict(old_run))
    assert revived["source"] == "api"
    assert revived["visitor_id"] is None and revived["web_address"] is None
    assert revived["created_at"].isoformat() == "2026-11-24T10:00:00+00:00"
    ledger = _revive(UsageEvent.__table__, {"run_id": "r1", "credits": 1})
    assert "id" not in ledger
