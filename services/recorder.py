"""Writes inline runs and their usage rows: journaled before the answer, written to the
database in batches after it.

An inline tool run is a few milliseconds of work; committing its two rows one request at a
time cost more than the run itself (docs/contributing/benchmarks/api-overhead.md). Each
process therefore buffers the rows and writes them in one transaction once the oldest has
waited ``RUN_RECORD_DELAY`` seconds (half a second: each commit waits for its WAL to reach
the disk, and with a batch every 50 ms an inline run cost about 7 % more CPU in all, the
database's and the disk's included, measured in 30 paired rounds of bench/api_overhead.py).
With threads, under load, a request that recorded rows writes the batch after its answer has
been sent; when requests stop, a background thread writes what is left. (A background thread
writing every batch cost more: it fought the request threads for the GIL, and a tool run
took 7 to 8 % more CPU in all, measured under load in two paired runs.) Under gevent (the
web command) that thread is a greenlet, which fights nobody for the GIL: it writes every
batch, and no client's connection waits for one. With a delay of 0 (the tests' setting) the
rows are written as the request ends, after the view's own commit, through the same code.

A buffer dies with its process (a SIGKILL, an out-of-memory kill), and a commit is lost with
a database that crashes before it reached the disk. So nothing is answered before the run's
rows are in the **journal**: a Redis stream (``runs:journal``) that ``record`` appends them
to in one round trip before it returns, or that the run's reservation added them to (a run
admitted after it ran, services/runs.py: ``journaled`` then buffers them). A batch is
committed durably (the commit waits for the WAL flush) and only then are its entries
deleted; an entry still there after ``RUN_JOURNAL_GRACE_SECONDS`` (its process died, or the
database was down) is written by the maintenance of any worker (``replay_journal``), which
inserts nothing twice: a run's rows are keyed by the run's id (the ledger's by a unique
index on ``run_id``). What the journal promises is what Redis keeps: production Redis needs
append-only persistence (docs/operating/recording.md). Where the journal cannot be written (Redis
unreachable), the run's rows are committed to the database before the answer instead, and
when neither can take them the request fails (503) rather than answer a run that was not
recorded.

The daily usage rollups (services/usage_rollup.py) are added to in the transaction that
inserts the rows, from the rows it inserted (RETURNING): a replay adds nothing twice.

Without Redis (the embedded default) there is no journal: the rows are written in the
request's own transaction, which the view commits before it answers.
"""

import atexit
import json
import logging
import os
import re
import threading
import time
from datetime import datetime
from functools import cache

import orjson
import redis
from flask import Flask, after_this_request, current_app, has_request_context
from gevent.monkey import is_module_patched
from psycopg.pq import TransactionStatus
from sqlalchemy import DateTime, Engine, Table, exc
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from extensions import db
from models import Run, UsageEvent
from services import quota, usage_rollup
from services.redis import DirectConnections, redis_client

log = logging.getLogger(__name__)

_MAX_BUFFERED = 100_000
_RUNS, _LEDGER = Run.__table__, UsageEvent.__table__
_TABLES = (_RUNS, _LEDGER)  # the ledger refers to the runs
_BY_NAME = {table.name: table for table in _TABLES}
# What an insert hands back of the rows it inserted, for the daily rollups (usage_rollup).
_RETURNING = {_RUNS: usage_rollup.RUN_RETURNING, _LEDGER: usage_rollup.LEDGER_RETURNING}
# What the database answers for a row it will never take: a broken reference (its account
# deleted meanwhile, say), or a value it cannot read (a NaN in an output's JSON).
_REFUSED = (exc.IntegrityError, exc.DataError)
# Journal entries replayed per call of ``replay_journal``.
_REPLAY_BATCH = 500
# Journal entries searched, newest first, for a run answered but not yet written.
_SEARCHED = 10_000

# One run's rows (its ``runs`` row, and its ledger row when it was charged), with the id of
# its journal entry (None without a journal).
Record = tuple[str | None, list[tuple[Table, dict]]]


# One run's entry, and its reservation out of the in-flight set, in one step.
_APPEND = """
local entry = redis.call('XADD', KEYS[1], '*', 'r', ARGV[1])
if ARGV[2] ~= '' then redis.call('ZREM', KEYS[2], ARGV[2]) end
return entry
"""


