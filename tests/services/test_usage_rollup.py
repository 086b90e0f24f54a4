"""The daily usage rollups (``usage_daily``) stay equal to a GROUP BY over the ledger (and
the web runs of accounts), whichever way the rows were written: inline runs in batches,
queued runs, workflow steps, journal replays, crashes between a write and its journal's
cleanup, a batch that failed half way, and the embedded default's own transaction."""

import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa
from flask_migrate import upgrade

from app import create_app
from engines import EngineError
from extensions import db
from jobs.runs import run_tool_job
from jobs.workflows import run_step_job
from models import Account, Run, UsageDaily, UsageEvent, User, WorkflowRun
from models.base import new_uuid
from services import accounts, clock, keys, runs, usage, usage_rollup, workflows
from services import recorder as recorder_module
from services.plans import get_plan
from services.recorder import RunJournal, RunRecorder
from services.runs import InlineRun
from tests.helpers import app_config, auth, clean, needs_redis

TOOL = "word-counter"  # a light tool: runs inline, 1 credit


@pytest.fixture
def app_settings(fake_provider):
    """``app``'s model provider, for workflow steps: ``fake_provider``."""
    return {"AI_BASE_URL": fake_provider.base_url, "AI_TIMEOUT_SECONDS": 5.0}


@pytest.fixture
def embedded(tmp_path, fake_provider):
    """The embedded default: a SQLite file, no Redis (rows written in the request)."""
    app = create_app(
        app_config(
            SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp_path / 'embedded.db'}",
            REDIS_URL=None,
            RATELIMIT_STORAGE_URI="memory://",
            AI_BASE_URL=fake_provider.base_url,
            AI_TIMEOUT_SECONDS=5.0,
        )
    )
    with app.app_context():
        upgrade()
    yield from clean(app)


def _new_key(plan: str = "pro", *, account: Account | None = None, free_calls_used: int = 100):
    """A key (on a new account unless ``account``); returns (raw key, key id, account id)."""
    if account is None:
        account = accounts.create_account(f"u{new_uuid()[-12:]}@example.com", plan)
        account.free_calls_used = free_calls_used
    key, raw = keys.create_key(account, "rollup")
    db.session.commit()
    return raw, key.id, account.id


def _day_sql(column: str) -> str:
    if db.engine.dialect.name == "postgresql":
        return f"({column} AT TIME ZONE 'UTC')::date"
    return f"date({column})"


def expected() -> dict:
    """The rollups as a GROUP BY over the ledger and the web runs makes them, written here
    in SQL of its own (not the service's code)."""
    db.session.rollback()
    day = _day_sql("created_at")
    ledger = db.session.execute(
        sa.text(
            f"SELECT account_id, {day} AS day, COALESCE(api_key_id, '') AS key_id,"
            " CASE WHEN api_key_id IS NULL THEN 'web' ELSE 'api' END AS source,"
            " count(*), sum(credits), sum(CASE WHEN free_call THEN 1 ELSE 0 END)"
            " FROM usage_events GROUP BY 1, 2, 3, 4"
        )
    ).all()
    web = db.session.execute(
        sa.text(
            f"SELECT account_id, {day} AS day, '' AS key_id, 'web' AS source, count(*), 0, 0"
            " FROM runs WHERE source = 'web' AND status = 'succeeded'"
            " AND account_id IS NOT NULL AND workflow_run_id IS NULL GROUP BY 1, 2"
        )
    ).all()
    totals: dict = {}
    for account_id, on, key_id, source, calls, credits, free in [*ledger, *web]:
        on = on if not isinstance(on, str) else datetime.fromisoformat(on).date()
        key = (account_id, on, key_id, source)
        figures = totals.get(key, (0, 0, 0))
        totals[key] = (figures[0] + calls, figures[1] + int(credits), figures[2] + int(free))
    return totals


def rollups() -> dict:
    db.session.rollback()
    return {
        (row.account_id, row.day, row.api_key_id, row.source): (
            row.calls,
            row.credits,
            row.free_calls,
        )
        for row in db.session.scalars(sa.select(UsageDaily))
    }


def _run_inline(client, raw: str, text: str = "one two three") -> str:
    response = client.post("/v1/tools/run", headers=auth(raw), json={"slug": TOOL, "input": text})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["run_id"]


