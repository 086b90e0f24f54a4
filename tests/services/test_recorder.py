"""The run recorder: batched writes off the request path, nothing lost on a failed write."""

import time

from extensions import db
from models import Run, UsageEvent
from services import clock
from services.recorder import RunRecorder
from services.runs import InlineRun
from services.usage import ledger_row
from tests.conftest import auth


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


def test_a_failed_write_keeps_the_rows_for_the_next_flush(app, client, make_key, monkeypatch):
    account_id = _account_id(client, make_key)
    recorder = RunRecorder(app, delay=3600)
    run = _run(account_id)
    recorder.record(run)
    real_commit = db.session.commit

    def broken():
        raise RuntimeError("database went away")

    monkeypatch.setattr(db.session, "commit", broken, raising=False)
    assert recorder.flush() == 0
    monkeypatch.setattr(db.session, "commit", real_commit, raising=False)
    assert recorder.flush() == 1
    assert db.session.get(Run, run["id"]).status == "succeeded"