class RunJournal:
    """The Redis stream of runs answered but not yet known to be in the database."""

    STREAM = quota.JOURNAL

    def __init__(self, client):
        self.client = client
        self._connections = DirectConnections(client)
        self._append = client.register_script(_APPEND)

    def append(self, rows: list[tuple[Table, dict]], in_flight: str = "") -> str:
        """Add one run's rows, and take its reservation out of the in-flight set
        (``in_flight``: its member there); returns the entry's id. Raises Redis's errors."""
        payload = self.payload(rows)
        keys = (self.STREAM, quota.INFLIGHT)
        try:
            entry = self._connections.execute("EVALSHA", self._append.sha, 2, *keys, payload,
                                              in_flight)  # fmt: skip
        except redis.exceptions.NoScriptError:  # Redis restarted: the client loads it again
            entry = self._append(keys=keys, args=[payload, in_flight])
        return entry.decode()

    @staticmethod
    def payload(rows: list[tuple[Table, dict]]) -> bytes:
        """One run's rows as its journal entry holds them."""
        return _encode([[table.name, row] for table, row in rows])

    def forget(self, entries: list[str]) -> None:
        if entries:
            self._connections.execute("XDEL", self.STREAM, *entries)

    def find_run(self, run_id: str) -> dict | None:
        """The ``runs`` row of run ``run_id`` among the newest ``_SEARCHED`` entries (a run
        just answered is among them), or None."""
        needle = run_id.encode()
        for _, fields in self.client.xrevrange(self.STREAM, "+", "-", count=_SEARCHED):
            payload = fields[b"r"]
            if needle in payload:  # the rare entry worth decoding
                for table, row in _decode(payload):
                    if table is _RUNS and row.get("id") == run_id:
                        return _revive(table, row)
        return None

    def older_than(self, seconds: float, count: int) -> list[Record]:
        """The oldest entries added more than ``seconds`` ago (by Redis's clock, which
        numbers the entries), with their rows."""
        now_s, now_us = self.client.time()
        newest = int(now_s * 1000 + now_us // 1000 - seconds * 1000)
        if newest <= 0:
            return []
        entries = self.client.xrange(self.STREAM, "-", newest, count=count)
        return [(entry.decode(), _decode(fields[b"r"])) for entry, fields in entries]


class RunRecorder:
    def __init__(self, app: Flask, delay: float):
        self.app = app
        self.delay = delay
        client = redis_client(app)
        self.journal = RunJournal(client) if client is not None else None
        self._records: list[Record] = []
        self._buffered = 0  # rows in ``_records``
        # When the buffer's oldest row came (or the last failed write, to wait before the
        # next try).
        self._since = 0.0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        # Under gevent (the web command) the writer "thread" is a greenlet: it fights nobody
        # for the GIL, and writes every batch, so that no request's connection waits for one.
        self._cooperative = is_module_patched("threading")

    def record(self, run: dict, ledger: dict | None = None, in_flight: str = "") -> None:
        """Record an inline run's ``runs`` row, and its usage ledger row: journaled (or
        written) before this returns, so before the run is answered. ``in_flight``: its
        reservation's member in the in-flight set, taken out with the same call. Raises
        Redis's or SQLAlchemy's errors when it can be neither (the API answers 503)."""
        rows = run_rows(run, ledger)
        if self.journal is None:
            write_in_session(rows)
            return
        try:
            entry = self.journal.append(rows, in_flight)
        except Exception as error:
            log.warning("run journal unreachable (%s): run %s written at once", error, run["id"])
            _write(db.engine, rows)
            return
        self.journaled(entry, rows)

    def journaled(self, entry: str, rows: list[tuple[Table, dict]]) -> None:
        """Write a run's ``rows``, already in the journal as ``entry``, with the next batch
        (the reservation of a run admitted after it ran journals them: services/runs.py)."""
        with self._lock:
            if self._buffered >= _MAX_BUFFERED:
                # The database has been down a long while: the journal holds these rows.
                log.error("run recorder: %d rows waiting, leaving the oldest to the journal",
                          self._buffered)  # fmt: skip
                self._buffered -= len(self._records.pop(0)[1])
            if not self._records:
                self._since = time.monotonic()
            self._records.append((entry, rows))
            self._buffered += len(rows)
        if self.delay > 0:
            self._ensure_thread()
            if (
                not self._cooperative
                and has_request_context()
                and time.monotonic() - self._since >= self.delay
            ):
                after_this_request(self._flush_once_sent)  # the batch is due
        elif has_request_context():
            # After the view has committed its own transaction, still inside the request.
            after_this_request(self._flush_then)
        else:
            self.flush()

    def pending(self, run_id: str) -> dict | None:
        """The ``runs`` row of a run that was answered but whose batch is not written yet
        (in this process's buffer, or in the journal, from any process), or None. A
        client that asks for a run's status right after its answer must find it."""
        with self._lock:
            for _, rows in self._records:
                row = rows[0][1]  # a run's rows start with its ``runs`` row
                if row["id"] == run_id:
                    return dict(row)
        if self.journal is None:
            return None
        return self.journal.find_run(run_id)

    def _flush_then(self, response):
        self.flush()
        return response

    def _flush_once_sent(self, response):
        response.call_on_close(self._flush_if_due)
        return response

    def _flush_if_due(self) -> None:
        if self._records and time.monotonic() - self._since >= self.delay:
            self.flush()

    def flush(self) -> int:
        """Write every buffered row now; returns how many were written."""
        with self._lock:
            records, self._records, self._buffered = self._records, [], 0
        if not records:
            return 0
        try:
            return self._store(records)
        except Exception:
            return self._keep(records)

    def replay(self, older_than: float) -> int:
        """Write the journal's entries older than ``older_than`` seconds that no process
        wrote (each at most once); returns how many rows it wrote. Raises when the
        database cannot be reached."""
        if self.journal is None:
            return 0
        records = self.journal.older_than(older_than, _REPLAY_BATCH)
        records = [
            (entry, [(table, _revive(table, row)) for table, row in rows])
            for entry, rows in records
        ]
        written = self._store(records) if records else 0
        if written:
            log.warning("run journal: wrote %d rows that no process wrote in time", written)
        return written

    def _store(self, records: list[Record]) -> int:
        """Insert ``records`` (a row already there is left as it is), then forget their
        journal entries. A run whose rows the database refuses is dropped with a log line
        (its entry forgotten too: it would be refused forever). Returns how many rows were
        inserted or already there; raises when the database cannot be reached."""
        with self.app.app_context():
            try:
                _write(db.engine, [row for _, rows in records for row in rows])
                stored = sum(len(rows) for _, rows in records)
            except _REFUSED:
                stored = self._write_one_by_one(records)
        if self.journal is not None:
            try:
                self.journal.forget([entry for entry, _ in records if entry is not None])
            except Exception as error:  # the replay finds them, and inserts nothing twice
                log.warning("run journal: could not delete %d entries: %s", len(records), error)
        return stored

    def _write_one_by_one(self, records: list[Record]) -> int:
        written = 0
        for _, rows in records:
            try:
                _write(db.engine, rows)
            except _REFUSED as refused:
                log.error("run recorder: dropped the rows of run %s: %s",
                          rows[0][1].get("id"), refused.orig)  # fmt: skip
            else:
                written += len(rows)
        return written

    def _keep(self, records: list[Record]) -> int:
        """Put ``records`` back to be written by the next flush; returns 0 (none written)."""
        log.exception("run recorder: could not write %d runs; will retry", len(records))
        with self._lock:
            self._records[:0] = records
            self._buffered += sum(len(rows) for _, rows in records)
            self._since = time.monotonic()  # the next try in one delay, not at once
        return 0

    def _ensure_thread(self) -> None:
        # The thread ends only with its process (``_loop`` never raises): a thread started
        # by this process is still there.
        if self._thread is not None and self._pid == os.getpid():
            return
        with self._lock:
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._loop, name="run-recorder", daemon=True)
                self._thread.start()
                atexit.register(self.flush)

    def _loop(self) -> None:
        """Write what requests have left behind (they stopped coming, or none of them was
        the late one): the buffer is never older than twice the delay."""
        while True:
            time.sleep(self.delay)
            self._flush_if_due()