def _drive_workflow(workflow_run_id: str, seconds: float = 60) -> WorkflowRun:
    """Run a workflow's queued steps here, one job after the other, until the run ends."""
    deadline = time.monotonic() + seconds
    first = True
    while time.monotonic() < deadline:
        db.session.rollback()
        run = db.session.get(WorkflowRun, workflow_run_id)
        if run.status in {"succeeded", "failed", "canceled"}:
            return run
        queued = [step.id for step in workflows.step_runs(run.id) if step.status == "queued"]
        for step_id in queued:
            run_step_job(step_id, workflow_run_id, first)
        first = False
    pytest.fail("the workflow run did not end")


def _inline_row(account_id: int | None, key_id: str | None, **fields) -> dict:
    moment = clock.now()
    values = {
        "id": new_uuid(), "account_id": account_id, "api_key_id": key_id, "tool_slug": TOOL,
        "sandbox": False, "input": {"text": "a"}, "created_at": moment, "started_at": moment,
        "status": "succeeded", "output": {"words": 1}, "credits": 1,
    }  # fmt: skip
    return InlineRun(**{**values, **fields}).row()


def _charged(account_id: int, key_id: str, **fields) -> tuple[dict, dict]:
    run = _inline_row(account_id, key_id, **fields)
    ledger = usage.ledger_row(account_id, key_id, TOOL, run["id"], 1, False, run["created_at"])
    return run, ledger


def _idle_recorder(app) -> RunRecorder:
    """A recorder that writes only when told to (no background thread)."""
    recorder = RunRecorder(app, delay=3600)
    recorder._ensure_thread = lambda: None
    return recorder


# --- every way a ledger row is written ---------------------------------------------------


