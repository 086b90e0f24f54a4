"""Writes inline runs and their usage rows in batches, off the request path.

An inline tool run is a few milliseconds of work; committing its two rows one request at a
time cost more than the run itself (bench/README.md). Each process therefore buffers the
rows and writes them in one transaction once the oldest has waited ``RUN_RECORD_DELAY``
seconds: under load, a request that recorded rows writes the batch after its answer has
been sent; when requests stop, a background thread writes what is left. (A background
thread writing every batch cost more: it fought the request threads for the GIL, and a
tool run took 7 to 8 % more CPU in all, measured under load in two paired runs.) With a
delay of 0 (the tests' setting) the rows are written as the request ends, after the view's
own commit, through the same code. A process killed with SIGKILL can lose at most two
delays' worth of rows; a normal exit writes what is buffered.
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
from flask import Flask, after_this_request, current_app, has_request_context
from psycopg.pq import TransactionStatus
from sqlalchemy import Engine, Table, exc

from extensions import db
from models import Run, UsageEvent

log = logging.getLogger(__name__)

_MAX_BUFFERED = 100_000
_RUNS, _LEDGER = Run.__table__, UsageEvent.__table__
_TABLES = (_RUNS, _LEDGER)  # the ledger refers to the runs
# What the database answers for a row it will never take: a broken reference (its account
# deleted meanwhile, say), or a value it cannot read (a NaN in an output's JSON).
_REFUSED = (exc.IntegrityError, exc.DataError)


class RunRecorder:
    def __init__(self, app: Flask, delay: float):
        self.app = app
        self.delay = delay
        self._rows: list = []
        # When the buffer's oldest row came (or the last failed write, to wait before the
        # next try).
        self._since = 0.0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def record(self, run: dict, ledger: dict | None = None) -> None:
        """Queue an inline run's ``runs`` row, and its usage ledger row, to be inserted."""
        rows = [(_RUNS, run)] if ledger is None else [(_RUNS, run), (_LEDGER, ledger)]
        with self._lock:
            if len(self._rows) >= _MAX_BUFFERED:
                log.error("run recorder: %d rows waiting, dropping the oldest", len(self._rows))
                del self._rows[: len(rows)]
            if not self._rows:
                self._since = time.monotonic()
            self._rows.extend(rows)
        if self.delay > 0:
            self._ensure_thread()
            if has_request_context() and time.monotonic() - self._since >= self.delay:
                after_this_request(self._flush_once_sent)  # the batch is due
        elif has_request_context():
            # After the view has committed its own transaction, still inside the request.
            after_this_request(self._flush_then)
        else:
            self.flush()

    def _flush_then(self, response):
        self.flush()
        return response

    def _flush_once_sent(self, response):
        response.call_on_close(self._flush_if_due)
        return response

    def _flush_if_due(self) -> None:
        if self._rows and time.monotonic() - self._since >= self.delay:
            self.flush()

    def flush(self) -> int:
        """Write every buffered row now; returns how many were written."""
        with self._lock:
            rows, self._rows = self._rows, []
        if not rows:
            return 0
        try:
            with self.app.app_context():
                _write(db.engine, rows)
        except _REFUSED:
            # A row the database refuses (its account deleted meanwhile, say) must not hold
            # back the others forever: each run's rows are tried on their own.
            return self._write_one_by_one(rows)
        except Exception:
            return self._keep(rows)
        return len(rows)

    def _write_one_by_one(self, rows: list) -> int:
        written, groups = 0, _by_run(rows)
        with self.app.app_context():
            for i, group in enumerate(groups):
                try:
                    _write(db.engine, group)
                except _REFUSED as refused:
                    log.error("run recorder: dropped the rows of run %s: %s",
                              group[0][1].get("id"), refused.orig)  # fmt: skip
                except Exception:
                    return written + self._keep([row for rest in groups[i:] for row in rest])
                else:
                    written += len(group)
        return written

    def _keep(self, rows: list) -> int:
        """Put ``rows`` back to be written by the next flush; returns 0 (none written)."""
        log.exception("run recorder: could not write %d rows; will retry", len(rows))
        with self._lock:
            self._rows[:0] = rows
            self._since = time.monotonic()  # the next try in one delay, not at once
        return 0

    def _ensure_thread(self) -> None:
        if self._thread is not None and self._pid == os.getpid() and self._thread.is_alive():
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