def run_rows(run: dict, ledger: dict | None = None) -> list[tuple[Table, dict]]:
    """A run's rows as the recorder takes them: its ``runs`` row, and its ledger row when it
    was charged."""
    return [(_RUNS, run)] if ledger is None else [(_RUNS, run), (_LEDGER, ledger)]


def ledger_rows(ledger: dict) -> list[tuple[Table, dict]]:
    """A ledger row as ``write_in_session`` takes it (a queued run's, charged as it ends)."""
    return [(_LEDGER, ledger)]


def write_in_session(rows: list[tuple[Table, dict]]) -> None:
    """Insert ``rows``, and add them to the daily rollups, in the session's transaction
    (the caller commits): on PostgreSQL in one statement (the batch's), else one per row."""
    connection = db.session.connection()
    if connection.dialect.name == "postgresql":
        statement, documents = _one_statement(rows)
        connection.exec_driver_sql(statement, tuple(documents))
        return
    for table, row in rows:
        connection.execute(table.insert(), row)
    inserted = _by_table(rows)
    usage_rollup.add(db.session, _tally(inserted))


def _by_table(rows: list[tuple[Table, dict]]) -> dict[Table, list[dict]]:
    return {table: [row for row_table, row in rows if row_table is table] for table in _TABLES}


def _rolled_up(rows: list[tuple[Table, dict]]) -> tuple[bool, bool]:
    """Whether ``rows`` hold ledger rows, and web runs of accounts: what the daily rollups
    count (a batch of neither, the failed and the sandbox runs, skips them)."""
    ledger = web = False
    for table, row in rows:
        if table is _LEDGER:
            ledger = True
        elif usage_rollup.counts_as_web_run(row):
            web = True
    return ledger, web


