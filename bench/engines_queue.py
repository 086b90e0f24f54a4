"""``bench/engines.py``'s queue cases: what a queued run adds on top of the tool itself.

Trivial ``word-counter`` runs are submitted one at a time with ``Prefer: respond-async``
through the app's test client (built in the bench's process on the deployment's environment;
the operator commands run on it in process too) to an idle worker: a real RQ worker process
(the Procfile's ``worker``) on PostgreSQL and Redis, or the embedded default's in-process
worker (SQLite, no Redis). The time from submit to start and to finish comes from each run's
own timestamps.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.engines_cases import CaseFailed, Figure, Measure, Result, timed
from bench.harness import (
    Group,
    SetupFailed,
    create_key,
    flush_redis,
    percentile,
    product_env,
    reset_database,
    start_worker,
)

QUEUE_TOOL = "word-counter"
QUEUE_WARMUP_RUNS = 3
# Between two queued runs: long enough for the worker to finish its bookkeeping and wait on
# the queue again, so that every run is submitted to an idle worker.
IDLE_PAUSE_S = 0.1
POLL_S = 0.005


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """The process's environment is ``env`` for the block (the app reads it at startup)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def operator_command(app: Any, *args: str) -> str:
    """Run a documented ``flask --app app`` command on ``app`` (in this process)."""
    outcome = app.test_cli_runner().invoke(args=list(args))
    if outcome.exit_code != 0:
        raise SetupFailed(
            f"`flask --app app {' '.join(args)}` failed (exit {outcome.exit_code}):\n"
            f"{outcome.output.strip()}\n{outcome.exception or ''}"
        )
    return outcome.output


@dataclass
class QueuedRun:
    answer_s: float  # POST until the 202 answer
    to_start_s: float  # created_at -> started_at
    to_finish_s: float  # created_at -> finished_at


class Submitter:
    """Submits trivial queued runs to ``app`` (in this process) and waits for each to end."""

    def __init__(self, app: Any, raw_key: str, worker: Group | None):
        from flask import got_request_exception

        self.client = app.test_client()
        self.headers = {"X-SVC-API-Key": raw_key, "Prefer": "respond-async"}
        self.worker = worker
        # The app's own error log is silenced once the migrations configured logging.
        self.errors: list[BaseException] = []
        got_request_exception.connect(self._note_error, app)

    def _note_error(self, sender: Any, exception: BaseException, **extra: Any) -> None:
        self.errors.append(exception)

    def run(self) -> QueuedRun:
        """Submit one run with ``Prefer: respond-async`` and wait until it ends."""
        from sqlalchemy import select

        from extensions import db
        from models import TERMINAL_STATES, Run
        from services.clock import as_utc

        body = {"slug": QUEUE_TOOL, "input": "One queued run, two queued runs."}
        answer_s, response = timed(
            lambda: self.client.post("/v1/tools/run", json=body, headers=self.headers)
        )
        if response.status_code != 202:
            cause = f" ({self.errors[-1]!r})" if self.errors else ""
            raise CaseFailed(f"submit answered {response.status_code}{cause}: {response.text}")
        run_id = response.get_json()["run_id"]
        query = select(Run.status, Run.created_at, Run.started_at, Run.finished_at, Run.error)
        deadline = time.monotonic() + 60
        while True:
            row = db.session.execute(query.where(Run.id == run_id)).one()
            db.session.rollback()  # the next read is a new transaction: it sees the worker's
            if row.status in TERMINAL_STATES:
                break
            if self.worker is not None:
                self.worker.check()
            if time.monotonic() > deadline:
                raise CaseFailed(f"run {run_id} is still {row.status} after 60 s")
            time.sleep(POLL_S)
        if row.status != "succeeded":
            raise CaseFailed(f"run {run_id} ended {row.status}: {row.error}")
        created = as_utc(row.created_at)
        return QueuedRun(
            answer_s,
            (as_utc(row.started_at) - created).total_seconds(),
            (as_utc(row.finished_at) - created).total_seconds(),
        )


def queue_figures(runs: list[QueuedRun]) -> list[Figure]:
    figures = []
    for name, values in (
        ("submit to start", [run.to_start_s * 1000 for run in runs]),
        ("submit to finish", [run.to_finish_s * 1000 for run in runs]),
    ):
        figures.append(Figure(f"{name} p50", percentile(values, 50), "ms", values))
        figures.append(Figure(f"{name} p99", percentile(values, 99), "ms"))
    answers = [run.answer_s * 1000 for run in runs]
    figures.append(Figure("202 answer p50", percentile(answers, 50), "ms", answers))
    return figures


def bench_queue(kind: str) -> Measure:
    """A case measuring the RQ worker process (``kind`` "rq") or the in-process one."""

    def measure(result: Result, args: argparse.Namespace) -> None:
        with contextlib.ExitStack() as stack:
            worker_log = None
            if kind == "rq":
                reset_database(args.database_url)
                flush_redis(args.redis_url)
                env = product_env(args.database_url, args.redis_url)
                worker_log = args.output.parent / "engines-worker.log"
            else:
                folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-"))
                env = product_env(f"sqlite:///{folder}/embedded.db")
            runs = run_queue(env, worker_log, args.queue_runs)
        where = (
            "RQ SimpleWorker process, PostgreSQL + Redis"
            if kind == "rq"
            else "in-process worker thread, SQLite, no Redis"
        )
        result.input = (
            f"{args.queue_runs} {QUEUE_TOOL} runs, Prefer: respond-async, one at a time to an "
            f"idle worker ({where})"
        )
        result.figures = queue_figures(runs)

    return measure


def run_queue(env: dict[str, str], worker_log: Path | None, count: int) -> list[QueuedRun]:
    """Build the app on ``env`` in this process, start the worker (logging to
    ``worker_log``; none: the in-process one), warm up, then measure."""
    from app import create_app
    from extensions import db
    from services import keys

    keys.forget()
    with environment(env):
        app = create_app()
    worker = None
    with app.app_context():
        try:
            _, raw_key = create_key(functools.partial(operator_command, app))
            if worker_log is not None:
                worker = start_worker("worker", env, worker_log, "the RQ worker")
            submitter = Submitter(app, raw_key, worker)
            for _ in range(QUEUE_WARMUP_RUNS):  # the worker's first job loads the catalogue
                submitter.run()
            runs = []
            for _ in range(count):
                time.sleep(IDLE_PAUSE_S)
                runs.append(submitter.run())
            return runs
        finally:
            if worker is not None:
                worker.stop()
            db.session.remove()
            db.engine.dispose()
            keys.forget()