def test_inline_queued_and_workflow_runs_roll_up_to_the_ledgers_group_by(app, client):
    pro, pro_key, pro_account = _new_key("pro")
    other, _, _ = _new_key("pro", account=db.session.get(Account, pro_account))
    free, _, _ = _new_key("pro", free_calls_used=98)  # two free calls left
    agency, _, _ = _new_key("agency")
    for raw, times in ((pro, 3), (other, 2), (free, 4)):
        for _ in range(times):
            _run_inline(client, raw)
    # A queued run: answered 202, run by its job.
    response = client.post(
        "/v1/tools/run",
        headers={**auth(agency), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": "queued words here"},
    )
    assert response.status_code == 202
    run_tool_job(response.get_json()["run_id"])
    # A workflow: its steps are charged one by one.
    response = client.post(
        "/v1/workflows/run",
        headers=auth(agency),
        json={"workflow_id": "review-insights", "input": "Great app. Sync fails daily."},
    )
    assert response.status_code == 202
    assert _drive_workflow(response.get_json()["run_id"]).status == "succeeded"

    assert rollups() == expected()
    today = clock.now().date()
    assert rollups()[(pro_account, today, pro_key, "api")] == (3, 3, 0)
    free_rows = [v for (a, d, k, s), v in rollups().items() if v[2]]
    assert free_rows == [(4, 2, 2)]  # two free calls, then two at 1 credit
    agency_calls = sum(v[0] for (a, d, k, s), v in rollups().items() if s == "api") - 3 - 2 - 4
    assert agency_calls == 1 + 3  # the queued run and the workflow's three steps


def test_a_failed_or_sandbox_run_counts_nothing(app, client):
    raw, _, account_id = _new_key("pro")
    sandbox_account = accounts.create_account("sandbox@example.com", "pro")
    _, sandbox_raw = keys.create_key(sandbox_account, "sandbox", sandbox=True)
    db.session.commit()
    body = {"slug": TOOL, "input": "a b"}
    response = client.post("/v1/tools/run", headers=auth(sandbox_raw), json=body)
    assert response.status_code == 200 and response.get_json()["sandbox"] is True
    response = client.post(
        "/v1/tools/run", headers=auth(raw), json={"slug": "json-formatter", "input": "{nope"}
    )
    assert response.status_code == 422
    assert db.session.scalar(sa.select(sa.func.count()).select_from(Run)) == 2
    assert rollups() == {} == expected()


def test_a_rollup_row_is_kept_per_day(app, client):
    raw, key_id, account_id = _new_key("pro")
    _run_inline(client, raw)
    clock.set_offset(timedelta(days=1))
    _run_inline(client, raw)
    _run_inline(client, raw)
    days = {(day, figures) for (_, day, _, _), figures in rollups().items()}
    today = clock.now().date()
    assert days == {(today - timedelta(days=1), (1, 1, 0)), (today, (2, 2, 0))}
    assert rollups() == expected()


# --- replays and crashes -----------------------------------------------------------------


@needs_redis
def test_a_replay_of_a_journal_entry_already_written_counts_nothing_twice(app, monkeypatch):
    _, key_id, account_id = _new_key("pro")
    recorder = _idle_recorder(app)
    run, ledger = _charged(account_id, key_id)
    recorder.record(run, ledger)
    # Written and committed, then the process died before deleting the journal entry.
    monkeypatch.setattr(RunJournal, "forget", lambda self, entries: None)
    assert recorder.flush() == 2
    monkeypatch.undo()
    assert len(app.extensions["redis"].xrange(RunJournal.STREAM)) == 1
    for _ in range(2):  # replayed by two workers' maintenance, one after the other
        RunRecorder(app, delay=3600).replay(older_than=0)
    assert app.extensions["redis"].xrange(RunJournal.STREAM) == []
    assert rollups() == {(account_id, clock.now().date(), key_id, "api"): (1, 1, 0)}
    assert rollups() == expected()


@needs_redis
def test_a_batch_replayed_beside_new_rows_counts_only_the_new_ones(app, monkeypatch):
    _, key_id, account_id = _new_key("pro")
    recorder = _idle_recorder(app)
    first, first_ledger = _charged(account_id, key_id)
    recorder.record(first, first_ledger)
    monkeypatch.setattr(RunJournal, "forget", lambda self, entries: None)
    recorder.flush()
    monkeypatch.undo()
    second, second_ledger = _charged(account_id, key_id)
    dead = _idle_recorder(app)
    dead.record(second, second_ledger)
    del dead  # killed before it wrote: only the journal has its rows
    # One replay batch holds both entries: one written already, one not.
    assert RunRecorder(app, delay=3600).replay(older_than=0) == 4
    assert rollups() == {(account_id, clock.now().date(), key_id, "api"): (2, 2, 0)}
    assert rollups() == expected()


@needs_redis
def test_a_batch_that_fails_half_way_writes_neither_ledger_nor_rollup_then_once(app, monkeypatch):
    """A crash between the ledger's insert and the rollup's cannot leave one without the
    other: both are one transaction (one statement on PostgreSQL)."""
    _, key_id, account_id = _new_key("pro")
    recorder = _idle_recorder(app)
    run, ledger = _charged(account_id, key_id)
    recorder.record(run, ledger)

    def broken_rollup(*args, **kwargs):
        raise sa.exc.OperationalError("INSERT INTO usage_daily", {}, Exception("crash"))

    # Fails the rollup after the ledger rows went in (the statement, on PostgreSQL).
    recorder_module._statement.cache_clear()
    monkeypatch.setattr(
        usage_rollup, "pg_rollup_sql", lambda *a: "SELECT * FROM no_such_table_here"
    )
    monkeypatch.setattr(usage_rollup, "add", broken_rollup)
    assert recorder.flush() == 0  # kept for the next try
    monkeypatch.undo()
    recorder_module._statement.cache_clear()
    db.session.rollback()
    assert db.session.scalar(sa.select(sa.func.count()).select_from(UsageEvent)) == 0
    assert rollups() == {}
    assert recorder.flush() == 2
    recorder.replay(older_than=0)  # its entry is gone: nothing more
    assert rollups() == {(account_id, clock.now().date(), key_id, "api"): (1, 1, 0)}
    assert rollups() == expected()


# --- web runs of accounts ----------------------------------------------------------------


def test_web_runs_of_accounts_count_as_web_calls_without_credits(app):
    account = accounts.create_account("web@example.com", "pro")
    db.session.commit()
    user_id = db.session.scalar(sa.select(User.id).where(User.email == "web@example.com"))
    recorder = _idle_recorder(app)
    web = dict(source="web", visitor_id="v1")
    recorder.record(_inline_row(account.id, None, **web))
    recorder.record(_inline_row(account.id, None, **web))
    recorder.record(_inline_row(account.id, None, **{**web, "status": "failed"}))
    recorder.record(_inline_row(None, None, source="web", visitor_id="anonymous"))
    recorder.flush()
    # A queued web run of the account, ended by its job.
    queued = Run(
        id=new_uuid(), account_id=account.id, tool_slug=TOOL, status="queued",
        input={"text": "one two"}, created_at=clock.now(), source="web", user_id=user_id,
    )  # fmt: skip
    db.session.add(queued)
    db.session.commit()
    run_tool_job(queued.id)
    assert rollups() == {(account.id, clock.now().date(), "", "web"): (3, 0, 0)}
    assert rollups() == expected()


def test_a_workflow_started_on_the_site_is_charged_to_the_account_as_web_usage(app):
    account = accounts.create_account("site@example.com", "pro")
    account.free_calls_used = 100
    db.session.commit()
    user_id = db.session.scalar(sa.select(User.id).where(User.email == "site@example.com"))
    workflow = workflows.find_workflow("review-insights")
    context = workflows.member_context(account, get_plan("pro"))
    run, reservation, _held = workflows.start(
        context, workflow, "Great app. Sync fails daily.",
        admit=workflows.no_reservation, user_id=user_id,
    )  # fmt: skip
    assert reservation is None and run.api_key_id is None
    db.session.commit()
    assert _drive_workflow(run.id).status == "succeeded"
    steps = workflows.step_runs(run.id)
    assert {(s.source, s.user_id, s.api_key_id) for s in steps} == {("web", user_id, None)}
    assert sum(s.credits for s in steps) == 5
    assert rollups() == {(account.id, clock.now().date(), "", "web"): (3, 5, 0)}
    assert rollups() == expected()


def test_a_failed_step_of_a_site_workflow_gives_back_no_web_allowance(app, monkeypatch):
    account = accounts.create_account("fail@example.com", "pro")
    db.session.commit()
    given_back = []
    monkeypatch.setattr(runs.allowance, "release_run", given_back.append)

    def refused(tool, inputs):
        raise EngineError("The text could not be read.")

    monkeypatch.setattr("services.runs.run_tool", refused)
    context = workflows.member_context(account, get_plan("pro"))
    run, _, _ = workflows.start(
        context, workflows.find_workflow("review-insights"), "Sync fails.",
        admit=workflows.no_reservation, user_id=None,
    )  # fmt: skip
    db.session.commit()
    assert _drive_workflow(run.id).status == "failed"
    assert given_back == []
    assert rollups() == {} == expected()


# --- the embedded default, and SQLite's batch --------------------------------------------


def test_the_embedded_default_rolls_up_in_the_requests_transaction(embedded):
    client = embedded.test_client()
    raw, key_id, account_id = _new_key("pro")
    for _ in range(3):
        _run_inline(client, raw)
    assert rollups() == {(account_id, clock.now().date(), key_id, "api"): (3, 3, 0)}
    assert rollups() == expected()


def test_sqlites_batch_counts_only_the_rows_it_inserted(embedded):
    _, key_id, account_id = _new_key("pro")
    rows = [
        *recorder_module.run_rows(*_charged(account_id, key_id)),
        *recorder_module.run_rows(*_charged(account_id, key_id)),
    ]
    recorder_module._write(db.engine, rows)
    recorder_module._write(db.engine, rows)  # replayed: every row is there already
    assert rollups() == {(account_id, clock.now().date(), key_id, "api"): (2, 2, 0)}
    assert rollups() == expected()


# --- the tally itself ----------------------------------------------------------------------


def test_days_are_utc_days_whatever_the_timestamps_zone():
    late = datetime(2025, 3, 1, 23, 30, tzinfo=UTC)
    same_moment = late.astimezone(ZoneInfo("Asia/Tokyo"))  # already 2 March there
    totals = usage_rollup.tally(
        ledger=[
            {
                "account_id": 1,
                "api_key_id": "k",
                "created_at": same_moment,
                "credits": 2,
                "free_call": False,
            },
            # SQLite hands timestamps back without their zone: they are UTC.
            {
                "account_id": 1,
                "api_key_id": "k",
                "created_at": late.replace(tzinfo=None),
                "credits": 0,
                "free_call": True,
            },
            {
                "account_id": 1,
                "api_key_id": None,
                "created_at": late,
                "credits": 5,
                "free_call": False,
            },
        ]  # fmt: skip
    )
    assert totals == {
        (1, late.date(), "k", "api"): [2, 2, 1],
        (1, late.date(), "", "web"): [1, 5, 0],
    }