def _tally(inserted: dict[Table, list[dict]]) -> dict:
    return usage_rollup.tally(inserted.get(_LEDGER, ()), inserted.get(_RUNS, ()))


def _encode(value) -> bytes:
    try:
        return orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:  # a wider integer, or a lone surrogate
        return json.dumps(value, default=_json_default).encode()


def _decode(payload: bytes) -> list[tuple[Table, dict]]:
    return [(_BY_NAME[name], row) for name, row in json.loads(payload)]


def _revive(table: Table, row: dict) -> dict:
    """A journaled row as it was recorded: its timestamps as datetimes again, and a column
    it does not name (it was journaled by a version before that column) given its default,
    or null, as an insert without it would (a key the database makes is left to it)."""
    for column in table.c:
        if column.key not in row:
            default = column.default
            if default is not None and default.is_scalar:
                row[column.key] = default.arg
            elif column.nullable and not column.primary_key:
                row[column.key] = None
            continue
        value = row[column.key]
        if isinstance(value, str) and isinstance(column.type, DateTime):
            row[column.key] = datetime.fromisoformat(value)
    return row


def _write(engine: Engine, rows: list[tuple[Table, dict]]) -> None:
    """Insert ``rows`` in one transaction, the runs before the ledger rows that refer to
    them, and add the rows it inserted to the daily rollups (services/usage_rollup.py) in
    the same transaction, committed durably; a row already there (a run written, then
    replayed from the journal) is left as it is, and counted no second time. Raises
    SQLAlchemy's errors (one of ``_REFUSED`` for a row the database refuses)."""
    if engine.dialect.name != "postgresql":
        tables = [(table, values) for table, values in _by_table(rows).items() if values]
        ledger, web = _rolled_up(rows)
        with engine.begin() as connection:
            inserted = {}
            for table, values in tables:
                statement = sqlite_insert(table).on_conflict_do_nothing()
                if ledger or web:
                    statement = statement.returning(*(table.c[n] for n in _RETURNING[table]))
                    result = connection.execute(statement, values)
                    inserted[table] = [row._asdict() for row in result]
                else:
                    connection.execute(statement, values)
            usage_rollup.add(connection, _tally(inserted))
        return
    # On PostgreSQL the batch is one statement, sent once on the pool's DBAPI connection in
    # autocommit mode: one round trip (a transaction and two COPYs took seven), without
    # SQLAlchemy's session and statement layers, which cost as much CPU as the rows.
    statement, documents = _one_statement(rows)
    connection = engine.raw_connection()
    driver = connection.driver_connection
    try:
        driver.autocommit = True
        try:
            driver.execute(statement, documents)
        finally:
            if driver.info.transaction_status == TransactionStatus.IDLE:
                driver.autocommit = False  # as the pool lends it
    except engine.dialect.loaded_dbapi.Error as error:
        # A connection that could not be put back as it was lent is not lent again.
        gone = driver.broken or driver.autocommit
        gone = gone or engine.dialect.is_disconnect(error, driver, None)
        if gone:
            connection.invalidate()
        raise exc.DBAPIError.instance(
            None, None, error, engine.dialect.loaded_dbapi.Error,
            connection_invalidated=gone, dialect=engine.dialect,
        ) from error  # fmt: skip
    finally:
        connection.close()  # back to the pool (a no-op once invalidated)


# The escape of a NUL character in JSON text: "\u0000" after an even number of backslashes
# (an odd number means the backslash before "u0000" is itself escaped text).
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


# The escape of a surrogate (the stdlib writes one for each half of a pair, and for a lone
# surrogate, which orjson refuses to encode), after an even number of backslashes: a high
# one and a low one are a pair, matched first; any other is unpaired.
_SURROGATE_ESCAPE = re.compile(
    r"(?<!\\)((?:\\\\)*)(\\ud[89ab][0-9a-f]{2}\\ud[c-f][0-9a-f]{2}|\\ud[89a-f][0-9a-f]{2})"
)


