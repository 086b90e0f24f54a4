"""Writes inline runs and their usage rows in batches, off the request path.

An inline tool run is a few milliseconds of work; committing its two rows one request at a
time cost more than the run itself (bench/README.md). Each process therefore buffers the
rows and one background thread writes them every ``RUN_RECORD_DELAY`` seconds in a single
transaction. With a delay of 0 (the tests' setting) the rows are written as the request
ends, after the view's own commit, through the same code. A process killed with SIGKILL can
lose at most one delay's worth of rows; a normal exit writes what is buffered.
"""

import atexit
import logging
import os
import threading

from flask import Flask, after_this_request, current_app, has_request_context
from sqlalchemy import text

from extensions import db

log = logging.getLogger(__name__)

_MAX_BUFFERED = 100_000


class RunRecorder:
    def __init__(self, app: Flask, delay: float):
        self.app = app
        self.delay = delay
        self._rows: list = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def record(self, *objects) -> None:
        """Queue new ORM objects (a run and its usage event) to be inserted.

        Their column values are copied now; the objects stay the caller's, untouched.
        """
        rows = [(type(obj).__table__, _values(obj)) for obj in objects]
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
                if db.engine.dialect.name == "postgresql":
                    # These rows are many and small: do not wait for the WAL flush.
                    db.session.execute(text("SET LOCAL synchronous_commit TO OFF"))
                for table in db.metadata.sorted_tables:  # parents before children
                    values = [row for row_table, row in rows if row_table is table]
                    if values:
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


def _values(obj) -> dict:
    """The object's column values; unset ones are left out so their defaults apply."""
    values = {}
    for column in obj.__table__.columns:
        value = getattr(obj, column.key)
        has_default = column.default is not None or column.autoincrement is True
        if value is not None or not (has_default or column.primary_key):
            values[column.key] = value
    return values


def recorder() -> RunRecorder:
    return current_app.extensions["run_recorder"]


def init_app(app: Flask) -> None:
    app.extensions["run_recorder"] = RunRecorder(app, app.config["RUN_RECORD_DELAY"])