def _write(engine: Engine, rows: list[tuple[Table, dict]]) -> None:
    """Insert ``rows`` in one transaction, the runs before the ledger rows that refer to
    them. Raises SQLAlchemy's errors (one of ``_REFUSED`` for a row the database refuses)."""
    by_table = {table: [row for row_table, row in rows if row_table is table] for table in _TABLES}
    tables = [(table, values) for table, values in by_table.items() if values]
    if engine.dialect.name != "postgresql":
        with engine.begin() as connection:
            for table, values in tables:
                connection.execute(table.insert(), values)
        return
    # On PostgreSQL the batch is one statement, sent once on the pool's DBAPI connection in
    # autocommit mode: one round trip (a transaction and two COPYs took seven), without
    # SQLAlchemy's session and statement layers, which cost as much CPU as the rows.
    statement = _statement(tuple((table, tuple(values[0])) for table, values in tables))
    documents = [_document(values) for _, values in tables]
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


def _document(values: list[dict]) -> str:
    """One table's rows as a JSON array.

    orjson writes it in a tenth of the stdlib's time (a run's two rows: about 1 µs against
    12; it was a tenth of an inline run's CPU). Timestamps come out as ``isoformat`` writes
    them, and a NaN or an infinity as null, as in the API's answer. What orjson cannot
    encode (an integer wider than 64 bits) is left to the stdlib.

    PostgreSQL refuses the whole document when a string in it holds a NUL character (it
    reads no NUL into a row), which lost the run's rows, its ledger row with them: a NUL in
    a run's input or output is stored as U+FFFD, the replacement character, instead."""
    try:
        text = orjson.dumps(values, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        text = json.dumps(values, default=_json_default)
    if "\\u0000" in text:
        text = _NUL_ESCAPE.sub(r"\1\\ufffd", text)
    return text


def _json_default(value: object) -> str:
    """Timestamps as ISO 8601 for PostgreSQL; any other value JSON cannot hold (a Decimal in
    an engine's output, say) as its text, as the API's answer shows it, rather than a batch
    that can never be written."""
    return value.isoformat() if isinstance(value, datetime) else str(value)


@cache
def _statement(shapes: tuple[tuple[Table, tuple[str, ...]], ...]) -> str:
    """One statement inserting each table's rows from a JSON array (one parameter each), in
    the order given, as a single transaction that does not wait for the WAL flush (these
    rows are many and small; a crash loses at most the last fraction of a second, as the
    buffer itself would). Rows of one table share their keys, which are column names."""
    inserts = []
    for i, (table, keys) in enumerate(shapes):
        columns = ", ".join(table.c[key].name for key in keys)
        source = "no_wait, " if i == len(shapes) - 1 else ""
        inserts.append(
            f"INSERT INTO {table.name} ({columns}) SELECT {columns} "
            f"FROM {source}json_populate_recordset(NULL::{table.name}, %s::json)"
        )
    ctes = [f"rows_{i} AS ({insert})" for i, insert in enumerate(inserts[:-1])]
    return (
        "WITH no_wait AS (SELECT set_config('synchronous_commit', 'off', true))"
        + "".join(f", {cte}" for cte in ctes)
        + f" {inserts[-1]}"
    )


def _by_run(rows: list[tuple[Table, dict]]) -> list[list[tuple[Table, dict]]]:
    """``rows`` grouped per run: its ``runs`` row and the ledger row that refers to it."""
    groups: dict[str, list] = {}
    for table, row in rows:
        groups.setdefault(row["id"] if table is _RUNS else row["run_id"], []).append((table, row))
    return list(groups.values())


def recorder() -> RunRecorder:
    return current_app._get_current_object().extensions["run_recorder"]  # api/pipeline.py says why


def init_app(app: Flask) -> None:
    app.extensions["run_recorder"] = RunRecorder(app, app.config["RUN_RECORD_DELAY"])