def _unpaired_as_fffd(escape: re.Match) -> str:
    return escape[0] if len(escape[2]) == 12 else escape[1] + "\\ufffd"


def _document(values: list[dict]) -> str:
    """One table's rows as a JSON array.

    orjson writes it in a tenth of the stdlib's time (a run's two rows: about 1 µs against
    12; it was a tenth of an inline run's CPU). Timestamps come out as ``isoformat`` writes
    them, and a NaN or an infinity as null, as in the API's answer. What orjson cannot
    encode (an integer wider than 64 bits) is left to the stdlib.

    PostgreSQL refuses the whole document when a string in it holds a NUL character (it
    reads no NUL into a row), which lost the run's rows, its ledger row with them: a NUL in
    a run's input or output is stored as U+FFFD, the replacement character, instead. So is
    an unpaired surrogate (a str can hold one: an engine's output read by the stdlib from
    ``"\\ud800"``), which PostgreSQL refuses as well."""
    try:
        text = orjson.dumps(values, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:  # a wider integer, or a surrogate (orjson writes neither)
        text = json.dumps(values, default=_json_default)
        if "\\ud" in text:
            text = _SURROGATE_ESCAPE.sub(_unpaired_as_fffd, text)
    if "\\u0000" in text:
        text = _NUL_ESCAPE.sub(r"\1\\ufffd", text)
    return text


def _json_default(value: object) -> str:
    """Timestamps as ISO 8601 for PostgreSQL; any other value JSON cannot hold (a Decimal in
    an engine's output, say) as its text, as the API's answer shows it, rather than a batch
    that can never be written."""
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _one_statement(rows: list[tuple[Table, dict]]) -> tuple[str, list[str]]:
    """``rows`` as one PostgreSQL statement (``_statement``) and its parameters."""
    tables = [(table, values) for table, values in _by_table(rows).items() if values]
    shapes = tuple((table, tuple(values[0])) for table, values in tables)
    ledger, web = _rolled_up(rows)
    return _statement(shapes, ledger, web), [_document(values) for _, values in tables]


@cache
def _statement(
    shapes: tuple[tuple[Table, tuple[str, ...]], ...], ledger: bool = False, web: bool = False
) -> str:
    """One statement inserting each table's rows from a JSON array (one parameter each), in
    the order given, as a single transaction; rows already there are skipped. Rows of one
    table share their keys, which are column names. ``ledger`` / ``web``: the rows hold
    ledger rows / web runs of accounts, which the statement then adds to the daily rollups
    as well, those it inserted only (RETURNING gives back nothing for a row skipped)."""
    rollup = ledger or web
    inserts = []
    for table, keys in shapes:
        columns = ", ".join(table.c[key].name for key in keys)
        returning = f" RETURNING {', '.join(_RETURNING[table])}" if rollup else ""
        inserts.append(
            f"INSERT INTO {table.name} ({columns}) SELECT {columns} "
            f"FROM json_populate_recordset(NULL::{table.name}, %s::json) "
            f"ON CONFLICT DO NOTHING{returning}"
        )
    if rollup:
        ctes = [f"rows_{i} AS ({insert})" for i, insert in enumerate(inserts)]
        named = {table: f"rows_{i}" for i, (table, _) in enumerate(shapes)}
        final = usage_rollup.pg_rollup_sql(
            named.get(_LEDGER) if ledger else None, named.get(_RUNS) if web else None
        )
        return "WITH " + ", ".join(ctes) + " " + final
    ctes = [f"rows_{i} AS ({insert})" for i, insert in enumerate(inserts[:-1])]
    return ("WITH " + ", ".join(ctes) + " " if ctes else "") + inserts[-1]


def recorder() -> RunRecorder:
    # One proxy lookup (blueprints/api/pipeline/keys.py says why).
    return current_app._get_current_object().extensions["run_recorder"]


def replay_journal() -> int:
    """Maintenance task: write the runs the journal holds that no process wrote in time, and
    give back the reservations of inline runs that died before they were journaled."""
    config = current_app.config
    released = quota.store().release_abandoned(float(config["RUN_INFLIGHT_GRACE_SECONDS"]))
    if released:
        log.warning("run journal: gave back %d reservations of runs that died mid-run", released)
    return recorder().replay(float(config["RUN_JOURNAL_GRACE_SECONDS"]))


def init_app(app: Flask) -> None:
    app.extensions["run_recorder"] = RunRecorder(app, app.config["RUN_RECORD_DELAY"])
