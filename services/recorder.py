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
import threading
import time

from flask import Flask, after_this_request, current_app, has_request_context
from sqlalchemy import JSON, Engine, Table, exc

from extensions import db
from models import Run, UsageEvent

log = logging.getLogger(__name__)

_MAX_BUFFERED = 100_000
_RUNS, _LEDGER = Run.__table__, UsageEvent.__table__
_TABLES = (_RUNS, _LEDGER)  # the ledger refers to the runs


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
        except exc.IntegrityError:
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
                except exc.IntegrityError as refused:
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
    them. Raises SQLAlchemy's errors (IntegrityError for a refused row)."""
    tables = [(table, [row for row_table, row in rows if row_table is table]) for table in _TABLES]
    if engine.dialect.name != "postgresql":
        with engine.begin() as connection:
            for table, values in tables:
                if values:
                    connection.execute(table.insert(), values)
        return
    # The pool's DBAPI connection, used directly: a batch is a handful of statements, and
    # SQLAlchemy's session and statement layers cost as much CPU as the rows themselves.
    connection = engine.raw_connection()
    try:
        driver = connection.driver_connection
        with driver.cursor() as cursor:
            # These rows are many and small: do not wait for the WAL flush.
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
            for table, values in tables:
                if values:
                    _copy(cursor, table, values)
        driver.commit()
    except engine.dialect.loaded_dbapi.Error as error:
        gone = engine.dialect.is_disconnect(error, driver, None)
        if gone:
            connection.invalidate()  # not back into the pool
        else:
            driver.rollback()
        raise exc.DBAPIError.instance(
            None, None, error, engine.dialect.loaded_dbapi.Error,
            connection_invalidated=gone, dialect=engine.dialect,
        ) from error  # fmt: skip
    finally:
        connection.close()  # back to the pool


def _copy(cursor, table: Table, rows: list[dict]) -> None:
    """Insert ``rows`` with PostgreSQL's COPY: about half the CPU of an executemany INSERT,
    in the process that serves requests."""
    keys = [column.key for column in table.columns if column.key in rows[0]]
    as_json = [i for i, key in enumerate(keys) if isinstance(table.c[key].type, JSON)]
    statement = f"COPY {table.name} ({', '.join(table.c[key].name for key in keys)}) FROM STDIN"
    with cursor.copy(statement) as copy:
        for row in rows:
            values = [row[key] for key in keys]
            for i in as_json:
                if values[i] is not None:
                    values[i] = json.dumps(values[i])
            copy.write_row(values)


def _by_run(rows: list[tuple[Table, dict]]) -> list[list[tuple[Table, dict]]]:
    """``rows`` grouped per run: its ``runs`` row and the ledger row that refers to it."""
    groups: dict[str, list] = {}
    for table, row in rows:
        groups.setdefault(row["id"] if table is _RUNS else row["run_id"], []).append((table, row))
    return list(groups.values())


def recorder() -> RunRecorder:
    return current_app.extensions["run_recorder"]


def init_app(app: Flask) -> None:
    app.extensions["run_recorder"] = RunRecorder(app, app.config["RUN_RECORD_DELAY"])
