"""Writes inline runs and their usage rows in batches, off the request path.

An inline tool run is a few milliseconds of work; committing its two rows one request at a
time cost more than the run itself (bench/README.md). Each process therefore buffers the
rows and one background thread writes them every ``RUN_RECORD_DELAY`` seconds in a single
transaction. With a delay of 0 (the tests' setting) the rows are written as the request
ends, after the view's own commit, through the same code. A process killed with SIGKILL can
lose at most one delay's worth of rows; a normal exit writes what is buffered.
"""

import atexit
import json
import logging
import os
import threading

from flask import Flask, after_this_request, current_app, has_request_context
from sqlalchemy import JSON, Table, text

from extensions import db
from models import Run, UsageEvent

log = logging.getLogger(__name__)

_MAX_BUFFERED = 100_000
_RUNS, _LEDGER = Run.__table__, UsageEvent.__table__


class RunRecorder:
    def __init__(self, app: Flask, delay: float):
        self.app = app
        self.delay = delay
        self._rows: list = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def record(self, run: dict, ledger: dict | None = None) -> None:
        """Queue an inline run's ``runs`` row, and its usage ledger row, to be inserted."""
        rows = [(_RUNS, run)] if ledger is None else [(_RUNS, run), (_LEDGER, ledger)]
        with self._lock:
            if len(self._rows) >= _MAX_BUFFERED:
                log.error("run recorder: %d rows waiting, dropping the oldest", len(self._rows))
                del self._rows[: len(rows)]
            self._rows.extend(rows)
        if self.delay > 0:
            self._ensure_thread()
        elif has_request_context():
            # After the view has committed its own transaction, still inside the request.
            after_this_request(self._flush_then)
        else:
            self.flush()

    def _flush_then(self, response):
        self.flush()
        return response

    def flush(self) -> int:
        """Write every buffered row now; returns how many were written."""
        with self._lock:
            rows, self._rows = self._rows, []
        if not rows:
            return 0
        try:
            with self.app.app_context():
                postgres = db.engine.dialect.name == "postgresql"
                if postgres:
                    # These rows are many and small: do not wait for the WAL flush.
                    db.session.execute(text("SET LOCAL synchronous_commit TO OFF"))
                for table in (_RUNS, _LEDGER):  # the ledger refers to the runs
                    values = [row for row_table, row in rows if row_table is table]
                    if values and postgres:
                        _copy(table, values)
                    elif values:
                        db.session.execute(table.insert(), values)
                db.session.commit()
        except Exception:
            log.exception("run recorder: could not write %d rows; will retry", len(rows))
            with self._lock:
                self._rows[:0] = rows
            return 0
        return len(rows)

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
        while True:
            self._wake.wait(self.delay)
            self._wake.clear()
            self.flush()


def _copy(table: Table, rows: list[dict]) -> None:
    """Insert ``rows`` with PostgreSQL's COPY, in the session's transaction: about half the
    CPU of an executemany INSERT, in the process that serves requests."""
    keys = [column.key for column in table.columns if column.key in rows[0]]
    as_json = [i for i, key in enumerate(keys) if isinstance(table.c[key].type, JSON)]
    statement = f"COPY {table.name} ({', '.join(table.c[key].name for key in keys)}) FROM STDIN"
    connection = db.session.connection().connection.driver_connection
    with connection.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            values = [row[key] for key in keys]
            for i in as_json:
                if values[i] is not None:
                    values[i] = json.dumps(values[i])
            copy.write_row(values)


def recorder() -> RunRecorder:
    return current_app.extensions["run_recorder"]


def init_app(app: Flask) -> None:
    app.extensions["run_recorder"] = RunRecorder(app, app.config["RUN_RECORD_DELAY"])
